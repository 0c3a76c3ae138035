"""The kubelet's container and node events, decided from successive pod statuses."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.kubelet.decisions.podevents import (
    ContainerEvent,
    container_events,
    killing,
    node_events,
    snapshot,
)

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
    "spec": {
        "initContainers": [{"name": "init", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}],
        "containers": [{"name": "app", "image": "registry.example/app:latest", "imagePullPolicy": "Always"}],
    },
}
APP = "spec.containers{app}"
INIT = "spec.initContainers{init}"


def status(init: tuple[str, str] | None = None, app: tuple[str, str] | None = None) -> dict[str, Any]:
    def entry(name: str, cid: str, waiting: str) -> dict[str, Any]:
        state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
        return {"name": name, "containerID": cid, "state": state}

    out: dict[str, Any] = {"containerStatuses": [entry("app", *(app or ("", "PodInitializing")))]}
    out["initContainerStatuses"] = [entry("init", *(init or ("", "")))]
    return out


def started(field: str, name: str, pulls: list[tuple[str, str]]) -> list[ContainerEvent]:
    return [
        *(ContainerEvent("Normal", reason, message, field) for reason, message in pulls),
        ContainerEvent("Normal", "Created", f"Created container: {name}", field),
        ContainerEvent("Normal", "Started", f"Started container {name}", field),
    ]


PRESENT = [("Pulled", 'Container image "busybox:1.36" already present on machine')]
PULLED = [
    ("Pulling", 'Pulling image "registry.example/app:latest"'),
    (
        "Pulled",
        'Successfully pulled image "registry.example/app:latest" in 0s (0s including waiting). Image size: 0 bytes.',
    ),
]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(status(), status(), [], id="nothing-started"),
        pytest.param(status(), status(init=("c1", "")), started(INIT, "init", PRESENT), id="init-present"),
        pytest.param(
            status(init=("c1", "")),
            status(init=("c1", ""), app=("c2", "")),
            started(APP, "app", PULLED),
            id="app-always-pulls",
        ),
        pytest.param(
            status(init=("c1", ""), app=("c2", "")),
            status(init=("c1", ""), app=("c2", "")),
            [],
            id="no-change",
        ),
        pytest.param(
            status(init=("c1", ""), app=("c2", "")),
            status(init=("c1", ""), app=("c2", "CrashLoopBackOff")),
            [
                ContainerEvent(
                    "Warning", "BackOff", "Back-off restarting failed container app in pod p_ns(u1)", APP
                )
            ],
            id="back-off-once",
        ),
        pytest.param(
            status(init=("c1", ""), app=("c2", "CrashLoopBackOff")),
            status(init=("c1", ""), app=("c2", "CrashLoopBackOff")),
            [],
            id="back-off-not-repeated",
        ),
        pytest.param(
            status(init=("c1", ""), app=("c2", "CrashLoopBackOff")),
            status(init=("c1", ""), app=("c3", "")),
            started(APP, "app", PULLED),
            id="restart",
        ),
    ],
)
def test_container_events(
    before: dict[str, Any], after: dict[str, Any], expected: list[ContainerEvent]
) -> None:
    assert container_events(POD, snapshot(before), after) == expected


SIMULATED = ContainerEvent(
    "Normal",
    "SimulatedImage",
    'Image "registry.example/app:latest" is simulated by the embedded cluster: its program is not run; '
    "container app stands in for it like pause (runs until stopped)",
    APP,
)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(
            status(init=("c1", "")),
            status(init=("c1", ""), app=("c2", "")),
            [*started(APP, "app", PULLED), SIMULATED],
            id="after-the-first-start",
        ),
        pytest.param(
            status(init=("c1", ""), app=("c2", "CrashLoopBackOff")),
            status(init=("c1", ""), app=("c3", "")),
            started(APP, "app", PULLED),
            id="not-on-restarts",
        ),
        pytest.param(
            status(init=("c1", ""), app=("c2", "")),
            status(init=("c1", ""), app=("c2", "")),
            [],
            id="no-change",
        ),
    ],
)
def test_an_unknown_program_is_said_once(
    before: dict[str, Any], after: dict[str, Any], expected: list[ContainerEvent]
) -> None:
    assert container_events(POD, snapshot(before), after, frozenset({"app"})) == expected


def test_killing_names_each_stopped_container() -> None:
    assert killing(POD, ["app", "gone"]) == [
        ContainerEvent("Normal", "Killing", "Stopping container app", APP)
    ]


def test_node_events_in_upstream_order() -> None:
    assert [reason for _, reason, _ in node_events("w")] == [
        "Starting",
        "NodeHasSufficientMemory",
        "NodeHasNoDiskPressure",
        "NodeHasSufficientPID",
        "NodeAllocatableEnforced",
        "NodeReady",
    ]
    assert node_events("w")[-1] == ("Normal", "NodeReady", "Node w status is now: NodeReady")


def test_a_node_without_mount_namespaces_warns_after_starting() -> None:
    events = node_events("w", "unshare(CLONE_NEWNS): Operation not permitted")
    assert events[:2] == [
        ("Normal", "Starting", "Starting kubelet."),
        (
            "Warning",
            "MountNamespacesUnavailable",
            "containers cannot get a mount namespace of their own (unshare(CLONE_NEWNS): Operation not "
            "permitted): their volumes are reached by rewriting mount paths in their command, args and env",
        ),
    ]
    assert events[2:] == node_events("w")[1:]
