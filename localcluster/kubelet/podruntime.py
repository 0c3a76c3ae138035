"""Simulated containers: what the containers of a pod do on an emulated node, and the status that shows it.

Owns the lifecycle of containers that are not run as real processes (for now every
image; the project's own image will run as processes with the workloads issue):

* a container whose command the simulator does not understand (or that has none)
  behaves like ``pause``: it runs until the pod is stopped;
* ``sleep N``, ``true``, ``false``, ``exit N`` and ``echo ...``, alone or as a ``sh -c``
  script of such commands joined by ``;`` / ``&&``, run for the slept seconds and exit
  with the script's code;
* regular init containers run one after the other; one that would run forever completes
  at once instead, so that a simulated init container never blocks its pod; restartable
  init containers (sidecars) start in their turn and run like app containers;
* exited containers restart per ``restartPolicy`` (sidecars always) after the kubelet's
  crash-loop back-off (10 s, doubling, at most 300 s); the pod ends ``Succeeded`` or
  ``Failed`` once its app containers are done for good, and its sidecars are stopped;
* :meth:`PodRun.stop` (graceful deletion) ends every running container: ``pause``-like ones
  exit 0, command containers 137 (PID 1 without a SIGTERM handler, killed after the grace).

Pure: the time is passed in, so tables test the lifecycle without sleeping.  The kubelet
shell wakes up at :meth:`PodRun.next_change`, calls :meth:`PodRun.advance` and writes
:meth:`PodRun.status` through the API.
"""

from __future__ import annotations

import hashlib
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nrop.localcluster.apiserver.clock import rfc3339
from nrop.localcluster.kubelet.admission import ContainerKind

__all__ = [
    "BACKOFF_INITIAL",
    "BACKOFF_MAX",
    "PAUSE",
    "Behaviour",
    "PodRun",
    "behaviour",
    "container_id",
    "image_id",
    "normalize_image",
]

#: The kubelet's crash-loop back-off: 10 s, doubled at each restart, capped at 5 minutes.
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
#: Exit code of a process killed by SIGKILL.
KILLED_EXIT_CODE = 137

SUCCEEDED = "Succeeded"
FAILED = "Failed"
RUNNING = "Running"
PENDING = "Pending"

_SHELLS = frozenset({"sh", "bash", "ash", "dash"})


@dataclass(frozen=True)
class Behaviour:
    """What a simulated container does: run ``seconds`` (``None``: until stopped), then exit."""

    seconds: float | None
    exit_code: int = 0
    #: No command the simulator understood: a ``pause``-like process that exits 0 on SIGTERM.
    pause: bool = False


PAUSE = Behaviour(None, 0, pause=True)

_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _sleep_seconds(word: str) -> float | None:
    """GNU ``sleep``'s argument: a number with an optional s/m/h/d suffix, or ``infinity``."""
    if word in ("infinity", "inf"):
        return None
    unit = word[-1] if word and word[-1] in "smhd" else ""
    number = word[: len(word) - len(unit)]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(word) from None
    if value < 0:
        raise ValueError(word)
    return value * _DURATION_UNITS[unit]


def _simple(words: list[str]) -> Behaviour | None:
    """One simple command, or ``None`` when the simulator does not know it."""
    program = posixpath.basename(words[0])
    args = words[1:]
    if program == "sleep" and len(args) == 1:
        try:
            return Behaviour(_sleep_seconds(args[0]))
        except ValueError:
            return Behaviour(0.0, 1)
    if program == "true" and not args:
        return Behaviour(0.0)
    if program == "false" and not args:
        return Behaviour(0.0, 1)
    if program == "exit" and len(args) <= 1:
        try:
            return Behaviour(0.0, int(args[0]) % 256 if args else 0)
        except ValueError:
            return Behaviour(0.0, 2)
    if program == "echo":
        return Behaviour(0.0)
    return None


def _script(script: str) -> Behaviour:
    """A ``sh -c`` script of simple commands joined by ``;`` or ``&&``."""
    total = 0.0
    code = 0
    try:
        tokens = shlex.split(script.replace(";", " ; ").replace("&&", " && "))
    except ValueError:
        return PAUSE
    commands: list[tuple[str, list[str]]] = []
    current: list[str] = []
    for token in [*tokens, ";"]:
        if token in (";", "&&"):
            if current:
                commands.append((token, current))
            current = []
        else:
            current.append(token)
    for separator, words in commands:
        step = _simple(words)
        if step is None:
            return PAUSE
        if step.seconds is None:
            return Behaviour(None)
        total += step.seconds
        code = step.exit_code
        if posixpath.basename(words[0]) == "exit" or (separator == "&&" and code != 0):
            break
    return Behaviour(total, code)


