"""Tests of nrop.suite.e2e.fixture's node choice (E2E_NROP_TARGET_NODE); the lifecycle runs against a
real cluster in tests/e2e/test_suite_library_e2e.py."""

from __future__ import annotations

import random

import pytest

from nrop.suite.e2e import fixture as f


@pytest.mark.parametrize(
    ("names", "env", "picked", "left"),
    [
        ({"a", "b"}, {"E2E_NROP_TARGET_NODE": "b"}, "b", {"a"}),
        ({"a"}, {"E2E_NROP_TARGET_NODE": "z"}, "a", set()),
        ({"a"}, {}, "a", set()),
        (set(), {}, None, set()),
    ],
)
def test_pop_node_name(names, env, picked, left) -> None:
    assert f.pop_node_name(names, env) == picked
    assert names == left


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, (0, True)),
        ({"E2E_NROP_TARGET_NODE": "w1"}, (1, True)),
        ({"E2E_NROP_TARGET_NODE": "zz"}, (0, False)),
    ],
)
def test_pick_node_index(env, want) -> None:
    nodes = [{"metadata": {"name": "w0"}}, {"metadata": {"name": "w1"}}]
    assert f.pick_node_index(nodes, env) == want


def test_cooldown_message_is_upstreams() -> None:
    assert f.COOLDOWN_FAILED == "cooldown failed, the NRT data did not settle back to the initial state"


@pytest.mark.parametrize(
    ("offset", "picked"),
    [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (7, "a")],
)
def test_pop_node_name_without_target_is_go_pop_any(
    offset, picked, go_map_starts: type[random.Random]
) -> None:
    """``sets.Set.PopAny`` over names inserted in NRT-list (name) order: one Go map iteration."""
    names = {"c", "a", "b"}
    assert f.pop_node_name(names, {}, go_map_starts(offset)) == picked
    assert picked not in names and len(names) == 2
