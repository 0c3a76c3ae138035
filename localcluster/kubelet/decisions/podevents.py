"""The kubelet's container events, decided from two successive pod statuses, and its node events.

Upstream's kubelet records, per container start, ``Pulling``/``Pulled`` (or ``Pulled`` with
"already present" when the pull policy lets it use the local image), ``Created`` and
``Started``; ``BackOff`` when a container enters ``CrashLoopBackOff``; ``Killing`` when it
stops a container. The emulated runtime adds one of its own: ``SimulatedImage`` (Normal),
after the first start of a container whose program it does not know and only stands in for
(:data:`.simulation.UNKNOWN`), so that nobody mistakes it for the image's real program. :func:`container_events` compares the container statuses the kubelet
wrote last (:func:`snapshot`) with the ones it is about to write and returns those events,
in upstream's order; :func:`node_events` are what a starting kubelet records on its Node.
There is no image store, so a pull takes no time and reports no size.

Pure: statuses in, event tuples out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MOUNT_NAMESPACES_UNAVAILABLE",
    "SIMULATED_IMAGE",
    "ContainerEvent",
    "Snapshot",
    "container_events",
    "killing",
    "node_events",
    "snapshot",
    "started",
]

#: Reason of the node warning that containers run without a mount namespace of their own.
MOUNT_NAMESPACES_UNAVAILABLE = "MountNamespacesUnavailable"

#: Reason of the event on a container whose image's program the runtime does not run.
SIMULATED_IMAGE = "SimulatedImage"

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class ContainerEvent:
    type: str  # Normal | Warning
    reason: str
    message: str
    field_path: str  # spec.containers{name}


#: Per container name: (container id, waiting reason).
Snapshot = dict[str, tuple[str, str]]


def snapshot(status: Obj) -> Snapshot:
    """What :func:`container_events` needs of a written status."""
    out: Snapshot = {}
    for entry in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
        waiting = (entry.get("state") or {}).get("waiting") or {}
        out[entry["name"]] = (str(entry.get("containerID") or ""), str(waiting.get("reason") or ""))
    return out


def _field_paths(pod: Obj) -> dict[str, tuple[str, Obj]]:
    spec = pod.get("spec") or {}
    out: dict[str, tuple[str, Obj]] = {}
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or ():
            out[container["name"]] = (f"spec.{field}{{{container['name']}}}", container)
    return out


def started(before: Snapshot, status: Obj) -> list[tuple[str, int]]:
    """``(container, restartCount)`` of the containers that got a new container id since ``before``."""
    out = []
    for entry in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
        cid = str(entry.get("containerID") or "")
        if cid and cid != before.get(entry["name"], ("", ""))[0]:
            out.append((entry["name"], int(entry.get("restartCount") or 0)))
    return out


def container_events(
    pod: Obj, before: Snapshot, status: Obj, unknown_programs: frozenset[str] = frozenset()
) -> list[ContainerEvent]:
    """The events between the statuses ``before`` and ``status`` of ``pod``, in upstream's order;
    ``unknown_programs``: the containers that get ``SimulatedImage`` after their first start."""
    meta = pod.get("metadata") or {}
    pod_ref = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"
    fields = _field_paths(pod)
    events: list[ContainerEvent] = []
    for name, (cid, waiting) in snapshot(status).items():
        if name not in fields:
            continue
        field_path, container = fields[name]
        old_cid, old_waiting = before.get(name, ("", ""))
        if cid and cid != old_cid:
            events.extend(_start(container, field_path))
            if not old_cid and name in unknown_programs:
                events.append(_simulated(container, field_path))
        if waiting == "CrashLoopBackOff" and old_waiting != "CrashLoopBackOff":
            events.append(
                ContainerEvent(
                    "Warning",
                    "BackOff",
                    f"Back-off restarting failed container {name} in pod {pod_ref}",
                    field_path,
                )
            )
    return events


def _start(container: Obj, field_path: str) -> list[ContainerEvent]:
    image, name = str(container.get("image", "")), container["name"]
    if container.get("imagePullPolicy") == "Always":
        pulls = [
            ContainerEvent("Normal", "Pulling", f'Pulling image "{image}"', field_path),
            ContainerEvent(
                "Normal",
                "Pulled",
                f'Successfully pulled image "{image}" in 0s (0s including waiting). Image size: 0 bytes.',
                field_path,
            ),
        ]
    else:
        pulls = [
            ContainerEvent(
                "Normal", "Pulled", f'Container image "{image}" already present on machine', field_path
            )
        ]
    return [
        *pulls,
        ContainerEvent("Normal", "Created", f"Created container: {name}", field_path),
        ContainerEvent("Normal", "Started", f"Started container {name}", field_path),
    ]


def _simulated(container: Obj, field_path: str) -> ContainerEvent:
    image = str(container.get("image", ""))
    return ContainerEvent(
        "Normal",
        SIMULATED_IMAGE,
        f'Image "{image}" is simulated by the embedded cluster: its program is not run; '
        f"container {container['name']} stands in for it like pause (runs until stopped)",
        field_path,
    )


def killing(pod: Obj, names: Iterable[str]) -> list[ContainerEvent]:
    """``Killing`` for each container the kubelet stops on deletion."""
    fields = _field_paths(pod)
    return [
        ContainerEvent("Normal", "Killing", f"Stopping container {name}", fields[name][0])
        for name in names
        if name in fields
    ]


def node_events(node: str, mount_namespaces_refused: str | None = None) -> list[tuple[str, str, str]]:
    """``(type, reason, message)`` a kubelet records on its Node when it starts, in upstream's order.

    ``mount_namespaces_refused`` (why this machine gives containers no mount namespace of
    their own) adds a warning after ``Starting``, where upstream's kubelet warns about its
    runtime set-up (``CgroupV1``, ``InvalidDiskCapacity``).
    """
    status = [
        (reason, f"Node {node} status is now: {reason}")
        for reason in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID")
    ]
    warnings = []
    if mount_namespaces_refused is not None:
        warnings.append(
            (
                "Warning",
                MOUNT_NAMESPACES_UNAVAILABLE,
                f"containers cannot get a mount namespace of their own ({mount_namespaces_refused}): "
                "their volumes are reached by rewriting mount paths in their command, args and env",
            )
        )
    return [
        ("Normal", "Starting", "Starting kubelet."),
        *warnings,
        *(("Normal", r, m) for r, m in status),
        ("Normal", "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods"),
        ("Normal", "NodeReady", f"Node {node} status is now: NodeReady"),
    ]
