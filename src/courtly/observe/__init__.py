"""Seeing the crawl: event subscribers, one snapshot schema, Prometheus metrics, the dashboard.

* :mod:`~courtly.observe.verdict`     why the crawl goes at the speed it does (pure);
* :mod:`~courtly.observe.tally`       counters and histograms from events;
* :mod:`~courtly.observe.hosts`       the per-host table (state, delay source) and top-N;
* :mod:`~courtly.observe.observation` the two above, subscribed together;
* :mod:`~courtly.observe.snapshot`    the one JSON schema everything reports;
* :mod:`~courtly.observe.status_file` ``status.json``, a subscriber;
* :mod:`~courtly.observe.metrics`     ``/metrics`` (prometheus_client);
* :mod:`~courtly.observe.server`      the aiohttp dashboard (``/``, ``/api/*``, ``/events``).
"""
