"""Table tests of nrop.suite.nrt: filters, zone accessors, equality (incl. reboot tolerance), diffs."""

from __future__ import annotations

import pytest
from suite_nrt_samples import nrt, res, two_zone_nrt, zone

from nrop.api.quantity import parse
from nrop.suite import nrt as n
from nrop.suite.resourcelist import of


def names(nrts) -> list[str]:
    return [x["metadata"]["name"] for x in nrts]


def test_filters() -> None:
    nrts = [
        two_zone_nrt("a"),
        two_zone_nrt("b", scope="container"),
        two_zone_nrt("c", policy="restricted"),
        nrt("d", zone("node-0", res("cpu", "4")), policy=None),
    ]
    assert names(n.filter_by_policy(nrts, "single-numa-node")) == ["a", "b"]
    assert names(n.filter_by_scope(nrts, "pod")) == ["a", "c", "d"]
    assert names(n.filter_by_policy_and_scope(nrts, "single-numa-node", "container")) == ["b"]
    assert names(n.filter_zone_count_equal(nrts, 1)) == ["d"]
    assert names(n.filter_by_node_names(nrts, ["c", "x", "a"])) == ["c", "a"]
    assert n.accumulate_names(nrts) == {"a", "b", "c", "d"}
    assert n.find(nrts, "b") is nrts[1]
    assert n.find(nrts, "zz") is None


@pytest.mark.parametrize(
    ("request_", "any_zone", "any_node"),
    [
        ({"cpu": "18"}, ["a"], ["a"]),
        ({"cpu": "20"}, ["a"], ["a"]),
        ({"cpu": "21"}, [], ["a"]),
        ({"cpu": "30", "ephemeral-storage": "100Gi"}, [], ["a"]),
        ({"cpu": "2", "example.com/none": "1"}, [], []),
        ({"cpu": "39"}, [], []),
    ],
)
def test_matching_resources(request_, any_zone, any_node) -> None:
    nrts = [two_zone_nrt("a")]
    assert names(n.filter_any_zone_matching_resources(nrts, of(request_))) == any_zone
    assert names(n.filter_any_node_matching_resources(nrts, of(request_))) == any_node


def test_zone_accessors() -> None:
    obj = two_zone_nrt("a", cpu0="10")
    z0 = obj["zones"][0]
    assert n.available_from_zone(z0) == of(cpu=10, memory="20Gi")
    assert n.allocatable_from_zone(z0) == of(cpu=18, memory="20Gi")
    assert n.capacity_from_zone(z0) == of(cpu=20, memory="24Gi")
    assert n.zone_resources(obj)["node-1"] == of(cpu=20, memory="21Gi")
    assert n.accumulate_node_available(obj) == of(cpu=30, memory="41Gi")
    assert n.max_allocatable_numa_level(obj, "memory") == parse("21Gi")
    assert not n.numacell_resource_found(z0)
    assert n.numacell_resource_found(zone("node-0", res("kni.node/numacell00", "15")))
    assert n.pod_fingerprint(obj) == "pfp0v001a"


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
    ok, reason = n.equal_zones(a["zones"], b["zones"], reboot)
    assert ok is equal
    assert why in reason


def test_equal_zones_tolerates_device_drift_in_reboot_tests_only() -> None:
    dev = "example.com/deviceA"
    a = nrt("a", zone("node-0", res(dev, "6", "6", "6")))
    b = nrt("a", zone("node-0", res(dev, "4", "4", "4")))
    c = nrt("a", zone("node-0", res(dev, "6", "6", "4")))
    assert n.equal_zones(a["zones"], b["zones"], True, [dev])[0]
    assert not n.equal_zones(a["zones"], b["zones"], False, [dev])[0]
    assert not n.equal_zones(a["zones"], c["zones"], True, [dev])[0]  # consumption differs


def test_is_nrt_equal_and_unchanged() -> None:
    ref = two_zone_nrt("a")
    assert n.is_nrt_equal(ref, two_zone_nrt("a", cpu0="1"))  # same resourceVersion: equal
    assert not n.is_nrt_equal(ref, two_zone_nrt("a", cpu0="1", rv="2"))
    assert n.is_nrt_unchanged(ref, two_zone_nrt("a", rv="2"))
    assert not n.is_nrt_unchanged(ref, two_zone_nrt("a", rv="2", pfp="pfp0v002"))  # attributes count
    assert not n.is_nrt_unchanged(ref, two_zone_nrt("a", rv="2", cpu1="4"))


def test_equal_nrt_lists_items() -> None:
    assert n.equal_nrt_lists_items([two_zone_nrt("a")], [two_zone_nrt("b"), two_zone_nrt("a")]) == (True, "")
    ok, why = n.equal_nrt_lists_items([two_zone_nrt("a")], [two_zone_nrt("b")])
    assert not ok and "'a'" in why


