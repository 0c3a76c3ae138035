"""nrop.suite.install.nodetopology: ``CheckNodesTopology``'s problems, with upstream's messages."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.suite.install import nodetopology


def nrt(
    name: str, policy: str | None = "single-numa-node", scope: str | None = "pod", zones: Any = ()
) -> dict:
    attrs = [
        {"name": k, "value": v}
        for k, v in (("topologyManagerPolicy", policy), ("topologyManagerScope", scope))
        if v
    ]
    return {"metadata": {"name": name}, "attributes": attrs, "zones": list(zones)}


SNN_POD = {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"}
TWO = [nrt("w0"), nrt("w1")]


@pytest.mark.parametrize(
    ("kconfigs", "nrts", "workers", "problems"),
    [
        pytest.param({"w0": SNN_POD, "w1": SNN_POD}, TWO, ["w0", "w1"], [], id="fine"),
        pytest.param(
            {"w0": SNN_POD},
            [nrt("w0")],
            ["w0"],
            ['Not enough nodes with "single-numa-node" topology found 1 needed 2'],
            id="one-snn-node",
        ),
        pytest.param(
            {"w0": SNN_POD, "w1": {**SNN_POD, "topologyManagerScope": "container"}},
            TWO,
            ["w0", "w1"],
            ['Inconsistent topology manager scope for node "w1": NRT="pod" KConfig="container"'],
            id="scope-mismatch",
        ),
        pytest.param(
            {"w0": SNN_POD, "w1": {}},
            TWO,
            ["w0", "w1"],
            ['Inconsistent topology manager policy for node "w1": NRT="single-numa-node" KConfig="none"'],
            id="kubelet-defaults-none-container",
        ),
        pytest.param(
            {"w0": SNN_POD, "w1": SNN_POD},
            [nrt("w0"), nrt("w1"), nrt("w2", scope=None)],
            ["w0", "w1"],
            ['Unable to find KubeletConfig for node "w2"'],
            id="nrt-outside-node-groups",
        ),
        pytest.param(
            {"w0": SNN_POD, "w1": SNN_POD, "w2": SNN_POD},
            TWO,
            ["w0", "w1", "w2"],
            ['Unable to find NRT for node "w2"', 'failed to find NRT for "w2"'],
            id="worker-without-nrt",
        ),
        pytest.param(
            {"w0": SNN_POD, "w1": SNN_POD},
            [nrt("w0"), nrt("w1", scope=None)],
            ["w0", "w1"],
            ['Attribute "topologyManagerScope" not reported on NRT "w1"'],
            id="attribute-missing",
        ),
        pytest.param(
            {"w0": SNN_POD, "w1": None},
            TWO,
            ["w0", "w1"],
            ['Unable to find KubeletConfig for node "w1"'],
            id="configz-unreadable",
        ),
        pytest.param(
            {"w0": {**SNN_POD, "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}, "w1": SNN_POD},
            TWO,
            ["w0", "w1"],
            ['SMT alignment enabled for node "w0"'],
            id="full-pcpus-only",
        ),
        pytest.param(
            {"w0": {**SNN_POD, "cpuManagerPolicyOptions": {"full-pcpus-only": "false"}}, "w1": SNN_POD},
            TWO,
            ["w0", "w1"],
            [],
            id="full-pcpus-only-false",
        ),
    ],
)
def test_topology_problems(kconfigs, nrts, workers, problems) -> None:
    assert nodetopology.topology_problems(kconfigs, nrts, workers) == problems
