"""The operator's KubeletConfig controller: which pool a KubeletConfig feeds, the ConfigMap it
makes, and how the NUMAResourcesOperator rendering leaves that ConfigMap to it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nrop.operator import kubeletconfigcontroller as kcc
from nrop.operator.decisions import naming, rtemanifests
from nrop.operator.decisions.manifests import OPERATOR_RULES
from nrop.operator.decisions.nropspec import NodeGroup, effective_config

POOL_LABEL = "pools.operator.machineconfiguration.openshift.io/"


def mcp(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


MCPS = [
    mcp("master", **{POOL_LABEL + "master": ""}),
    mcp("worker", **{POOL_LABEL + "worker": ""}),
    mcp("mcp-test", **{"machineconfiguration.openshift.io/role": "mcp-test"}),
]


def nrop(*groups: dict[str, Any], excludes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeGroups": list(groups)}
    if excludes:
        spec["podExcludes"] = excludes
    return {"metadata": {"name": "numaresourcesoperator", "uid": "u1"}, "spec": spec}


def kc(selector: dict[str, Any] | None, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineConfigPoolSelector": selector}
    if payload is not None:
        spec["kubeletConfig"] = payload
    return {"metadata": {"name": "kc1", "uid": "k1"}, "spec": spec}


@pytest.mark.parametrize(
    ("groups", "pools"),
    [
        pytest.param([{"poolName": "worker"}], ["worker"], id="pool-name"),
        pytest.param([{"poolName": "absent"}], [], id="pool-name-without-mcp"),
        pytest.param(
            [
                {
                    "machineConfigPoolSelector": {
                        "matchLabels": {"machineconfiguration.openshift.io/role": "mcp-test"}
                    }
                }
            ],
            ["mcp-test"],
            id="selector",
        ),
        pytest.param([{"poolName": "worker"}, {"poolName": "mcp-test"}], ["worker", "mcp-test"], id="two"),
    ],
)
def test_nrop_pools(groups: list[dict[str, Any]], pools: list[str]) -> None:
    assert [m["metadata"]["name"] for m in kcc.nrop_pools(nrop(*groups), MCPS)] == pools


@pytest.mark.parametrize(
    ("selector", "pool"),
    [
        pytest.param({"matchLabels": {POOL_LABEL + "worker": ""}}, "worker", id="worker"),
        pytest.param({"matchLabels": {POOL_LABEL + "master": ""}}, None, id="pool-not-of-the-nrop"),
        pytest.param(None, None, id="no-selector"),
    ],
)
def test_find_pool(selector: dict[str, Any] | None, pool: str | None) -> None:
    pools = kcc.nrop_pools(nrop({"poolName": "worker"}), MCPS)
    assert kcc.find_pool(kc(selector), pools) == pool


def test_desired_configmap_is_controlled_by_the_kubeletconfig_with_soft_ref_labels() -> None:
    payload = {
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
        "cpuManagerPolicy": "static",
    }
    cm = kcc.desired_configmap(
        nrop({"poolName": "worker"}, excludes=[{"namespace": "kube-system"}]), kc({}, payload), "worker", "ns"
    )
    assert cm["metadata"]["name"] == "numaresourcesoperator-worker"
    assert cm["metadata"]["namespace"] == "ns"
    assert cm["metadata"]["labels"] == {
        naming.RTE_OPERATOR_NAME_LABEL: "numaresourcesoperator",
        naming.RTE_POOL_LABEL: "worker",
    }
    assert cm["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "KubeletConfig",
            "name": "kc1",
            "uid": "k1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert yaml.safe_load(cm["data"]["config.yaml"]) == {
        "kubelet": {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"},
        "podExclude": [{"namespacePattern": "kube-system", "namePattern": "*"}],
    }
    assert kcc.controlling_kubeletconfig(cm) == "kc1"


@pytest.mark.parametrize(
    ("refs", "owner"),
    [
        pytest.param([], None, id="none"),
        pytest.param(
            [{"apiVersion": naming.API_VERSION, "kind": naming.NROP_KIND, "name": "n", "controller": True}],
            None,
            id="nrop",
        ),
        pytest.param(
            [{"apiVersion": kcc.GROUP_VERSION, "kind": "KubeletConfig", "name": "k", "controller": False}],
            None,
            id="not-controller",
        ),
        pytest.param(
            [{"apiVersion": kcc.GROUP_VERSION, "kind": "KubeletConfig", "name": "k", "controller": True}],
            "k",
            id="kubeletconfig",
        ),
    ],
)
def test_controlling_kubeletconfig(refs: list[dict[str, Any]], owner: str | None) -> None:
    assert kcc.controlling_kubeletconfig({"metadata": {"ownerReferences": refs}}) == owner


def test_render_leaves_a_kubeletconfig_configmap_alone_and_hashes_it() -> None:
    group = NodeGroup("worker", {"node-role.kubernetes.io/worker": ""}, effective_config(None), {})
    obj = nrop({"poolName": "worker"})

    def objects(external: dict[str, str] | None) -> dict[str, dict[str, Any]]:
        rendered = rtemanifests.render(obj, [group], {}, "ns", "img", external=external)
        return {f"{o['kind']}/{o['metadata']['name']}": o for o in rendered}

    def config_hash(found: dict[str, dict[str, Any]]) -> str:
        template = found["DaemonSet/numaresourcesoperator-worker"]["spec"]["template"]
        return template["metadata"]["annotations"][rtemanifests.CONFIG_HASH_ANNOTATION]

    own = objects(None)
    assert "ConfigMap/numaresourcesoperator-worker" in own
    first, second = objects({"worker": "a: 1\n"}), objects({"worker": "a: 2\n"})
    assert "ConfigMap/numaresourcesoperator-worker" not in first
    assert len({config_hash(own), config_hash(first), config_hash(second)}) == 3


def test_the_operator_may_read_kubeletconfigs_and_own_objects_with_them() -> None:
    rules = [r for r in OPERATOR_RULES if r["apiGroups"] == ["machineconfiguration.openshift.io"]]
    granted = {(res, verb) for r in rules for res in r["resources"] for verb in r["verbs"]}
    assert {("kubeletconfigs", v) for v in ("get", "list", "watch")} <= granted
    assert ("kubeletconfigs/finalizers", "update") in granted
    assert not {v for res, v in granted if res == "kubeletconfigs"} - {"get", "list", "watch"}
