"""One emulated kubelet: registers its Node, keeps its Lease, and admits, runs and ends the pods bound to it.

A thin I/O shell over the pure modules, inside the cluster process:

* the node root ``<state dir>/nodes/<name>/`` holds the sysfs tree (:mod:`.sysfs`), the
  podresources socket, the device-plugin directory and the checkpoint files;
* the Node, its Lease and node events are written by :mod:`.nodereporting`, on the node's
  loopback addresses (:mod:`.nodenetwork`);
* pods with ``spec.nodeName == <name>`` are followed through a store subscription and
  handled one at a time, in order, by :meth:`Kubelet._work`, together with what the pods'
  processes report (exits, probe results): :mod:`.podlifecycle` admits them (:mod:`.admitting`),
  runs them in a :class:`~.podworker.PodWorker` (simulated containers, and real processes for
  the project's own image), ends them gracefully and touches the notify file
  ``<root>/run/rte/notify`` whenever the set of running containers changes; pod status,
  events and deletes are written by :mod:`.podreporting`;
* static pods from the manifest directory come in through :mod:`.staticpods` on the same
  queue (``ADDED``, ``STATIC_REMOVED``) and run the same way; their API object is their
  mirror pod, which :mod:`.staticpods` keeps and this loop never runs;
* whether the machine lets process containers have a mount namespace of their own is
  asked once at start (:mod:`.launching`); where it does not, their mount paths are
  rewritten instead (:mod:`.volumes`), and a log line and a ``MountNamespacesUnavailable``
  warning event on the Node say so;
* device plugins register with :mod:`.pluginendpoints`;
* after every allocation change the managers' checkpoints are rewritten
  (:mod:`.checkpointfiles`) and the podresources snapshot is replaced.

Stopping the kubelet stops every process it started (SIGTERM, SIGKILL after
:data:`STOP_GRACE` seconds).

Threads: the event loop owns the API (store writes are synchronous on it).  Admissions run
in a worker thread, because a device plugin's ``GetPreferredAllocation``/``Allocate`` RPCs
may block; every use of the managers, the gRPC loop's worker threads included, holds
``self._lock``. The gRPC servers and plugin streams live on the process's gRPC loop
(:mod:`nrop.api.grpc.aioloop`), which never takes that lock: admission holds it while it
waits on that loop for a plugin's answer.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.store import WATCH_DELIVERY, WatchEvent
from nrop.localcluster.clock import Clock, SystemClock
from nrop.localcluster.kubelet import launching, staticpods
from nrop.localcluster.kubelet.admitting import PodAdmitter
from nrop.localcluster.kubelet.checkpointfiles import (
    CPU_MANAGER_STATE,
    DEVICE_MANAGER_CHECKPOINT,
    MEMORY_MANAGER_STATE,
    write_checkpoints,
)
from nrop.localcluster.kubelet.containerlogs import ContainerLogs
from nrop.localcluster.kubelet.decisions import nodeobjects, nodestatus
from nrop.localcluster.kubelet.decisions.admission import NodeResourceManagers
from nrop.localcluster.kubelet.decisions.entrypoints import RuntimeConfig
from nrop.localcluster.kubelet.decisions.nodenetwork import NodeNetwork
from nrop.localcluster.kubelet.decisions.pleg import Relists
from nrop.localcluster.kubelet.forkserver import ForkServer
from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    RegistrationServer,
    device_plugin_dir,
    kubelet_socket,
)
from nrop.localcluster.kubelet.grpcservers.podresources import PodResourcesServer, pod_resources_socket
from nrop.localcluster.kubelet.machine import NodeSpec
from nrop.localcluster.kubelet.nodereporting import NodeReporter
from nrop.localcluster.kubelet.pluginendpoints import PluginEndpoints
from nrop.localcluster.kubelet.podlifecycle import PodLifecycle
from nrop.localcluster.kubelet.podreporting import PodReporter
from nrop.localcluster.kubelet.podworker import RuntimeContext, pods_dir
from nrop.localcluster.kubelet.processes import Supervisor
from nrop.localcluster.kubelet.resourceviews import ResourceViews, snapshot
from nrop.localcluster.kubelet.sysfs import write_sysfs

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = [
    "LEASE_RENEW_INTERVAL",
    "STOP_GRACE",
    "Kubelet",
]

log = logging.getLogger(__name__)

#: A quarter of the lease duration, as upstream.
LEASE_RENEW_INTERVAL = nodeobjects.LEASE_DURATION_SECONDS / 4
#: When the kubelet stops: seconds between SIGTERM and SIGKILL for the processes left.
STOP_GRACE = 3.0
_FIELD_MANAGER = "kubelet"

Obj = dict[str, Any]


def _kind(server: InProcessAPI, group: str, version: str, plural: str) -> Kind:
    kind = server.registry.lookup(group, version, plural)
    if kind is None:
        raise RuntimeError(f"the API server does not serve {plural}.{group or 'core'}/{version}")
    return kind


class Kubelet:
    """The kubelet of one node; :meth:`start` and :meth:`stop` run on the cluster's event loop."""

    def __init__(
        self,
        server: InProcessAPI,
        spec: NodeSpec,
        root: Path,
        network: NodeNetwork,
        *,
        clock: Clock | None = None,
        lease_renew_interval: float = LEASE_RENEW_INTERVAL,
        runtime: RuntimeConfig | None = None,
        ca_pem: bytes = b"",
        logs: ContainerLogs | None = None,
        forks: ForkServer | None = None,
    ) -> None:
        self.server = server
        #: What the node's containers printed (``pods/log`` reads it through the fleet's registration).
        self.logs = logs if logs is not None else ContainerLogs()
        self.spec = spec
        self.name = spec.name
        self.root = Path(root)
        self.network = network
        self.clock = clock or SystemClock()
        self.lease_renew_interval = lease_renew_interval
        self.managers = NodeResourceManagers(spec)
        self.views = ResourceViews()
        self._lock = threading.RLock()
        # Items with the loop time they may be handled at: a pod event one watch hop after
        # its write (a kubelet's pod source is a watch), the kubelet's own items at once.
        self._queue: asyncio.Queue[tuple[float, tuple[Any, ...]]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self.runtime = runtime or RuntimeConfig.for_this_environment()
        self.ca_pem = ca_pem
        self.supervisor = Supervisor(forks)
        self.podresources = PodResourcesServer(self.views, pod_resources_socket(self.root))
        self.device_plugins = PluginEndpoints(
            self.managers, self._lock, from_thread=self._from_thread, on_change=self._devices_changed
        )
        self.registration = RegistrationServer(kubelet_socket(self.root), self.device_plugins)
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
        self.pods = PodLifecycle(
            self.logs,
            self.name,
            self.root,
            network,
            self.clock,
            managers=self.managers,
            lock=self._lock,
            admitter=PodAdmitter(self.managers, self._lock, self.device_plugins, self.root, server.store),
            reporter=PodReporter(
                server,
                self.name,
                self.clock,
                self._opts,
                pod_kind=self._pod_kind,
                event_kind=self._event_kind,
            ),
            publish=self._publish,
            put=self._put,
        )
        self.static_pods = staticpods.StaticPods(
            server,
            self.name,
            self.root / staticpods.MANIFESTS_DIR,
            enqueue=self._enqueue,
            state=self.pods.static_pod_state,
            clock=self.clock,
            opts=self._opts,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        refused = await asyncio.to_thread(launching.check)
        if refused is not None:
            log.warning(
                "node %s: containers get no mount namespace of their own (%s): mount paths are rewritten instead",
                self.name,
                refused,
            )
        self.pods.context = self._runtime_context(mount_namespaces=refused is None)
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
        self._node_reporter.post_events(refused)
        self._node_reporter.renew_lease()
        self._unsubscribe = self.server.store.subscribe(self._pod_kind.storage, self._on_pod_event)
        for pod in self.server.store.list(self._pod_kind.storage):
            if (pod.get("spec") or {}).get("nodeName") == self.name:
                self._put(("ADDED", pod))
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
        self.pods.cancel_timers()
        self.device_plugins.cancel_removals()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        self.pods.abandon_workers()
        await self.supervisor.stop_all(STOP_GRACE)
        await self.pods.wait_closed(STOP_GRACE)
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

    # -- pods: events in, one at a time, handled by self.pods ---------------------------------

    def _on_pod_event(self, event: WatchEvent) -> None:
        spec = event.obj.get("spec") or {}
        if spec.get("nodeName") == self.name and not self._stopping and self._loop is not None:
            self._queue.put_nowait((self._loop.time() + WATCH_DELIVERY, (event.type, event.obj)))

    def _put(self, item: tuple[Any, ...]) -> None:
        self._queue.put_nowait((0.0, item))

    def _enqueue(self, item: tuple[Any, ...]) -> None:
        if not self._stopping:
            self._put(item)

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, item = await self._queue.get()
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            try:
                await self.pods.handle(item)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("node %s: handling a pod %s failed", self.name, item[0])

    def _runtime_context(self, *, mount_namespaces: bool) -> RuntimeContext:
        """What every pod worker of this node shares (after the server has an address)."""
        return RuntimeContext(
            server=self.server,
            logs=self.logs,
            node_name=self.name,
            root=self.root,
            host_ip=self.network.address,
            config=self.runtime,
            supervisor=self.supervisor,
            api_url=f"https://{self.server.address}",
            ca_pem=self.ca_pem,
            clock=self.clock,
            relists=Relists(self.clock.now()),
            enqueue=self._enqueue,
            allocatable=lambda: self.node_resources().allocatable,
            mount_namespaces=mount_namespaces,
        )

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

    # -- device plugins (their endpoints: self.device_plugins) ----------------------------------

    def _from_thread(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None and not self._stopping and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def _devices_changed(self) -> None:
        self._publish()
        self._node_reporter.update_resources()

    # -- what the node serves through the API server's nodes/<name>/proxy (exec: self.pods) -----

    def configz(self) -> Obj:
        return nodeobjects.configz(self.spec, static_pod_path=str(self.static_pods.directory))

    def numa(self) -> Obj:
        with self._lock:
            zones = self.managers.numa_summary()
        return nodeobjects.numa_report(self.name, zones)

    @property
    def device_plugin_dir(self) -> Path:
        return device_plugin_dir(self.root)
