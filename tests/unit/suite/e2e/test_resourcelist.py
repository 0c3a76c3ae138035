"""Table tests of nrop.suite.e2e.resourcelist: parsing, arithmetic, rounding, host-level filtering."""

from __future__ import annotations

import pytest

from nrop.api.quantity import parse
from nrop.suite.e2e import resourcelist as rl


def q(text: str):
    return parse(text)


@pytest.mark.parametrize(
    ("cpu", "memory", "want_cpu", "want_memory"),
    [
        ("0", "0", "0", "0"),
        ("100m", "1", "2", "1G"),
        ("2", "1G", "2", "1G"),
        ("2900m", "1500M", "4", "2G"),
        ("3", "1Gi", "4", "2G"),
        ("4001m", "999999999", "6", "1G"),
    ],
)
def test_round_up_core_resources(cpu: str, memory: str, want_cpu: str, want_memory: str) -> None:
    got_cpu, got_memory = rl.round_up_core_resources(q(cpu), q(memory))
    assert got_cpu == q(want_cpu)
    assert got_memory == q(want_memory)


def test_of_and_to_manifest_round_trip() -> None:
    res = rl.of({"cpu": "2", "memory": "1Gi"}, **{"example.com/deviceA": 1})
    assert res == {"cpu": q("2"), "memory": q("1Gi"), "example.com/deviceA": q("1")}
    assert rl.to_manifest(res) == {"cpu": "2", "memory": "1Gi", "example.com/deviceA": "1"}
    assert rl.to_string(res) == "cpu=2, example.com/deviceA=1, memory=1Gi"


@pytest.mark.parametrize(
    ("a", "b", "added", "subtracted"),
    [
        ({"cpu": "4"}, {"cpu": "1"}, {"cpu": "5"}, {"cpu": "3"}),
        (
            {"cpu": "4", "memory": "2Gi"},
            {"memory": "1Gi"},
            {"cpu": "4", "memory": "3Gi"},
            {"cpu": "4", "memory": "1Gi"},
        ),
        ({"cpu": "1"}, {"cpu": "1"}, {"cpu": "2"}, {"cpu": "0"}),
    ],
)
def test_add_sub(a, b, added, subtracted) -> None:
    assert rl.equal(rl.add(rl.of(a), rl.of(b)), rl.of(added))
    assert rl.equal(rl.sub(rl.of(a), rl.of(b)), rl.of(subtracted))


def test_sub_more_than_present_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot subtract resource 'cpu' because it is not found"):
        rl.sub(rl.of(cpu=1), rl.of(cpu=2))


def test_drop_host_level_and_filter_exclusive() -> None:
    res = rl.of(
        {
            "cpu": "1",
            "ephemeral-storage": "1Gi",
            "management.workload.openshift.io/cores": "1",
            "memory": "1Gi",
        }
    )
    assert set(rl.drop_host_level(res)) == {"cpu", "memory"}
    assert rl.accumulate(
        [rl.of(cpu="1500m", memory="1Gi"), rl.of(storage="1")], rl.filter_exclusive
    ) == rl.of(memory="1Gi")


def test_highest_and_from_workloads() -> None:
    assert rl.highest(rl.of(cpu=1, memory="2Gi"), rl.of(cpu=3, memory="1Gi")) == rl.of(cpu=3, memory="2Gi")
    containers = [
        {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
        {"resources": {"limits": {"cpu": "2"}}},
    ]
    assert rl.from_container_limits(containers) == rl.of(cpu=3, memory="1Gi")
    assert rl.from_container_requests(containers) == rl.of(cpu="500m")
    rs = {"spec": {"replicas": 3, "template": {"spec": {"containers": containers}}}}
    assert rl.from_replicaset(rs) == rl.of(cpu=9, memory="3Gi")


@pytest.mark.parametrize(
    ("res", "num", "den", "want"),
    [
        ({"cpu": "3", "memory": "3Gi"}, 7, 3, {"cpu": "7", "memory": "7Gi"}),
        ({"cpu": "2", "memory": "1000"}, 5, 3, {"cpu": "4", "memory": "2048"}),
        ({"cpu": "1", "memory": "1024"}, 11, 3, {"cpu": "4", "memory": "4096"}),
        ({"cpu": "4", "example.com/deviceA": "3"}, 1, 2, {"cpu": "2", "example.com/deviceA": "3"}),
        ({"memory": "3Mi"}, 1, 3, {"memory": "1Mi"}),
        ({}, 2, 1, {}),
    ],
)
def test_scale_core_resources(res, num: int, den: int, want) -> None:
    assert rl.equal(rl.scale_core_resources(rl.of(res), num, den), rl.of(want))
