"""Table tests of nrop.suite.e2e.nrt.compare: zone equality (incl. reboot tolerance), the cooldown and
``GetUpdated`` comparisons, list equality, diffs and dumps."""

from __future__ import annotations

import pytest
from nrt_samples import nrt, res, two_zone_nrt, zone

from nrop.suite.e2e.nrt import compare as nrtcompare


@pytest.mark.parametrize(
    ("a", "b", "reboot", "equal", "why"),
    [
        (two_zone_nrt("a"), two_zone_nrt("a", rv="2"), False, True, ""),
        (two_zone_nrt("a"), two_zone_nrt("a", cpu0="16"), False, False, "mismatched resource Available"),
        (two_zone_nrt("a"), nrt("a", two_zone_nrt("a")["zones"][0]), False, False, "unequal zone count"),
        (
            two_zone_nrt("a"),
            two_zone_nrt("a", mem0="19Gi"),
            False,
            False,
            "mismatched total memory available",
        ),
        # zone order does not matter
        (two_zone_nrt("a"), nrt("a", *reversed(two_zone_nrt("a")["zones"])), False, True, ""),
        # reboot: memory moved between zones by 10Mi, node total unchanged
        (two_zone_nrt("a"), two_zone_nrt("a", mem0="20490Mi", mem1="21494Mi"), True, True, ""),
        (two_zone_nrt("a"), two_zone_nrt("a", mem0="20490Mi", mem1="21494Mi"), False, False, "Available"),
        # reboot: the node total may not drop by 64KiB (upstream: -dev <= initial - updated < dev)
        (two_zone_nrt("a"), two_zone_nrt("a", mem0="20971456Ki"), True, False, "total memory available"),
        # reboot: a zone moved by 60Mi is beyond the 52Mi tolerance
        (
            two_zone_nrt("a"),
            two_zone_nrt("a", mem0="20420Mi", mem1="21564Mi"),
            True,
            False,
            "resource 'memory'",
        ),
    ],
)
def test_equal_zones(a, b, reboot, equal, why) -> None:
    ok, reason = nrtcompare.equal_zones(a["zones"], b["zones"], reboot)
    assert ok is equal
    assert why in reason


def test_equal_zones_tolerates_device_drift_in_reboot_tests_only() -> None:
    dev = "example.com/deviceA"
    a = nrt("a", zone("node-0", res(dev, "6", "6", "6")))
    b = nrt("a", zone("node-0", res(dev, "4", "4", "4")))
    c = nrt("a", zone("node-0", res(dev, "6", "6", "4")))
    assert nrtcompare.equal_zones(a["zones"], b["zones"], True, [dev])[0]
    assert not nrtcompare.equal_zones(a["zones"], b["zones"], False, [dev])[0]
    assert not nrtcompare.equal_zones(a["zones"], c["zones"], True, [dev])[0]  # consumption differs


def test_is_nrt_equal_and_unchanged() -> None:
    ref = two_zone_nrt("a")
    assert nrtcompare.is_nrt_equal(ref, two_zone_nrt("a", cpu0="1"))  # same resourceVersion: equal
    assert not nrtcompare.is_nrt_equal(ref, two_zone_nrt("a", cpu0="1", rv="2"))
    assert nrtcompare.is_nrt_unchanged(ref, two_zone_nrt("a", rv="2"))
    assert not nrtcompare.is_nrt_unchanged(ref, two_zone_nrt("a", rv="2", pfp="pfp0v002"))  # attributes count
    assert not nrtcompare.is_nrt_unchanged(ref, two_zone_nrt("a", rv="2", cpu1="4"))


def test_equal_nrt_lists_items() -> None:
    assert nrtcompare.equal_nrt_lists_items([two_zone_nrt("a")], [two_zone_nrt("b"), two_zone_nrt("a")]) == (
        True,
        "",
    )
    ok, why = nrtcompare.equal_nrt_lists_items([two_zone_nrt("a")], [two_zone_nrt("b")])
    assert not ok and "'a'" in why


def test_nrt_diff_and_dumps() -> None:
    before = [two_zone_nrt("a"), two_zone_nrt("b")]
    after = [two_zone_nrt("a", cpu1="16", mem1="19Gi"), two_zone_nrt("c")]
    text = nrtcompare.nrt_diff(before, after)
    assert text.splitlines() == ["a:", "  node-1: cpu -4, memory -2Gi", "b: missing now", "c: new"]
    assert nrtcompare.nrt_diff(before, before) == "no change"
    dump = nrtcompare.to_string_nrt(before[0])
    assert dump.splitlines()[0] == "a policy=single-numa-node, scope=pod"
    assert "- zone: node-0 [Node]: cpu=20/18/18,memory=24Gi/20Gi/20Gi" in dump
    assert nrtcompare.list_to_string(before, " tag").startswith("NRT BEGIN dump tag\na policy=")
