from __future__ import annotations

from pathlib import Path

from courtly.sandbox import RequestLogWriter, RequestRecord, load_log


def _record(start_at: float, path: str = "/", conn: int = 1) -> RequestRecord:
    return RequestRecord(
        start_at=start_at,
        end_at=start_at + 0.01,
        host="www.site0.test",
        ip="127.0.0.2",
        port=8123,
        path=path,
        status=200,
        ua="courtly/0.1",
        bytes=100,
        conn=conn,
    )


async def test_writer_flushes_and_loader_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    writer = RequestLogWriter(path, flush_every_s=0.05)
    writer.start()
    writer.write(_record(2.0, "/b"))
    writer.write(_record(1.0, "/a"))
    writer.flush()
    assert [r.path for r in load_log(path)] == ["/a", "/b"]
    writer.write(_record(3.0, "/c"))
    await writer.aclose()
    records = load_log(path)
    assert [r.path for r in records] == ["/a", "/b", "/c"]
    assert records[0] == _record(1.0, "/a")


def test_loader_merges_a_directory_and_skips_a_torn_line(tmp_path: Path) -> None:
    (tmp_path / "requests.0.jsonl").write_text(_record(1.0).to_json() + "\n")
    (tmp_path / "requests.1.jsonl").write_text(
        _record(0.5, conn=2).to_json() + "\n" + _record(2.0).to_json()[:30]
    )
    (tmp_path / "other.jsonl").write_text(_record(0.1).to_json() + "\n")
    records = load_log(tmp_path)
    assert [r.start_at for r in records] == [0.5, 1.0]
    assert load_log([tmp_path / "other.jsonl"])[0].start_at == 0.1
