"""Tests of nrop.api.gomaps: Go map iteration order (slot rotation), PopAny, growth."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from nrop.api.gomaps import GROUP_SLOTS, GoMap


@pytest.mark.parametrize(
    ("keys", "offset", "order"),
    [
        pytest.param("abcd", 0, "abcd", id="offset-0-insertion-order"),
        pytest.param("abcd", 1, "bcda", id="offset-1-rotates"),
        pytest.param("abcd", 3, "dabc", id="offset-3-last-first"),
        pytest.param("abcd", 4, "abcd", id="offset-in-free-slots-wraps-to-first"),
        pytest.param("abcd", 7, "abcd", id="offset-7-wraps"),
        pytest.param("abcd", 8 + 2, "cdab", id="offset-modulo-8"),
        pytest.param("a", 5, "a", id="one-key-always-same"),
        pytest.param("abcdefgh", 6, "ghabcdef", id="full-group"),
    ],
)
def test_small_map_iterates_a_rotation_of_the_slot_order(
    keys, offset, order, go_map_starts: type[random.Random]
) -> None:
    assert "".join(GoMap(keys).iterate(go_map_starts(offset))) == order


def test_small_map_start_probabilities_follow_the_free_slots(go_map_starts: type[random.Random]) -> None:
    gomap = GoMap("abc")
    firsts = Counter(gomap.iterate(go_map_starts(off))[0] for off in range(GROUP_SLOTS))
    assert firsts == {"a": 6, "b": 1, "c": 1}


@pytest.mark.parametrize(
    ("offsets", "popped"),
    [
        pytest.param((0, 0, 0), "abc", id="always-first-slot"),
        pytest.param((2, 2, 2), "cab", id="start-at-c-then-wrap"),
        pytest.param((1, 1, 1), "bca", id="b-then-c-then-wrap-to-a"),
        pytest.param((5, 1, 0), "abc", id="free-slot-offsets-favour-a"),
    ],
)
def test_pop_any_takes_the_first_visited_key_and_frees_its_slot(
    offsets, popped, go_map_starts: type[random.Random]
) -> None:
    gomap = GoMap("abc")
    rng = go_map_starts(*offsets)
    assert "".join(gomap.pop_any(rng) for _ in range(3)) == popped
    assert len(gomap) == 0
    with pytest.raises(KeyError):
        gomap.pop_any(go_map_starts(0))


def test_deleted_slot_is_reused_by_the_next_insert() -> None:
    gomap = GoMap("abc")
    gomap.delete("a")
    gomap.insert("d")
    gomap.insert("b")  # present: stays where it is
    assert gomap.slots()[:3] == ["d", "b", "c"]


def test_big_map_keeps_its_layout_and_rotates_per_iteration(go_map_starts: type[random.Random]) -> None:
    keys = [f"k{i}" for i in range(12)]
    gomap = GoMap(keys, rng=random.Random(7))
    assert gomap.capacity == 16 and len(gomap) == 12
    ring = [k for k in gomap.slots() if k is not None]
    for offset in range(16):
        order = gomap.iterate(go_map_starts(offset))
        assert sorted(order) == sorted(keys)
        start = ring.index(order[0])
        assert order == ring[start:] + ring[:start]


def test_iterations_differ_from_one_another() -> None:
    rng = random.Random(1)
    gomap = GoMap(["cpu", "memory", "hugepages-2Mi", "hugepages-1Gi"])
    assert len({tuple(gomap.iterate(rng)) for _ in range(50)}) == 4
