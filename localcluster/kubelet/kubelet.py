"""One emulated kubelet: registers its Node, keeps its Lease, and admits, runs and ends the pods bound to it.

A thin I/O shell over the pure modules, inside the cluster process:

* the node root ``<state dir>/nodes/<name>/`` holds the sysfs tree (:mod:`.sysfs`), the
  podresources socket, the device-plugin directory and the checkpoint files;
* pods with ``spec.nodeName == <name>`` are followed through a store subscription and
  handled one at a time, in order, by :meth:`Kubelet._work`, together with what the pods'
  processes report (exits, probe results): admission by
  :class:`~.admission.NodeResourceManagers` (rejection: ``Failed`` status and a Warning
  event), then a pod IP and a :class:`~.podworker.PodWorker` (simulated containers, and
  real processes for the project's own image), graceful deletion (SIGTERM, SIGKILL after
  the grace period, release, terminal status, ``DELETE`` with grace 0);
* static pods from the manifest directory come in through :mod:`.staticpods` on the same
  queue (``ADDED``, ``STATIC_REMOVED``) and run the same way; their API object is their
  mirror pod, which :mod:`.staticpods` keeps and this loop never runs;
* after every allocation change the checkpoints ``cpu_manager_state``,
  ``memory_manager_state`` and ``device-plugins/kubelet_internal_checkpoint`` are rewritten
  atomically and the podresources snapshot is replaced (a write that fails, as on a full disk,
  keeps the previous file and is logged, except the device checkpoint of an admission that
  handed out devices: as upstream, that pod is rejected with ``UnexpectedAdmissionError``);
  whenever the set of running containers changes the notify file ``<root>/run/rte/notify`` is
  touched, left empty (what RTE's reactive mode watches, as an OCI hook would do on a real node).

Stopping the kubelet stops every process it started (SIGTERM, SIGKILL after
:data:`STOP_GRACE` seconds).

Threads: the event loop owns the API (store writes are synchronous on it).  Admissions run
in a worker thread, because a device plugin's ``GetPreferredAllocation``/``Allocate`` RPCs
may block; every use of the managers, gRPC threads included, holds ``self._lock``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import random
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.clock import Clock, SystemClock, rfc3339
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.rest import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.kubelet import nodeobjects, nodestatus, podevents, staticpods
from nrop.localcluster.kubelet.admission import AdmissionResult, NodeResourceManagers, PodAllocation
from nrop.localcluster.kubelet.devicemanager import CHECKPOINT_FILE, Device
from nrop.localcluster.kubelet.entrypoints import RuntimeConfig
from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    ENDPOINT_STOP_GRACE_PERIOD,
    DevicePluginError,
    PluginClient,
    RegistrationServer,
    device_plugin_dir,
    kubelet_socket,
)
from nrop.localcluster.kubelet.grpcservers.podresources import PodResourcesServer, pod_resources_socket
from nrop.localcluster.kubelet.machine import NodeSpec
from nrop.localcluster.kubelet.podworker import PodWorker, RuntimeContext, pods_dir
from nrop.localcluster.kubelet.probes import ProbeKind, ProbeSpec
from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor
from nrop.localcluster.kubelet.resourceviews import ResourceViews, snapshot
from nrop.localcluster.kubelet.sysfs import write_sysfs

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.server import APIServer

__all__ = [
    "CPU_MANAGER_STATE",
    "DEVICE_MANAGER_CHECKPOINT",
    "LEASE_RENEW_INTERVAL",
    "MEMORY_MANAGER_STATE",
    "NOTIFY_FILE",
    "STOP_GRACE",
    "Kubelet",
    "NodeNetwork",
]

log = logging.getLogger(__name__)

#: Relative to a node root.
KUBELET_DIR = Path("var/lib/kubelet")
CPU_MANAGER_STATE = KUBELET_DIR / "cpu_manager_state"
MEMORY_MANAGER_STATE = KUBELET_DIR / "memory_manager_state"
DEVICE_MANAGER_CHECKPOINT = KUBELET_DIR / "device-plugins" / CHECKPOINT_FILE
NOTIFY_FILE = Path("run/rte/notify")
#: A quarter of the lease duration, as upstream.
LEASE_RENEW_INTERVAL = nodeobjects.LEASE_DURATION_SECONDS / 4
#: When the kubelet stops: seconds between SIGTERM and SIGKILL for the processes left.
STOP_GRACE = 3.0
_FIELD_MANAGER = "kubelet"
_TERMINAL = ("Succeeded", "Failed")
_OWN_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")

Obj = dict[str, Any]

#: How many pod addresses a node's ``127.<n>.x.y`` range holds.
POD_ADDRESSES = 254 * 256


@dataclass(frozen=True)
class NodeNetwork:
    """A node's loopback addresses: ``127.0.1.<i+1>`` for the node, ``127.<16+i>.x.y`` for its pods."""

    address: str
    pod_prefix: str

    @classmethod
    def for_index(cls, index: int) -> NodeNetwork:
        if not 0 <= index < 200:
            raise ValueError(f"node index {index} out of range for loopback addressing")
        return cls(f"127.0.1.{index + 1}", f"127.{16 + index}")

    @property
    def pod_cidr(self) -> str:
        return f"{self.pod_prefix}.0.0/16"

    def pod_ip(self, serial: int) -> str:
        serial %= POD_ADDRESSES
        return f"{self.pod_prefix}.{serial // 254}.{serial % 254 + 1}"


