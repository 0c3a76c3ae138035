"""Every operand of the stack survives ``kill -9``, and a node's kubelet survives a restart.

One embedded cluster on the shipped ``default`` profile runs in this process (a
:class:`~nrop.localcluster.cluster.ClusterThread`: the kubelet restart needs
:meth:`~nrop.localcluster.kubelet.fleet.Fleet.restart`, which only the cluster's own loop can
call). The stack is installed through the operator as the suite's ``--setup`` does
(:func:`nrop.suite.stack.setup`), and numacell runs on the workers from the suite's own
manifests, so the operator, the exporters, the secondary scheduler and the device plugins are
real processes of the project's image on the emulated nodes.

For each of them, the operand's process (found by its working directory: the container's
directory below the node root, where the kubelet starts it) gets SIGKILL, and at once a
guaranteed pod (2 CPUs, 256Mi) aimed at ``worker-0`` is created for the NUMA-aware scheduler,
so that it is scheduled, admitted and accounted across the crash. Then, as a user would see:

* the kubelet restarted the container: exit code 137, ``restartCount`` one higher, a new
  process, ready again, one more ``Started`` event and no ``BackOff`` (upstream's kubelet
  restarts a container that crashed for the first time without back-off);
* the pod is Running on ``worker-0``, ``Scheduled`` by the NUMA-aware scheduler, with
  exclusive CPUs of a single NUMA zone (podresources);
* the node's NRT converges to the reference minus the pod's request in that zone, the other
  worker's NRT is the reference;
* the operator reconciles both CRs (a spoiled desired-hash annotation on the exporter
  DaemonSet and on the scheduler Deployment is put back) and both are healthy;
* deleting the pod brings every NRT back to the reference.

Last, ``worker-0``'s kubelet is restarted with its own configuration (``Fleet.restart`` is a
reboot: the new kubelet records ``Starting``, its containers run again): the running
guaranteed pod keeps its exclusive CPUs (podresources of the new kubelet) and the NRT comes
back to what it was.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from kubernetes import client, config

from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.api.images import DEFAULT_IMAGE
from nrop.localcluster.cluster import ClusterConfig, ClusterThread, LocalCluster
from nrop.localcluster.kubelet.cpuset import CPUSet
from nrop.localcluster.kubelet.fleet import node_root
from nrop.localcluster.kubelet.grpcservers.podresources import POD_RESOURCES_SOCKET as PODRESOURCES_SOCKET
from nrop.operator.kubeapi import DESIRED_HASH_ANNOTATION
from nrop.operator.naming import SCHEDULER_DEPLOYMENT
from nrop.suite import infra, objects, stack, waiters
from nrop.suite import nrt as nrtlib
from nrop.suite import resourcelist as rl
from nrop.suite.kube import (
    DAEMONSET,
    DEPLOYMENT,
    EVENT,
    NAMESPACE,
    NROP,
    NROSCHED,
    NRT,
    POD,
    Kind,
    Kube,
    Manifest,
)
from nrop.suite.waiting import wait_for as _wait_for

pytestmark = pytest.mark.slow

TARGET = "worker-0"
OTHER = "worker-1"
WORKERS = (TARGET, OTHER)
TIMEOUT = 60.0
REQUESTS = {"cpu": "2", "memory": "256Mi"}
NUMACELL_NAMESPACE = "numacell-faults"
PODS_DIR = "var/lib/kubelet/pods"

#: Two cores are shared by everything: poll twice a second.
wait_for = functools.partial(_wait_for, interval=0.5)


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
    "operator": Operand("app=numaresources-operator", stack.OPERATOR_CONTAINER, per_node=False),
    "numacell": Operand(
        f"name={infra.NUMACELL_PREFIX}-worker-pod", f"{infra.NUMACELL_PREFIX}-worker-cnt", NUMACELL_NAMESPACE
    ),
}


# -- the cluster and the stack --------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_thread() -> Iterator[ClusterThread]:
    state = Path(tempfile.mkdtemp(prefix="nrop-flt-", dir="/tmp"))
    runner = ClusterThread(ClusterConfig(profile="default", state_dir=state / "c", bookmark_interval=1.0))
    try:
        with runner:
            yield runner
    finally:
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(cluster_thread: ClusterThread) -> LocalCluster:
    return cluster_thread.cluster


@pytest.fixture(scope="module")
def kube(cluster: LocalCluster) -> Iterator[Kube]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig_path), client_configuration=configuration)
    with client.ApiClient(configuration) as api:
        yield Kube(api)


@pytest.fixture(scope="module")
def installed(kube: Kube) -> stack.Stack:
    """The stack (exporters refreshing every second) and numacell on every worker."""
    installed = stack.setup(
        kube, image=DEFAULT_IMAGE, refresh_period="1s", timings=stack.StackTimings.local()
    )
    kube.create(objects.new_namespace(NUMACELL_NAMESPACE))
    pools = infra.node_group_pools([{"poolName": "worker"}])
    for manifest in infra.numacell_manifests(
        NUMACELL_NAMESPACE, pools, DEFAULT_IMAGE, infra.numacell_program(DEFAULT_IMAGE)
    ):
        kube.create(manifest)
    wait_for(
        lambda: kube.get_or_none(DAEMONSET, f"{infra.NUMACELL_PREFIX}-worker-ds", NUMACELL_NAMESPACE),
        infra.daemonset_ready,
        "the numacell DaemonSet to be ready",
        TIMEOUT,
    )
    for node in WORKERS:
        wait_for(
            lambda node=node: kube.get_or_none(NRT, node),
            infra.zones_expose_numacell,
            f"NRT {node} to expose the numacell resources",
            TIMEOUT,
        )
    return installed


@pytest.fixture(scope="module")
def reference(kube: Kube, installed: stack.Stack) -> dict[str, dict[str, rl.ResourceList]]:
    """Every worker's available resources per zone with the stack idle (stable for two refreshes)."""
    time.sleep(2.5)
    first = _available(kube)
    time.sleep(2.5)
    assert _available(kube) == first, "the NRTs of an idle cluster keep changing"
    return first


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    name = f"faults-{uuid.uuid4().hex[:6]}"
    kube.create(objects.new_namespace(name))
    yield name
    kube.delete(NAMESPACE, name)


