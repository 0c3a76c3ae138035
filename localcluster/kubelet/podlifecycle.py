"""The pods of one node from admission to their last trace: admit, run, probe, end, forget.

Upstream's pod workers and ``syncPod`` for the kubelet shell (:mod:`.kubelet`), which hands
every queue item to :meth:`PodLifecycle.handle`, one at a time and in order:

* ``ADDED``/``MODIFIED``/``DELETED`` pod events (and ``ADDED``/``STATIC_REMOVED`` for static
  pods): a new pod is admitted (:mod:`.admitting`; rejection: ``Failed`` status and a Warning
  event), gets a pod IP (the node's own for ``hostNetwork``) and a :class:`~.podworker.PodWorker`;
  a pod with a ``deletionTimestamp`` starts its graceful deletion; a pod gone from the API is
  forgotten (its processes stopped, its resources and logs dropped);
* ``TICK`` (a simulated container's next change is due), ``EXITED`` and ``PROBE`` (what the
  pods' processes report) and ``SYNC`` (retry containers that could not be created) advance
  the pod's run;
* after every change the processes are synced, a terminal pod's resources released, the run
  status and container events written (:mod:`.podreporting`), the next ``TICK`` scheduled;
* graceful deletion: SIGTERM, SIGKILL after the grace period, release, terminal status, then
  ``DELETE`` with grace 0 (a static pod has no API object to delete);
* whenever the set of running containers changes the notify file ``<root>/run/rte/notify``
  is touched, left empty (what RTE's reactive mode watches, as an OCI hook would do on a
  real node).

Runs on the cluster's event loop; every use of the managers holds the kubelet's lock.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nrop.api.metatime import rfc3339
from nrop.localcluster.clock import Clock
from nrop.localcluster.kubelet import staticpods
from nrop.localcluster.kubelet.admitting import PodAdmitter
from nrop.localcluster.kubelet.decisions import podevents
from nrop.localcluster.kubelet.decisions.admission import NodeResourceManagers
from nrop.localcluster.kubelet.decisions.nodenetwork import POD_ADDRESSES, NodeNetwork
from nrop.localcluster.kubelet.decisions.probes import ProbeKind, ProbeSpec
from nrop.localcluster.kubelet.podreporting import PodReporter
from nrop.localcluster.kubelet.podworker import PodWorker, RuntimeContext
from nrop.localcluster.kubelet.processes import ProcessSpec

if TYPE_CHECKING:
    from nrop.localcluster.kubelet.containerlogs import ContainerLogs

__all__ = ["NOTIFY_FILE", "PodLifecycle"]

log = logging.getLogger(__name__)

#: Relative to a node root.
NOTIFY_FILE = Path("run/rte/notify")
_TERMINAL = ("Succeeded", "Failed")

Obj = dict[str, Any]


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


class PodLifecycle:
    """The pods bound to node ``node_name``, by UID; :attr:`context` is set when the kubelet starts."""

    def __init__(
        self,
        logs: ContainerLogs,
        node_name: str,
        root: Path,
        network: NodeNetwork,
        clock: Clock,
        *,
        managers: NodeResourceManagers,
        lock: threading.RLock,
        admitter: PodAdmitter,
        reporter: PodReporter,
        publish: Callable[[], None],
        put: Callable[[tuple[str, Any]], None],
    ) -> None:
        self.logs = logs
        self.name = node_name
        self.root = root
        self.network = network
        self.clock = clock
        self.managers = managers
        self.context: RuntimeContext | None = None
        self._lock = lock
        self._admitter = admitter
        self._reporter = reporter
        self._publish = publish
        self._put = put
        self._pods: dict[str, _PodRecord] = {}
        self._running: set[tuple[str, str]] = set()
        self._closing: set[asyncio.Task[None]] = set()
        # Pod addresses start at a random point of the node's range, so that embedded clusters running
        # side by side on one host (pytest-xdist workers, parallel CI jobs) do not hand out the same
        # loopback address and collide on the ports their pods serve (metrics, health probes).
        self._ip_serial = random.randrange(POD_ADDRESSES)

    # -- the kubelet's stop -----------------------------------------------------------------------

    def cancel_timers(self) -> None:
        for record in self._pods.values():
            if record.timer is not None:
                record.timer.cancel()

    def abandon_workers(self) -> None:
        for record in self._pods.values():
            if record.worker is not None:
                record.worker.abandon()

    async def wait_closed(self, timeout: float) -> None:
        """Wait (up to ``timeout`` seconds) for the workers of forgotten pods to close."""
        if self._closing:
            await asyncio.wait(self._closing, timeout=timeout)

    # -- queue items, one at a time ---------------------------------------------------------------

    async def handle(self, item: tuple[Any, ...]) -> None:
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

    def _wake_at(self, record: _PodRecord) -> None:
        """Schedule the pod's next simulated change (an exit seen at a PLEG relist, a restart).

        The time is absolute (the node's relists are a fixed grid), so a busy loop delays a
        change without moving the next one; a ``TICK`` that comes early finds nothing due
        and is scheduled again.
        """
        if record.timer is not None:
            record.timer.cancel()
            record.timer = None
        change = record.worker.run.next_change() if record.worker is not None else None
        if change is None:
            return
        delay = max(0.0, (change - self.clock.now()).total_seconds()) + 0.001
        record.timer = asyncio.get_running_loop().call_later(delay, self._put, ("TICK", record.uid))

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
        pod = self._reporter.current(record)
        if not result and pod is not None:
            self._reporter.event(
                pod, "Unhealthy", f"{spec.kind.title} probe failed: {message}", now, container=container
            )
        if spec.kind == ProbeKind.LIVENESS or (spec.kind == ProbeKind.STARTUP and not result):
            if result or not worker.kill(container, cid, spec.termination_grace, now):
                return False
            if pod is not None:
                self._reporter.event(
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
            return  # the API's view of a static pod: kept by the kubelet's static pods, never run
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
                self._reporter.delete_now(meta["namespace"], meta["name"], uid)
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
            self._reporter.write_status(record, {**result.rejection_status(), "startTime": rfc3339(now)})
            self._reporter.event(pod, result.reason, result.message, now)
            return
        sandbox_error = self._admitter.sandbox_error(pod)
        if sandbox_error:
            # Admitted (resources held) but no sandbox: the pod stays Pending, as upstream's does.
            log.info("node %s: pod %s/%s: %s", self.name, record.namespace, record.name, sandbox_error)
            self._reporter.event(
                pod, "FailedCreatePodSandBox", f"Failed to create pod sandbox: {sandbox_error}", now
            )
            return
        if (pod.get("spec") or {}).get("hostNetwork"):
            pod_ip = self.network.address
        else:
            self._ip_serial += 1
            pod_ip = self.network.pod_ip(self._ip_serial)
        assert self.context is not None
        record.worker = PodWorker(self.context, pod, pod_ip, now)
        self._publish()
        await self._after_change(record, True)

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
        self._reporter.container_events(pod, podevents.killing(pod, running))
        now = self.clock.now()
        worker.terminate(float(grace) if isinstance(grace, int) else worker.pod_grace, now)
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
        self._reporter.delete_now(record.namespace, record.name, record.uid)

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
        self.logs.forget(record.namespace, record.name)
        self._notify_if_changed()

    def _release(self, record: _PodRecord) -> None:
        record.finished = True
        with self._lock:
            self.managers.release(record.uid)
        self._publish()

    # -- pod state and status ------------------------------------------------------------------

    def static_pod_state(self, uid: str) -> staticpods.PodState:
        record = self._pods.get(uid)
        if record is None or record.worker is None:
            return None
        return "terminating" if record.deleting else "running"

    def exec_process(self, uid: str, container: str, command: tuple[str, ...]) -> ProcessSpec | str:
        """The process ``pods/exec`` runs in a container of the pod ``uid``, or why there is none."""
        record = self._pods.get(uid)
        if record is None or record.worker is None or record.finished:
            return "pod is not running on its node"
        return record.worker.exec_process(container, command)

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
        self._reporter.write_status(record, run_status, conditions)
        events = podevents.container_events(
            record.worker.pod, record.written, run_status, record.worker.unknown_programs
        )
        for name, restarts in podevents.started(record.written, run_status):
            record.worker.simulated_started(name, restarts)
        record.written = podevents.snapshot(run_status)
        self._reporter.container_events(record.worker.pod, events)
        self._notify_if_changed()

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
