"""The exporters' MachineConfigs on OpenShift: names, labels, the pool waits, dangling ones."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nrop.operator.decisions import machineconfigs as mcs

NROP = {
    "apiVersion": "nodetopology.openshift.io/v1",
    "kind": "NUMAResourcesOperator",
    "metadata": {"name": "numaresourcesoperator", "uid": "u-1"},
}


def _mcp(name: str, selector: dict[str, Any] | None, sources: list[str] = (), updated: str = "True") -> dict:  # type: ignore[assignment]
    return {
        "metadata": {"name": name},
        "spec": {"machineConfigSelector": selector} if selector is not None else {},
        "status": {
            "configuration": {"source": [{"name": s} for s in sources]},
            "conditions": [{"type": "Updated", "status": updated}],
        },
    }


ROLE = "machineconfiguration.openshift.io/role"
EXPRESSIONS = {"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["mcp-test", "worker"]}]}


@pytest.mark.parametrize(
    ("mcp", "labels"),
    [
        (_mcp("worker", {"matchLabels": {ROLE: "worker"}}), {ROLE: "worker"}),
        (_mcp("mcp-test", EXPRESSIONS), {ROLE: "mcp-test"}),  # no matchLabels: the pool's role
    ],
)
def test_machine_config_labels(mcp: dict, labels: dict) -> None:
    assert mcs.machine_config_labels(mcp) == labels


@pytest.mark.parametrize(
    ("labels", "pools", "problem"),
    [
        ({ROLE: "mcp-test"}, [_mcp("mcp-test", EXPRESSIONS)], None),
        (
            {"custom": "x"},
            [_mcp("mcp-test", {"matchLabels": {ROLE: "other"}})],
            None,
        ),  # no role label: not checked
        (
            {ROLE: "mcp-test"},
            [_mcp("mcp-test", {"matchLabels": {ROLE: "other"}})],
            'machine config "51-n-mcp-test" labels does not match the machine config pool "mcp-test" machine config selector',
        ),
    ],
)
def test_labels_problem(labels: dict, pools: list, problem: str | None) -> None:
    assert mcs.labels_problem("51-n-mcp-test", labels, pools) == problem


@pytest.mark.parametrize(
    ("sources", "updated", "custom", "expected"),
    [
        (["00-mcp-test", "51-numaresourcesoperator-mcp-test"], "True", True, True),
        (["00-mcp-test", "51-numaresourcesoperator-mcp-test"], "False", True, False),  # still rolling
        (["00-mcp-test"], "True", True, False),  # not rendered in yet
        (["00-mcp-test"], "True", False, True),  # after deletion
        (["00-mcp-test", "51-numaresourcesoperator-mcp-test"], "True", False, False),  # not rendered out yet
        (["00-mcp-test"], "False", False, False),
    ],
)
def test_pool_updated(sources: list[str], updated: str, custom: bool, expected: bool) -> None:
    mcp = _mcp("mcp-test", EXPRESSIONS, sources, updated)
    assert mcs.pool_updated("numaresourcesoperator", mcp, custom) is expected


def test_desired_machine_config() -> None:
    mc = mcs.desired_machine_config(NROP, _mcp("mcp-test", EXPRESSIONS))
    assert mc["metadata"]["name"] == "51-numaresourcesoperator-mcp-test"
    assert mc["metadata"]["labels"] == {ROLE: "mcp-test"}
    (owner,) = mc["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("NUMAResourcesOperator", "u-1", True)
    ignition = mc["spec"]["config"]
    assert ignition["ignition"]["version"] == "3.2.0"
    (policy,) = ignition["storage"]["files"]
    assert policy["path"] == "/etc/selinux/rte.cil"
    source = policy["contents"]["source"]
    assert source.startswith("data:text/plain;charset=utf-8;base64,")
    assert "(type rte)" in base64.b64decode(source.split(",", 1)[1]).decode()
    (unit,) = ignition["systemd"]["units"]
    assert unit["name"] == "rte-selinux-policy-install.service" and unit["enabled"] is True
    assert "ExecStart=/usr/sbin/semodule -i /etc/selinux/rte.cil" in unit["contents"]


def test_paused_message() -> None:
    assert mcs.paused_message([]) == ""
    assert mcs.paused_message(["worker", "mcp-test"]) == "detected paused MCPs: worker, mcp-test"


def test_unused_machine_configs_are_ours_and_of_pools_gone() -> None:
    ours = {"uid": "u-1"}
    machine_configs = [
        {"metadata": {"name": "51-numaresourcesoperator-worker", "ownerReferences": [ours]}},
        {"metadata": {"name": "51-numaresourcesoperator-mcp-test", "ownerReferences": [ours]}},
        {"metadata": {"name": "99-someone-else", "ownerReferences": [{"uid": "u-2"}]}},
        {"metadata": {"name": "00-worker"}},
    ]
    assert mcs.unused(machine_configs, NROP, ["worker"]) == ["51-numaresourcesoperator-mcp-test"]