# -- reading the cluster --------------------------------------------------------------------------


def _available(kube: Kube) -> dict[str, dict[str, rl.ResourceList]]:
    return {node: nrtlib.zone_resources(kube.get(NRT, node)) for node in WORKERS}


def _numa_cpus(node: str, cluster: LocalCluster) -> dict[str, frozenset[int]]:
    """``{zone name: its CPUs}`` from the node's sysfs (zone ``node-<n>`` is NUMA node ``n``)."""
    base = node_root(cluster.state_dir, node) / "sys/devices/system/node"
    return {
        f"node-{d.name[4:]}": frozenset(CPUSet.parse((d / "cpulist").read_text().strip()))
        for d in base.glob("node[0-9]*")
    }


def _pod_cpus(cluster: LocalCluster, node: str, namespace: str, name: str) -> frozenset[int]:
    """The exclusive CPUs the node's kubelet reports for a pod on its podresources socket."""
    socket = node_root(cluster.state_dir, node) / PODRESOURCES_SOCKET
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        response = api_pb2_grpc.PodResourcesListerStub(channel).List(
            api_pb2.ListPodResourcesRequest(), timeout=5
        )
    (pod,) = [p for p in response.pod_resources if (p.namespace, p.name) == (namespace, name)]
    return frozenset(cpu for c in pod.containers for cpu in c.cpu_ids)


def _pod_cpus_or_none(cluster: LocalCluster, node: str, namespace: str, name: str) -> frozenset[int] | None:
    """:func:`_pod_cpus`, or ``None`` while the socket is not served or does not list the pod."""
    try:
        return _pod_cpus(cluster, node, namespace, name)
    except (grpc.RpcError, ValueError):
        return None


def _container_status(pod: Manifest, container: str) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return next((s for s in statuses if s["name"] == container), {})


def _events(kube: Kube, namespace: str, name: str, kind: str, reason: str, field_path: str = "") -> int:
    """How many times ``reason`` was recorded for the object (aggregated events count each occurrence)."""
    return sum(
        int(e.get("count") or 1)
        for e in kube.events_for(namespace, name, kind)
        if e.get("reason") == reason
        and (not field_path or (e.get("involvedObject") or {}).get("fieldPath") == field_path)
    )


def _node_starts(kube: Kube, node: str) -> int:
    """How many kubelets recorded ``Starting`` on the Node (node events live in ``default``)."""
    selector = f"involvedObject.kind=Node,involvedObject.name={node}"
    return sum(e.get("reason") == "Starting" for e in kube.list(EVENT, "default", field_selector=selector))


