"""Table tests of nrop.suite.e2e.baseload: summing requests of app containers and rounding."""

from __future__ import annotations

import pytest

from nrop.suite.e2e import baseload
from nrop.suite.e2e.resourcelist import of


def pod(*requests: dict[str, str], init: dict[str, str] | None = None) -> dict:
    spec: dict = {
        "containers": [{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(requests)]
    }
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": init}}]
    return {"spec": spec}


@pytest.mark.parametrize(
    ("pods", "want"),
    [
        ([], {"cpu": "0", "memory": "0"}),
        ([pod({"cpu": "100m", "memory": "50Mi"})], {"cpu": "2", "memory": "1G"}),
        ([pod({"cpu": "1"}, {"cpu": "1900m"}), pod({"memory": "1500M"})], {"cpu": "4", "memory": "2G"}),
        ([pod({"cpu": "2", "memory": "1G"}, init={"cpu": "30"})], {"cpu": "2", "memory": "1G"}),
        (
            [pod({"cpu": "250m", "example.com/deviceA": "1"}), pod({"example.com/deviceA": "2"})],
            {"cpu": "2", "memory": "0", "example.com/deviceA": "3"},
        ),
    ],
)
def test_from_pods(pods, want) -> None:
    load = baseload.from_pods("w0", pods)
    assert load.name == "w0"
    assert load.resources == of(want)


def test_apply_adds_in_place_and_subtract() -> None:
    load = baseload.Load("w0", of(cpu=2, memory="1G"))
    leave = of(cpu=4, memory="2Gi")
    assert load.apply(leave) is leave
    assert leave == of(cpu=6, memory=str(2 * 2**30 + 10**9))
    assert load.subtract_from(leave) == of(cpu=4, memory="2Gi")
    assert str(load) == "load for node 'w0': cpu=2, memory=1G"
    assert (load.cpu, load.memory) == (of(cpu=2)["cpu"], of(memory="1G")["memory"])
    with pytest.raises(ValueError, match="cannot subtract"):
        load.subtract_from(of(cpu=1, memory="5G"))
