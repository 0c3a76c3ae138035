"""The stack and readers the fault tests share (imported by ``test_*_faults.py``,
``test_malformed_pods.py``, ``test_rbac_least_privilege.py``).

They run against one embedded cluster on the shipped ``default`` profile in the test process
(``tests/conftest.py``'s ``cluster_thread``, configured by :func:`cluster_config` here: a kubelet
restart needs :meth:`~nrop.localcluster.kubelet.fleet.Fleet.restart`, which only the cluster's
own loop can call). The stack is installed through the operator as the suite's ``--setup`` does
(:func:`nrop.suite.install.stack.setup`), and numacell runs on the workers as the suite's BeforeSuite
deploys it (:func:`nrop.suite.install.numacelldeploy.deploy_numacell`), so the operator, the exporters,
the secondary scheduler and the device plugins are real processes of the project's image on the
emulated nodes.

A test module takes the fixtures by importing them (pytest finds fixtures by name in the
module): ``cluster_config`` (or its own), ``installed`` and ``reference``; ``cluster_thread``,
``cluster``, ``kube`` and a fresh ``namespace`` per test come from ``tests/conftest.py``. The
operand table says where each operand runs; the readers find an operand's process, a pod's
exclusive CPUs (podresources), events and the NRTs.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.api.images import DEFAULT_IMAGE
from nrop.localcluster.cluster import ClusterConfig, LocalCluster
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.fleet import node_root
from nrop.localcluster.kubelet.grpcservers.podresources import POD_RESOURCES_SOCKET as PODRESOURCES_SOCKET
from nrop.operator.kubeapi import DESIRED_HASH_ANNOTATION
from nrop.suite.e2e import objects
from nrop.suite.e2e import resourcelist as rl
from nrop.suite.e2e.kube import (
    EVENT,
    NROP,
    NROSCHED,
    NRT,
    POD,
    Kind,
    Kube,
    Manifest,
)
from nrop.suite.e2e.nrt import topologies as nrtlib
from nrop.suite.e2e.nrt import waiters as nrtwaiters
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import wait_for as _wait_for
from nrop.suite.install import nodegroups, numacelldeploy, operatorenv, stack

TARGET = "worker-0"
OTHER = "worker-1"
WORKERS = (TARGET, OTHER)
TIMEOUT = 60.0
REQUESTS = {"cpu": "2", "memory": "256Mi"}
NUMACELL_NAMESPACE = "numacell-faults"
PODS_DIR = "var/lib/kubelet/pods"
#: The fault tests' cluster: the shipped ``default`` profile, watch bookmarks every second.
CLUSTER = ClusterConfig(profile="default", bookmark_interval=1.0)

#: Two cores are shared by everything: poll twice a second.
POLL_INTERVAL = 0.5
wait_for = functools.partial(_wait_for, interval=POLL_INTERVAL)


@dataclass(frozen=True)
class Operand:
    """Where one operand's pods are: namespace (``None`` = the stack's), label selector, container."""

    label: str
    container: str
    namespace: str | None = None
    #: A per-node pod (DaemonSet): the one on TARGET is killed.
    per_node: bool = True


OPERANDS = {
    "exporter": Operand(stack.RTE_POD_LABEL, "resource-topology-exporter"),
    "scheduler": Operand(stack.SCHEDULER_POD_LABEL, "secondary-scheduler", per_node=False),
    "operator": Operand("app=numaresources-operator", operatorenv.OPERATOR_CONTAINER, per_node=False),
    "numacell": Operand(
        f"name={numacelldeploy.NUMACELL_PREFIX}-worker-pod",
        f"{numacelldeploy.NUMACELL_PREFIX}-worker-cnt",
        NUMACELL_NAMESPACE,
    ),
}


# -- the cluster and the stack --------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """:data:`CLUSTER`, the cluster of ``tests/conftest.py``'s ``cluster_thread``."""
    return CLUSTER