def _container_events(kube: Kube, pod: Manifest, container: str, reason: str) -> int:
    meta = pod["metadata"]
    return _events(kube, meta["namespace"], meta["name"], "Pod", reason, f"spec.containers{{{container}}}")


def _scheduled_by(kube: Kube, namespace: str, name: str) -> list[str]:
    """Who reported ``Scheduled`` for the pod."""
    return [
        str(e.get("reportingComponent") or (e.get("source") or {}).get("component"))
        for e in kube.events_for(namespace, name, "Pod")
        if e.get("reason") == "Scheduled"
    ]


def _process_of(cluster: LocalCluster, pod: Manifest, container: str) -> int:
    """The PID whose working directory is the container's directory on its node (how the kubelet starts it)."""
    meta = pod["metadata"]
    wanted = str(
        (
            node_root(cluster.state_dir, pod["spec"]["nodeName"])
            / PODS_DIR
            / meta["uid"]
            / "containers"
            / container
        ).resolve()
    )
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == wanted:
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no process runs in {wanted}")


def _operand_pod(kube: Kube, installed: stack.Stack, operand: Operand) -> Manifest:
    pods = kube.list(POD, operand.namespace or installed.namespace, label_selector=operand.label)
    pods = [p for p in pods if not operand.per_node or p["spec"].get("nodeName") == TARGET]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    assert len(running) == 1, (
        f"expected one running pod for {operand.label}, got {[waiters.pod_summary(p) for p in pods]}"
    )
    return running[0]


def _guaranteed_pod(namespace: str, scheduler: str) -> Manifest:
    pod = objects.new_test_pod_pause(namespace, "guaranteed")
    pod["spec"]["schedulerName"] = scheduler
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": TARGET}
    return objects.set_resources(pod, requests=REQUESTS, limits=REQUESTS)


def _reverted_by_the_operator(kube: Kube, kind: Kind, name: str, namespace: str) -> None:
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


def _stack_healthy(kube: Kube) -> bool:
    return stack.condition_status(kube.get_or_none(NROP, stack.NROP_NAME), "Available") == "True" and (
        stack.scheduler_healthy(kube.get_or_none(NROSCHED, stack.NROSCHED_NAME))
    )


def _expected(
    reference: dict[str, dict[str, rl.ResourceList]], zone: str
) -> dict[str, dict[str, rl.ResourceList]]:
    """The reference with the pod's request taken from ``zone`` of TARGET."""
    expected = {node: dict(zones) for node, zones in reference.items()}
    expected[TARGET][zone] = rl.sub(reference[TARGET][zone], rl.of(REQUESTS))
    return expected


def _wait_available(kube: Kube, expected: dict[str, dict[str, rl.ResourceList]], what: str) -> None:
    wait_for(
        lambda: _available(kube),
        lambda now: all(
            now[node].keys() == zones.keys() and all(rl.equal(now[node][z], zones[z]) for z in zones)
            for node, zones in expected.items()
        ),
        f"the NRTs to converge to {what}",
        TIMEOUT,
    )


