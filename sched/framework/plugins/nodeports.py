"""NodePorts: a pod's host ports must be free on the node (upstream ``nodeports``).

Host ports count for app containers and restartable init containers (sidecars) with
``hostPort > 0``.  A wanted port conflicts with a used one of the same protocol and port
when either binds ``0.0.0.0`` (an empty or unparsable hostIP) or both bind the same IP.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from nrop.sched.framework.interface import ActionType, ClusterEvent, CycleState, Handle, NodeInfo, Obj, Status

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_PRE_FILTER_KEY = "PreFilter" + NAME
_BIND_ALL = "0.0.0.0"

HostPort = tuple[str, str, int]
"""(host IP, protocol, port) after upstream's sanitising."""


def _sanitize_ip(ip: str) -> str:
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        return _BIND_ALL
    return ip


def host_ports(pod: Obj) -> list[HostPort]:
    """The host ports a pod binds (upstream ``GetHostPorts``), sanitised."""
    spec = pod.get("spec") or {}
    containers: list[dict[str, Any]] = [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    containers.extend(spec.get("containers") or [])
    ports: list[HostPort] = []
    for container in containers:
        for port in container.get("ports") or []:
            number = int(port.get("hostPort") or 0)
            if number > 0:
                ports.append((_sanitize_ip(port.get("hostIP") or ""), port.get("protocol") or "TCP", number))
    return ports


def _used_ports(pods: Iterable[Any]) -> dict[str, set[tuple[str, int]]]:
    used: dict[str, set[tuple[str, int]]] = {}
    for info in pods:
        for ip, protocol, port in host_ports(info.pod):
            used.setdefault(ip, set()).add((protocol, port))
    return used


def conflicts(used: dict[str, set[tuple[str, int]]], wanted: HostPort) -> bool:
    """Upstream ``HostPortInfo.CheckConflict``."""
    ip, protocol, port = wanted
    pp = (protocol, port)
    if ip == _BIND_ALL:
        return any(pp in by_ip for by_ip in used.values())
    return any(pp in used.get(key, ()) for key in (_BIND_ALL, ip))


class NodePorts:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def pre_filter(self, state: CycleState, pod: Obj) -> Status:
        wanted = host_ports(pod)
        if not wanted:
            return Status.skip()
        state.write(_PRE_FILTER_KEY, wanted)
        return Status.success()

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        wanted = state.read(_PRE_FILTER_KEY)
        if wanted is None:
            wanted = host_ports(pod)
        if not wanted:
            return Status.success()
        used = _used_ports(node_info.pods)
        if any(conflicts(used, w) for w in wanted):
            return Status.unschedulable(ERR_REASON)
        return Status.success()

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", ActionType.DELETE), ClusterEvent("Node", ActionType.ADD)]
