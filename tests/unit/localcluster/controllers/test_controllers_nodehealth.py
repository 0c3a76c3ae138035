"""Node health: the probe clock, Unknown conditions past the grace period, condition taints.

Also the node lifecycle controller itself, in process against an API server with a fake
clock (no sleeping), and the controller manager's settings checks.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nrop.api.metatime import rfc3339, rfc3339_micro
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.lifecycle import bootstrap
from nrop.localcluster.apiserver.server import APIServer
from nrop.localcluster.controllers import ControllerSettings
from nrop.localcluster.controllers.decisions import nodehealth as nh
from nrop.localcluster.controllers.nodelifecycle import NodeLifecycleController

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
UNREACHABLE = [
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
]


def condition(kind: str, status: str, heartbeat: str = "2025-01-01T11:00:00Z") -> dict:
    return {
        "type": kind,
        "status": status,
        "reason": "R",
        "message": "m",
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": heartbeat,
    }


def node(*conditions: dict, taints: list | None = None, unschedulable: bool = False) -> dict:
    spec: dict = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {"name": "n", "creationTimestamp": "2025-01-01T10:00:00Z"},
        "spec": spec,
        "status": {"conditions": list(conditions)},
    }


def lease(renew: datetime) -> dict:
    return {"spec": {"renewTime": rfc3339_micro(renew)}}


def test_probe_time_moves_only_when_a_newer_heartbeat_is_seen() -> None:
    n = node(condition("Ready", "True"))
    first = nh.observe(None, n, lease(T0), T0)
    assert first.probe_time == T0
    same = nh.observe(first, n, lease(T0), T0 + timedelta(seconds=30))
    assert same.probe_time == T0
    renewed = nh.observe(same, n, lease(T0 + timedelta(seconds=10)), T0 + timedelta(seconds=31))
    assert renewed.probe_time == T0 + timedelta(seconds=31)
    posted = nh.observe(
        renewed,
        node(condition("Ready", "True", heartbeat="2025-01-01T12:01:00Z")),
        None,
        T0 + timedelta(seconds=45),
    )
    assert posted.probe_time == T0 + timedelta(seconds=45)


@pytest.mark.parametrize(
    ("n", "age", "expected"),
    [
        pytest.param(node(condition("Ready", "True")), 40, None, id="within-grace"),
        pytest.param(
            node(condition("Ready", "True"), condition("MemoryPressure", "False")),
            41,
            {
                "Ready": ("Unknown", "NodeStatusUnknown"),
                "MemoryPressure": ("Unknown", "NodeStatusUnknown"),
                "DiskPressure": ("Unknown", "NodeStatusNeverUpdated"),
                "PIDPressure": ("Unknown", "NodeStatusNeverUpdated"),
            },
            id="past-grace",
        ),
        pytest.param(node(), 50, None, id="never-ready-gets-startup-grace"),
        pytest.param(
            node(),
            61,
            {
                "Ready": ("Unknown", "NodeStatusNeverUpdated"),
                "MemoryPressure": ("Unknown", "NodeStatusNeverUpdated"),
                "DiskPressure": ("Unknown", "NodeStatusNeverUpdated"),
                "PIDPressure": ("Unknown", "NodeStatusNeverUpdated"),
            },
            id="never-posted",
        ),
    ],
)
def test_stale_conditions(n: dict, age: int, expected: dict | None) -> None:
    probe = nh.Probe(T0, None, None)
    result = nh.stale_conditions(n, probe, T0 + timedelta(seconds=age), grace=40, startup_grace=60)
    if expected is None:
        assert result is None
    else:
        assert {c["type"]: (c["status"], c["reason"]) for c in result or ()} == expected


def test_already_unknown_conditions_are_left_alone() -> None:
    n = node(*(condition(k, "Unknown") for k in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")))
    assert nh.stale_conditions(n, nh.Probe(T0, None, None), T0 + timedelta(minutes=5), 40, 60) is None


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        pytest.param(node(condition("Ready", "True")), [], id="healthy"),
        pytest.param(node(condition("Ready", "Unknown")), UNREACHABLE, id="unknown"),
        pytest.param(
            node(condition("Ready", "False")),
            [("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")],
            id="not-ready",
        ),
        pytest.param(
            node(condition("Ready", "True"), condition("MemoryPressure", "True"), unschedulable=True),
            [
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
            ],
            id="pressure-and-cordon",
        ),
        pytest.param(
            node(
                condition("Ready", "True"),
                taints=[
                    {"key": "dedicated", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                ],
            ),
            [("dedicated", "NoSchedule")],
            id="foreign-taints-kept-stale-ones-removed",
        ),
    ],
)
def test_wanted_taints(n: dict, expected: list[tuple[str, str]]) -> None:
    taints = nh.wanted_taints(n, T0)
    assert [(t["key"], t["effect"]) for t in taints] == expected


def test_kept_taints_keep_their_time_added() -> None:
    kept = {
        "key": "node.kubernetes.io/unreachable",
        "effect": "NoExecute",
        "timeAdded": "2025-01-01T11:00:00Z",
    }
    taints = nh.wanted_taints(node(condition("Ready", "Unknown"), taints=[kept]), T0)
    assert (
        kept in taints
        and {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": rfc3339(T0)}
        in taints
    )


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        return self.current


def test_controller_marks_a_silent_node_unknown_then_follows_its_recovery() -> None:
    clock = FakeClock(T0)
    server = APIServer(clock=clock)
    bootstrap(server)  # the "default" namespace, where node events go
    nodes = server.registry.lookup("", "v1", "nodes")
    assert nodes is not None
    server.rest.create(
        nodes,
        "",
        {"metadata": {"name": "n"}, "status": {"conditions": [condition("Ready", "True")]}},
        WriteOptions(),
    )
    controller = NodeLifecycleController(
        server, clock, grace_period=40, startup_grace_period=60, monitor_period=5
    )

    def state() -> tuple[str, list[tuple[str, str]]]:
        obj = server.store.get(("", "nodes"), "", "n")
        assert obj is not None
        ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
        return ready["status"], [(t["key"], t["effect"]) for t in obj["spec"].get("taints") or ()]

    controller.sync("n")
    clock.current = T0 + timedelta(seconds=40)
    controller.sync("n")
    assert state() == ("True", [])
    clock.current = T0 + timedelta(seconds=41)
    controller.sync("n")
    assert state() == ("Unknown", UNREACHABLE)
    events = server.store.list(("", "events"), "default")
    assert sorted((e["reason"], e["message"]) for e in events) == [
        ("NodeNotReady", "Node n status is now: NodeNotReady"),
        ("RegisteredNode", "Node n event: Registered Node n in Controller"),  # when first seen
    ]

    # The kubelet posts Ready again: the taints go.
    current = server.store.get(("", "nodes"), "", "n")
    assert current is not None
    back = {
        **current,
        "status": {"conditions": [condition("Ready", "True", heartbeat=rfc3339(clock.current))]},
    }
    server.rest.update(nodes, "", "n", back, WriteOptions(), subresource="status")
    controller.sync("n")
    assert state() == ("True", [])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"node_monitor_grace_period": 0}, "controllers.node_monitor_grace_period", id="grace"),
        pytest.param({"node_monitor_period": -1}, "controllers.node_monitor_period", id="period"),
        pytest.param({"olm_install_timeout": 0}, "controllers.olm_install_timeout", id="olm-install-timeout"),
        pytest.param(
            {"controllers": ("deployment", "cronjob")}, "unknown \\['cronjob'\\]", id="unknown-controller"
        ),
    ],
)
def test_settings_reject_bad_values_naming_the_field(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ControllerSettings(**kwargs)
