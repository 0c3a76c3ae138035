"""Table tests of nrop.suite.e2e.nrt.topologies: filters, zone accessors, resource-fit queries."""

from __future__ import annotations

import pytest
from nrt_samples import nrt, res, two_zone_nrt, zone

from nrop.api.quantity import parse
from nrop.suite.e2e.nrt import topologies as n
from nrop.suite.e2e.resourcelist import of


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
