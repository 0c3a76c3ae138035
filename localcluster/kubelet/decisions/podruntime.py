"""The containers of one pod on an emulated node: their lifecycle, and the status that shows it.

Owns the per-pod state machine that both kinds of containers go through:

* **simulated** containers (:mod:`.simulation`) start at once and exit when their
  behaviour says; ``pause``-like ones run until the pod is stopped;
* **process** containers (the project's own image, :mod:`.entrypoints`) are only
  *requested* here: a container to start is ``creating`` until the kubelet reports it
  :meth:`PodRun.created` (or :meth:`PodRun.create_failed`, e.g. a missing ConfigMap:
  ``CreateContainerConfigError``, retried; or :meth:`PodRun.start_failed`: ``StartError``,
  exit code 128); its exit comes from the kubelet (:meth:`PodRun.exited`); a container to
  kill is ``stopping`` until its exit is reported;
* regular init containers run one after the other (a simulated one that would run forever
  completes at once, so that it never blocks its pod; a process one runs as long as it
  runs); restartable init containers (sidecars) start in their turn and run like app
  containers;
* exited containers restart per ``restartPolicy`` (sidecars always) with the kubelet's
  crash-loop back-off (:mod:`.backoff`: the first restart at once, then 10 s doubling to
  300 s); the pod ends ``Succeeded`` or ``Failed`` once its app containers are done for
  good, and its sidecars are stopped;
* probe results (:meth:`PodRun.probe`) set ``started`` (startup probe) and ``ready``
  (readiness probe) of process containers; a failed liveness or startup probe makes the
  kubelet :meth:`PodRun.kill` the container, which then restarts per policy; simulated
  containers pass every probe;
* :meth:`PodRun.terminate` (graceful deletion) stops every container: simulated
  ``pause``-like ones exit 0, other simulated ones 137 (PID 1 without a SIGTERM handler,
  killed after the grace), process ones when the kubelet reports their exit; the phase is
  final once none is left.

A simulated container's exit is seen when the kubelet would see it: ``seen`` maps its
instant to the node's next PLEG relist (:mod:`.pleg`); the exit keeps its own time
(``finishedAt``), and what follows from it happens at the relist that saw it. Restarts
after a back-off happen when it ends; process containers' starts and exits are reported by
the kubelet when they happen.

Pure: the time is passed in, so tables test the lifecycle without sleeping.  The kubelet
shell wakes up at :meth:`PodRun.next_change`, calls :meth:`PodRun.advance`, acts on
:meth:`PodRun.to_create` / :meth:`PodRun.to_stop`, and writes :meth:`PodRun.status`.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nrop.api.metatime import rfc3339
from nrop.localcluster.kubelet.decisions.admission import ContainerKind
from nrop.localcluster.kubelet.decisions.backoff import CrashLoopBackOff
from nrop.localcluster.kubelet.decisions.simulation import Behaviour, behaviour

__all__ = [
    "KILLED_EXIT_CODE",
    "START_ERROR_EXIT_CODE",
    "ContainerRef",
    "PodRun",
    "container_id",
    "image_id",
    "normalize_image",
    "termination_message",
]

#: Exit code of a process killed by SIGKILL.
KILLED_EXIT_CODE = 137
#: Exit code containerd reports for a container whose process could not be started.
START_ERROR_EXIT_CODE = 128
#: Upstream limits of termination messages: the file, and the log tail used as a fallback.
MAX_MESSAGE_BYTES = 4096
FALLBACK_LOG_LINES = 80
FALLBACK_LOG_BYTES = 2048

SUCCEEDED = "Succeeded"
FAILED = "Failed"
RUNNING = "Running"
PENDING = "Pending"


# -- identities -------------------------------------------------------------------------------


def normalize_image(image: str) -> str:
    """The image as containerd reports it: ``busybox`` -> ``docker.io/library/busybox:latest``."""
    first, slash, _ = image.partition("/")
    name = image
    if not slash:
        name = f"docker.io/library/{image}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{image}"
    last = name.rsplit("/", 1)[-1]
    if "@" not in name and ":" not in last:
        name += ":latest"
    return name


def image_id(image: str) -> str:
    """A stable ``repo@sha256:...`` for an image (the digest is made up from the name)."""
    normalized = normalize_image(image)
    repo = normalized.split("@", 1)[0]
    head, _, last = repo.rpartition("/")
    repo = f"{head}/{last.split(':', 1)[0]}"
    return f"{repo}@sha256:{hashlib.sha256(normalized.encode()).hexdigest()}"


def container_id(pod_uid: str, name: str, restart: int) -> str:
    return "containerd://" + hashlib.sha256(f"{pod_uid}/{name}/{restart}".encode()).hexdigest()


def termination_message(policy: str, exit_code: int, file_text: str | None, log_tail: str) -> str:
    """A terminated container's message (``getTerminationMessage``).

    ``file_text`` is what the process wrote to its ``terminationMessagePath`` (``None``: no
    file); ``log_tail`` the last :data:`FALLBACK_LOG_LINES` lines of its log, at most
    :data:`FALLBACK_LOG_BYTES`. ``FallbackToLogsOnError`` uses the log only after a
    non-zero exit and when the file says nothing.
    """
    message = (file_text or "").encode()[:MAX_MESSAGE_BYTES].decode(errors="ignore")
    if message:
        return message
    if policy == "FallbackToLogsOnError" and exit_code != 0:
        return log_tail
    return ""


# -- the lifecycle ----------------------------------------------------------------------------


class _State(enum.StrEnum):
    WAITING = "waiting"  # not started yet (init containers ahead), or in back-off
    CREATING = "creating"  # a process the kubelet is asked to start
    RUNNING = "running"
    STOPPING = "stopping"  # a process the kubelet is asked to kill; still running
    EXITED = "exited"


@dataclass(frozen=True)
class ContainerRef:
    """A process container the kubelet must act on: create it, or kill it."""

    name: str
    container_id: str
    restart_count: int


@dataclass
class _Container:
    name: str
    kind: ContainerKind
    image: str
    behaviour: Behaviour
    startup_probe: bool = False
    readiness_probe: bool = False
    state: _State = _State.WAITING
    restart_count: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    container_id: str = ""
    ever_created: bool = False
    last_state: dict[str, Any] = field(default_factory=dict)
    restart_at: datetime | None = None
    backoff: CrashLoopBackOff = field(default_factory=CrashLoopBackOff)
    startup_passed: bool = False
    probe_ready: bool = False
    waiting: tuple[str, str] | None = None  # (reason, message) of a failed create

    @property
    def running(self) -> bool:
        return self.state in (_State.RUNNING, _State.STOPPING)

    @property
    def started(self) -> bool:
        return self.running and (not self.startup_probe or self.startup_passed)

    @property
    def ready(self) -> bool:
        if self.kind == ContainerKind.INIT:
            return self.exit_code == 0
        return self.started and (not self.readiness_probe or self.probe_ready)

    def exit_time(self) -> datetime | None:
        if self.state != _State.RUNNING or self.behaviour.process or self.started_at is None:
            return None
        seconds = self.behaviour.seconds
        if seconds is None:
            # A regular init container that would never end completes at once (module docstring).
            return self.started_at if self.kind == ContainerKind.INIT else None
        return self.started_at + timedelta(seconds=seconds)

    def terminated(self) -> dict[str, Any]:
        assert self.started_at is not None and self.finished_at is not None and self.exit_code is not None
        out: dict[str, Any] = {
            "exitCode": self.exit_code,
            "reason": self.reason or ("Completed" if self.exit_code == 0 else "Error"),
            "startedAt": rfc3339(self.started_at),
            "finishedAt": rfc3339(self.finished_at),
            "containerID": self.container_id,
        }
        if self.message:
            out["message"] = self.message
        return out


class PodRun:
    """The containers of one admitted pod, from ``now`` on.

    ``behaviours`` overrides :func:`.simulation.behaviour` per container name; the kubelet
    gives :data:`.simulation.PROCESS` for containers that run as real processes. ``seen``:
    when the kubelet sees a simulated exit that happened at a given instant (by default at
    once; the kubelet passes its relists, :meth:`.pleg.Relists.after`). ``restart_counts``: the
    count each container starts at (0 unless the node ran it before a reboot).
    """

    def __init__(
        self,
        pod: Mapping[str, Any],
        now: datetime,
        behaviours: Mapping[str, Behaviour] | None = None,
        seen: Callable[[datetime], datetime] | None = None,
        restart_counts: Mapping[str, int] | None = None,
    ) -> None:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        self.uid = str(meta.get("uid", ""))
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace", ""))
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        self.started_at = now
        self.phase = PENDING
        self._terminating = False
        self._seen = seen or (lambda moment: moment)
        overrides = behaviours or {}

        def make(c: Mapping[str, Any], kind: ContainerKind) -> _Container:
            plan = overrides.get(c["name"]) or behaviour(c)
            return _Container(
                c["name"],
                kind,
                str(c.get("image", "")),
                plan,
                startup_probe=plan.process and c.get("startupProbe") is not None,
                readiness_probe=plan.process and c.get("readinessProbe") is not None,
                restart_count=(restart_counts or {}).get(c["name"], 0),
            )

        self.inits = [
            make(c, ContainerKind.SIDECAR if c.get("restartPolicy") == "Always" else ContainerKind.INIT)
            for c in spec.get("initContainers") or ()
        ]
        self.apps = [make(c, ContainerKind.APP) for c in spec.get("containers") or ()]
        self._next_init = 0
        self._initialized = False
        # condition type -> (status, reason, message, lastTransitionTime)
        self._conditions: dict[str, tuple[str, str, str, datetime]] = {}
        self._progress(now)
        self._refresh_conditions(now)

    # -- queries ---------------------------------------------------------------------------

    @property
    def containers(self) -> tuple[_Container, ...]:
        return (*self.inits, *self.apps)

    @property
    def terminal(self) -> bool:
        return self.phase in (SUCCEEDED, FAILED)

    def running_containers(self) -> frozenset[str]:
        """Names of the containers running now (the kubelet notifies on every change)."""
        return frozenset(c.name for c in self.containers if c.running)

    def next_change(self) -> datetime | None:
        """When :meth:`advance` next has something to do (``None``: only events change it)."""
        if self.terminal:
            return None
        times = [t for c in self.containers for t in (self._exit_seen(c), c.restart_at) if t is not None]
        return min(times, default=None)

    def _exit_seen(self, container: _Container) -> datetime | None:
        exit_time = container.exit_time()
        return None if exit_time is None else self._seen(exit_time)

    def _refs(self, state: _State) -> list[ContainerRef]:
        return [
            ContainerRef(c.name, c.container_id, c.restart_count)
            for c in self.containers
            if c.behaviour.process and c.state == state
        ]

    def to_create(self) -> list[ContainerRef]:
        """Process containers the kubelet should start now."""
        return self._refs(_State.CREATING)

    def to_stop(self) -> list[ContainerRef]:
        """Process containers the kubelet should kill (their exit is still to be reported)."""
        return self._refs(_State.STOPPING)

    def _find(self, name: str, cid: str) -> _Container | None:
        for container in self.containers:
            if container.name == name and container.container_id == cid:
                return container
        return None

    # -- transitions -----------------------------------------------------------------------

    def _start(self, container: _Container, when: datetime) -> None:
        if container.ever_created:
            if container.finished_at is not None:
                container.last_state = {"terminated": container.terminated()}
                container.backoff.restarted(container.finished_at, when)
            container.restart_count += 1
        container.ever_created = True
        container.started_at = when
        container.finished_at = None
        container.exit_code = None
        container.reason = container.message = ""
        container.restart_at = None
        container.startup_passed = container.probe_ready = False
        container.container_id = container_id(self.uid, container.name, container.restart_count)
        container.state = _State.CREATING if container.behaviour.process else _State.RUNNING
        if container.state == _State.RUNNING:
            self._app_running()

    def _app_running(self) -> None:
        if self._initialized and not self.terminal and any(c.running for c in self.apps):
            self.phase = RUNNING

    def _end(
        self, container: _Container, when: datetime, code: int, reason: str = "", message: str = ""
    ) -> None:
        container.state = _State.EXITED
        container.finished_at = when
        container.exit_code = code
        container.reason = reason
        container.message = message
        container.waiting = None

    def _progress(self, when: datetime) -> None:
        """Start the next init containers, or the app containers once every init container is done."""
        while self._next_init < len(self.inits):
            container = self.inits[self._next_init]
            if not container.ever_created:
                self._start(container, when)
            if container.kind == ContainerKind.INIT:
                return  # the next one starts when this one exits 0 (``_exited``)
            self._next_init += 1
        if not self._initialized:
            self._initialized = True
            for container in self.apps:
                self._start(container, when)
            self._app_running()

    def _restarts(self, container: _Container) -> bool:
        if self._terminating or self.terminal:
            return False
        if container.kind == ContainerKind.SIDECAR:
            return True
        if container.kind == ContainerKind.INIT:
            return container.exit_code != 0 and self.restart_policy != "Never"
        if self.restart_policy == "Always":
            return True
        return self.restart_policy == "OnFailure" and container.exit_code != 0

    def _exited(
        self,
        container: _Container,
        when: datetime,
        code: int,
        reason: str = "",
        message: str = "",
        acted: datetime | None = None,
    ) -> None:
        """The container exited at ``when``; the kubelet acts on it at ``acted`` (default: then)."""
        acted = acted or when
        self._end(container, when, code, reason, message)
        if self._terminating:
            self._finish_termination(acted)
            return
        if self.terminal:
            return
        if self._restarts(container):
            container.restart_at = max(container.backoff.restart_at(when), acted)
            return
        if container.kind == ContainerKind.INIT:
            if code == 0:
                self._next_init += 1
                self._progress(acted)
            else:
                self._finish(acted, FAILED)
            return
        if all(c.state in (_State.EXITED, _State.WAITING) and c.restart_at is None for c in self.apps):
            failed = any(c.exit_code != 0 for c in self.apps)
            self._finish(acted, FAILED if failed else SUCCEEDED)

    def _stop_all(self, when: datetime) -> None:
        """Simulated containers end now; processes are asked to stop; nothing restarts."""
        for container in self.containers:
            container.restart_at = None
            if container.state == _State.CREATING:
                container.state = _State.WAITING
            if container.state == _State.RUNNING:
                if container.behaviour.process:
                    container.state = _State.STOPPING
                else:
                    code = 0 if container.behaviour.pause else KILLED_EXIT_CODE
                    self._end(container, when, code)

    def _finish(self, when: datetime, phase: str) -> None:
        self.phase = phase
        self._stop_all(when)

    def _finish_termination(self, when: datetime) -> None:
        if any(c.state == _State.STOPPING for c in self.containers):
            return
        if not self.terminal:
            ran_ok = self._initialized and all(c.exit_code == 0 for c in self.apps)
            self.phase = SUCCEEDED if ran_ok else FAILED
        self._refresh_conditions(when)

    def advance(self, now: datetime) -> bool:
        """Play every simulated exit seen and every due restart up to ``now``; returns whether
        anything changed."""
        changed = False
        while not self.terminal and not self._terminating:
            # (when the kubelet acts, order, container, the exit's own time; None: a restart)
            due: list[tuple[datetime, int, _Container, datetime | None]] = []
            for order, container in enumerate(self.containers):
                exit_time = container.exit_time()
                if exit_time is not None and (seen := self._seen(exit_time)) <= now:
                    due.append((seen, order, container, exit_time))
                if container.restart_at is not None and container.restart_at <= now:
                    due.append((container.restart_at, order, container, None))
            if not due:
                break
            when, _, container, exit_time = min(due, key=lambda d: (d[0], d[1]))
            if exit_time is not None:
                self._exited(container, exit_time, container.behaviour.exit_code, acted=when)
            else:
                self._start(container, when)
            self._refresh_conditions(when)
            changed = True
        return changed

    # -- what the kubelet reports about processes ---------------------------------------------

    def created(self, name: str, cid: str, now: datetime) -> bool:
        """The process of a ``creating`` container runs."""
        container = self._find(name, cid)
        if container is None or container.state != _State.CREATING:
            return False
        container.state = _State.RUNNING
        container.started_at = now
        container.waiting = None
        self._app_running()
        self._refresh_conditions(now)
        return True

    def create_failed(self, name: str, cid: str, reason: str, message: str, now: datetime) -> bool:
        """The container could not be created (it stays ``creating``; the kubelet retries)."""
        container = self._find(name, cid)
        if container is None or container.state != _State.CREATING or container.waiting == (reason, message):
            return False
        container.waiting = (reason, message)
        self._refresh_conditions(now)
        return True

    def start_failed(self, name: str, cid: str, message: str, now: datetime) -> bool:
        """The process could not be started: ``StartError``, exit code 128."""
        container = self._find(name, cid)
        if container is None or container.state != _State.CREATING:
            return False
        container.started_at = now
        self._exited(container, now, START_ERROR_EXIT_CODE, "StartError", message)
        self.advance(now)
        self._refresh_conditions(now)
        return True

    def exited(self, name: str, cid: str, code: int, now: datetime, message: str = "") -> bool:
        """The process of a container exited with ``code`` (128 + signal when killed)."""
        container = self._find(name, cid)
        if container is None or not container.running:
            return False
        self._exited(container, now, code, "", message)
        self.advance(now)
        self._refresh_conditions(now)
        return True

    def probe(self, name: str, cid: str, kind: str, result: bool, now: datetime) -> bool:
        """A startup or readiness probe's published result changed (liveness: see :meth:`kill`)."""
        container = self._find(name, cid)
        if container is None or not container.running:
            return False
        if kind == "startup":
            container.startup_passed = container.startup_passed or result
        elif kind == "readiness":
            container.probe_ready = result
        else:
            return False
        self._refresh_conditions(now)
        return True

    def kill(self, name: str, cid: str, now: datetime) -> bool:
        """A failed liveness or startup probe: stop the process; its exit restarts it per policy."""
        container = self._find(name, cid)
        if container is None or container.state != _State.RUNNING:
            return False
        container.state = _State.STOPPING
        self._refresh_conditions(now)
        return True

    def terminate(self, now: datetime) -> None:
        """Graceful deletion: stop every container; the phase is final once no process is left."""
        if self._terminating:
            return
        self._terminating = True
        self._stop_all(now)
        self._finish_termination(now)

    # -- status ----------------------------------------------------------------------------

    def _set_condition(
        self, kind: str, status: bool, when: datetime, reason: str = "", message: str = ""
    ) -> None:
        value = ("True" if status else "False", reason, message)
        previous = self._conditions.get(kind)
        if previous is None or previous[:3] != value:
            self._conditions[kind] = (*value, when)

    def _refresh_conditions(self, when: datetime) -> None:
        done = self.terminal
        self._set_condition("PodReadyToStartContainers", not done, when)
        pending_inits = [c.name for c in self.inits if c.kind == ContainerKind.INIT and c.exit_code != 0]
        if self._initialized:
            self._set_condition("Initialized", True, when)
        else:
            self._set_condition(
                "Initialized",
                False,
                when,
                "ContainersNotInitialized",
                f"containers with incomplete status: [{' '.join(pending_inits)}]",
            )
        if done:
            for kind in ("Ready", "ContainersReady"):
                self._set_condition(kind, False, when, "PodCompleted")
            return
        unready = [c.name for c in self.containers if c.kind != ContainerKind.INIT and not c.ready]
        for kind in ("Ready", "ContainersReady"):
            if unready:
                self._set_condition(
                    kind,
                    False,
                    when,
                    "ContainersNotReady",
                    f"containers with unready status: [{' '.join(unready)}]",
                )
            else:
                self._set_condition(kind, True, when)

    def _state(self, container: _Container) -> dict[str, Any]:
        if container.running:
            assert container.started_at is not None
            return {"running": {"startedAt": rfc3339(container.started_at)}}
        if container.restart_at is not None:
            return {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {int(container.backoff.delay or 0)}s restarting failed "
                    f"container={container.name} pod={self.name}_{self.namespace}({self.uid})",
                }
            }
        if container.waiting is not None:
            reason, message = container.waiting
            return {"waiting": {"reason": reason, "message": message}}
        if container.state == _State.EXITED:
            return {"terminated": container.terminated()}
        if container.state == _State.CREATING or container.ever_created:
            return {"waiting": {"reason": "ContainerCreating"}}
        return {"waiting": {"reason": "PodInitializing"}}

    def _container_status(self, container: _Container) -> dict[str, Any]:
        last_state = container.last_state
        if container.restart_at is not None and container.state == _State.EXITED:
            last_state = {"terminated": container.terminated()}
        status: dict[str, Any] = {
            "name": container.name,
            "image": normalize_image(container.image),
            "imageID": image_id(container.image) if container.ever_created else "",
            "ready": container.ready,
            "restartCount": container.restart_count,
            "started": container.started,
            "state": self._state(container),
            "lastState": last_state,
        }
        if container.container_id and container.state != _State.CREATING:
            status["containerID"] = container.container_id
        return status

    def status(self) -> dict[str, Any]:
        """``status`` fields the kubelet owns (phase, conditions, container statuses, startTime)."""
        conditions = [
            {
                "type": kind,
                "status": status,
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(when),
                **({"reason": reason} if reason else {}),
                **({"message": message} if message else {}),
            }
            for kind, (status, reason, message, when) in self._conditions.items()
        ]
        out: dict[str, Any] = {
            "phase": self.phase,
            "conditions": conditions,
            "startTime": rfc3339(self.started_at),
            "containerStatuses": [self._container_status(c) for c in self.apps],
        }
        if self.inits:
            out["initContainerStatuses"] = [self._container_status(c) for c in self.inits]
        return out