@pytest.mark.parametrize(
    ("updated", "required", "qos", "zone_hit", "node_hit"),
    [
        (
            two_zone_nrt("a", cpu1="16", mem1="20Gi"),
            {"cpu": "4", "memory": "1Gi"},
            "Guaranteed",
            "node-1",
            "a",
        ),
        (two_zone_nrt("a", cpu1="16"), {"cpu": "4", "memory": "1Gi"}, "Guaranteed", "", ""),
        (two_zone_nrt("a"), {"cpu": "4", "memory": "1Gi"}, "Burstable", "node-0", "a"),
        (two_zone_nrt("a", cpu0="14"), {"cpu": "4", "ephemeral-storage": "1Gi"}, "Guaranteed", "node-0", "a"),
        (two_zone_nrt("a", cpu0="16", cpu1="18"), {"cpu": "4"}, "Guaranteed", "", "a"),
    ],
)
def test_consumed_resources_at_least(updated, required, qos, zone_hit, node_hit) -> None:
    initial = two_zone_nrt("a")
    assert n.check_zone_consumed_resources_at_least(initial, updated, of(required), qos) == zone_hit
    assert n.check_node_consumed_resources_at_least(initial, updated, of(required), qos) == node_hit
    assert n.check_consumed_resources_for_scope("pod", initial, updated, of(required), qos) == zone_hit
    assert n.check_consumed_resources_for_scope("container", initial, updated, of(required), qos) == node_hit


def test_check_equal_available_resources() -> None:
    assert n.check_equal_available_resources(two_zone_nrt("a"), two_zone_nrt("a", rv="3"))
    assert not n.check_equal_available_resources(two_zone_nrt("a"), two_zone_nrt("a", mem1="1Gi"))
    with pytest.raises(ValueError, match="cannot find zone"):
        n.check_equal_available_resources(two_zone_nrt("a"), nrt("a", two_zone_nrt("a")["zones"][0]))


def test_nrt_diff_and_dumps() -> None:
    before = [two_zone_nrt("a"), two_zone_nrt("b")]
    after = [two_zone_nrt("a", cpu1="16", mem1="19Gi"), two_zone_nrt("c")]
    text = n.nrt_diff(before, after)
    assert text.splitlines() == ["a:", "  node-1: cpu -4, memory -2Gi", "b: missing now", "c: new"]
    assert n.nrt_diff(before, before) == "no change"
    dump = n.to_string_nrt(before[0])
    assert dump.splitlines()[0] == "a policy=single-numa-node, scope=pod"
    assert "- zone: node-0 [Node]: cpu=20/18/18,memory=24Gi/20Gi/20Gi" in dump
    assert n.list_to_string(before, " tag").startswith("NRT BEGIN dump tag\na policy=")


@pytest.mark.parametrize(
    ("nrops", "seconds"),
    [
        ([], 10.0),
        ([{"spec": {"nodeGroups": [{"poolName": "worker"}]}}], 10.0),
        ([{"spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": "5s"}}]}}], 5.0),
        (
            [
                {
                    "spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": "5s"}}]},
                    "status": {"nodeGroups": [{"config": {"infoRefreshPeriod": "1m"}}]},
                }
            ],
            60.0,
        ),
        ([{"status": {"machineConfigPools": [{"config": {"infoRefreshPeriod": "20s"}}]}}], 20.0),
        ([{"spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": "soon"}}]}}], 10.0),
    ],
)
def test_refresh_period_of(nrops, seconds) -> None:
    assert n.refresh_period_of(nrops) == seconds


@pytest.mark.parametrize(
    ("res", "want"),
    [
        ({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
        ({"cpu": "2", "ephemeral-storage": "1Gi", "storage": "1Gi"}, {"cpu": "2"}),
        (
            {"example.com/deviceA": "1", "hugepages-2Mi": "32Mi"},
            {"example.com/deviceA": "1", "hugepages-2Mi": "32Mi"},
        ),
        ({"ephemeral-storage": "1Gi"}, {}),
        ({}, {}),
    ],
)
def test_filter_only_numa_affine_resources(res, want) -> None:
    assert n.filter_only_numa_affine_resources(of(res), "tag") == of(want)


@pytest.mark.parametrize(
    ("available", "name", "qty", "on_equal", "providing"),
    [
        ({"cpu": "4"}, "cpu", "2", True, True),
        ({"cpu": "4"}, "cpu", "4", True, True),
        ({"cpu": "4"}, "cpu", "4", False, False),
        ({"cpu": "4"}, "cpu", "5", True, False),
        ({"cpu": "4"}, "memory", "1", True, False),
        ({"memory": "1Gi"}, "memory", "1024Mi", True, True),
    ],
)
def test_resource_providing(available, name: str, qty: str, on_equal: bool, providing: bool) -> None:
    assert n.resource_providing(of(available), name, parse(qty), on_equal) is providing


@pytest.mark.parametrize(
    ("available", "requests", "match"),
    [
        ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "1Gi"}, True),
        ({"cpu": "4", "memory": "2Gi"}, {"cpu": "5"}, False),
        ({"cpu": "4"}, {"cpu": "1", "memory": "1Gi"}, False),
        ({"cpu": "4"}, {}, True),
    ],
)
def test_resources_match_request(available, requests, match: bool) -> None:
    assert n.resources_match_request(of(available), of(requests)) is match
