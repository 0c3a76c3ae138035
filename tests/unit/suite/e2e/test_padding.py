"""Table tests of nrop.suite.e2e.padding's arithmetic: pad amounts, zone choice, saturation, pod shapes."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from nrt_samples import nrt, res, two_zone_nrt, zone

from nrop.api.quantity import Quantity
from nrop.suite.e2e import padding as p
from nrop.suite.e2e.nrt import topologies as n
from nrop.suite.e2e.resourcelist import of


@pytest.mark.parametrize(
    ("available", "expected", "want"),
    [
        ({"cpu": "18", "memory": "20Gi"}, {"cpu": "4", "memory": "2Gi"}, {"cpu": "14", "memory": "18Gi"}),
        (
            {"cpu": "18", "memory": "20Gi", "hugepages-2Mi": "1Gi"},
            {"cpu": "18"},
            {"cpu": "0", "memory": "0", "hugepages-2Mi": "0"},
        ),
        ({"cpu": "4"}, {"cpu": "4", "memory": "1Gi"}, {"cpu": "0"}),
    ],
)
def test_diff_available_to_expected(available, expected, want) -> None:
    assert p.diff_available_to_expected(of(available), of(expected)) == of(want)


def test_diff_available_to_expected_not_enough() -> None:
    with pytest.raises(
        n.NotEnoughResourcesError, match="expected resource: cpu=5 is higher than available: cpu=4"
    ):
        p.diff_available_to_expected(of(cpu=4), of(cpu=5))


@pytest.mark.parametrize(
    ("available", "target", "meets"),
    [
        ({"cpu": "4"}, {"cpu": "4"}, True),
        ({"cpu": "3"}, {"cpu": "4"}, True),
        ({"cpu": "5"}, {"cpu": "4"}, False),
        ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "1Gi"}, False),
        ({"cpu": "4"}, {"cpu": "4", "memory": "1Gi"}, True),
    ],
)
def test_is_zone_meeting_target(available, target, meets) -> None:
    z = n.parse(nrt("x", zone("node-0", *(res(k, v) for k, v in available.items())))).zones[0]
    assert p.is_zone_meeting_target(z, of(target)) is meets


def test_plan_padding_pads_every_zone_with_enough_and_counts_nodes() -> None:
    nrts = [
        n.parse(two_zone_nrt("w0")),
        n.parse(two_zone_nrt("w1", cpu0="2")),  # node-0 already below the target: left alone
        n.parse(two_zone_nrt("w2")),
    ]
    plans, padded = p.plan_padding(nrts, of(cpu=4, memory="1Gi"), 2, ["w1", "w0", "w2"])
    assert padded == ["w1", "w0"]
    assert [(x.node, x.zone) for x in plans] == [("w1", "node-1"), ("w0", "node-0"), ("w0", "node-1")]
    assert plans[0].resources == of(cpu=16, memory="20Gi")
    assert plans[1].resources == of(cpu=14, memory="19Gi")
    assert not any(x.pin_zone for x in plans)


@pytest.mark.parametrize(
    ("names", "offsets", "order"),
    [
        pytest.param(["w0", "w1", "w2"], (0, 0, 0), ["w0", "w1", "w2"], id="first-slots"),
        pytest.param(["w0", "w1", "w2"], (2, 2, 2), ["w2", "w0", "w1"], id="start-at-last-then-wrap"),
        pytest.param(["w0", "w1", "w2"], (5, 7, 1), ["w0", "w1", "w2"], id="free-slots-wrap-to-first"),
        pytest.param(["w0", "w1", "w2"], (1, 1, 0), ["w1", "w2", "w0"], id="freed-slot-skipped"),
        pytest.param(["w1", "w0"], (0, 0), ["w1", "w0"], id="node-list-order-not-sorted"),
        pytest.param(["w0"], (6,), ["w0"], id="one-candidate"),
    ],
)
def test_candidate_order_is_upstreams_pop_any(
    names, offsets, order, go_map_starts: type[random.Random]
) -> None:
    """``sets.Set.PopAny`` over the candidates (node-list order): each pop a fresh Go map iteration."""
    assert p.candidate_order(names, go_map_starts(*offsets)) == order


def test_candidate_order_favours_the_first_candidate_as_go_does(go_map_starts: type[random.Random]) -> None:
    firsts = Counter(p.candidate_order(["w0", "w1", "w2"], go_map_starts(off, 0, 0))[0] for off in range(8))
    assert firsts == {"w0": 6, "w1": 1, "w2": 1}


def test_plan_padding_pads_the_nodes_in_candidate_order(go_map_starts: type[random.Random]) -> None:
    nrts = [n.parse(two_zone_nrt(name)) for name in ("w0", "w1", "w2")]
    order = p.candidate_order(["w0", "w1", "w2"], go_map_starts(1, 1, 0))
    plans, padded = p.plan_padding(nrts, of(cpu=4), 2, order)
    assert padded == ["w1", "w2"]
    assert [(x.node, x.zone) for x in plans] == [
        ("w1", "node-0"),
        ("w1", "node-1"),
        ("w2", "node-0"),
        ("w2", "node-1"),
    ]


def test_plan_padding_runs_out_of_nodes() -> None:
    nrts = [n.parse(two_zone_nrt("w0", cpu0="1", cpu1="1"))]
    with pytest.raises(ValueError, match="cannot select a node to be padded"):
        p.plan_padding(nrts, of(cpu=4), 1, ["w0"])


def test_plan_padding_pins_zones_exposing_numacell() -> None:
    obj = nrt(
        "w0",
        zone("node-0", res("cpu", "18"), res("kni.node/numacell00", "15")),
        zone("node-1", res("cpu", "20"), res("kni.node/numacell01", "15")),
    )
    plans, _ = p.plan_padding([n.parse(obj)], of(cpu=2), 1, ["w0"])
    assert [x.pin_zone for x in plans] == [True, True]
    assert plans[0].resources == {"cpu": Quantity.from_int(16), "kni.node/numacell00": Quantity(0)}


def test_saturate_zone_until_left() -> None:
    z = two_zone_nrt("w")["zones"][0]
    assert p.saturate_zone_until_left(z, of(cpu=4, memory="1Gi", **{"ephemeral-storage": "1Gi"})) == of(
        cpu=14, memory="19Gi"
    )
    with pytest.raises(n.NotEnoughResourcesError, match=r"^nrt: Not enough resources: .* already too scarce"):
        p.saturate_zone_until_left(z, of(cpu=19))
    with pytest.raises(ValueError, match="not found in zone"):
        p.saturate_zone_until_left(z, of(**{"example.com/deviceA": 1}))


def test_saturate_node_until_left() -> None:
    pads = p.saturate_node_until_left(two_zone_nrt("w"), of(cpu=2, memory="2Gi"))
    assert pads == {"node-0": of(cpu=18, memory="20Gi"), "node-1": of(cpu=18, memory="19Gi")}


def test_make_padding_pod() -> None:
    z = two_zone_nrt("w")["zones"][1]
    pod = p.make_padding_pod("ns", "w", z, of(cpu=4, memory="1Gi"), image="img")
    assert pod["metadata"] == {
        "generateName": "padpod-",
        "namespace": "ns",
        "labels": {"e2e-serial-pad-node": "w", "e2e-serial-pad-numazone": "node-1"},
    }
    container = pod["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "16", "memory": "20Gi"}}
    assert (container["image"], container["command"]) == ("img", ["/pause"])
    assert pod["spec"]["terminationGracePeriodSeconds"] == 0


def test_padder_pod_shape() -> None:
    padder = p.Padder(kube=None, namespace="ns", image="img")  # type: ignore[arg-type]
    plan = p.PadPlan("w0", "node-1", of(cpu=16, **{"kni.node/numacell01": 0}), True)
    pod = padder._pod_for(plan)
    assert pod["metadata"]["name"].startswith("padder-")
    assert pod["metadata"]["labels"] == {"nrop-test-pad-pod": ""}
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "16", "kni.node/numacell01": "1"}
    assert resources["limits"] == {"cpu": "16", "kni.node/numacell01": "1"}
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "w0"}


@pytest.mark.parametrize(
    ("zone_name", "padding", "limits"),
    [
        ("node-0", of(cpu=2, memory="1Gi"), {"cpu": "2", "memory": "1Gi"}),
        ("all", of(**{"ephemeral-storage": "10Gi"}), {"ephemeral-storage": "10Gi"}),
        ("node-1", {}, {}),
    ],
)
def test_new_padding_pod(zone_name: str, padding, limits) -> None:
    pod = p.new_padding_pod("ns", "w", zone_name, padding, image="img")
    assert pod["metadata"] == {
        "generateName": "padpod-",
        "namespace": "ns",
        "labels": {"e2e-serial-pad-node": "w", "e2e-serial-pad-numazone": zone_name},
    }
    assert [(c["name"], c["resources"]) for c in pod["spec"]["containers"]] == [
        ("padpod-cnt-0", {"limits": limits})
    ]
