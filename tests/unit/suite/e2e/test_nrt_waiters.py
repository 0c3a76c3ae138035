"""Tests of nrop.suite.e2e.nrt.waiters: the pod-fingerprint settle counting (a table) and the NRT
waits on a fake cluster whose NRTs follow a script, one step per look."""

from __future__ import annotations

import pytest
from nrt_samples import ScriptedNRTs, two_zone_nrt

from nrop.suite.e2e.nrt import waiters as nw
from nrop.suite.e2e.wait.polling import WaitTimeout


@pytest.mark.parametrize(
    ("observations", "threshold", "counts", "all_ready"),
    [
        ([("a", "p1")] * 5, 5, {"a": 5}, True),
        ([("a", "p1")] * 4, 5, {"a": 4}, False),
        ([("a", "p1"), ("a", "p1"), ("a", "p2"), ("a", "p2")], 2, {"a": 2}, True),
        ([("a", "p1"), ("b", "q"), ("a", "p1"), ("b", "q2")], 2, {"a": 2, "b": 1}, False),
        ([("a", "p1"), ("a", "p2"), ("a", "p1")], 2, {"a": 1}, False),
    ],
)
def test_pfp_state(observations, threshold, counts, all_ready) -> None:
    state = nw.PFPState()
    for node, value in observations:
        state.observe(node, value)
    assert {node: count for node, (_, count) in state.counts.items()} == counts
    assert state.all_ready(threshold) is all_ready
    assert state.count_ready(threshold) == sum(c >= threshold for c in counts.values())


def _cpu0(nrt: dict) -> str:
    return nrt["zones"][0]["resources"][0]["available"]


def test_for_nrts_returns_each_node_once_the_predicate_holds() -> None:
    kube = ScriptedNRTs(
        {
            "w1": [None, two_zone_nrt("w1", cpu0="18"), two_zone_nrt("w1", cpu0="10")],
            "w2": [two_zone_nrt("w2", cpu0="10")],
        }
    )
    got = nw.for_nrts(kube, ["w1", "w2"], lambda nrt: _cpu0(nrt) == "10", "to drop", 5.0, interval=0.01)
    assert list(got) == ["w1", "w2"]
    assert [_cpu0(nrt) for nrt in got.values()] == ["10", "10"]
    assert kube.looks == {"w1": 3, "w2": 1}


@pytest.mark.parametrize(
    "script",
    [[None], [two_zone_nrt("w1", cpu0="18")]],
    ids=["missing", "never-matching"],
)
def test_for_nrts_names_the_node_it_waited_for(script) -> None:
    kube = ScriptedNRTs({"w1": script})
    with pytest.raises(WaitTimeout, match=r"^expected NRT w1 to drop within 0.05s"):
        nw.for_nrts(kube, ["w1"], lambda nrt: _cpu0(nrt) == "10", "to drop", 0.05, interval=0.01)


def test_for_nrts_equal_to_waits_for_the_reference_and_shows_the_diff() -> None:
    reference = [two_zone_nrt("w1", rv="1")]
    busy, back = two_zone_nrt("w1", cpu0="10", rv="2"), two_zone_nrt("w1", rv="3")
    assert nw.for_nrts_equal_to(
        ScriptedNRTs({"w1": [busy, back]}), reference, interval=0.01, timeout=5.0
    ) == [back]
    with pytest.raises(WaitTimeout, match=r"(?s)different: \['w1'\].*reference -> current:\nw1:.*cpu \+?-8"):
        nw.for_nrts_equal_to(ScriptedNRTs({"w1": [busy]}), reference, interval=0.01, timeout=0.05)


def test_for_nrts_equal_to_ends_when_a_reference_nrt_is_gone() -> None:
    kube = ScriptedNRTs({"w1": [None]})
    with pytest.raises(WaitTimeout, match=r"missing: \['w1'\]"):
        nw.for_nrts_equal_to(kube, [two_zone_nrt("w1")], interval=0.01, timeout=30.0)


def test_for_nrts_settled() -> None:
    kube = ScriptedNRTs(
        {
            "w1": [two_zone_nrt("w1", pfp="a"), two_zone_nrt("w1", pfp="b")],
            "w2": [two_zone_nrt("w2", pfp="c")],
        }
    )
    assert len(nw.for_nrts_settled(kube, 3, interval=0.01, timeout=5.0)) == 2
    assert kube.looks == {"w1": 4, "w2": 4}
    with pytest.raises(WaitTimeout, match=r"can no longer happen(?s:.*)missing PFP: \['w3'\]"):
        nw.for_nrts_settled(
            ScriptedNRTs({"w3": [two_zone_nrt("w3", pfp=None)]}), 3, interval=0.01, timeout=5.0
        )
