"""Replacements for the (emulated) kubelet's defects (``catalog.yaml``): each factory takes the
original function and returns the broken one, reaching the product only through it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def tm_ignores_pod_scope(original: Fn) -> Fn:
    """The topology manager admits container by container even when configured with scope ``pod``."""

    @functools.wraps(original)
    def admit(self: Any, containers: Any, **kwargs: Any) -> Any:
        configured = self.scope
        self.scope = type(configured)("container")
        try:
            return original(self, containers, **kwargs)
        finally:
            self.scope = configured

    return admit


def single_numa_admits_anything(original: Fn) -> Fn:
    """``single-numa-node`` admits a pod even when no hint fits one NUMA node."""

    @functools.wraps(original)
    def merge(self: Any, providers_hints: Any) -> Any:
        best, _ = original(self, providers_hints)
        return best, True

    return merge


def cpus_not_aligned(original: Fn) -> Fn:
    """The CPU manager takes exclusive CPUs from any NUMA node, ignoring the topology affinity."""

    @functools.wraps(original)
    def _aligned_cpus(self: Any, affinity: Any, allocatable: Any) -> Any:
        return allocatable

    return _aligned_cpus


def memory_ignores_affinity(original: Fn) -> Fn:
    """The memory manager places a container's memory from NUMA node 0 on, whatever the topology
    manager's affinity (the CPUs still follow it)."""

    @functools.wraps(original)
    def allocate(self: Any, pod: Any, container: Any, affinity: Any) -> Any:
        if affinity.numa_nodes is not None:
            affinity = type(affinity)(frozenset({0}), affinity.preferred)
        return original(self, pod, container, affinity)

    return allocate


def device_numa_lost(original: Fn) -> Fn:
    """The device manager forgets the NUMA node devices were registered with."""

    @functools.wraps(original)
    def _device_nodes(self: Any, resource: str, device_id: str) -> tuple[int, ...]:
        return ()

    return _device_nodes
