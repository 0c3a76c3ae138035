"""The topology hint that hint providers (CPU, memory, device managers) hand to the topology manager.

Plain data, shared by every provider and the topology manager, so that none of them
imports another: ``numa_nodes`` is upstream's ``NUMANodeAffinity`` bitmask written as a
set of NUMA node ids (``None`` = any NUMA node), ``preferred`` is upstream's ``Preferred``.
A provider returns ``dict[resource name, list[TopologyHint]]``; an empty dict means
"no preference" and an empty list for a resource means "cannot be satisfied".
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TopologyHint"]


@dataclass(frozen=True, slots=True)
class TopologyHint:
    numa_nodes: frozenset[int] | None
    preferred: bool
