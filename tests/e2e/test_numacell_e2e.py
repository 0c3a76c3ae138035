"""The numacell device plugin end to end: upstream's DaemonSet, of upstream's image, on the embedded cluster.

One cluster on the shipped ``default`` profile runs as the suite's embedded target
(``nrop-cluster up``, fixture ``embedded``). Upstream's manifests for numacell, exactly as
upstream's ``numacell -render`` prints them (:data:`UPSTREAM_RENDER`: ``/bin/numacell
-alsologtostderr -v 3`` of ``quay.io/openshift-kni/numacell-device-plugin:test-ci``, whose
only volume is the kubelet's device-plugin directory), are created through the API. The
kubelets know that image (``kubelet/knownimages.py``) and run the project's ``numacell`` as
a real process per worker, in a mount namespace of its own where it finds the node's sysfs
at ``/sys`` and the node's device-plugin socket at its default path. The tests check what
the suite relies on: the ``kni.node/numacellNN`` resources in node capacity and allocatable,
a pod asking for one landing on that NUMA cell (read on the kubelet's podresources socket),
the resources in the NRT zones written by a real ``resource-topology-exporter``,
re-registration when the plugin's pod is replaced, and that the suite deploys the same
manifests (:func:`nrop.suite.install.numacelldeploy.numacell_manifests`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _helpers_e2e import (
    NUMACELL_DAEMONSET,
    NUMACELL_POD_LABELS,
    install_nrt_crd,
    node_root,
    pod_resources,
    podresources_socket,
    program,
)

from nrop.api.nrt import NodeResourceTopology
from nrop.numacell import deviceplugin as numacell
from nrop.rte.sysinfo import parse_cpulist
from nrop.suite.e2e import config as suite_config
from nrop.suite.e2e import objects
from nrop.suite.e2e.kube import DAEMONSET, EVENT, NAMESPACE, NODE, NRT, POD, Kube
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install import nodegroups, nodetopology, numacelldeploy
from nrop.suite.plugin.target import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("default")]

WORKERS = ("worker-0", "worker-1")
NAMESPACE_NAME = "e2e-test-infra-1234"
TIMEOUT = 30.0
CELLS = {"kni.node/numacell00": "15", "kni.node/numacell01": "15"}

#: Upstream's ``numacell -render`` (test/deviceplugin/pkg/numacell/cmd), with NAME
#: ``numacell-dp-worker`` (the DaemonSet's, as BeforeSuite names it per pool; the account,
#: role and binding take the prefix ``numacell-dp``), NAMESPACE, IMAGE and the worker
#: role label substituted.
UPSTREAM_RENDER = f"""
---
apiVersion: v1
kind: ServiceAccount
metadata:
  creationTimestamp: null
  name: numacell-dp-sa
  namespace: {NAMESPACE_NAME}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  creationTimestamp: null
  name: numacell-dp-ro
  namespace: {NAMESPACE_NAME}
rules:
- apiGroups:
  - security.openshift.io
  resourceNames:
  - privileged
  resources:
  - securitycontextconstraints
  verbs:
  - use
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  creationTimestamp: null
  name: numacell-dp-rb
  namespace: {NAMESPACE_NAME}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: numacell-dp-ro
subjects:
- kind: ServiceAccount
  name: numacell-dp-sa
  namespace: {NAMESPACE_NAME}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  creationTimestamp: null
  name: numacell-dp-worker-ds
  namespace: {NAMESPACE_NAME}
spec:
  selector:
    matchLabels:
      name: numacell-dp-worker-pod
  template:
    metadata:
      creationTimestamp: null
      labels:
        name: numacell-dp-worker-pod
    spec:
      containers:
      - args:
        - -alsologtostderr
        - -v
        - "3"
        command:
        - /bin/numacell
        image: {suite_config.NUMACELL_IMAGE_CI}
        imagePullPolicy: Always
        name: numacell-dp-worker-cnt
        resources: {{}}
        securityContext:
          privileged: true
        volumeMounts:
        - mountPath: /var/lib/kubelet/device-plugins
          name: kubeletsockets
      nodeSelector:
        node-role.kubernetes.io/worker: ""
      restartPolicy: Always
      serviceAccountName: numacell-dp-sa
      terminationGracePeriodSeconds: 0
      volumes:
      - hostPath:
          path: /var/lib/kubelet/device-plugins
          type: Directory
        name: kubeletsockets
  updateStrategy: {{}}
