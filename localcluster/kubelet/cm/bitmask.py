"""NUMA-node bitmask arithmetic, on ``frozenset[int]`` masks, with upstream's orderings.

Upstream's ``topologymanager/bitmask`` package stores a mask as a ``uint64``; here a mask is
the set of its bit numbers (the same value :class:`~nrop.localcluster.kubelet.cm.hints.TopologyHint`
carries).  What matters for identical decisions is kept exactly: the iteration order of
``IterateBitMasks`` (by size, then lexicographically), "narrower" (fewer bits, then the lower
numeric value) and the ``String()`` rendering used as a map key by the memory manager.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import combinations

__all__ = [
    "MAX_BIT",
    "count",
    "is_narrower",
    "iterate_bitmasks",
    "mask_string",
    "mask_value",
    "narrowest",
]

#: Upstream masks are uint64: bit numbers must be in 0..63.
MAX_BIT = 63


def mask_value(mask: Iterable[int]) -> int:
    """The mask's numeric value, sum(1 << bit); the tie-breaker of every "narrower" comparison."""
    value = 0
    for bit in mask:
        if bit < 0 or bit > MAX_BIT:
            raise ValueError("bit number must be in range 0-63")
        value |= 1 << bit
    return value


def count(mask: frozenset[int]) -> int:
    """Number of bits set (``BitMask.Count``)."""
    return len(mask)


def is_narrower(first: frozenset[int], second: frozenset[int]) -> bool:
    """``first.IsNarrowerThan(second)``: fewer bits set, or as many bits and a lower value."""
    if len(first) == len(second):
        return mask_value(first) < mask_value(second)
    return len(first) < len(second)


def narrowest(first: frozenset[int], second: frozenset[int]) -> frozenset[int]:
    """``NUMAInfo.Narrowest``: ``first`` if it is narrower, otherwise ``second``."""
    return first if is_narrower(first, second) else second


def iterate_bitmasks(bits: Iterable[int]) -> Iterator[frozenset[int]]:
    """All non-empty subsets of ``bits``: by size 1..N, lexicographically within a size.

    The order is upstream's ``IterateBitMasks`` over the bits as given (hint providers pass
    the sorted NUMA node ids), which decides the first-found winner on ties.
    """
    ordered = list(bits)
    for size in range(1, len(ordered) + 1):
        for combo in combinations(ordered, size):
            yield frozenset(combo)


def mask_string(mask: Iterable[int]) -> str:
    """Go's ``bitMask.String()``: binary, zero-padded to an even width chosen by the value.

    The memory manager keys init-container reusable memory by this string, so two masks
    share reuse only when their renderings are equal (they are equal iff the masks are).
    """
    value = mask_value(mask)
    grouping = 2
    for shift in range(64 - grouping, 0, -grouping):
        if value > (1 << shift):
            return format(value, f"0{shift + grouping}b")
    return format(value, f"0{grouping}b")
