"""The numacell device plugin end to end: a DaemonSet of the project's image on the embedded cluster.

One cluster on the shipped ``default`` profile runs as the suite's embedded target
(``nrop-cluster up``, fixture ``embedded``). The suite's own
manifests (:func:`nrop.suite.numacelldeploy.numacell_manifests`, the project's image and its
``numacell`` program) are created through the API; the kubelets run the plugin as a real
process per worker, which reads the node's sysfs through ``/host-sys`` and registers on
the node's device-plugin socket. The tests check what the suite relies on: the
``kni.node/numacellNN`` resources in node capacity and allocatable, a pod asking for one
landing on that NUMA cell (read on the kubelet's podresources socket), the resources in
the NRT zones written by a real ``resource-topology-exporter``, and re-registration when
the plugin's pod is replaced.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers_e2e import (
    NUMACELL_DAEMONSET,
    NUMACELL_POD_LABELS,
    deploy_numacell,
    install_nrt_crd,
    node_root,
    pod_resources,
    podresources_socket,
    program,
)

from nrop.api.nrt import NodeResourceTopology
from nrop.rte.sysinfo import parse_cpulist
from nrop.suite import infra, numacell, numacelldeploy
from nrop.suite.kube import DAEMONSET, NODE, NRT, POD, Kube
from nrop.suite.target import EmbeddedCluster
from nrop.suite.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("default")]

WORKERS = ("worker-0", "worker-1")
NAMESPACE = "e2e-test-infra-1234"
TIMEOUT = 30.0
CELLS = {"kni.node/numacell00": "15", "kni.node/numacell01": "15"}


@pytest.fixture(scope="module")
def deployed(kube: Kube) -> Iterator[dict[str, Any]]:
    yield deploy_numacell(kube, NAMESPACE, TIMEOUT)
    kube.delete(DAEMONSET, NUMACELL_DAEMONSET, NAMESPACE)


def numacell_resources(kube: Kube, node: str, which: str) -> dict[str, str]:
    status = kube.get(NODE, node)["status"]
    return {k: v for k, v in (status.get(which) or {}).items() if numacell.is_resource_name(k)}


def test_daemonset_runs_the_plugin_on_every_worker(kube: Kube, deployed: dict[str, Any]) -> None:
    assert deployed["status"]["desiredNumberScheduled"] == len(WORKERS)
    pods = kube.list(POD, NAMESPACE, label_selector=NUMACELL_POD_LABELS)
    assert sorted(p["spec"]["nodeName"] for p in pods) == list(WORKERS)
    for pod in pods:
        logs = wait_for(
            lambda pod=pod: kube.pod_logs(NAMESPACE, pod["metadata"]["name"]),
            lambda text: "registered kni.node/numacell01" in text,
            "the plugin to log its registrations",
            TIMEOUT,
            interval=0.2,
        )
        assert "cells=[0, 1]" in logs


def test_cells_appear_in_node_capacity_and_allocatable(kube: Kube, deployed: dict[str, Any]) -> None:
    for node in WORKERS:
        wait_for(
            lambda node=node: numacell_resources(kube, node, "allocatable"),
            lambda found: found == CELLS,
            f"node {node} to advertise 15 devices per NUMA cell",
            TIMEOUT,
            interval=0.2,
        )
        assert numacell_resources(kube, node, "capacity") == CELLS
    assert numacell_resources(kube, "control-plane", "allocatable") == {}


@pytest.mark.parametrize("cell", [0, 1])
def test_a_pod_asking_for_a_cell_gets_cpus_of_that_numa_node(
    kube: Kube, deployed: dict[str, Any], embedded: EmbeddedCluster, namespace: str, cell: int
) -> None:
    node = WORKERS[1]
    wait_for(lambda: numacell_resources(kube, node, "allocatable"), lambda f: f == CELLS, "cells", TIMEOUT)
    limits = {"cpu": "2", "memory": "256Mi", numacell.resource_name(cell): "1"}
    name = f"pinned-{cell}"
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "nodeName": node,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "c",
                        "image": "quay.io/openshift-kni/pause:test-ci",
                        "command": ["/pause"],
                        "resources": {"limits": limits},
                    }
                ],
            },
        }
    )
    wait_for(
        lambda: kube.get(POD, name, namespace)["status"].get("phase"),
        lambda phase: phase == "Running",
        f"pod {namespace}/{name} Running",
        TIMEOUT,
        interval=0.2,
    )
    root = node_root(embedded, node)
    (container,) = pod_resources(root, namespace, name).containers
    (device,) = container.devices
    assert device.resource_name == numacell.resource_name(cell)
    assert [d.split("-")[0] for d in device.device_ids] == [numacell.device_id(cell)]
    assert [n.ID for n in device.topology.nodes] == [cell]
    cell_cpus = set(parse_cpulist((root / f"sys/devices/system/node/node{cell}/cpulist").read_text()))
    assert len(container.cpu_ids) == 2
    assert set(container.cpu_ids) <= cell_cpus
    kube.delete(POD, name, namespace, grace_period_seconds=0)


def test_nrt_zones_expose_the_cells(
    kube: Kube, deployed: dict[str, Any], embedded: EmbeddedCluster, kubeconfig: Path
) -> None:
    install_nrt_crd(kube, TIMEOUT)
    for node in WORKERS:
        wait_for(
            lambda node=node: numacell_resources(kube, node, "allocatable"),
            lambda f: f == CELLS,
            "cells",
            TIMEOUT,
        )
        root = node_root(embedded, node)
        kubelet = infra.kubelet_configuration(kube, node)
        assert kubelet is not None, "configz through the API server's node proxy"
        subprocess.run(
            [
                *program("resource-topology-exporter", "nrop.rte.main"), "--kubeconfig", str(kubeconfig), "--hostname", node, "--sysfs", str(root / "sys"),
                "--podresources-socket", f"unix://{podresources_socket(root)}",
                "--topology-manager-policy", kubelet["topologyManagerPolicy"],
                "--topology-manager-scope", kubelet["topologyManagerScope"],
                "--oneshot", "--podreadiness=false",
            ],
            check=True, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        obj = kube.get(NRT, node)
        assert numacelldeploy.zones_expose_numacell(obj)
        nrt = NodeResourceTopology.from_dict(obj)
        for zone in nrt.numa_zones():
            resource = numacell.resource_name(zone.numa_id)
            info = zone.resource(resource)
            assert info is not None, (zone.name, [r.name for r in zone.resources])
            assert (int(str(info.capacity)), int(str(info.allocatable))) == (15, 15)
            other = numacell.resource_name(1 - zone.numa_id)
            assert zone.resource(other) is None, "a cell's devices belong to its own zone only"


def test_a_replaced_plugin_pod_registers_again(kube: Kube, deployed: dict[str, Any]) -> None:
    node = WORKERS[0]
    (old,) = [
        p
        for p in kube.list(POD, NAMESPACE, label_selector=NUMACELL_POD_LABELS)
        if p["spec"].get("nodeName") == node
    ]
    kube.delete(POD, old["metadata"]["name"], NAMESPACE, grace_period_seconds=0)
    new = wait_for(
        lambda: [
            p
            for p in kube.list(POD, NAMESPACE, label_selector=NUMACELL_POD_LABELS)
            if p["spec"].get("nodeName") == node
            and p["metadata"]["uid"] != old["metadata"]["uid"]
            and p["status"].get("phase") == "Running"
        ],
        bool,
        f"a new numacell pod running on {node}",
        TIMEOUT,
        interval=0.2,
    )
    wait_for(
        lambda: kube.pod_logs(NAMESPACE, new[0]["metadata"]["name"]),
        lambda text: "registered kni.node/numacell01" in text,
        "the new plugin to register",
        TIMEOUT,
        interval=0.2,
    )
    wait_for(
        lambda: numacell_resources(kube, node, "allocatable"),
        lambda found: found == CELLS,
        f"node {node} to advertise the cells again",
        TIMEOUT,
        interval=0.2,
    )