# -- the faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("which", list(OPERANDS))
def test_kill_9_of_an_operand_while_a_pod_is_scheduled(
    which: str,
    kube: Kube,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
) -> None:
    operand = OPERANDS[which]
    victim = _operand_pod(kube, installed, operand)
    restarts = int(_container_status(victim, operand.container).get("restartCount") or 0)
    started = _container_events(kube, victim, operand.container, "Started")
    backoffs = _container_events(kube, victim, operand.container, "BackOff")
    pid = _process_of(cluster, victim, operand.container)

    # The pod comes while the operand is down: it is scheduled (and admitted, and accounted)
    # across the crash, and when the scheduler is the victim its restarted process binds it.
    os.kill(pid, signal.SIGKILL)
    kube.create(_guaranteed_pod(namespace, installed.scheduler_name))

    meta = victim["metadata"]
    restarted = wait_for(
        lambda: kube.get(POD, meta["name"], meta["namespace"]),
        lambda p: (
            _container_status(p, operand.container).get("restartCount") == restarts + 1
            and bool(_container_status(p, operand.container).get("ready"))
        ),
        f"the {which} container to be restarted once and ready",
        TIMEOUT,
    )
    terminated = _container_status(restarted, operand.container)["lastState"]["terminated"]
    assert terminated["exitCode"] == 137
    assert _process_of(cluster, restarted, operand.container) != pid
    wait_for(
        lambda: _container_events(kube, restarted, operand.container, "Started"),
        lambda n: n == started + 1,
        f"one more Started event for the {which} container",
        10.0,
    )
    # The first restart after a crash has no back-off (upstream's kubelet): no BackOff event.
    assert _container_events(kube, restarted, operand.container, "BackOff") == backoffs

    pod = waiters.for_pod_phase(kube, namespace, "guaranteed", "Running", interval=0.5, timeout=TIMEOUT)
    assert pod["spec"]["nodeName"] == TARGET
    assert _scheduled_by(kube, namespace, "guaranteed") == [installed.scheduler_name]
    cpus = _pod_cpus(cluster, TARGET, namespace, "guaranteed")
    assert len(cpus) == 2
    zones = [zone for zone, zone_cpus in _numa_cpus(TARGET, cluster).items() if cpus <= zone_cpus]
    assert len(zones) == 1, f"CPUs {cpus} span NUMA zones"
    _wait_available(kube, _expected(reference, zones[0]), f"the reference minus the pod in {zones[0]}")
    _reverted_by_the_operator(kube, DAEMONSET, installed.rte_daemonsets[0].split("/")[1], installed.namespace)
    _reverted_by_the_operator(kube, DEPLOYMENT, SCHEDULER_DEPLOYMENT, installed.namespace)
    wait_for(lambda: kube, _stack_healthy, "both CRs to be healthy again", TIMEOUT)

    kube.delete(POD, "guaranteed", namespace, grace_period_seconds=0)
    waiters.for_pod_deleted(kube, namespace, "guaranteed", timeout=TIMEOUT)
    _wait_available(kube, reference, "the reference once the pod is gone")


def test_a_kubelet_restart_keeps_exclusive_cpus_and_the_nrt(
    kube: Kube,
    cluster_thread: ClusterThread,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
) -> None:
    kube.create(_guaranteed_pod(namespace, installed.scheduler_name))
    waiters.for_pod_phase(kube, namespace, "guaranteed", "Running", interval=0.5, timeout=TIMEOUT)
    cpus = _pod_cpus(cluster, TARGET, namespace, "guaranteed")
    (zone,) = [z for z, zone_cpus in _numa_cpus(TARGET, cluster).items() if cpus <= zone_cpus]
    expected = _expected(reference, zone)
    _wait_available(kube, expected, f"the reference minus the pod in {zone}")
    exporter = _operand_pod(kube, installed, OPERANDS["exporter"])
    exporter_id = _container_status(exporter, OPERANDS["exporter"].container)["containerID"]
    starts = _node_starts(kube, TARGET)

    fleet = cluster.fleet
    assert fleet is not None
    kubelet_config = fleet.kubelets[TARGET].spec.kubelet
    restart = cluster_thread.call(lambda: asyncio.ensure_future(fleet.restart(TARGET, kubelet_config)))
    wait_for(restart.done, bool, f"the kubelet of {TARGET} to restart", TIMEOUT)
    assert cluster_thread.call(restart.exception) is None
    wait_for(
        lambda: _node_starts(kube, TARGET),
        lambda n: n == starts + 1,
        f"the new kubelet of {TARGET} to record Starting",
        10.0,
    )

    # The restart is a reboot: every container of the node starts again (a new container ID).
    wait_for(
        lambda: _container_status(
            kube.get(POD, exporter["metadata"]["name"], exporter["metadata"]["namespace"]),
            OPERANDS["exporter"].container,
        ),
        lambda s: bool(s.get("ready")) and s.get("containerID") != exporter_id,
        "the exporter to run again under the new kubelet",
        TIMEOUT,
    )
    # The new kubelet's podresources server lists the pod once it admitted it again.
    again = wait_for(
        lambda: _pod_cpus_or_none(cluster, TARGET, namespace, "guaranteed"),
        bool,
        "the new kubelet to report the guaranteed pod on podresources",
        TIMEOUT,
    )
    assert again == cpus
    assert kube.get(POD, "guaranteed", namespace)["status"]["phase"] == "Running"
    # The new exporter reads the new kubelet (whose device plugins register again): the NRT
    # comes back to what it was, and stays so for two more refreshes.
    _wait_available(kube, expected, f"the reference minus the pod in {zone} after the restart")
    time.sleep(2.5)
    assert _available(kube) == expected
