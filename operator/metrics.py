"""Prometheus metrics of the operator: reconciliations, errors and their durations, per controller."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

__all__ = ["ERRORS", "RECONCILE_SECONDS", "RECONCILIATIONS", "WORKQUEUE_ADDS", "declare", "measure"]

RECONCILIATIONS = Counter(
    "nrop_operator_reconciliations",
    "Reconciliations run, by controller and outcome condition",
    ["controller", "result"],
)
ERRORS = Counter(
    "nrop_operator_reconcile_errors", "Reconciliations that failed on an API error", ["controller"]
)
#: controller-runtime's name and labels: the suites read ``workqueue_adds_total{controller,name}``.
WORKQUEUE_ADDS = Counter(
    "workqueue_adds", "Reconciliation requests queued, by controller", ["controller", "name"]
)
RECONCILE_SECONDS = Histogram(
    "nrop_operator_reconcile_duration_seconds", "Duration of one reconciliation", ["controller"]
)


def declare(controllers: tuple[str, ...]) -> None:
    """Create each controller's series at 0 at start-up, as controller-runtime creates its queues' metrics."""
    for controller in controllers:
        WORKQUEUE_ADDS.labels(controller, controller)
        ERRORS.labels(controller)


@contextmanager
def measure(controller: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        RECONCILE_SECONDS.labels(controller).observe(time.monotonic() - start)
