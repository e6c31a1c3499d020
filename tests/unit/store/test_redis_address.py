"""Store URLs: the store's own ``wait``/``wait_ms``/``affinity`` parameters, kept from the
client."""

from __future__ import annotations

import pytest

from courtly.store.redis.address import connect, replica_options, shown, store_options


def test_wait_asks_for_replica_acks_with_a_bound() -> None:
    assert replica_options("redis://127.0.0.1:6379/0") == {}
    assert replica_options("redis+cluster://a:7001,b:7002?wait=1") == {
        "replica_acks": 1,
        "replica_wait_s": 0.05,
    }
    assert replica_options("redis://h:1/0?wait=2&wait_ms=200&socket_timeout=3") == {
        "replica_acks": 2,
        "replica_wait_s": 0.2,
    }
    for bad in ("redis://h:1?wait=x", "redis://h:1?wait=-1", "redis://h:1?wait=1&wait_ms=0"):
        with pytest.raises(ValueError):
            replica_options(bad)


async def test_the_client_never_sees_the_stores_parameters() -> None:
    cluster = connect("redis+cluster://127.0.0.1:7001,127.0.0.1:7002?wait=1&wait_ms=20")
    assert sorted(node.port for node in cluster.nodes_manager.startup_nodes.values()) == [
        7001,
        7002,
    ]
    await cluster.aclose()
    single = connect("redis://127.0.0.1:6379/2?wait=1&socket_timeout=3&affinity=2")
    kwargs = single.connection_pool.connection_kwargs
    assert (kwargs["db"], kwargs["socket_timeout"]) == (2, 3.0)
    assert "wait" not in kwargs and "affinity" not in kwargs
    await single.aclose()


def test_affinity_sets_the_grace_before_another_fetchers_shard_is_leased() -> None:
    assert store_options("redis://h:1/0") == {}
    assert store_options("redis://h:1/0?affinity=0") == {"affinity_grace_s": 0.0}
    assert store_options("redis+cluster://a:7001?wait=1&affinity=2.5") == {
        "replica_acks": 1,
        "replica_wait_s": 0.05,
        "affinity_grace_s": 2.5,
    }
    assert replica_options("redis://h:1/0?affinity=3") == {}  # not a replica option
    for bad in ("redis://h:1?affinity=x", "redis://h:1?affinity=-1", "redis://h:1?affinity=inf"):
        with pytest.raises(ValueError):
            store_options(bad)


@pytest.mark.parametrize(
    ("url", "printed"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("rediss://app:s3cret@cache.test:6380", "rediss://app:***@cache.test:6380"),
        ("redis://app@127.0.0.1", "redis://app@127.0.0.1"),
        ("redis://:p@ss:word@127.0.0.1", "redis://:***@127.0.0.1"),
        (
            "redis+cluster://u:pw@10.0.0.1:7000,10.0.0.2:7000?wait=1",
            "redis+cluster://u:***@10.0.0.1:7000,10.0.0.2:7000?wait=1",
        ),
        (
            "redis://127.0.0.1?password=s3cret&affinity=2",
            "redis://127.0.0.1?password=***&affinity=2",
        ),
        ("not a url", "not a url"),
    ],
)
def test_a_printed_store_url_never_shows_a_password(url: str, printed: str) -> None:
    assert shown(url) == printed
    assert "s3cret" not in shown(url) and "pw@" not in shown(url)


def test_a_cluster_url_carries_its_credentials_to_every_node() -> None:
    client = connect("redis+cluster://app:p%40ss@127.0.0.1:7000,127.0.0.2:7001?affinity=2")
    nodes = sorted((n.host, n.port) for n in client.nodes_manager.startup_nodes.values())
    assert nodes == [("127.0.0.1", 7000), ("127.0.0.2", 7001)]
    assert client.connection_kwargs["username"] == "app"
    assert client.connection_kwargs["password"] == "p@ss"
    bare = connect("redis+cluster://127.0.0.1:7000")
    assert bare.connection_kwargs.get("password") is None


def test_a_refused_store_url_is_quoted_without_its_password() -> None:
    with pytest.raises(ValueError, match="affinity") as caught:
        store_options("redis://:s3cret@127.0.0.1?affinity=soon")
    assert "s3cret" not in str(caught.value) and ":***@" in str(caught.value)
    with pytest.raises(ValueError, match="HOST:PORT") as caught:
        connect("redis+cluster://u:s3cret@nohost")
    assert "s3cret" not in str(caught.value)
