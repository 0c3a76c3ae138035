"""The operator on the embedded cluster's OpenShift flavour (profile ``openshift``), end to end.

It detects the platform (the ``MachineConfigPoolPaused`` condition is only computed on
OpenShift) and follows upstream's ``reconcileResourceMachineConfig``: a node group asking for the
custom SELinux policy gets its pool's MachineConfig, which the embedded MachineConfig operator
renders into the pool; a paused pool is reported; the MachineConfig goes with the node group.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from kubernetes import client

from nrop.api.annotations import SELINUX_POLICY_ANNOTATION, SELINUX_POLICY_CUSTOM
from nrop.api.images import DEFAULT_IMAGE
from nrop.api.restclient import RestClient
from nrop.localcluster.cluster import ClusterConfig
from nrop.operator import samples
from nrop.operator.decisions.manifests import install_manifests
from nrop.operator.kubeapi import Api
from nrop.suite.e2e.wait.polling import wait_for as _wait_for

pytestmark = pytest.mark.slow

GROUP, VERSION = "nodetopology.openshift.io", "v1"
MCO = "machineconfiguration.openshift.io"
NS = "numaresources"
NROP = "numaresourcesoperator"
POOL = "mcp-test"
MACHINE_CONFIG = f"51-{NROP}-{POOL}"
ROLE = f"{MCO}/role"
TIMEOUT = 60.0
wait_for = functools.partial(_wait_for, interval=0.5, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """This module's cluster (``tests/conftest.py``'s ``cluster_thread``): the shipped ``openshift`` profile."""
    return ClusterConfig(profile="openshift", bookmark_interval=1.0)


@pytest.fixture(scope="module")
def custom(
    cluster_thread: Any, api_client: client.ApiClient, rest_client: RestClient
) -> client.CustomObjectsApi:
    api = Api(rest_client)
    for manifest in install_manifests(NS, DEFAULT_IMAGE):
        api.apply(manifest)
    objects = client.CustomObjectsApi(api_client)
    objects.create_cluster_custom_object(
        GROUP, VERSION, "numaresourcesoperators", samples.load("NUMAResourcesOperator")
    )
    return objects


def _get(custom: client.CustomObjectsApi, group: str, plural: str, name: str) -> dict[str, Any] | None:
    try:
        return custom.get_cluster_custom_object(group, "v1", plural, name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _conditions(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def _available(obj: dict[str, Any] | None) -> bool:
    available = _conditions(obj).get("Available", {})
    return (
        available.get("status") == "True"
        and available.get("observedGeneration") == (obj or {})["metadata"]["generation"]
    )


def _set_groups(custom: client.CustomObjectsApi, groups: list[dict[str, Any]]) -> None:
    custom.patch_cluster_custom_object(
        GROUP, VERSION, "numaresourcesoperators", NROP, {"spec": {"nodeGroups": groups}}
    )


def test_the_custom_selinux_policy_reaches_its_pool_as_a_machine_config(
    custom: client.CustomObjectsApi,
) -> None:
    nrop = functools.partial(_get, custom, GROUP, "numaresourcesoperators", NROP)
    first = wait_for(nrop, _available, "the NUMAResourcesOperator to be Available")
    # computed on OpenShift only (Unknown elsewhere): the operator took the cluster for OpenShift
    assert _conditions(first)["MachineConfigPoolPaused"]["status"] == "False"
    assert _get(custom, MCO, "machineconfigs", f"51-{NROP}-worker") is None  # no custom policy asked

    expressions = [{"key": ROLE, "operator": "In", "values": [POOL, "worker"]}]
    custom.create_cluster_custom_object(MCO, "v1", "machineconfigpools", {
        "apiVersion": f"{MCO}/v1", "kind": "MachineConfigPool",
        "metadata": {"name": POOL, "labels": {ROLE: POOL}},
        "spec": {"machineConfigSelector": {"matchExpressions": expressions},
                 "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{POOL}": ""}}},
    })  # fmt: skip
    groups = samples.load("NUMAResourcesOperator")["spec"]["nodeGroups"]
    custom_group = {
        "machineConfigPoolSelector": {"matchLabels": {ROLE: POOL}},
        "annotations": {SELINUX_POLICY_ANNOTATION: SELINUX_POLICY_CUSTOM},
    }
    _set_groups(custom, [*groups, custom_group])

    machine_config = wait_for(
        functools.partial(_get, custom, MCO, "machineconfigs", MACHINE_CONFIG),
        lambda mc: mc is not None,
        f"MachineConfig {MACHINE_CONFIG}",
    )
    assert machine_config["metadata"]["labels"] == {ROLE: POOL}  # the selector has no matchLabels: the role
    (owner,) = machine_config["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("NUMAResourcesOperator", NROP, True)
    assert machine_config["spec"]["config"]["storage"]["files"][0]["path"] == "/etc/selinux/rte.cil"
    pool = wait_for(
        functools.partial(_get, custom, MCO, "machineconfigpools", POOL),
        lambda p: (
            MACHINE_CONFIG
            in [s["name"] for s in ((p.get("status") or {}).get("configuration") or {}).get("source", [])]
        ),
        f"pool {POOL} rendering {MACHINE_CONFIG}",
    )
    assert _conditions(pool)["Updated"]["status"] == "True"
    synced = wait_for(nrop, _available, "the NUMAResourcesOperator Available at the new generation")
    assert [p["name"] for p in synced["status"]["machineconfigpools"]] == ["worker", POOL]

    custom.patch_cluster_custom_object(MCO, "v1", "machineconfigpools", POOL, {"spec": {"paused": True}})
    paused = wait_for(
        nrop,
        lambda o: _conditions(o)["MachineConfigPoolPaused"]["status"] == "True",
        "the MachineConfigPoolPaused condition",
    )
    assert _conditions(paused)["MachineConfigPoolPaused"]["message"] == f"detected paused MCPs: {POOL}"
    custom.patch_cluster_custom_object(MCO, "v1", "machineconfigpools", POOL, {"spec": {"paused": False}})
    wait_for(
        nrop, lambda o: _conditions(o)["MachineConfigPoolPaused"]["status"] == "False", "the pool unpaused"
    )

    _set_groups(custom, groups)
    wait_for(
        functools.partial(_get, custom, MCO, "machineconfigs", MACHINE_CONFIG),
        lambda mc: mc is None,
        f"MachineConfig {MACHINE_CONFIG} deleted with its node group",
    )
    wait_for(nrop, _available, "the NUMAResourcesOperator Available after the revert")