def behaviour(container: Mapping[str, Any]) -> Behaviour:
    """How the simulator runs ``container`` (its ``command`` followed by its ``args``)."""
    argv = [str(a) for a in container.get("command") or ()] + [str(a) for a in container.get("args") or ()]
    if not argv:
        return PAUSE
    if posixpath.basename(argv[0]) in _SHELLS:
        if len(argv) >= 3 and argv[1] == "-c":
            return _script(argv[2])
        return PAUSE
    return _simple(argv) or PAUSE


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


# -- the lifecycle ----------------------------------------------------------------------------


@dataclass
class _Container:
    name: str
    kind: ContainerKind
    image: str
    behaviour: Behaviour
    restart_count: int = 0
    running: bool = False
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    container_id: str = ""
    last_state: dict[str, Any] = field(default_factory=dict)
    restart_at: datetime | None = None
    backoff: float = 0.0

    def exit_time(self) -> datetime | None:
        if not self.running or self.started_at is None:
            return None
        seconds = self.behaviour.seconds
        if seconds is None:
            # A regular init container that would never end completes at once (module docstring).
            return self.started_at if self.kind == ContainerKind.INIT else None
        return self.started_at + timedelta(seconds=seconds)

    def terminated(self) -> dict[str, Any]:
        assert self.started_at is not None and self.finished_at is not None and self.exit_code is not None
        return {
            "exitCode": self.exit_code,
            "reason": "Completed" if self.exit_code == 0 else "Error",
            "startedAt": rfc3339(self.started_at),
            "finishedAt": rfc3339(self.finished_at),
            "containerID": self.container_id,
        }


