"""Immutable sets of logical CPU ids and the Linux list format ("0-3,8,10-11").

Owns the one CPU-set value type the kubelet's CPU manager, topology and
checkpoints share, with the parsing and formatting rules of ``k8s.io/utils/cpuset``
(sorted output, ranges collapsed, ``""`` for the empty set, Go's error texts), so
that strings we write are byte-identical to what an upstream kubelet writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["CPUSet", "CPUSetParseError"]

_GO_INT = re.compile(r"[+-]?[0-9]+")


class CPUSetParseError(ValueError):
    """A string is not in the Linux CPU list format; the text mirrors Go's ``cpuset.Parse``."""


def _atoi(text: str) -> int:
    # strconv.Atoi accepts an optional sign and decimal digits, nothing else (no spaces, no "_").
    if not _GO_INT.fullmatch(text):
        raise CPUSetParseError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


class CPUSet:
    """An immutable set of CPU ids; iteration is always in ascending order."""

    __slots__ = ("_cpus", "_sorted")

    _cpus: frozenset[int]
    _sorted: tuple[int, ...]

    def __init__(self, cpus: Iterable[int] = ()) -> None:
        frozen = frozenset(cpus)
        for cpu in frozen:
            if not isinstance(cpu, int) or cpu < 0:
                raise ValueError(f"CPU ids are non-negative integers, got {cpu!r}")
        object.__setattr__(self, "_cpus", frozen)
        object.__setattr__(self, "_sorted", tuple(sorted(frozen)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CPUSet is immutable")

    # -- construction -----------------------------------------------------------------

    @classmethod
    def of(cls, *cpus: int) -> CPUSet:
        return cls(cpus)

    @classmethod
    def parse(cls, text: str) -> CPUSet:
        """Parse the Linux list format; ``""`` is the empty set (like ``cpuset.Parse``)."""
        if text == "":
            return cls()
        cpus: set[int] = set()
        for element in text.split(","):
            bounds = element.split("-", 1)
            if len(bounds) == 1:
                cpus.add(_atoi(bounds[0]))
                continue
            start, end = _atoi(bounds[0]), _atoi(bounds[1])
            if start > end:
                raise CPUSetParseError(f'invalid range "{element}" ({start} > {end})')
            cpus.update(range(start, end + 1))
        return cls(cpus)

    # -- queries ----------------------------------------------------------------------

    def __iter__(self) -> Iterator[int]:
        return iter(self._sorted)

    def __len__(self) -> int:
        return len(self._cpus)

    def __contains__(self, cpu: object) -> bool:
        return cpu in self._cpus

    def __bool__(self) -> bool:
        return bool(self._cpus)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CPUSet):
            return self._cpus == other._cpus
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._cpus)

    def __repr__(self) -> str:
        return f'CPUSet("{self}")'

    def __str__(self) -> str:
        """The Linux list format, sorted, consecutive ids collapsed into ``a-b``."""
        parts: list[str] = []
        ids = self._sorted
        i = 0
        while i < len(ids):
            j = i
            while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
                j += 1
            parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
            i = j + 1
        return ",".join(parts)

    def size(self) -> int:
        return len(self._cpus)

    def is_empty(self) -> bool:
        return not self._cpus

    def to_list(self) -> list[int]:
        return list(self._sorted)

    def as_frozenset(self) -> frozenset[int]:
        return self._cpus

    def is_subset_of(self, other: CPUSet) -> bool:
        return self._cpus <= other._cpus

    def is_superset_of(self, other: CPUSet) -> bool:
        return self._cpus >= other._cpus

    # -- algebra (always returns new sets) ---------------------------------------------

    def union(self, *others: CPUSet | Iterable[int]) -> CPUSet:
        result = set(self._cpus)
        for other in others:
            result.update(other._cpus if isinstance(other, CPUSet) else other)
        return CPUSet(result)

    def intersection(self, other: CPUSet | Iterable[int]) -> CPUSet:
        return CPUSet(self._cpus & (other._cpus if isinstance(other, CPUSet) else frozenset(other)))

    def difference(self, other: CPUSet | Iterable[int]) -> CPUSet:
        return CPUSet(self._cpus - (other._cpus if isinstance(other, CPUSet) else frozenset(other)))

    def __or__(self, other: CPUSet) -> CPUSet:
        return self.union(other)

    def __and__(self, other: CPUSet) -> CPUSet:
        return self.intersection(other)

    def __sub__(self, other: CPUSet) -> CPUSet:
        return self.difference(other)
