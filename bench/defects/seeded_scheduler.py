"""Replacements for the scheduler's defects (``catalog.yaml``): each factory takes the original
function and returns the broken one. They reach the product only through the original (its
module's globals), never by import, so no product module is imported from here."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def pod_scope_always_fits(original: Fn) -> Fn:
    """Pod scope: every pod fits a NUMA node, whatever is left on them."""
    status = original.__globals__["Status"]

    @functools.wraps(original)
    def single_numa_pod_level(*args: Any, **kwargs: Any) -> Any:
        return status.success()

    return single_numa_pod_level


def container_scope_no_accounting(original: Fn) -> Fn:
    """Container scope: a container's requests are not taken off the NUMA node it lands on."""

    @functools.wraps(original)
    def subtract_from_numa_node(*args: Any, **kwargs: Any) -> str | None:
        return None

    return subtract_from_numa_node


def _ignoring(original: Fn, ignored: Callable[[str], bool]) -> Fn:
    @functools.wraps(original)
    def resources_available_in_any_numa_node(
        numa_nodes: Any, requests: Any, qos: str, node_resources: Any
    ) -> Any:
        kept = {name: amount for name, amount in requests.items() if not ignored(name)}
        return original(numa_nodes, kept, qos, node_resources)

    return resources_available_in_any_numa_node


def filter_ignores_memory(original: Fn) -> Fn:
    """The NUMA fit check forgets ``memory``."""
    return _ignoring(original, lambda name: name == "memory")


def filter_ignores_hugepages(original: Fn) -> Fn:
    """The NUMA fit check forgets ``hugepages-*``."""
    return _ignoring(original, lambda name: name.startswith("hugepages-"))


def filter_ignores_devices(original: Fn) -> Fn:
    """The NUMA fit check forgets extended resources (devices): only cpu, memory, hugepages count."""
    return _ignoring(
        original, lambda name: name not in ("cpu", "memory") and not name.startswith("hugepages-")
    )


def score_strategy_ignored(original: Fn) -> Fn:
    """Every NUMA score strategy but LeastNUMANodes scores as LeastAllocated, the default."""
    strategies = original.__globals__["ScoringStrategyType"]

    @functools.wraps(original)
    def score_with_parsed(pod: Any, qos: str, topology: Any, strategy: Any, weights: Any) -> int:
        if strategy is not strategies.LEAST_NUMA_NODES:
            strategy = strategies.LEAST_ALLOCATED
        return original(pod, qos, topology, strategy, weights)

    return score_with_parsed


def cache_never_resyncs(original: Fn) -> Fn:
    """The over-reserve cache never flushes a dirty node: what it reserved stays reserved."""
    report = original.__globals__["ResyncReport"]

    @functools.wraps(original)
    def resync(self: Any, get_nrt: Any, list_pods: Any) -> Any:
        return report(self.generation)

    return resync


def cache_trusts_any_nrt(original: Fn) -> Fn:
    """The resync gate trusts any NRT, fingerprint or not: dirty nodes are flushed too eagerly."""

    @functools.wraps(original)
    def _fingerprint_gate(self: Any, nrt: Any, pods: Any) -> str | None:
        return None

    return _fingerprint_gate


def cache_forgets_reservations(original: Fn) -> Fn:
    """The over-reserve cache reserves nothing: pods bound since the last NRT update are not counted."""

    @functools.wraps(original)
    def reserve(self: Any, node_name: str, pod: Any) -> None:
        return None

    return reserve


def fingerprint_method_ignored(original: Fn) -> Fn:
    """The NRT's fingerprint is always taken to cover all pods, whatever method it was computed with."""

    @functools.wraps(original)
    def pod_fingerprint_for_node_topology(nrt: Any, method: Any) -> tuple[str, bool]:
        value, _ = original(nrt, method)
        return value, False

    return pod_fingerprint_for_node_topology