class PodRun:
    """The simulated containers of one admitted pod, from ``now`` on."""

    def __init__(self, pod: Mapping[str, Any], now: datetime) -> None:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        self.uid = str(meta.get("uid", ""))
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace", ""))
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        self.started_at = now
        self.phase = PENDING
        self.inits = [
            _Container(
                c["name"],
                ContainerKind.SIDECAR if c.get("restartPolicy") == "Always" else ContainerKind.INIT,
                str(c.get("image", "")),
                behaviour(c),
            )
            for c in spec.get("initContainers") or ()
        ]
        self.apps = [
            _Container(c["name"], ContainerKind.APP, str(c.get("image", "")), behaviour(c))
            for c in spec.get("containers") or ()
        ]
        self._next_init = 0
        self._initialized = False
        # condition type -> (status, reason, message, lastTransitionTime)
        self._conditions: dict[str, tuple[str, str, str, datetime]] = {}
        self._progress(now)
        self._refresh_conditions(now)

    # -- queries ---------------------------------------------------------------------------

    @property
    def terminal(self) -> bool:
        return self.phase in (SUCCEEDED, FAILED)

    def running_containers(self) -> frozenset[str]:
        """Names of the containers running now (the kubelet notifies on every change)."""
        return frozenset(c.name for c in (*self.inits, *self.apps) if c.running)

    def next_change(self) -> datetime | None:
        """When :meth:`advance` next has something to do (``None``: only :meth:`stop` changes it)."""
        if self.terminal:
            return None
        times = [t for c in (*self.inits, *self.apps) for t in (c.exit_time(), c.restart_at) if t is not None]
        return min(times, default=None)

    # -- transitions -----------------------------------------------------------------------

    def _start(self, container: _Container, when: datetime) -> None:
        if container.started_at is not None:
            container.last_state = {"terminated": container.terminated()}
            container.restart_count += 1
        container.running = True
        container.started_at = when
        container.finished_at = None
        container.exit_code = None
        container.restart_at = None
        container.container_id = container_id(self.uid, container.name, container.restart_count)

    def _end(self, container: _Container, when: datetime, code: int) -> None:
        container.running = False
        container.finished_at = when
        container.exit_code = code

    def _progress(self, when: datetime) -> None:
        """Start the next init containers, or the app containers once every init container is done."""
        while self._next_init < len(self.inits):
            container = self.inits[self._next_init]
            if container.started_at is None:
                self._start(container, when)
            if container.kind == ContainerKind.INIT:
                return  # the next one starts when this one exits 0 (``_exited``)
            self._next_init += 1
        if not self._initialized:
            self._initialized = True
            self.phase = RUNNING
            for container in self.apps:
                self._start(container, when)

    def _restarts(self, container: _Container) -> bool:
        if container.kind == ContainerKind.SIDECAR:
            return True
        if container.kind == ContainerKind.INIT:
            return container.exit_code != 0 and self.restart_policy != "Never"
        if self.restart_policy == "Always":
            return True
        return self.restart_policy == "OnFailure" and container.exit_code != 0

    def _exited(self, container: _Container, when: datetime) -> None:
        code = container.behaviour.exit_code
        self._end(container, when, code)
        if self._restarts(container):
            container.backoff = (
                BACKOFF_INITIAL if container.backoff == 0 else min(BACKOFF_MAX, container.backoff * 2)
            )
            container.restart_at = when + timedelta(seconds=container.backoff)
            return
        if container.kind == ContainerKind.INIT:
            if code == 0:
                self._next_init += 1
                self._progress(when)
            else:
                self._finish(when, FAILED)
            return
        if all(not c.running and c.restart_at is None for c in self.apps):
            failed = any(c.exit_code != 0 for c in self.apps)
            self._finish(when, FAILED if failed else SUCCEEDED)

    def _finish(self, when: datetime, phase: str) -> None:
        for container in (*self.inits, *self.apps):
            container.restart_at = None
            if container.running:
                self._end(container, when, 0 if container.behaviour.pause else KILLED_EXIT_CODE)
        self.phase = phase

    def advance(self, now: datetime) -> bool:
        """Play every container event up to ``now``; returns whether anything changed."""
        changed = False
        while not self.terminal:
            due: list[tuple[datetime, int, _Container, bool]] = []
            for order, container in enumerate((*self.inits, *self.apps)):
                exit_time = container.exit_time()
                if exit_time is not None and exit_time <= now:
                    due.append((exit_time, order, container, True))
                if container.restart_at is not None and container.restart_at <= now:
                    due.append((container.restart_at, order, container, False))
            if not due:
                break
            when, _, container, exiting = min(due, key=lambda d: (d[0], d[1]))
            if exiting:
                self._exited(container, when)
            else:
                self._start(container, when)
            self._refresh_conditions(when)
            changed = True
        return changed

    def stop(self, now: datetime) -> None:
        """Graceful deletion: end every container; the pod ends Succeeded only if every app exited 0."""
        if self.terminal:
            return
        self._finish(now, PENDING)
        ran_ok = all(c.exit_code == 0 for c in self.apps) and self._initialized
        self.phase = SUCCEEDED if ran_ok else FAILED
        self._refresh_conditions(now)

    # -- status ----------------------------------------------------------------------------

    def _set_condition(
        self, kind: str, status: bool, when: datetime, reason: str = "", message: str = ""
    ) -> None:
        value = ("True" if status else "False", reason, message)
        previous = self._conditions.get(kind)
        if previous is None or previous[:3] != value:
            self._conditions[kind] = (*value, when)

    def _refresh_conditions(self, when: datetime) -> None:
        self._set_condition("PodReadyToStartContainers", not self.terminal, when)
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
        if self.terminal:
            for kind in ("Ready", "ContainersReady"):
                self._set_condition(kind, False, when, "PodCompleted")
            return
        unready = [
            c.name for c in (*self.inits, *self.apps) if c.kind != ContainerKind.INIT and not c.running
        ]
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

    def _container_status(self, container: _Container) -> dict[str, Any]:
        ever_started = container.started_at is not None
        state: dict[str, Any]
        if container.running:
            assert container.started_at is not None
            state = {"running": {"startedAt": rfc3339(container.started_at)}}
        elif container.restart_at is not None:
            state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {int(container.backoff)}s restarting failed container={container.name} "
                    f"pod={self.name}_{self.namespace}({self.uid})",
                }
            }
        elif ever_started and container.finished_at is not None:
            state = {"terminated": container.terminated()}
        else:
            state = {"waiting": {"reason": "PodInitializing"}}
        last_state = container.last_state
        if container.restart_at is not None and ever_started and container.finished_at is not None:
            last_state = {"terminated": container.terminated()}
        ready = container.running if container.kind != ContainerKind.INIT else container.exit_code == 0
        status: dict[str, Any] = {
            "name": container.name,
            "image": normalize_image(container.image),
            "imageID": image_id(container.image) if ever_started else "",
            "ready": ready,
            "restartCount": container.restart_count,
            "started": container.running,
            "state": state,
            "lastState": last_state,
        }
        if container.container_id:
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
