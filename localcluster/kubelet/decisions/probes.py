"""Container probes as data: a probe spec with upstream's defaults, and the result thresholds.

Owns what the kubelet's prober decides without doing any I/O (``pkg/kubelet/prober``):

* :func:`parse_probe` reads a ``startupProbe`` / ``livenessProbe`` / ``readinessProbe``
  with the API defaults (``periodSeconds`` 10, ``timeoutSeconds`` 1,
  ``successThreshold`` 1, ``failureThreshold`` 3, ``initialDelaySeconds`` 0) and one
  handler (``httpGet``, ``tcpSocket``, ``exec`` or ``grpc``); bad input raises
  :class:`ProbeError` naming the field;
* :func:`resolve_port` maps a port number or a named container port to a number;
* :class:`ProbeTracker` turns single probe outcomes into the published result like the
  probe worker: readiness starts ``False``, liveness ``True``, startup unknown; a result
  changes only after ``successThreshold`` consecutive successes or ``failureThreshold``
  consecutive failures; after a liveness or startup failure the tracker holds (the
  container is about to be killed) until the next container instance.

Executing a probe is :mod:`.probing`'s job; the probe loop lives in :mod:`.podworker`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ExecAction",
    "GRPCAction",
    "HTTPGetAction",
    "ProbeError",
    "ProbeKind",
    "ProbeSpec",
    "ProbeTracker",
    "TCPSocketAction",
    "container_probes",
    "parse_probe",
    "resolve_port",
]


class ProbeKind(enum.StrEnum):
    STARTUP = "startup"
    LIVENESS = "liveness"
    READINESS = "readiness"

    @property
    def field(self) -> str:
        return f"{self.value}Probe"

    @property
    def title(self) -> str:
        return self.value.capitalize()


class ProbeError(ValueError):
    """A probe that cannot be used; the message names the field."""


@dataclass(frozen=True)
class HTTPGetAction:
    port: int | str
    path: str = "/"
    host: str = ""
    scheme: str = "HTTP"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TCPSocketAction:
    port: int | str
    host: str = ""


@dataclass(frozen=True)
class ExecAction:
    command: tuple[str, ...]


@dataclass(frozen=True)
class GRPCAction:
    port: int
    service: str = ""


Action = HTTPGetAction | TCPSocketAction | ExecAction | GRPCAction


@dataclass(frozen=True)
class ProbeSpec:
    kind: ProbeKind
    action: Action
    initial_delay: float = 0.0
    timeout: float = 1.0
    period: float = 10.0
    success_threshold: int = 1
    failure_threshold: int = 3
    #: ``terminationGracePeriodSeconds`` of the probe (liveness/startup kills), else the pod's.
    termination_grace: float | None = None


def _integer(obj: Mapping[str, Any], key: str, where: str, default: int, minimum: int) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ProbeError(f"{where}.{key}: must be an integer >= {minimum}, got {value!r}")
    return value


def _port(value: Any, where: str) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= 65535:
            raise ProbeError(f"{where}: must be between 1 and 65535, got {value}")
        return value
    if isinstance(value, str) and value:
        return int(value) if value.isdigit() else value
    raise ProbeError(f"{where}: must be a port number or a port name, got {value!r}")


def _action(probe: Mapping[str, Any], where: str) -> Action:
    handlers = [key for key in ("httpGet", "tcpSocket", "exec", "grpc") if probe.get(key) is not None]
    if len(handlers) != 1:
        raise ProbeError(f"{where}: must specify exactly one of httpGet, tcpSocket, exec, grpc")
    key = handlers[0]
    body = probe[key]
    here = f"{where}.{key}"
    if not isinstance(body, Mapping):
        raise ProbeError(f"{here}: must be an object")
    if key == "httpGet":
        scheme = str(body.get("scheme") or "HTTP")
        if scheme not in ("HTTP", "HTTPS"):
            raise ProbeError(
                f'{here}.scheme: Unsupported value: "{scheme}": supported values: "HTTP", "HTTPS"'
            )
        headers = tuple(
            (str(h.get("name", "")), str(h.get("value", ""))) for h in body.get("httpHeaders") or ()
        )
        return HTTPGetAction(
            port=_port(body.get("port"), f"{here}.port"),
            path=str(body.get("path") or "/"),
            host=str(body.get("host") or ""),
            scheme=scheme,
            headers=headers,
        )
    if key == "tcpSocket":
        return TCPSocketAction(port=_port(body.get("port"), f"{here}.port"), host=str(body.get("host") or ""))
    if key == "exec":
        command = body.get("command")
        if not isinstance(command, list) or not command:
            raise ProbeError(f"{here}.command: must be a non-empty list of strings")
        return ExecAction(tuple(str(word) for word in command))
    port = _port(body.get("port"), f"{here}.port")
    if not isinstance(port, int):
        raise ProbeError(f"{here}.port: must be a port number, got {port!r}")
    return GRPCAction(port=port, service=str(body.get("service") or ""))


def parse_probe(probe: Mapping[str, Any], kind: ProbeKind, where: str) -> ProbeSpec:
    """One probe of a container, with the API defaults; ``where`` is the field path for errors."""
    if not isinstance(probe, Mapping):
        raise ProbeError(f"{where}: must be an object")
    success = _integer(probe, "successThreshold", where, 1, 1)
    if kind != ProbeKind.READINESS and success != 1:
        raise ProbeError(f"{where}.successThreshold: must be 1 for {kind.field}")
    grace = probe.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool) or grace < 1):
        raise ProbeError(f"{where}.terminationGracePeriodSeconds: must be an integer >= 1, got {grace!r}")
    return ProbeSpec(
        kind=kind,
        action=_action(probe, where),
        initial_delay=float(_integer(probe, "initialDelaySeconds", where, 0, 0)),
        timeout=float(_integer(probe, "timeoutSeconds", where, 1, 1)),
        period=float(_integer(probe, "periodSeconds", where, 10, 1)),
        success_threshold=success,
        failure_threshold=_integer(probe, "failureThreshold", where, 3, 1),
        termination_grace=float(grace) if grace is not None else None,
    )


def container_probes(container: Mapping[str, Any], where: str) -> tuple[ProbeSpec, ...]:
    """Every probe of a container, startup first (``where`` like ``spec.containers[0]``)."""
    return tuple(
        parse_probe(container[kind.field], kind, f"{where}.{kind.field}")
        for kind in (ProbeKind.STARTUP, ProbeKind.LIVENESS, ProbeKind.READINESS)
        if container.get(kind.field) is not None
    )


def resolve_port(port: int | str, container_ports: Sequence[Mapping[str, Any]]) -> int:
    """A probe's port: a number, or the ``containerPort`` of the container's port of that name."""
    if isinstance(port, int):
        return port
    for entry in container_ports:
        if entry.get("name") == port and isinstance(entry.get("containerPort"), int):
            return int(entry["containerPort"])
    raise ProbeError(f'port "{port}" is not a named port of the container')


class ProbeTracker:
    """The published result of one probe of one container instance (``worker.doProbe``)."""

    def __init__(self, spec: ProbeSpec) -> None:
        self.spec = spec
        initial = {ProbeKind.READINESS: False, ProbeKind.LIVENESS: True, ProbeKind.STARTUP: None}
        self.result: bool | None = initial[spec.kind]
        self.on_hold = False
        self._last: bool | None = None
        self._run = 0

    def record(self, success: bool) -> bool:
        """One probe outcome; returns whether the published result changed."""
        if self.on_hold:
            return False
        if self._last == success:
            self._run += 1
        else:
            self._last, self._run = success, 1
        threshold = self.spec.success_threshold if success else self.spec.failure_threshold
        if self._run < threshold:
            return False
        changed = self.result != success
        self.result = success
        if not success and self.spec.kind in (ProbeKind.LIVENESS, ProbeKind.STARTUP):
            self.on_hold, self._run = True, 0
        return changed
