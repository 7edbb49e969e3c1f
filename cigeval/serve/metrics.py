"""What ``GET /metrics`` exports for Prometheus (the ``prometheus_client`` library, in the
serve extra; without it the route says how to install it and nothing is counted).

- ``cigeval_serve_items_total{protocol, status}``: items answered, by status (ok, error,
  timeout)
- ``cigeval_serve_requests_refused_total{status}``: whole requests refused (413, 429, ...)
- ``cigeval_serve_judge_call_seconds``: latency of each judge model call (histogram)
- ``cigeval_serve_queue_depth``: items admitted and not yet answered
- ``cigeval_serve_parse_failures_total``: judge replies that could not be read
- ``cigeval_serve_groups_total`` and ``cigeval_serve_tied_groups_total``: groups with two
  scored items or more, and those whose scores all tie; ``cigeval_serve_tied_group_share``
  the share of the last batch that had such groups
- ``cigeval_serve_fill_ins_total``: rewards filled in by ``--fill-unscored``

Each app has its own registry, so several apps in one process never mix their counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cigeval.serve.models import BatchStats, ItemResult

#: Histogram buckets of a judge call, in seconds (a local vLLM: 0.1-5 s; an API: up to 60 s).
CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
#: What /metrics answers when prometheus_client is missing.
MISSING = "metrics need prometheus_client: pip install 'cigeval[serve]' (or prometheus_client)"


class ServeMetrics:
    """The service's counters, or none at all when prometheus_client is not installed
    (:attr:`available`)."""

    def __init__(self, queue_depth: Callable[[], float]) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            self.available = False
            return
        self.available = True
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.items = prom.Counter(
            "cigeval_serve_items", "items answered", ["protocol", "status"], registry=r
        )
        self.refused = prom.Counter(
            "cigeval_serve_requests_refused", "requests refused whole", ["status"], registry=r
        )
        self.calls = prom.Histogram(
            "cigeval_serve_judge_call_seconds",
            "latency of one judge model call",
            buckets=CALL_BUCKETS,
            registry=r,
        )
        depth = prom.Gauge(
            "cigeval_serve_queue_depth", "items admitted and not yet answered", registry=r
        )
        depth.set_function(queue_depth)
        self.parse_failures = prom.Counter(
            "cigeval_serve_parse_failures", "judge replies that could not be read", registry=r
        )
        self.groups = prom.Counter(
            "cigeval_serve_groups", "groups with two scored items or more", registry=r
        )
        self.tied_groups = prom.Counter(
            "cigeval_serve_tied_groups", "groups whose scores all tie", registry=r
        )
        self.tied_share = prom.Gauge(
            "cigeval_serve_tied_group_share",
            "share of tied groups in the last batch that had groups",
            registry=r,
        )
        self.fill_ins = prom.Counter(
            "cigeval_serve_fill_ins", "rewards filled in by --fill-unscored", registry=r
        )

    def batch(
        self,
        protocol: str,
        results: Sequence[ItemResult],
        stats: BatchStats,
        call_latencies: Sequence[float],
    ) -> None:
        """Count one answered batch."""
        if not self.available:
            return
        for result in results:
            self.items.labels(protocol, result.status).inc()
        for latency in call_latencies:
            self.calls.observe(latency)
        self.parse_failures.inc(stats.parse_failures)
        self.fill_ins.inc(stats.filled)
        if stats.groups:
            tied = round((stats.tied_group_share or 0.0) * stats.groups)
            self.groups.inc(stats.groups)
            self.tied_groups.inc(tied)
            self.tied_share.set(stats.tied_group_share or 0.0)

    def refusal(self, status: int) -> None:
        """Count a request refused whole with ``status``."""
        if self.available:
            self.refused.labels(str(status)).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in Prometheus' text format, and its content type."""
        import prometheus_client as prom

        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST
