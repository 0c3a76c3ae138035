"""A worker that stops heartbeating goes unreachable and comes back; a full disk under the node's state.

The cluster, the stack and the readers are those of :mod:`stackfaults` (imported, not
copied): one embedded cluster on the ``default`` profile runs in this process as a
:class:`~nrop.localcluster.cluster.ClusterThread`, the stack is installed through the operator
(:func:`nrop.suite.install.stack.setup`) and numacell runs on the workers. Only the cluster differs:
its node lifecycle controller (``--node-monitor-grace-period``) gives up on a node after
:data:`GRACE` seconds instead of 40, and the kubelets renew their Lease every
:data:`LEASE_RENEW` seconds (upstream renews at a quarter of the lease duration; the ratio to the
grace period is kept comfortable so that a loaded machine does not make a healthy node flap).

**Unreachable node.** The heartbeat loop of ``worker-0``'s kubelet is stopped (its task is
cancelled: the kubelet keeps running its pods and serving podresources, but posts neither its
Lease nor its status, as a wedged kubelet). As upstream's node lifecycle controller does, the
Node's conditions go ``Unknown`` (``NodeStatusUnknown``, "Kubelet stopped posting node status.")
and it gets the ``node.kubernetes.io/unreachable`` taints. While it is so:

* a guaranteed pod pinned to it stays Pending: ``FailedScheduling`` from the NUMA-aware scheduler
  names the untolerated taint; an unpinned one runs on ``worker-1`` with exclusive CPUs of one zone;
* what ran on it keeps running: a guaranteed pod (which tolerates ``unreachable:NoExecute`` for
  300 s by default, so upstream evicts nothing in this window) keeps its CPUs, the exporter keeps
  its process.

The kubelet is then restarted (``Fleet.restart``): the Node is Ready again without the taints, the
pinned pod runs there with exclusive CPUs of one zone, the NRTs account every pod, and they are the
reference again once the pods are gone.

**Full disk.** Every write of data to a file below the cluster's state directory fails with
``ENOSPC`` (:func:`_full_disk`, at Python's file-open boundary in this process; files can still be
created empty, as on a full filesystem). The API server keeps its objects in memory, so API writes
go on. The kubelet cannot write the device manager checkpoint when it admits a pod with a numacell
device: as upstream, the pod is rejected (``UnexpectedAdmissionError``, "... no space left on
device ..."). A guaranteed pod without devices runs (upstream's CPU and memory managers keep their
state in memory and log the failed write). The checkpoints on disk stay byte for byte the previous
ones and no temporary file is left. With space back, the device pod is admitted and runs, and every
checkpoint loads with a valid checksum and records both running pods, not the rejected one.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import errno
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# The shared cluster, stack and readers. Fixtures are found by their name in this module, so they
# are imported under it, and the tests' parameters of the same names are not redefinitions.
from stackfaults import (
    CLUSTER,
    OPERANDS,
    OTHER,
    REQUESTS,
    TARGET,
    TIMEOUT,
    container_status,
    guaranteed_pod,
    installed,
    numa_cpus,
    operand_pod,
    pod_cpus,
    pod_cpus_or_none,
    process_of,
    reference,
    wait_available,
    wait_for,
)

from nrop.api import checkpoints
from nrop.localcluster.cluster import ClusterConfig, ClusterThread, LocalCluster
from nrop.localcluster.controllers import ControllerSettings
from nrop.localcluster.kubelet.checkpointfiles import (
    CPU_MANAGER_STATE,
    DEVICE_MANAGER_CHECKPOINT,
    MEMORY_MANAGER_STATE,
)
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.cm.devicemanager import DeviceCheckpoint
from nrop.localcluster.kubelet.fleet import node_root
from nrop.suite.e2e import objects
from nrop.suite.e2e import resourcelist as rl
from nrop.suite.e2e.kube import EVENT, NODE, POD, Kube, Manifest
from nrop.suite.e2e.wait import waiters
from nrop.suite.install import stack

# The shared fixtures, used by name only.
__all__ = ["installed", "reference"]

pytestmark = pytest.mark.slow

#: ``--node-monitor-grace-period`` of this cluster (upstream: 40 s).
GRACE = 15.0
#: The kubelets' Lease renewal once they run (upstream: a quarter of the 40 s lease).
LEASE_RENEW = 1.0
UNREACHABLE = "node.kubernetes.io/unreachable"
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
#: The numacell device of zone 0 (``kni.node/numacell00``).
NUMACELL = objects.numacell_resource_name(0)
DEVICE_REQUESTS = {**REQUESTS, NUMACELL: "1"}


# -- the cluster: the shared fixtures, with a short node-monitor grace period ----------------------


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """The fault tests' cluster, with a node lifecycle controller that notices a silent node quickly."""
    settings = ControllerSettings(node_monitor_grace_period=GRACE, node_monitor_period=0.5)
    return dataclasses.replace(CLUSTER, controllers=settings)


@pytest.fixture(scope="module")
def cluster_thread(cluster_thread: ClusterThread) -> ClusterThread:
    """The shared ``cluster_thread`` of this module's config, its kubelets renewing their Lease often."""
    _renew_often(cluster_thread.cluster)
    return cluster_thread


def _renew_often(cluster: LocalCluster, *names: str) -> None:
    """Kubelets renew their Lease every LEASE_RENEW seconds (from their next renewal on)."""
    assert cluster.fleet is not None
    for name, kubelet in cluster.fleet.kubelets.items():
        if not names or name in names:
            kubelet.lease_renew_interval = LEASE_RENEW


# -- reading the cluster --------------------------------------------------------------------------


def _condition(node: Manifest, kind: str) -> dict[str, Any]:
    return next((c for c in node["status"].get("conditions") or () if c["type"] == kind), {})


def _taints(node: Manifest) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or ()}


def _node_events(kube: Kube, node: str, reason: str) -> list[Manifest]:
    selector = f"involvedObject.kind=Node,involvedObject.name={node}"
    return [e for e in kube.list(EVENT, "default", field_selector=selector) if e.get("reason") == reason]


def _failed_scheduling(kube: Kube, namespace: str, name: str) -> list[Manifest]:
    return [e for e in kube.events_for(namespace, name, "Pod") if e.get("reason") == "FailedScheduling"]


def _reporter(event: Manifest) -> str:
    return str(event.get("reportingComponent") or (event.get("source") or {}).get("component"))


def _named_pod(namespace: str, scheduler: str, name: str, *, pinned: bool = True) -> Manifest:
    """:func:`guaranteed_pod` (2 CPUs, 256Mi, for ``scheduler``) under another name, pinned to TARGET or not."""
    pod = guaranteed_pod(namespace, scheduler)
    pod["metadata"]["name"] = name
    if not pinned:
        del pod["spec"]["nodeSelector"]
    return pod


def _device_pod(namespace: str, scheduler: str, name: str) -> Manifest:
    """:func:`_named_pod` with one numacell device of zone 0 on top (a device-manager allocation)."""
    pod = _named_pod(namespace, scheduler, name)
    return objects.set_resources(pod, requests=DEVICE_REQUESTS, limits=DEVICE_REQUESTS)


def _running_on(
    kube: Kube, cluster: LocalCluster, namespace: str, name: str, node: str
) -> tuple[str, frozenset[int]]:
    """Wait for the pod to run on ``node``; its zone and its exclusive CPUs (all in that zone)."""
    pod = waiters.for_pod_phase(kube, namespace, name, "Running", interval=0.5, timeout=TIMEOUT)
    assert pod["spec"]["nodeName"] == node
    cpus = pod_cpus(cluster, node, namespace, name)
    assert len(cpus) == 2
    zones = [zone for zone, zone_cpus in numa_cpus(node, cluster).items() if cpus <= zone_cpus]
    assert len(zones) == 1, f"CPUs {sorted(cpus)} of {namespace}/{name} span NUMA zones"
    return zones[0], cpus


def _minus(
    reference: dict[str, dict[str, rl.ResourceList]], *pods: tuple[str, str, dict[str, str]]
) -> dict[str, dict[str, rl.ResourceList]]:
    """The reference less each ``(node, zone, requests)``."""
    expected = {node: dict(zones) for node, zones in reference.items()}
    for node, zone, requests in pods:
        expected[node][zone] = rl.sub(expected[node][zone], rl.of(requests))
    return expected


# -- faults ---------------------------------------------------------------------------------------


def _stop_heartbeats(cluster_thread: ClusterThread, node: str) -> None:
    """Cancel the kubelet's Lease/status loop (its task ``kubelet-<node>-lease``); the rest keeps running."""

    def cancel() -> int:
        tasks = [t for t in asyncio.all_tasks() if t.get_name() == f"kubelet-{node}-lease"]
        for task in tasks:
            task.cancel()
        return len(tasks)

    assert cluster_thread.call(cancel) == 1, f"no heartbeat loop found for the kubelet of {node}"


def _restart_kubelet(cluster_thread: ClusterThread, cluster: LocalCluster, node: str) -> None:
    fleet = cluster.fleet
    assert fleet is not None
    config = fleet.kubelets[node].spec.kubelet
    restart = cluster_thread.call(lambda: asyncio.ensure_future(fleet.restart(node, config)))
    wait_for(restart.done, bool, f"the kubelet of {node} to restart", TIMEOUT)
    assert cluster_thread.call(restart.exception) is None
    _renew_often(cluster, node)


class _FullFile:
    """A file opened for writing on a full filesystem: any data written fails with ENOSPC."""

    def __init__(self, handle: Any, path: str, refused: list[str]) -> None:
        self._handle, self._path, self._refused = handle, path, refused

    def write(self, data: Any) -> int:
        if not len(data):
            return 0
        self._refused.append(self._path)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self._path)

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


@contextmanager
def _full_disk(root: Path) -> Iterator[list[str]]:
    """While inside, the filesystem of ``root`` is full for this process: writing data to a file below
    it fails with ENOSPC (opening and creating still work). Yields the paths whose writes failed."""
    real_open, refused = io.open, []
    below = os.path.abspath(root) + os.sep

    def full_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax+")
        if writing and isinstance(file, (str, os.PathLike)) and os.path.abspath(file).startswith(below):
            return _FullFile(handle, os.fspath(file), refused)
        return handle

    io.open = builtins.open = full_open  # type: ignore[assignment]
    try:
        yield refused
    finally:
        io.open = builtins.open = real_open  # type: ignore[assignment]


def _checkpoint_files(cluster: LocalCluster, node: str) -> dict[Path, bytes]:
    root = node_root(cluster.state_dir, node)
    return {
        p: (root / p).read_bytes()
        for p in (CPU_MANAGER_STATE, MEMORY_MANAGER_STATE, DEVICE_MANAGER_CHECKPOINT)
    }


def _leftovers(cluster: LocalCluster, node: str) -> list[str]:
    """Temporary files next to the checkpoints (what a torn atomic write leaves)."""
    root = node_root(cluster.state_dir, node)
    return sorted(
        p.name
        for d in {(root / f).parent for f in (CPU_MANAGER_STATE, DEVICE_MANAGER_CHECKPOINT)}
        for p in d.iterdir()
        if p.name.endswith(".tmp")
    )


def _loaded(
    files: dict[Path, bytes],
) -> tuple[checkpoints.CPUManagerCheckpoint, checkpoints.MemoryManagerCheckpoint, DeviceCheckpoint]:
    """Every checkpoint parsed with its checksum verified (raises on a corrupted one)."""
    cpu = checkpoints.decode_cpu_manager_checkpoint(files[CPU_MANAGER_STATE])
    assert cpu.checksum != 0, "the CPU manager checkpoint carries no checksum"
    memory = checkpoints.MemoryManagerCheckpoint.from_json(files[MEMORY_MANAGER_STATE])
    devices = DeviceCheckpoint.from_json(files[DEVICE_MANAGER_CHECKPOINT])
    return cpu, memory, devices


# -- the tests ------------------------------------------------------------------------------------


