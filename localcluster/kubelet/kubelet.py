"""One emulated kubelet: registers its Node, keeps its Lease, and admits, runs and ends the pods bound to it.

A thin I/O shell over the pure modules, inside the cluster process:

* the node root ``<state dir>/nodes/<name>/`` holds the sysfs tree (:mod:`.sysfs`), the
  podresources socket, the device-plugin directory and the checkpoint files;
* the Node, its Lease and node events are written by :mod:`.nodereporting`, on the node's
  loopback addresses (:mod:`.nodenetwork`);
* pods with ``spec.nodeName == <name>`` are followed through a store subscription and
  handled one at a time, in order, by :meth:`Kubelet._work`, together with what the pods'
  processes report (exits, probe results): admission (:mod:`.admitting`; rejection: ``Failed``
  status and a Warning event), then a pod IP and a :class:`~.podworker.PodWorker` (simulated
  containers, and real processes for the project's own image), graceful deletion (SIGTERM,
  SIGKILL after the grace period, release, terminal status, ``DELETE`` with grace 0); pod
  status, events and deletes are written by :mod:`.podreporting`;
* static pods from the manifest directory come in through :mod:`.staticpods` on the same
  queue (``ADDED``, ``STATIC_REMOVED``) and run the same way; their API object is their
  mirror pod, which :mod:`.staticpods` keeps and this loop never runs;
* device plugins register with :mod:`.pluginendpoints`;
* after every allocation change the managers' checkpoints are rewritten
  (:mod:`.checkpointfiles`) and the podresources snapshot is replaced; whenever the set of
  running containers changes the notify file ``<root>/run/rte/notify`` is touched, left empty
  (what RTE's reactive mode watches, as an OCI hook would do on a real node).

Stopping the kubelet stops every process it started (SIGTERM, SIGKILL after
:data:`STOP_GRACE` seconds).

Threads: the event loop owns the API (store writes are synchronous on it).  Admissions run
in a worker thread, because a device plugin's ``GetPreferredAllocation``/``Allocate`` RPCs
may block; every use of the managers, gRPC threads included, holds ``self._lock``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.rest import WriteOptions
from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.clock import Clock, SystemClock, rfc3339
from nrop.localcluster.kubelet import nodeobjects, nodestatus, podevents, staticpods
from nrop.localcluster.kubelet.admission import NodeResourceManagers
from nrop.localcluster.kubelet.admitting import PodAdmitter
from nrop.localcluster.kubelet.checkpointfiles import (
    CPU_MANAGER_STATE,
    DEVICE_MANAGER_CHECKPOINT,
    MEMORY_MANAGER_STATE,
    write_checkpoints,
)
from nrop.localcluster.kubelet.entrypoints import RuntimeConfig
from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    RegistrationServer,
    device_plugin_dir,
    kubelet_socket,
)
from nrop.localcluster.kubelet.grpcservers.podresources import PodResourcesServer, pod_resources_socket
from nrop.localcluster.kubelet.machine import NodeSpec
from nrop.localcluster.kubelet.nodenetwork import POD_ADDRESSES, NodeNetwork
from nrop.localcluster.kubelet.nodereporting import NodeReporter
from nrop.localcluster.kubelet.pluginendpoints import PluginEndpoints
from nrop.localcluster.kubelet.podreporting import PodReporter
from nrop.localcluster.kubelet.podworker import PodWorker, RuntimeContext, pods_dir
from nrop.localcluster.kubelet.probes import ProbeKind, ProbeSpec
from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor
from nrop.localcluster.kubelet.resourceviews import ResourceViews, snapshot
from nrop.localcluster.kubelet.sysfs import write_sysfs

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.server import APIServer

__all__ = [
    "LEASE_RENEW_INTERVAL",
    "NOTIFY_FILE",
    "STOP_GRACE",
    "Kubelet",
]

log = logging.getLogger(__name__)

#: Relative to a node root.
NOTIFY_FILE = Path("run/rte/notify")
#: A quarter of the lease duration, as upstream.
LEASE_RENEW_INTERVAL = nodeobjects.LEASE_DURATION_SECONDS / 4
#: When the kubelet stops: seconds between SIGTERM and SIGKILL for the processes left.
STOP_GRACE = 3.0
_FIELD_MANAGER = "kubelet"
_TERMINAL = ("Succeeded", "Failed")

Obj = dict[str, Any]


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
        self.device_plugins = PluginEndpoints(
            self.managers, self._lock, from_thread=self._from_thread, on_change=self._devices_changed
        )
        self.registration = RegistrationServer(kubelet_socket(self.root), self.device_plugins)
        self._admitter = PodAdmitter(self.managers, self._lock, self.device_plugins, self.root, server.store)
        self._pod_kind = _kind(server, "", "v1", "pods")
        self._node_kind = _kind(server, "", "v1", "nodes")
        self._lease_kind = _kind(server, "coordination.k8s.io", "v1", "leases")
        self._event_kind = _kind(server, "", "v1", "events")
        self._opts = WriteOptions(field_manager=_FIELD_MANAGER)
        self._node_reporter = NodeReporter(
            server,
            spec,
            self.clock,
            self._opts,
            address=network.address,
            pod_cidr=network.pod_cidr,
            node_kind=self._node_kind,
            lease_kind=self._lease_kind,
            event_kind=self._event_kind,
            resources=self.node_resources,
        )
        self._pod_reporter = PodReporter(
            server, self.name, self.clock, self._opts, pod_kind=self._pod_kind, event_kind=self._event_kind
        )
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
        for stale in (CPU_MANAGER_STATE, MEMORY_MANAGER_STATE, DEVICE_MANAGER_CHECKPOINT):
            (self.root / stale).unlink(missing_ok=True)
        await asyncio.to_thread(shutil.rmtree, pods_dir(self.root), True)
        await asyncio.to_thread(self.registration.start)
        await asyncio.to_thread(self.podresources.start)
        self._publish()
        self._node_reporter.register()
        self._node_reporter.post_events()
        self._node_reporter.renew_lease()
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
        self.device_plugins.cancel_removals()
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

    async def _lease_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_renew_interval)
            try:
                self._node_reporter.renew_lease()
                self._node_reporter.sync_conditions()
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
        pod = self._pod_reporter.current(record)
        if not result and pod is not None:
            self._pod_reporter.event(
                pod, "Unhealthy", f"{spec.kind.title} probe failed: {message}", now, container=container
            )
        if spec.kind == ProbeKind.LIVENESS or (spec.kind == ProbeKind.STARTUP and not result):
            if result or not worker.kill(container, cid, spec.termination_grace, now):
                return False
            if pod is not None:
                self._pod_reporter.event(
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
                self._pod_reporter.delete_now(meta["namespace"], meta["name"], uid)
                return
            await self._admit(pod)
            return
        if record.worker is not None:
            record.worker.update(pod)
        if meta.get("deletionTimestamp") and not record.deleting:
            await self._begin_deletion(record, pod)

    # -- admission -----------------------------------------------------------------------------

    async def _admit(self, pod: Obj) -> None:
        meta = pod["metadata"]
        record = _PodRecord(
            meta["uid"], meta["namespace"], meta["name"], static=staticpods.is_static_pod(pod)
        )
        self._pods[record.uid] = record
        result = await asyncio.to_thread(self._admitter.admit_and_allocate, pod)
        result = self._admitter.checkpoint_devices(result)
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
            self._pod_reporter.write_status(record, {**result.rejection_status(), "startTime": rfc3339(now)})
            self._pod_reporter.event(pod, result.reason, result.message, now)
            return
        sandbox_error = self._admitter.sandbox_error(pod)
        if sandbox_error:
            # Admitted (resources held) but no sandbox: the pod stays Pending, as upstream's does.
            log.info("node %s: pod %s/%s: %s", self.name, record.namespace, record.name, sandbox_error)
            self._pod_reporter.event(
                pod, "FailedCreatePodSandBox", f"Failed to create pod sandbox: {sandbox_error}", now
            )
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
        self._pod_reporter.container_events(pod, podevents.killing(pod, running))
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
        self._pod_reporter.delete_now(record.namespace, record.name, record.uid)

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

    # -- pod state and status ------------------------------------------------------------------

    def _static_pod_state(self, uid: str) -> staticpods.PodState:
        record = self._pods.get(uid)
        if record is None or record.worker is None:
            return None
        return "terminating" if record.deleting else "running"

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
        self._pod_reporter.write_status(record, run_status, conditions)
        events = podevents.container_events(record.worker.pod, record.written, run_status)
        for name, restarts in podevents.started(record.written, run_status):
            record.worker.simulated_started(name, restarts)
        record.written = podevents.snapshot(run_status)
        self._pod_reporter.container_events(record.worker.pod, events)
        self._notify_if_changed()

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
        write_checkpoints(self.root, files, self.name)

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

    # -- device plugins (their endpoints: self.device_plugins) ----------------------------------

    def _from_thread(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None and not self._stopping and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def _devices_changed(self) -> None:
        self._publish()
        self._node_reporter.update_resources()

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
