"""The NRT model, the packaged CRD, and the diff the suite uses to explain failures."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from nrop.api import crds, nrt
from nrop.api.nrt import (
    AttributeInfo,
    NodeResourceTopology,
    ResourceInfo,
    TopologyManagerConfig,
    Zone,
    diff_available,
    format_diff,
    merge_attributes,
    numa_id_from_zone_name,
    topology_manager_config,
    zone_name_from_numa_id,
)
from nrop.api.quantity import QUANTITY_PATTERN, parse

FINGERPRINT = "pfp0v001607b76a0e9d3aeb4"


def example() -> dict[str, Any]:
    """The object the exporter publishes, as the API returns it."""
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {
            "name": "worker-0",
            "resourceVersion": "42",
            "annotations": {"k8stopoawareschedwg/rte-update": "periodic"},
        },
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
                "resources": [
                    {"name": "cpu", "capacity": "16", "allocatable": "15", "available": "13"},
                    {"name": "memory", "capacity": "68719476736", "allocatable": "64G", "available": "60G"},
                    {"name": "example.com/dev", "capacity": 4, "allocatable": 4, "available": 3},
                ],
            },
            {
                "name": "node-1",
                "type": "Node",
                "costs": [{"name": "node-0", "value": 20}, {"name": "node-1", "value": 10}],
                "resources": [{"name": "cpu", "capacity": "16", "allocatable": "16", "available": "16"}],
            },
        ],
        "attributes": [
            {"name": "nodeTopologyPodsFingerprint", "value": FINGERPRINT},
            {"name": "nodeTopologyPodsFingerprintMethod", "value": "with-exclusive-resources"},
            {"name": "topologyManagerScope", "value": "container"},
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
        ],
    }


def test_from_dict_reads_everything() -> None:
    obj = NodeResourceTopology.from_dict(example())
    assert obj.name == "worker-0"
    assert obj.topology_manager_policy == "single-numa-node"
    assert obj.topology_manager_scope == "container"
    assert obj.pods_fingerprint == FINGERPRINT
    assert obj.pods_fingerprint_method == "with-exclusive-resources"
    assert [z.numa_id for z in obj.numa_zones()] == [0, 1]
    assert obj.available("node-0", "cpu") == 13
    assert obj.available("node-0", "example.com/dev") == 3
    assert obj.available("node-1", "memory") is None
    assert obj.available("node-9", "cpu") is None
    assert obj.zone("node-1").cost_to("node-0") == 20
    assert obj.total("cpu") == 29
    assert obj.total("cpu", "capacity") == 32
    assert obj.resource("node-0", "memory").allocatable == 64 * 10**9


def test_round_trip_keeps_the_wire_form() -> None:
    data = example()
    out = NodeResourceTopology.from_dict(data).to_dict()
    expected = copy.deepcopy(data)
    # An int-or-string integer comes back as the string upstream prints for it.
    for res in expected["zones"][0]["resources"]:
        for key in ("capacity", "allocatable", "available"):
            res[key] = str(res[key])
    assert out == expected
    assert list(out) == ["apiVersion", "kind", "metadata", "zones", "attributes"]
    assert list(out["zones"][0]) == ["name", "type", "costs", "resources"]


def test_to_dict_omits_empty_optional_fields_and_prints_canonically() -> None:
    obj = NodeResourceTopology(
        name="n",
        zones=[Zone("node-0", "Node", resources=[ResourceInfo.of("memory", 2000, 1500, 524288000)])],
    )
    assert obj.to_dict() == {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "n"},
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "resources": [
                    {"name": "memory", "capacity": "2k", "allocatable": "1500", "available": "524288k"}
                ],
            }
        ],
    }


def test_fingerprint_falls_back_to_the_legacy_annotation() -> None:
    data = example()
    del data["attributes"][0]
    data["metadata"]["annotations"]["topology.node.k8s.io/fingerprint"] = "pfp0v001aaaaaaaaaaaaaaaa"
    assert NodeResourceTopology.from_dict(data).pods_fingerprint == "pfp0v001aaaaaaaaaaaaaaaa"


def test_wrong_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="expected kind"):
        NodeResourceTopology.from_dict({"kind": "Node", "metadata": {"name": "x"}})


def test_attribute_helpers_follow_the_api_semantics() -> None:
    attrs = [AttributeInfo("a", "1"), AttributeInfo("b", "2"), AttributeInfo("a", "3")]
    assert nrt.get_attribute(attrs, "a") == "1"
    nrt.set_attribute(attrs, "a", "9")
    nrt.set_attribute(attrs, "c", "4")
    assert attrs == [
        AttributeInfo("a", "9"),
        AttributeInfo("b", "2"),
        AttributeInfo("a", "3"),
        AttributeInfo("c", "4"),
    ]
    merged = merge_attributes([AttributeInfo("x", "1")], [AttributeInfo("y", "2"), AttributeInfo("x", "3")])
    assert merged == [AttributeInfo("x", "3"), AttributeInfo("y", "2")]


@pytest.mark.parametrize(("name", "numa_id"), [("node-0", 0), ("node-7", 7), ("node-63", 63)])
def test_numa_zone_names(name: str, numa_id: int) -> None:
    assert numa_id_from_zone_name(name) == numa_id
    assert zone_name_from_numa_id(numa_id) == name


@pytest.mark.parametrize("name", ["numa-0", "node-", "node-x", "node--1", "node"])
def test_bad_numa_zone_names(name: str) -> None:
    with pytest.raises(ValueError):
        numa_id_from_zone_name(name)


def test_negative_numa_id_has_no_zone_name() -> None:
    with pytest.raises(ValueError):
        zone_name_from_numa_id(-1)


@pytest.mark.parametrize(
    ("policies", "attributes", "expected"),
    [
        pytest.param([], {}, TopologyManagerConfig("none", "container", 8), id="defaults"),
        pytest.param(
            ["SingleNUMANodePodLevel"], {}, TopologyManagerConfig("single-numa-node", "pod", 8), id="legacy"
        ),
        pytest.param(["Restricted"], {}, TopologyManagerConfig(), id="legacy-without-scope-ignored"),
        pytest.param(
            ["SingleNUMANodePodLevel"],
            {"topologyManagerPolicy": "best-effort", "topologyManagerScope": "container"},
            TopologyManagerConfig("best-effort", "container", 8),
            id="attributes-override-legacy",
        ),
        pytest.param(
            [],
            {
                "topologyManagerPolicy": "bogus",
                "topologyManagerScope": "node",
                "topologyManagerMaxNUMANodes": "1",
            },
            TopologyManagerConfig(),
            id="invalid-values-ignored",
        ),
        pytest.param(
            [],
            {"topologyManagerMaxNUMANodes": "4096"},
            TopologyManagerConfig(max_numa_nodes=1024),
            id="max-capped",
        ),
    ],
)
def test_topology_manager_config(
    policies: list[str], attributes: dict[str, str], expected: TopologyManagerConfig
) -> None:
    obj = NodeResourceTopology(
        name="n",
        topology_policies=policies,
        attributes=[AttributeInfo(k, v) for k, v in attributes.items()],
    )
    assert topology_manager_config(obj) == expected


def test_diff_available_explains_what_changed() -> None:
    before = example()
    after = copy.deepcopy(before)
    zone0 = after["zones"][0]["resources"]
    zone0[0]["available"] = "11"  # cpu 13 -> 11
    zone0[1]["available"] = "59G"  # memory 60G -> 59G
    after["zones"][1]["resources"].append(
        {"name": "hugepages-2Mi", "capacity": "1Gi", "allocatable": "1Gi", "available": "1Gi"}
    )
    diff = diff_available(before, NodeResourceTopology.from_dict(after))
    assert diff == {
        "node-0": {"cpu": parse("-2"), "memory": parse("-1G")},
        "node-1": {"hugepages-2Mi": parse("1Gi")},
    }
    assert format_diff(diff) == "node-0: cpu -2, memory -1G\nnode-1: hugepages-2Mi +1Gi"
    assert diff_available(before, before) == {}
    assert format_diff({}) == "no change"


def test_diff_counts_a_vanished_zone_as_zero() -> None:
    before = example()
    after = copy.deepcopy(before)
    del after["zones"][1]
    assert diff_available(before, after) == {"node-1": {"cpu": parse("-16")}}


# ---------------------------------------------------------------------- the CRD


def test_crd_manifest_matches_the_api_constants() -> None:
    crd = crds.load("noderesourcetopologies")
    assert crds.load("noderesourcetopologies.yaml") == crd
    assert "noderesourcetopologies" in crds.names()
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == nrt.CRD_NAME
    spec = crd["spec"]
    assert spec["group"] == nrt.GROUP
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {
        "kind": nrt.KIND,
        "listKind": nrt.LIST_KIND,
        "plural": nrt.PLURAL,
        "singular": nrt.SINGULAR,
        "shortNames": [nrt.SHORT_NAME],
    }
    versions = {v["name"]: v for v in spec["versions"]}
    assert (versions["v1alpha1"]["served"], versions["v1alpha1"]["storage"]) == (True, False)
    assert (versions["v1alpha2"]["served"], versions["v1alpha2"]["storage"]) == (True, True)
    assert "subresources" not in versions["v1alpha2"]


def test_crd_v1alpha2_schema() -> None:
    versions = {v["name"]: v for v in crds.load("noderesourcetopologies")["spec"]["versions"]}
    root = versions["v1alpha2"]["schema"]["openAPIV3Schema"]
    assert root["required"] == ["zones"]
    assert set(root["properties"]) == {
        "apiVersion",
        "kind",
        "metadata",
        "topologyPolicies",
        "zones",
        "attributes",
    }
    zone = root["properties"]["zones"]["items"]
    assert zone["required"] == ["name", "type"]
    resource = zone["properties"]["resources"]["items"]
    assert resource["required"] == ["allocatable", "available", "capacity", "name"]
    for key in ("capacity", "allocatable", "available"):
        prop = resource["properties"][key]
        assert prop["x-kubernetes-int-or-string"] is True
        assert prop["anyOf"] == [{"type": "integer"}, {"type": "string"}]
        assert prop["pattern"] == QUANTITY_PATTERN
    cost = zone["properties"]["costs"]["items"]
    assert cost["properties"]["value"] == {"format": "int64", "type": "integer"}
    assert cost["required"] == ["name", "value"]
    legacy = versions["v1alpha1"]["schema"]["openAPIV3Schema"]
    assert legacy["required"] == ["topologyPolicies", "zones"]
    assert "attributes" not in legacy["properties"]


def test_example_quantities_match_the_crd_pattern() -> None:
    pattern = re.compile(QUANTITY_PATTERN)
    for zone in NodeResourceTopology.from_dict(example()).to_dict()["zones"]:
        for res in zone.get("resources", []):
            for key in ("capacity", "allocatable", "available"):
                assert pattern.match(res[key])


def test_unknown_crd_is_a_clear_error() -> None:
    with pytest.raises(FileNotFoundError, match="noderesourcetopologies"):
        crds.load("nosuchthing")