def test_a_node_that_stops_heartbeating_is_unreachable_until_its_kubelet_is_back(
    kube: Kube,
    cluster_thread: ClusterThread,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
) -> None:
    scheduler = installed.scheduler_name
    # A guaranteed pod already runs on TARGET: it must ride out the outage.
    resident = kube.create(_named_pod(namespace, scheduler, "resident"))
    resident_zone, resident_cpus = _running_on(kube, cluster, namespace, "resident", TARGET)
    tolerations = kube.get(POD, "resident", namespace)["spec"]["tolerations"]
    assert {
        "key": UNREACHABLE,
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    } in tolerations
    exporter = operand_pod(kube, installed, OPERANDS["exporter"])
    exporter_container = OPERANDS["exporter"].container
    exporter_id = container_status(exporter, exporter_container)["containerID"]
    exporter_pid = process_of(cluster, exporter, exporter_container)
    assert _condition(kube.get(NODE, TARGET), "Ready")["status"] == "True"

    _stop_heartbeats(cluster_thread, TARGET)
    node = wait_for(
        lambda: kube.get(NODE, TARGET),
        lambda n: (
            _condition(n, "Ready").get("status") == "Unknown" and (UNREACHABLE, "NoSchedule") in _taints(n)
        ),
        f"{TARGET} to be Unknown and tainted unreachable",
        GRACE + 2 * LEASE_RENEW + TIMEOUT / 2,
    )
    for kind in KUBELET_CONDITIONS:
        condition = _condition(node, kind)
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        ), kind
    assert {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")} <= _taints(node)
    assert all(t.get("timeAdded") for t in node["spec"]["taints"] if t["key"] == UNREACHABLE)
    assert _node_events(kube, TARGET, "NodeNotReady")
    assert _condition(kube.get(NODE, OTHER), "Ready")["status"] == "True"

    # A new pod pinned to the unreachable node is not placed there; an unpinned one runs elsewhere.
    kube.create(_named_pod(namespace, scheduler, "pinned"))
    (failed, *_) = wait_for(
        lambda: _failed_scheduling(kube, namespace, "pinned"),
        bool,
        "FailedScheduling for the pod pinned to the unreachable node",
        TIMEOUT,
    )
    assert _reporter(failed) == scheduler
    assert f"node(s) had untolerated taint {{{UNREACHABLE}: }}" in failed["message"], failed["message"]
    pending = kube.get(POD, "pinned", namespace)
    assert pending["status"]["phase"] == "Pending" and not pending["spec"].get("nodeName")
    kube.create(_named_pod(namespace, scheduler, "elsewhere", pinned=False))
    elsewhere_zone, _ = _running_on(kube, cluster, namespace, "elsewhere", OTHER)

    # What runs on the unreachable node keeps running: no eviction, same CPUs, same processes.
    still = kube.get(POD, "resident", namespace)
    assert still["metadata"]["uid"] == resident["metadata"]["uid"]
    assert still["status"]["phase"] == "Running" and not still["metadata"].get("deletionTimestamp")
    assert pod_cpus(cluster, TARGET, namespace, "resident") == resident_cpus
    exporter_now = kube.get(POD, exporter["metadata"]["name"], exporter["metadata"]["namespace"])
    assert not exporter_now["metadata"].get("deletionTimestamp")
    assert container_status(exporter_now, exporter_container)["containerID"] == exporter_id
    assert process_of(cluster, exporter_now, exporter_container) == exporter_pid
    assert _condition(kube.get(NODE, TARGET), "Ready")["status"] == "Unknown"

    # The kubelet comes back: Ready, untainted, and the pending pod runs there.
    _restart_kubelet(cluster_thread, cluster, TARGET)
    node = wait_for(
        lambda: kube.get(NODE, TARGET),
        lambda n: (
            _condition(n, "Ready").get("status") == "True" and not {k for k, _ in _taints(n)} & {UNREACHABLE}
        ),
        f"{TARGET} to be Ready again without the unreachable taints",
        TIMEOUT,
    )
    pinned_zone, _ = _running_on(kube, cluster, namespace, "pinned", TARGET)
    again = wait_for(
        lambda: pod_cpus_or_none(cluster, TARGET, namespace, "resident"),
        bool,
        "the restarted kubelet to report the resident pod",
        TIMEOUT,
    )
    assert again == resident_cpus
    wait_available(
        kube,
        _minus(
            reference,
            (TARGET, resident_zone, REQUESTS),
            (TARGET, pinned_zone, REQUESTS),
            (OTHER, elsewhere_zone, REQUESTS),
        ),
        "the reference minus the three pods",
    )
    for name in ("resident", "pinned", "elsewhere"):
        kube.delete(POD, name, namespace, grace_period_seconds=0)
    for name in ("resident", "pinned", "elsewhere"):
        waiters.for_pod_deleted(kube, namespace, name, timeout=TIMEOUT)
    wait_available(kube, reference, "the reference once the pods are gone")
    assert _condition(kube.get(NODE, TARGET), "Ready")["status"] == "True"


def test_a_full_disk_rejects_a_device_pod_clearly_and_corrupts_nothing(
    kube: Kube,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
) -> None:
    scheduler = installed.scheduler_name
    before = _checkpoint_files(cluster, TARGET)
    _loaded(before)

    with _full_disk(cluster.state_dir) as refused:
        # The API server stores in memory: it takes writes on a full disk; the kubelet cannot.
        kube.create(_device_pod(namespace, scheduler, "on-full-disk"))
        rejected = waiters.for_pod_phase(
            kube, namespace, "on-full-disk", "Failed", interval=0.5, timeout=TIMEOUT
        )
        # Without devices, as upstream, the CPU and memory managers keep their state in memory and
        # only log the failed checkpoint write: the pod runs on the full disk.
        kube.create(_named_pod(namespace, scheduler, "cpus-only"))
        cpus_only_zone, cpus_only_cpus = _running_on(kube, cluster, namespace, "cpus-only", TARGET)
        assert refused, "nothing tried to write below the state directory"
        # The previous state is intact: the same bytes, nothing half-written left behind.
        assert _checkpoint_files(cluster, TARGET) == before
        assert _leftovers(cluster, TARGET) == []
    status = rejected["status"]
    assert status["reason"] == "UnexpectedAdmissionError"
    assert status["message"].startswith(
        'Pod was rejected: Allocate failed due to failed to write checkpoint file "kubelet_internal_checkpoint": '
        "write /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint: no space left on device"
    ), status["message"]
    assert status["message"].endswith(", which is unexpected"), status["message"]
    (event,) = [
        e
        for e in kube.events_for(namespace, "on-full-disk", "Pod")
        if e["reason"] == "UnexpectedAdmissionError"
    ]
    assert event["type"] == "Warning" and "no space left on device" in event["message"]
    # The rejected pod holds nothing.
    assert pod_cpus_or_none(cluster, TARGET, namespace, "on-full-disk") is None
    wait_available(
        kube, _minus(reference, (TARGET, cpus_only_zone, REQUESTS)), "the reference minus the pod that runs"
    )

    # Space is back: the same pod is admitted, and every checkpoint loads and records both pods.
    kube.create(_device_pod(namespace, scheduler, "space-back"))
    zone, cpus = _running_on(kube, cluster, namespace, "space-back", TARGET)
    assert zone == "node-0"
    cpu, memory, devices = _loaded(_checkpoint_files(cluster, TARGET))
    uids = {name: kube.get(POD, name, namespace)["metadata"]["uid"] for name in ("cpus-only", "space-back")}
    for name, expected in (("cpus-only", cpus_only_cpus), ("space-back", cpus)):
        assert (
            frozenset(c for text in cpu.entries[uids[name]].values() for c in CPUSet.parse(text)) == expected
        )
        assert uids[name] in memory.entries
    assert [e.resource_name for e in devices.entries or () if e.pod_uid == uids["space-back"]] == [NUMACELL]
    rejected_uid = rejected["metadata"]["uid"]
    assert rejected_uid not in cpu.entries and rejected_uid not in memory.entries
    assert all(e.pod_uid != rejected_uid for e in devices.entries or ())
    assert _leftovers(cluster, TARGET) == []
    wait_available(
        kube,
        _minus(reference, (TARGET, cpus_only_zone, REQUESTS), (TARGET, zone, DEVICE_REQUESTS)),
        "the reference minus both pods",
    )
    for name in ("cpus-only", "space-back"):
        kube.delete(POD, name, namespace, grace_period_seconds=0)
    for name in ("cpus-only", "space-back"):
        waiters.for_pod_deleted(kube, namespace, name, timeout=TIMEOUT)
    wait_available(kube, reference, "the reference once the pods are gone")