@pytest.fixture(scope="module")
def installed(kube: Kube) -> stack.Stack:
    """The stack (exporters refreshing every second) and numacell on every worker."""
    installed = stack.setup(
        kube, image=DEFAULT_IMAGE, refresh_period="1s", timings=stack.StackTimings.local()
    )
    kube.create(objects.new_namespace(NUMACELL_NAMESPACE))
    numacelldeploy.deploy_numacell(
        kube,
        NUMACELL_NAMESPACE,
        nodegroups.node_group_pools([{"poolName": "worker"}]),
        DEFAULT_IMAGE,
        timeout=TIMEOUT,
        interval=POLL_INTERVAL,
    )
    nrtwaiters.for_nrts(
        kube,
        WORKERS,
        numacelldeploy.zones_expose_numacell,
        "to expose the numacell resources",
        TIMEOUT,
        interval=POLL_INTERVAL,
    )
    return installed


@pytest.fixture(scope="module")
def reference(kube: Kube, installed: stack.Stack) -> dict[str, dict[str, rl.ResourceList]]:
    """Every worker's available resources per zone with the stack idle (stable for two refreshes)."""
    time.sleep(2.5)
    first = available(kube)
    time.sleep(2.5)
    assert available(kube) == first, "the NRTs of an idle cluster keep changing"
    return first


# -- reading the cluster --------------------------------------------------------------------------


def available(kube: Kube) -> dict[str, dict[str, rl.ResourceList]]:
    return {node: nrtlib.zone_resources(kube.get(NRT, node)) for node in WORKERS}


def numa_cpus(node: str, cluster: LocalCluster) -> dict[str, frozenset[int]]:
    """``{zone name: its CPUs}`` from the node's sysfs (zone ``node-<n>`` is NUMA node ``n``)."""
    base = node_root(cluster.state_dir, node) / "sys/devices/system/node"
    return {
        f"node-{d.name[4:]}": frozenset(CPUSet.parse((d / "cpulist").read_text().strip()))
        for d in base.glob("node[0-9]*")
    }


def pod_cpus(cluster: LocalCluster, node: str, namespace: str, name: str) -> frozenset[int]:
    """The exclusive CPUs the node's kubelet reports for a pod on its podresources socket."""
    socket = node_root(cluster.state_dir, node) / PODRESOURCES_SOCKET
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        response = api_pb2_grpc.PodResourcesListerStub(channel).List(
            api_pb2.ListPodResourcesRequest(), timeout=5
        )
    (pod,) = [p for p in response.pod_resources if (p.namespace, p.name) == (namespace, name)]
    return frozenset(cpu for c in pod.containers for cpu in c.cpu_ids)


def pod_cpus_or_none(cluster: LocalCluster, node: str, namespace: str, name: str) -> frozenset[int] | None:
    """:func:`pod_cpus`, or ``None`` while the socket is not served or does not list the pod."""
    try:
        return pod_cpus(cluster, node, namespace, name)
    except (grpc.RpcError, ValueError):
        return None


def container_status(pod: Manifest, container: str) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return next((s for s in statuses if s["name"] == container), {})


def events(kube: Kube, namespace: str, name: str, kind: str, reason: str, field_path: str = "") -> int:
    """How many times ``reason`` was recorded for the object (aggregated events count each occurrence)."""
    return sum(
        int(e.get("count") or 1)
        for e in kube.events_for(namespace, name, kind)
        if e.get("reason") == reason
        and (not field_path or (e.get("involvedObject") or {}).get("fieldPath") == field_path)
    )


def node_starts(kube: Kube, node: str) -> int:
    """How many kubelets recorded ``Starting`` on the Node (node events live in ``default``)."""
    selector = f"involvedObject.kind=Node,involvedObject.name={node}"
    return sum(e.get("reason") == "Starting" for e in kube.list(EVENT, "default", field_selector=selector))


def container_events(kube: Kube, pod: Manifest, container: str, reason: str) -> int:
    meta = pod["metadata"]
    return events(kube, meta["namespace"], meta["name"], "Pod", reason, f"spec.containers{{{container}}}")


