"""Go map iteration order, for ports of Go code whose output depends on it.

Go randomises the order in which ``for k := range m`` visits a map, and upstream code
that builds lists from maps (the exporter's zone resources) or picks "any" element of a
set (``sets.Set.PopAny``: the padder's and the tests' node choice) inherits that order.
:class:`GoMap` reproduces what the Go runtime does, with the random source injected:

* a map of at most :data:`GROUP_SLOTS` (8) entries lives in one group of 8 slots: an
  insertion takes the first free slot, a deletion frees its slot. An iteration starts at
  slot ``r % 8`` for a fresh random ``r`` and walks the slots cyclically, skipping free
  ones. Both the classic hashmap (one bucket, ``B = 0``) and the Swiss tables of Go 1.24+
  (a small map) behave so: the order is a rotation of the slot order, and a slot is
  picked first with probability ``1/8`` each, the first occupied slot at or after a free
  run taking the free slots' share too;
* a bigger map spreads its keys over a table by a hash seeded per map: the layout is
  fixed for the map's life and unknowable from outside, so it is drawn from the random
  source when the map grows (load factor 7/8, capacity a power of two); an iteration
  walks that table cyclically from a random slot, as Swiss tables do.

Pure: no I/O, the random source is a parameter.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Iterator
from typing import Final, Generic, TypeVar

__all__ = ["GROUP_SLOTS", "GoMap"]

#: Slots of one group (Swiss tables) or bucket (classic hashmap).
GROUP_SLOTS: Final = 8
_LOAD_NUM, _LOAD_DEN = 7, 8

K = TypeVar("K", bound=Hashable)


class GoMap(Generic[K]):
    """The keys of a Go map (or ``sets.Set``) in slot order; see the module docstring.

    ``rng`` draws the layout of a map that outgrows one group and is the default source
    of the per-iteration start offsets.
    """

    def __init__(self, keys: Iterable[K] = (), rng: random.Random | None = None) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._slots: list[K | None] = [None] * GROUP_SLOTS
        self._len = 0
        for key in keys:
            self.insert(key)

    def __len__(self) -> int:
        return self._len

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    @property
    def capacity(self) -> int:
        return len(self._slots)

    def slots(self) -> list[K | None]:
        """The slot array (``None``: free), for tests and messages."""
        return list(self._slots)

    def insert(self, key: K) -> None:
        """``m[key] = ...`` / ``Set.Insert``: a new key takes a slot, an existing one stays."""
        if key in self._slots:
            return
        if self._len + 1 > self._max_len(len(self._slots)):
            self._grow()
        free = [idx for idx, slot in enumerate(self._slots) if slot is None]
        idx = free[0] if len(self._slots) == GROUP_SLOTS else self._rng.choice(free)
        self._slots[idx] = key
        self._len += 1

    def delete(self, key: K) -> None:
        """``delete(m, key)`` / ``Set.Delete``: frees the key's slot (absent keys are ignored)."""
        for idx, slot in enumerate(self._slots):
            if slot == key:
                self._slots[idx] = None
                self._len -= 1
                return

    def iterate(self, rng: random.Random | None = None) -> list[K]:
        """The keys in the order one ``for k := range m`` visits them."""
        return list(self._walk(rng))

    def pop_any(self, rng: random.Random | None = None) -> K:
        """``sets.Set.PopAny``: the first key an iteration visits, deleted; ``KeyError`` when empty."""
        for key in self._walk(rng):
            self.delete(key)
            return key
        raise KeyError("pop from an empty map")

    # -- internals
    @staticmethod
    def _max_len(capacity: int) -> int:
        return GROUP_SLOTS if capacity == GROUP_SLOTS else capacity * _LOAD_NUM // _LOAD_DEN

    def _grow(self) -> None:
        keys = [slot for slot in self._slots if slot is not None]
        capacity = len(self._slots) * 2
        while self._len + 1 > self._max_len(capacity):
            capacity *= 2
        self._slots = [None] * capacity
        for key, idx in zip(keys, self._rng.sample(range(capacity), len(keys)), strict=True):
            self._slots[idx] = key

    def _walk(self, rng: random.Random | None) -> Iterator[K]:
        source = rng if rng is not None else self._rng
        capacity = len(self._slots)
        offset = source.getrandbits(64) % capacity
        for step in range(capacity):
            key = self._slots[(offset + step) % capacity]
            if key is not None:
                yield key