status:
  currentNumberScheduled: 0
  desiredNumberScheduled: 0
  numberMisscheduled: 0
  numberReady: 0
"""


def upstream_manifests() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(UPSTREAM_RENDER) if doc]


@pytest.fixture(scope="module")
def deployed(kube: Kube) -> Iterator[dict[str, Any]]:
    kube.create(objects.new_namespace(NAMESPACE_NAME))
    for manifest in upstream_manifests():
        kube.create(manifest)
    yield wait_for(
        lambda: kube.get_or_none(DAEMONSET, NUMACELL_DAEMONSET, NAMESPACE_NAME),
        numacelldeploy.daemonset_ready,
        "upstream's numacell DaemonSet ready",
        TIMEOUT,
        interval=0.2,
    )
    kube.delete(NAMESPACE, NAMESPACE_NAME)


def _meaningful(value: Any) -> Any:
    """``value`` without what a Go ``yaml.Marshal`` adds: nulls, empty maps, a zero status."""
    if isinstance(value, dict):
        kept = {k: _meaningful(v) for k, v in value.items() if k != "status"}
        return {k: v for k, v in kept.items() if v not in (None, {})}
    if isinstance(value, list):
        return [_meaningful(v) for v in value]
    return value


def test_the_suite_deploys_upstreams_manifests() -> None:
    pools = nodegroups.node_group_pools([{"poolName": "worker"}])
    image = suite_config.NUMACELL_IMAGE_CI
    ours = numacelldeploy.numacell_manifests(
        NAMESPACE_NAME, pools, image, numacelldeploy.numacell_program(image)
    )
    assert ours == [_meaningful(m) for m in upstream_manifests()]


def numacell_resources(kube: Kube, node: str, which: str) -> dict[str, str]:
    status = kube.get(NODE, node)["status"]
    return {k: v for k, v in (status.get(which) or {}).items() if numacell.is_resource_name(k)}


def test_daemonset_runs_the_plugin_on_every_worker(kube: Kube, deployed: dict[str, Any]) -> None:
    assert deployed["status"]["desiredNumberScheduled"] == len(WORKERS)
    pods = kube.list(POD, NAMESPACE_NAME, label_selector=NUMACELL_POD_LABELS)
    assert sorted(p["spec"]["nodeName"] for p in pods) == list(WORKERS)
    for pod in pods:
        logs = wait_for(
            lambda pod=pod: kube.pod_logs(NAMESPACE_NAME, pod["metadata"]["name"]),
            lambda text: "registered kni.node/numacell01" in text,
            "the plugin to log its registrations",
            TIMEOUT,
            interval=0.2,
        )
        assert "cells=[0, 1]" in logs
    # The kubelet runs the image's program: it does not say it stands in for it.
    reasons = {e["reason"] for e in kube.list(EVENT, NAMESPACE_NAME)}
    assert "Started" in reasons and "SimulatedImage" not in reasons


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
        kubelet = nodetopology.kubelet_configuration(kube, node)
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
        for p in kube.list(POD, NAMESPACE_NAME, label_selector=NUMACELL_POD_LABELS)
        if p["spec"].get("nodeName") == node
    ]
    kube.delete(POD, old["metadata"]["name"], NAMESPACE_NAME, grace_period_seconds=0)
    new = wait_for(
        lambda: [
            p
            for p in kube.list(POD, NAMESPACE_NAME, label_selector=NUMACELL_POD_LABELS)
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
        lambda: kube.pod_logs(NAMESPACE_NAME, new[0]["metadata"]["name"]),
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
