"""One Prometheus endpoint for `serve --workers N`: every worker's totals, the dead ones' included.

Each worker records its counters and histograms in files of its own under one
directory (prometheus_client's multiprocess mode: PROMETHEUS_MULTIPROC_DIR, set
by the supervisor before it spawns them), written as they count. A worker that
dies, killed or not, leaves its file: the totals served here are every worker's,
the restarted ones' before and after, as one process would count them.

Gauges, the build info and the process metrics are a live worker's own (a dead
worker has no RPCs in flight): the supervisor reads them from each worker's own
endpoint, served on a loopback port only it knows, and serves them with a
`worker` label (1..N). The supervisor adds `pioneer_worker_restarts_total`
and `pioneer_workers_serving`.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Longest a scrape waits for one worker's own endpoint.
WORKER_SCRAPE_SECONDS = 2.0
# Counted in every worker's file: served as totals, never read from a worker's endpoint.
_FILED = frozenset({"counter", "histogram"})


@dataclass(frozen=True)
class LiveWorker:
    number: int
    metrics_port: int


class WorkerTotals:
    """What the supervisor knows of its workers: restarts by worker number, and who serves now."""

    def __init__(self, total: int) -> None:
        self._lock = threading.Lock()
        self._restarts = {number: 0 for number in range(1, total + 1)}
        self._live: dict[int, int] = {}  # worker number -> its own metrics port

    def restarted(self, number: int) -> None:
        with self._lock:
            self._restarts[number] += 1

    def serving(self, number: int, metrics_port: int) -> None:
        with self._lock:
            self._live[number] = metrics_port

    def ended(self, number: int) -> None:
        with self._lock:
            self._live.pop(number, None)

    def snapshot(self) -> tuple[dict[int, int], list[LiveWorker]]:
        with self._lock:
            live = [LiveWorker(n, port) for n, port in sorted(self._live.items()) if port]
            return dict(self._restarts), live


def _scrape(port: int, token: str) -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=WORKER_SCRAPE_SECONDS) as response:
        return str(response.read().decode("utf-8"))


class WorkersCollector(Collector):
    """The aggregate: filed totals of every worker, then each live worker's own metrics by `worker`."""

    def __init__(
        self,
        directory: str,
        totals: WorkerTotals,
        token: str = "",
        scrape: Callable[[int, str], str] = _scrape,
    ) -> None:
        self._files = MultiProcessCollector(None, path=directory)  # type: ignore[no-untyped-call]
        self._totals = totals
        self._token = token
        self._scrape = scrape

    def collect(self) -> Iterator[Metric]:
        filed = [f for f in self._files.collect() if f.type in _FILED]  # type: ignore[no-untyped-call]
        yield from filed
        names = {family.name for family in filed}
        restarts, live = self._totals.snapshot()
        counter = CounterMetricFamily(
            "pioneer_worker_restarts",
            "Times the supervisor started a worker again after it ended.",
            labels=["worker"],
        )
        for number, count in sorted(restarts.items()):
            counter.add_metric([str(number)], count)
        yield counter
        yield GaugeMetricFamily("pioneer_workers_serving", "Workers that answer now.", value=len(live))
        yield from self._live(live, names)

    def _live(self, live: Iterable[LiveWorker], skip: set[str]) -> Iterator[Metric]:
        merged: dict[str, Metric] = {}
        for worker in live:
            try:
                text = self._scrape(worker.metrics_port, self._token)
            except OSError as exc:
                log.warning("worker %d's metrics could not be read: %s", worker.number, exc)
                continue
            for family in text_string_to_metric_families(text):
                if family.name in skip:
                    continue
                into = merged.setdefault(family.name, Metric(family.name, family.documentation, family.type))
                for sample in family.samples:
                    labels = {**sample.labels, "worker": str(worker.number)}
                    into.add_sample(sample.name, labels, sample.value, sample.timestamp)
        yield from merged.values()


def aggregate_registry(directory: str, totals: WorkerTotals, token: str = "") -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkersCollector(directory, totals, token))
    return registry


def fresh_directory() -> str:
    """An empty directory for the workers' files (a stale file would count again)."""
    return tempfile.mkdtemp(prefix="pioneer-metrics-")