def scheduled_by(kube: Kube, namespace: str, name: str) -> list[str]:
    """Who reported ``Scheduled`` for the pod."""
    return [
        str(e.get("reportingComponent") or (e.get("source") or {}).get("component"))
        for e in kube.events_for(namespace, name, "Pod")
        if e.get("reason") == "Scheduled"
    ]


def process_of(cluster: LocalCluster, pod: Manifest, container: str) -> int:
    """The PID of the container's process: the kubelet sets its ``HOME`` to the container's directory
    on its node (its working directory may be out of sight: a container in a mount namespace of its
    own can have a root of its own); of the processes carrying it, the one whose parent does not."""
    meta = pod["metadata"]
    directory = (
        node_root(cluster.state_dir, pod["spec"]["nodeName"])
        / PODS_DIR
        / meta["uid"]
        / "containers"
        / container
    )
    wanted = {f"HOME={path}".encode() for path in (directory, directory.resolve())}

    def home_of(pid: str) -> bool:
        try:
            return bool(wanted & set((Path("/proc") / pid / "environ").read_bytes().split(b"\0")))
        except OSError:
            return False

    def parent_of(pid: str) -> str:
        try:
            return (Path("/proc") / pid / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            return "0"

    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and home_of(entry.name) and not home_of(parent_of(entry.name)):
            return int(entry.name)
    raise AssertionError(f"no process runs in {directory}")


def operand_pod(kube: Kube, installed: stack.Stack, operand: Operand) -> Manifest:
    pods = kube.list(POD, operand.namespace or installed.namespace, label_selector=operand.label)
    pods = [p for p in pods if not operand.per_node or p["spec"].get("nodeName") == TARGET]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    assert len(running) == 1, (
        f"expected one running pod for {operand.label}, got {[waiters.pod_summary(p) for p in pods]}"
    )
    return running[0]


def guaranteed_pod(namespace: str, scheduler: str) -> Manifest:
    pod = objects.new_test_pod_pause(namespace, "guaranteed")
    pod["spec"]["schedulerName"] = scheduler
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": TARGET}
    return objects.set_resources(pod, requests=REQUESTS, limits=REQUESTS)


def reverted_by_the_operator(kube: Kube, kind: Kind, name: str, namespace: str) -> None:
    """Spoil the desired-hash annotation of an object a CR owns and wait for the operator to restore it:
    a reconcile of that CR that changes nothing else (no rollout)."""
    desired = kube.get(kind, name, namespace)["metadata"]["annotations"][DESIRED_HASH_ANNOTATION]
    kube.patch(kind, name, {"metadata": {"annotations": {DESIRED_HASH_ANNOTATION: "spoiled"}}}, namespace)
    wait_for(
        lambda: kube.get(kind, name, namespace)["metadata"]["annotations"].get(DESIRED_HASH_ANNOTATION),
        lambda value: value == desired,
        f"the operator to reconcile {kind} {namespace}/{name} back",
        TIMEOUT,
    )


def stack_healthy(kube: Kube) -> bool:
    return stack.condition_status(kube.get_or_none(NROP, objects.NROP_NAME), "Available") == "True" and (
        stack.scheduler_healthy(kube.get_or_none(NROSCHED, objects.NROSCHED_NAME))
    )


def expected_available(
    reference: dict[str, dict[str, rl.ResourceList]], zone: str
) -> dict[str, dict[str, rl.ResourceList]]:
    """The reference with the pod's request taken from ``zone`` of TARGET."""
    expected = {node: dict(zones) for node, zones in reference.items()}
    expected[TARGET][zone] = rl.sub(reference[TARGET][zone], rl.of(REQUESTS))
    return expected


def wait_available(kube: Kube, expected: dict[str, dict[str, rl.ResourceList]], what: str) -> None:
    wait_for(
        lambda: available(kube),
        lambda now: all(
            now[node].keys() == zones.keys() and all(rl.equal(now[node][z], zones[z]) for z in zones)
            for node, zones in expected.items()
        ),
        f"the NRTs to converge to {what}",
        TIMEOUT,
    )


# -- the faults -----------------------------------------------------------------------------------