def write_atomically(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old or the new content, never a part.

    As upstream's checkpoint file store: a temporary file replaces the target once written in
    full; when the write fails (a full disk) the temporary file is removed and the target stays.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def _go_error(op: str, path: Path, err: OSError) -> str:
    """An OS error as Go's ``*PathError`` prints it (``write /path: no space left on device``)."""
    text = err.strerror or str(err)
    return f"{op} {path}: {text[:1].lower()}{text[1:]}"


def _kind(server: APIServer, group: str, version: str, plural: str) -> Kind:
    kind = server.registry.lookup(group, version, plural)
    if kind is None:
        raise RuntimeError(f"the API server does not serve {plural}.{group or 'core'}/{version}")
    return kind


@dataclass
class _PodRecord:
    uid: str
    namespace: str
    name: str
    worker: PodWorker | None = None  # None: rejected, or never started
    timer: asyncio.TimerHandle | None = None
    finished: bool = False  # terminal and released
    deleting: bool = False  # graceful deletion under way
    static: bool = False  # from the manifest directory: its API object is its mirror pod
    written: podevents.Snapshot = field(default_factory=dict)  # container statuses last written


class Kubelet:
    """The kubelet of one node; :meth:`start` and :meth:`stop` run on the cluster's event loop."""

    def __init__(
        self,
        server: APIServer,
        spec: NodeSpec,
        root: Path,
        network: NodeNetwork,
        *,
        clock: Clock | None = None,
        lease_renew_interval: float = LEASE_RENEW_INTERVAL,
        runtime: RuntimeConfig | None = None,
        ca_pem: bytes = b"",
    ) -> None:
        self.server = server
        self.spec = spec
        self.name = spec.name
        self.root = Path(root)
        self.network = network
        self.clock = clock or SystemClock()
        self.lease_renew_interval = lease_renew_interval
        self.managers = NodeResourceManagers(spec)
        self.views = ResourceViews()
        self._lock = threading.RLock()
        self._plugins: dict[str, PluginClient] = {}
        self._plugin_removals: dict[str, asyncio.TimerHandle] = {}
        self._pods: dict[str, _PodRecord] = {}
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        # Pod addresses start at a random point of the node's range, so that embedded clusters running
        # side by side on one host (pytest-xdist workers, parallel CI jobs) do not hand out the same
        # loopback address and collide on the ports their pods serve (metrics, health probes).
        self._ip_serial = random.randrange(POD_ADDRESSES)
        self._running: set[tuple[str, str]] = set()
        self.runtime = runtime or RuntimeConfig.for_this_environment()
        self.ca_pem = ca_pem
        self.supervisor = Supervisor()
        self._closing: set[asyncio.Task[None]] = set()
        self._context: RuntimeContext | None = None
        self.podresources = PodResourcesServer(self.views, pod_resources_socket(self.root))
        self.registration = RegistrationServer(kubelet_socket(self.root), self)
        self._pod_kind = _kind(server, "", "v1", "pods")
        self._node_kind = _kind(server, "", "v1", "nodes")
        self._lease_kind = _kind(server, "coordination.k8s.io", "v1", "leases")
        self._event_kind = _kind(server, "", "v1", "events")
        self._opts = WriteOptions(field_manager=_FIELD_MANAGER)
        self.static_pods = staticpods.StaticPods(
            server,
            self.name,
            self.root / staticpods.MANIFESTS_DIR,
            enqueue=self._enqueue,
            state=self._static_pod_state,
            clock=self.clock,
            opts=self._opts,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._context = self._runtime_context()
        self.root.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(write_sysfs, self.root, self.spec.machine)
        # The store does not outlive the process, so neither do the pods of old checkpoints.
        for stale in (
            CPU_MANAGER_STATE,
            MEMORY_MANAGER_STATE,
            DEVICE_MANAGER_CHECKPOINT,
        ):
            (self.root / stale).unlink(missing_ok=True)
        await asyncio.to_thread(shutil.rmtree, pods_dir(self.root), True)
        await asyncio.to_thread(self.registration.start)
        await asyncio.to_thread(self.podresources.start)
        self._publish()
        self._register_node()
        self._node_events()
        self._renew_lease()
        self._unsubscribe = self.server.store.subscribe(self._pod_kind.storage, self._on_pod_event)
        for pod in self.server.store.list(self._pod_kind.storage):
            if (pod.get("spec") or {}).get("nodeName") == self.name:
                self._queue.put_nowait(("ADDED", pod))
        self._tasks = [
            asyncio.create_task(self._work(), name=f"kubelet-{self.name}"),
            asyncio.create_task(self._lease_loop(), name=f"kubelet-{self.name}-lease"),
            asyncio.create_task(self.static_pods.run(), name=f"kubelet-{self.name}-static-pods"),
        ]
        log.info("node %s ready", self.name)

    async def stop(self) -> None:
        self._stopping = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        for record in self._pods.values():
            if record.timer is not None:
                record.timer.cancel()
        for handle in self._plugin_removals.values():
            handle.cancel()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        for record in self._pods.values():
            if record.worker is not None:
                record.worker.abandon()
        await self.supervisor.stop_all(STOP_GRACE)
        if self._closing:
            await asyncio.wait(self._closing, timeout=STOP_GRACE)
        await asyncio.gather(
            asyncio.to_thread(self.podresources.stop, 0.2),
            asyncio.to_thread(self.registration.stop, 0.2),
        )
        log.info("node %s stopped", self.name)

    # -- node and lease ----------------------------------------------------------------------

    def node_resources(self) -> nodestatus.NodeResources:
        """Capacity/allocatable strings: the machine's, with devices as the device manager counts them."""
        base = nodestatus.node_resources(self.spec, include_devices=False)
        capacity, allocatable = dict(base.capacity), dict(base.allocatable)
        with self._lock:
            devices = self.managers.devices.capacity()
        for resource, (total, healthy) in devices.items():
            capacity[resource], allocatable[resource] = str(total), str(healthy)
        return nodestatus.NodeResources(dict(sorted(capacity.items())), dict(sorted(allocatable.items())))

    def _register_node(self) -> None:
        resources = self.node_resources()
        body = nodeobjects.node_object(
            self.spec,
            address=self.network.address,
            pod_cidr=self.network.pod_cidr,
            capacity=resources.capacity,
            allocatable=resources.allocatable,
            now=self.clock.now(),
        )
        try:
            self.server.rest.create(self._node_kind, "", body, self._opts)
        except errors.AlreadyExists:
            # Re-registration (a restart): as upstream's kubelet, leave what others wrote on the
            # Node (labels, annotations, taints, cordon) and write only the status.
            current = copy.deepcopy(self.server.rest.get(self._node_kind, "", self.name))
            current["status"] = body["status"]
            self.server.rest.update(self._node_kind, "", self.name, current, self._opts, subresource="status")

    def _node_events(self) -> None:
        now = self.clock.now()
        for kind, reason, message in podevents.node_events(self.name):
            body = nodeobjects.node_event(self.name, kind, reason, message, now, unique=uuid.uuid4().hex[:16])
            try:
                self.server.rest.create(self._event_kind, "default", body, self._opts)
            except errors.StatusError as err:
                log.warning("node %s: event %s not recorded: %s", self.name, reason, err)

    def _update_node_resources(self) -> None:
        try:
            node = copy.deepcopy(self.server.rest.get(self._node_kind, "", self.name))
        except errors.NotFound:
            return
        resources = self.node_resources()
        status = node.setdefault("status", {})
        if (
            status.get("capacity") == resources.capacity
            and status.get("allocatable") == resources.allocatable
        ):
            return
        status["capacity"], status["allocatable"] = resources.capacity, resources.allocatable
        heartbeat = rfc3339(self.clock.now())
        for condition in status.get("conditions") or ():
            condition["lastHeartbeatTime"] = heartbeat
        self.server.rest.update(self._node_kind, "", self.name, node, self._opts, subresource="status")
        log.info("node %s: capacity/allocatable updated", self.name)

    def _renew_lease(self) -> None:
        namespace = nodeobjects.NODE_LEASE_NAMESPACE
        try:
            lease = copy.deepcopy(self.server.rest.get(self._lease_kind, namespace, self.name))
        except errors.NotFound:
            node = self.server.rest.get(self._node_kind, "", self.name)
            body = nodeobjects.lease_object(self.name, node["metadata"]["uid"], self.clock.now())
            self.server.rest.create(self._lease_kind, namespace, body, self._opts)
            return
        fresh = nodeobjects.lease_object(self.name, "", self.clock.now())
        lease.setdefault("spec", {}).update(fresh["spec"])
        self.server.rest.update(self._lease_kind, namespace, self.name, lease, self._opts)

    def _sync_node_conditions(self) -> None:
        """Post healthy conditions again if someone else (the node lifecycle controller) changed them.

        Upstream's kubelet recomputes its status every ``nodeStatusUpdateFrequency`` and
        writes it when it differs from the Node's, which is how a node that was marked
        ``Unknown`` while its lease lapsed becomes Ready again.
        """
        try:
            node = copy.deepcopy(self.server.rest.get(self._node_kind, "", self.name))
        except errors.NotFound:
            return
        status = node.setdefault("status", {})
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        if ready is not None and ready.get("status") == "True":
            return
        now = self.clock.now()
        status["conditions"] = nodeobjects.node_conditions(now, now)
        self.server.rest.update(self._node_kind, "", self.name, node, self._opts, subresource="status")
        log.info("node %s: conditions posted as Ready again", self.name)

    async def _lease_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_renew_interval)
            try:
                self._renew_lease()
                self._sync_node_conditions()
            except errors.StatusError as err:
                log.warning("node %s: renewing the lease failed: %s", self.name, err)

    # -- pods: events in, one at a time ----------------------------------------------------

    def _on_pod_event(self, event: WatchEvent) -> None:
        spec = event.obj.get("spec") or {}
        if spec.get("nodeName") == self.name and not self._stopping:
            self._queue.put_nowait((event.type, event.obj))

    def _enqueue(self, item: tuple[Any, ...]) -> None:
        if not self._stopping:
            self._queue.put_nowait(item)

    def _wake_at(self, record: _PodRecord) -> None:
        if record.timer is not None:
            record.timer.cancel()
            record.timer = None
        change = record.worker.run.next_change() if record.worker is not None else None
        if change is None or self._loop is None:
            return
        delay = max(0.0, (change - self.clock.now()).total_seconds()) + 0.001
        record.timer = self._loop.call_later(delay, self._queue.put_nowait, ("TICK", record.uid))

    async def _work(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._handle(item)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("node %s: handling a pod %s failed", self.name, item[0])

    async def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            await self._pod_event(kind, item[1])
            return
        record = self._pods.get(item[1])
        if record is None or record.worker is None:
            if kind == "STATIC_REMOVED" and record is not None:
                self._finish_deletion(record)
            return
        if kind == "STATIC_REMOVED":
            if not record.deleting:
                await self._begin_deletion(record, record.worker.pod)
            return
        now = self.clock.now()
        worker = record.worker
        if kind == "TICK":
            record.timer = None
            changed = worker.run.advance(now)
        elif kind == "EXITED":
            _, _, container, cid, code = item
            changed = worker.exited(container, cid, code, now)
        elif kind == "PROBE":
            _, _, container, cid, spec, result, message = item
            changed = self._probed(record, container, cid, spec, result, message, now)
        else:  # SYNC: retry containers that could not be created
            changed = True
        await self._after_change(record, changed)

    async def _after_change(self, record: _PodRecord, changed: bool) -> None:
        """Act on the pod run (processes to start or stop), then release, write and wake as needed."""
        worker = record.worker
        assert worker is not None
        before = worker.run.status()
        await worker.sync()
        changed = changed or worker.run.status() != before
        if worker.run.terminal and not record.finished:
            self._release(record)
        if changed:
            self._write_run_status(record)
        if record.deleting and worker.run.terminal and not worker.processes_left:
            self._finish_deletion(record)
            return
        self._wake_at(record)

    def _probed(
        self,
        record: _PodRecord,
        container: str,
        cid: str,
        spec: ProbeSpec,
        result: bool,
        message: str,
        now: datetime,
    ) -> bool:
        worker = record.worker
        assert worker is not None
        pod = self._current(record)
        if not result and pod is not None:
            self._event(
                pod, "Unhealthy", f"{spec.kind.title} probe failed: {message}", now, container=container
            )
        if spec.kind == ProbeKind.LIVENESS or (spec.kind == ProbeKind.STARTUP and not result):
            if result or not worker.kill(container, cid, spec.termination_grace, now):
                return False
            if pod is not None:
                self._event(
                    pod,
                    "Killing",
                    f"Container {container} failed {spec.kind} probe, will be restarted",
                    now,
                    container=container,
                    warning=False,
                )
            return True
        return worker.run.probe(container, cid, spec.kind, result, now)

    async def _pod_event(self, kind: str, pod: Obj) -> None:
        if staticpods.is_mirror_pod(pod):
            return  # the API's view of a static pod: kept by self.static_pods, never run
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        record = self._pods.get(uid)
        if kind == "DELETED":
            if record is not None:
                self._pods.pop(uid, None)
                self._forget(record)
            return
        if record is None:
            if (pod.get("status") or {}).get("phase") in _TERMINAL:
                self._pods[uid] = _PodRecord(uid, meta["namespace"], meta["name"], finished=True)
                return
            if meta.get("deletionTimestamp"):
                self._delete_now(meta["namespace"], meta["name"], uid)
                return
            await self._admit(pod)
            return
        if record.worker is not None:
            record.worker.update(pod)
        if meta.get("deletionTimestamp") and not record.deleting:
            await self._begin_deletion(record, pod)

    # -- admission -----------------------------------------------------------------------------

    def _admit_and_allocate(self, pod: Obj) -> AdmissionResult:
        """Worker thread: the admit handlers, then the device plugins' ``Allocate`` calls."""
        with self._lock:
            result = self.managers.admit(pod)
            if not result.admitted or result.allocation is None:
                return result
            try:
                self._plugin_allocate(result.allocation)
            except DevicePluginError as err:
                self.managers.release(result.allocation.uid)
                return AdmissionResult(
                    False, "UnexpectedAdmissionError", f"Allocate failed due to {err}, which is unexpected"
                )
            return result

    def _plugin_allocate(self, allocation: PodAllocation) -> None:
        for container in allocation.containers:
            per_resource: dict[str, list[str]] = {}
            for device in container.devices:
                per_resource.setdefault(device.resource, []).append(device.device_id)
            for resource, ids in sorted(per_resource.items()):
                client = self._plugins.get(resource)
                if client is None:
                    continue  # a profile's built-in devices: nothing to call
                response = client.allocate([ids])
                if len(response.container_responses) != 1:
                    raise DevicePluginError(
                        f"device plugin {resource} returned {len(response.container_responses)} responses for 1 request"
                    )
                self.managers.record_device_allocate_response(
                    allocation.uid,
                    container.name,
                    resource,
                    response.container_responses[0].SerializeToString(),
                )
                client.pre_start_container(ids)

    async def _admit(self, pod: Obj) -> None:
        meta = pod["metadata"]
        record = _PodRecord(
            meta["uid"], meta["namespace"], meta["name"], static=staticpods.is_static_pod(pod)
        )
        self._pods[record.uid] = record
        result = await asyncio.to_thread(self._admit_and_allocate, pod)
        result = self._checkpoint_devices(result)
        now = self.clock.now()
        if not result.admitted:
            record.finished = True
            log.info(
                "node %s: rejected pod %s/%s: %s: %s",
                self.name,
                record.namespace,
                record.name,
                result.reason,
                result.message,
            )
            self._write_status(record, {**result.rejection_status(), "startTime": rfc3339(now)})
            self._event(pod, result.reason, result.message, now)
            return
        sandbox_error = self._runtime_handler_error(pod)
        if sandbox_error:
            # Admitted (resources held) but no sandbox: the pod stays Pending, as upstream's does.
            log.info("node %s: pod %s/%s: %s", self.name, record.namespace, record.name, sandbox_error)
            self._event(pod, "FailedCreatePodSandBox", f"Failed to create pod sandbox: {sandbox_error}", now)
            return
        if (pod.get("spec") or {}).get("hostNetwork"):
            pod_ip = self.network.address
        else:
            self._ip_serial += 1
            pod_ip = self.network.pod_ip(self._ip_serial)
        assert self._context is not None
        record.worker = PodWorker(self._context, pod, pod_ip, now)
        self._publish()
        await self._after_change(record, True)

    def _checkpoint_devices(self, result: AdmissionResult) -> AdmissionResult:
        """Upstream's device manager writes its checkpoint as part of ``Allocate`` when it handed out
        devices: if that write fails (a full disk), the pod is rejected and its resources released."""
        allocation = result.allocation
        if not result.admitted or allocation is None or not any(c.devices for c in allocation.containers):
            return result
        with self._lock:
            data = self.managers.device_manager_checkpoint()
        try:
            write_atomically(self.root / DEVICE_MANAGER_CHECKPOINT, data)
        except OSError as err:
            with self._lock:
                self.managers.release(allocation.uid)
            error = _go_error("write", "/" / DEVICE_MANAGER_CHECKPOINT, err)
            return AdmissionResult(
                False,
                "UnexpectedAdmissionError",
                f'Allocate failed due to failed to write checkpoint file "{CHECKPOINT_FILE}": {error}, '
                "which is unexpected",
            )
        return result

    def _runtime_handler_error(self, pod: Obj) -> str:
        """Why the container runtime cannot make the pod's sandbox (RuntimeClass handler), or ``""``."""
        name = (pod.get("spec") or {}).get("runtimeClassName")
        if not name:
            return ""
        runtime_class = self.server.store.get(("node.k8s.io", "runtimeclasses"), "", name)
        if runtime_class is None:
            return f'RuntimeClass "{name}" not found'
        handler = runtime_class.get("handler", "")
        if handler not in nodeobjects.RUNTIME_HANDLERS:
            return (
                "rpc error: code = Unknown desc = failed to get sandbox runtime: "
                f'no runtime for "{handler}" is configured'
            )
        return ""

    def _runtime_context(self) -> RuntimeContext:
        """What every pod worker of this node shares (after the server has an address)."""
        return RuntimeContext(
            server=self.server,
            node_name=self.name,
            root=self.root,
            host_ip=self.network.address,
            config=self.runtime,
            supervisor=self.supervisor,
            api_url=f"https://{self.server.address}",
            ca_pem=self.ca_pem,
            clock=self.clock,
            enqueue=self._enqueue,
            allocatable=lambda: self.node_resources().allocatable,
        )

    # -- ending --------------------------------------------------------------------------------

    async def _begin_deletion(self, record: _PodRecord, pod: Obj) -> None:
        """Graceful deletion: stop the containers within the grace period, then remove the pod."""
        record.deleting = True
        if record.worker is None:
            self._finish_deletion(record)
            return
        grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
        worker = record.worker
        statuses = worker.run.status()
        running = [
            c["name"]
            for c in (*statuses.get("initContainerStatuses", ()), *statuses["containerStatuses"])
            if "running" in (c.get("state") or {})
        ]
        self._container_events(pod, podevents.killing(pod, running))
        worker.terminate(float(grace) if isinstance(grace, int) else worker.pod_grace, self.clock.now())
        await self._after_change(record, True)

    def _finish_deletion(self, record: _PodRecord) -> None:
        if record.timer is not None:
            record.timer.cancel()
            record.timer = None
        if not record.finished:
            self._release(record)
        self._notify_if_changed()
        if record.static:  # no pod object to delete: the static pod source removes the orphaned mirror
            self._pods.pop(record.uid, None)
            self._forget(record)
            return
        self._delete_now(record.namespace, record.name, record.uid)

    def _forget(self, record: _PodRecord) -> None:
        """The pod object is gone: stop what still runs, give back its resources, drop its logs."""
        if record.timer is not None:
            record.timer.cancel()
            record.timer = None
        if not record.finished:
            self._release(record)
        if record.worker is not None:
            record.worker.terminate(0, self.clock.now())
            task = asyncio.create_task(record.worker.close(), name=f"close-{record.name}")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        self.server.logs.forget(record.namespace, record.name)
        self._notify_if_changed()

    def _release(self, record: _PodRecord) -> None:
        record.finished = True
        with self._lock:
            self.managers.release(record.uid)
        self._publish()

    # -- API writes ----------------------------------------------------------------------------

    def _current(self, record: _PodRecord) -> Obj | None:
        try:
            pod = self.server.rest.get(self._pod_kind, record.namespace, record.name)
        except errors.NotFound:
            return None
        return pod if self._is_api_object(record, pod) else None

    @staticmethod
    def _is_api_object(record: _PodRecord, pod: Obj) -> bool:
        """Whether ``pod`` is the API object of the record: the pod itself, or a static pod's mirror."""
        if record.static:
            annotations = pod["metadata"].get("annotations") or {}
            return annotations.get(staticpods.CONFIG_MIRROR) == record.uid
        return pod["metadata"].get("uid") == record.uid

    def _static_pod_state(self, uid: str) -> staticpods.PodState:
        record = self._pods.get(uid)
        if record is None or record.worker is None:
            return None
        return "terminating" if record.deleting else "running"

    def _write_status(
        self, record: _PodRecord, fields: Obj, extra_conditions: list[Obj] | None = None
    ) -> None:
        try:
            current = self.server.rest.get(self._pod_kind, record.namespace, record.name)
        except errors.NotFound:
            return
        if not self._is_api_object(record, current):
            return
        pod = copy.deepcopy(current)
        status = pod.setdefault("status", {})
        if extra_conditions is not None:
            kept = [c for c in status.get("conditions") or () if c.get("type") not in _OWN_CONDITIONS]
            if not any(c.get("type") == "PodScheduled" for c in kept):
                kept.append(
                    {
                        "type": "PodScheduled",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": fields["startTime"],
                    }
                )
            status["conditions"] = extra_conditions + kept
        status.update(fields)
        try:
            self.server.rest.update(
                self._pod_kind, record.namespace, record.name, pod, self._opts, subresource="status"
            )
        except (errors.NotFound, errors.Conflict) as err:
            log.debug(
                "node %s: status of %s/%s not written: %s", self.name, record.namespace, record.name, err
            )

    def _write_run_status(self, record: _PodRecord) -> None:
        assert record.worker is not None
        run_status = record.worker.run.status()
        conditions = run_status.pop("conditions")
        pod_ip = record.worker.pod_ip
        run_status.update(
            hostIP=self.network.address,
            hostIPs=[{"ip": self.network.address}],
            podIP=pod_ip,
            podIPs=[{"ip": pod_ip}],
        )
        self._write_status(record, run_status, conditions)
        events = podevents.container_events(record.worker.pod, record.written, run_status)
        for name, restarts in podevents.started(record.written, run_status):
            record.worker.simulated_started(name, restarts)
        record.written = podevents.snapshot(run_status)
        self._container_events(record.worker.pod, events)
        self._notify_if_changed()

    def _container_events(self, pod: Obj, events: list[podevents.ContainerEvent]) -> None:
        now = self.clock.now()
        for event in events:
            self._event(
                pod,
                event.reason,
                event.message,
                now,
                field_path=event.field_path,
                warning=event.type == "Warning",
            )

    def _event(
        self,
        pod: Obj,
        reason: str,
        message: str,
        now: datetime,
        *,
        container: str = "",
        field_path: str = "",
        warning: bool = True,
    ) -> None:
        body = nodeobjects.rejection_event(pod, reason, message, self.name, now, unique=uuid.uuid4().hex[:16])
        if container:
            field_path = f"spec.containers{{{container}}}"
        if field_path:
            body["involvedObject"]["fieldPath"] = field_path
        if not warning:
            body["type"] = "Normal"
        try:
            self.server.rest.create(self._event_kind, pod["metadata"]["namespace"], body, self._opts)
        except errors.StatusError as err:
            log.warning("node %s: event %s not recorded: %s", self.name, reason, err)

    def _delete_now(self, namespace: str, name: str, uid: str) -> None:
        try:
            self.server.rest.delete(
                self._pod_kind, namespace, name, DeleteOptions(grace_period=0, preconditions={"uid": uid})
            )
        except (errors.NotFound, errors.Conflict):
            pass

    # -- files and snapshots --------------------------------------------------------------------

    def _publish(self) -> None:
        """After an allocation or device change: new podresources snapshot, checkpoints on disk."""
        with self._lock:
            self.views.current = snapshot(self.managers.allocations().values(), self.managers.allocatable())
            files = {
                CPU_MANAGER_STATE: self.managers.cpu_manager_checkpoint(),
                MEMORY_MANAGER_STATE: self.managers.memory_manager_checkpoint(),
                DEVICE_MANAGER_CHECKPOINT: self.managers.device_manager_checkpoint(),
            }
        for relative, data in files.items():
            try:
                write_atomically(self.root / relative, data)
            except OSError as err:
                # As upstream's managers: the state in memory stands, the file keeps its last content.
                log.error("node %s: failed to write checkpoint file %s: %s", self.name, relative, err)

    def _notify_if_changed(self) -> None:
        running = {
            (uid, name)
            for uid, record in self._pods.items()
            if record.worker is not None
            for name in record.worker.run.running_containers()
        }
        if running != self._running:
            self._running = running
            # Touch, as the upstream OCI hook does: the exporter refuses a notify file with content.
            path = self.root / NOTIFY_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path)

    # -- device plugins (DevicePluginHandler; called from gRPC threads) -------------------------

    def _from_thread(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None and not self._stopping and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def plugin_connected(self, resource: str, client: PluginClient) -> None:
        with self._lock:
            self._plugins[resource] = client
        self._from_thread(self._cancel_plugin_removal, resource)

    def plugin_devices(self, resource: str, devices: list[Device]) -> None:
        with self._lock:
            client = self._plugins.get(resource)
            self.managers.set_plugin_devices(
                resource, devices, client.preferred_allocation if client is not None else None
            )
        self._from_thread(self._devices_changed)

    def plugin_disconnected(self, resource: str) -> None:
        with self._lock:
            self._plugins.pop(resource, None)
        self._from_thread(self._schedule_plugin_removal, resource)

    def _devices_changed(self) -> None:
        self._publish()
        self._update_node_resources()

    def _cancel_plugin_removal(self, resource: str) -> None:
        handle = self._plugin_removals.pop(resource, None)
        if handle is not None:
            handle.cancel()

    def _schedule_plugin_removal(self, resource: str) -> None:
        assert self._loop is not None
        self._cancel_plugin_removal(resource)
        self._plugin_removals[resource] = self._loop.call_later(
            ENDPOINT_STOP_GRACE_PERIOD, self._remove_plugin, resource
        )

    def _remove_plugin(self, resource: str) -> None:
        self._plugin_removals.pop(resource, None)
        with self._lock:
            if resource in self._plugins:
                return
            self.managers.remove_plugin_devices(resource)
        self._devices_changed()

    # -- what the node serves through the API server's nodes/<name>/proxy ----------------------

    def exec_process(self, uid: str, container: str, command: tuple[str, ...]) -> ProcessSpec | str:
        """The process ``pods/exec`` runs in a container of the pod ``uid``, or why there is none."""
        record = self._pods.get(uid)
        if record is None or record.worker is None or record.finished:
            return "pod is not running on its node"
        return record.worker.exec_process(container, command)

    def configz(self) -> Obj:
        return nodeobjects.configz(self.spec, static_pod_path=str(self.static_pods.directory))

    def numa(self) -> Obj:
        with self._lock:
            zones = self.managers.numa_summary()
        return nodeobjects.numa_report(self.name, zones)

    @property
    def device_plugin_dir(self) -> Path:
        return device_plugin_dir(self.root)
