"""The scheduler's Prometheus metrics under kube-scheduler's names, and the HTTP endpoint serving them.

Owns the metric families (in their own registry, so that several schedulers in one
process — the embedded cluster's and a test's — never collide) and ``/metrics`` plus
``/healthz`` on an aiohttp server:

| name | type | labels |
|---|---|---|
| ``scheduler_schedule_attempts_total`` | counter | result, profile |
| ``scheduler_scheduling_attempt_duration_seconds`` | histogram (0.001 × 2^k, 15 buckets) | result, profile |
| ``scheduler_pending_pods`` | gauge | queue |
| ``scheduler_pod_scheduling_attempts`` | histogram (1, 2, 4, 8, 16) | — |

``result`` is ``scheduled``, ``unschedulable`` or ``error``; ``queue`` is ``active``,
``backoff``, ``unschedulable`` or ``gated``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

__all__ = ["PENDING_QUEUES", "RESULTS", "SchedulerMetrics", "exponential_buckets", "parse_address"]

log = logging.getLogger(__name__)

RESULTS: Final = ("scheduled", "unschedulable", "error")
PENDING_QUEUES: Final = ("active", "backoff", "unschedulable", "gated")


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ``ExponentialBuckets``: ``start``, ``start*factor``, … (``count`` bounds)."""
    return tuple(start * factor**i for i in range(count))


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``; an empty host means every interface) → (host, port)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"address: Invalid value: {address!r}: expected host:port with a port in 0..65535")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port_text)


class SchedulerMetrics:
    """The metric families of one scheduler process; :meth:`serve` exposes them over HTTP."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=self.registry,
        )
        self._attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=self.registry,
        )
        self._pending = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=self.registry,
        )
        self._pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5),
            registry=self.registry,
        )
        for queue in PENDING_QUEUES:
            self._pending.labels(queue=queue).set(0)
        self._runner: web.AppRunner | None = None

    # -- recording

    def observe_attempt(
        self, result: str, profile: str, duration: float, attempts: int | None = None
    ) -> None:
        """One scheduling attempt of a pod ended with ``result`` after ``duration`` seconds.

        For a ``scheduled`` pod, ``attempts`` (how many attempts it took, this one
        included) goes into ``scheduler_pod_scheduling_attempts``, as upstream records it
        once per successfully scheduled pod.
        """
        if result not in RESULTS:
            raise ValueError(f"result: Unsupported value: {result!r}: supported values: {', '.join(RESULTS)}")
        self._attempts.labels(result=result, profile=profile).inc()
        self._attempt_duration.labels(result=result, profile=profile).observe(duration)
        if result == "scheduled" and attempts is not None:
            self._pod_attempts.observe(attempts)

    def set_pending(self, counts: Mapping[str, int]) -> None:
        """The number of pending pods per queue (``active``, ``backoff``, ``unschedulable``, ``gated``)."""
        for queue, count in counts.items():
            if queue not in PENDING_QUEUES:
                raise ValueError(
                    f"queue: Unsupported value: {queue!r}: supported values: {', '.join(PENDING_QUEUES)}"
                )
            self._pending.labels(queue=queue).set(count)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)

    # -- serving

    async def serve(self, address: str) -> int:
        """Serve ``/metrics`` and ``/healthz`` on ``host:port`` (port 0: any free one); returns the port."""
        host, port = parse_address(address)
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise OSError(exc.errno, f"cannot serve metrics on {address}: {exc.strerror}") from exc
        self._runner = runner
        bound = runner.addresses[0][1]
        log.info("serving metrics on %s:%d", host, bound)
        return int(bound)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _metrics(self, _request: web.Request) -> web.Response:
        response = web.Response(body=self.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")
