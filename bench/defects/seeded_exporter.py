"""Replacements for the resource topology exporter's defects (``catalog.yaml``): each factory takes
the original function and returns the broken one, reaching the product only through it."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def _usage_forgets(original: Fn, strip: Callable[[Any], Any]) -> Fn:
    """``scan`` whose zones count the pods' containers as ``strip`` leaves them; everything else
    (fingerprint, NUMA placement, attributes) from the pods as they are."""

    @functools.wraps(original)
    def scan(machine: Any, resources: Any, pods: Any, options: Any = None, rng: Any = None) -> Any:
        result = original(machine, resources, pods, options, rng)
        stripped = [
            dataclasses.replace(pod, containers=tuple(strip(c) for c in pod.containers)) for pod in pods
        ]
        result.zones = original(machine, resources, stripped, options, rng).zones
        return result

    return scan


def cpus_not_accounted(original: Fn) -> Fn:
    """Exclusive CPUs of running containers are not taken off their zone's ``available``."""
    return _usage_forgets(original, lambda c: dataclasses.replace(c, cpu_ids=()))


def memory_not_accounted(original: Fn) -> Fn:
    """Memory pinned by the memory manager is not taken off its zone's ``available``."""
    return _usage_forgets(
        original, lambda c: dataclasses.replace(c, memory=tuple(m for m in c.memory if m.type != "memory"))
    )


def hugepages_counted_as_pages(original: Fn) -> Fn:
    """Hugepages blocks are counted one per block (as pages) instead of by their size in bytes."""

    @functools.wraps(original)
    def to_counters(entries: Any) -> Any:
        entries = list(entries)
        counters = original([e for e in entries if not e.resource.startswith("hugepages-")])
        for entry in entries:
            if entry.resource.startswith("hugepages-"):
                for numa in entry.numa_nodes or ():
                    node = counters.setdefault(numa, {})
                    node[entry.resource] = node.get(entry.resource, 0) + len(entry.ids)
        return counters

    return to_counters


def device_numa_lost(original: Fn) -> Fn:
    """The NUMA affinity of assigned devices is dropped when the podresources answer is read."""

    @functools.wraps(original)
    def _device(message: Any) -> Any:
        return dataclasses.replace(original(message), numa_nodes=None)

    return _device


def _without_attributes(original: Fn, names: Callable[[str], bool]) -> Fn:
    @functools.wraps(original)
    def update_nrt_info(obj: Any, result: Any, tm: Any, trigger: Any) -> Any:
        out = original(obj, result, tm, trigger)
        out["attributes"] = [a for a in out["attributes"] if not names(a["name"])]
        return out

    return update_nrt_info


def no_topology_manager_attributes(original: Fn) -> Fn:
    """The NRT carries no ``topologyManagerPolicy`` / ``topologyManagerScope`` attribute."""
    return _without_attributes(original, lambda name: name.startswith("topologyManager"))


def scope_always_container(original: Fn) -> Fn:
    """The NRT says ``topologyManagerScope: container`` whatever the kubelet's scope."""

    @functools.wraps(original)
    def update_nrt_info(obj: Any, result: Any, tm: Any, trigger: Any) -> Any:
        return original(obj, result, dataclasses.replace(tm, scope="container"), trigger)

    return update_nrt_info


def stale_fingerprint(original: Fn) -> Fn:
    """The pods fingerprint leaves out the most recent pod of the list: it never matches the node."""

    @functools.wraps(original)
    def fingerprint_pods(pods: Any, method: Any, node_name: str = "") -> Any:
        pods = list(pods)
        return original(pods[:-1], method, node_name)

    return fingerprint_pods
