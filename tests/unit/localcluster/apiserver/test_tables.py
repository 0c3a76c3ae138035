"""Server-side Table output: ages, built-in printers, CRD printer columns, JSONPath."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nrop.api.metatime import rfc3339
from nrop.localcluster.apiserver.tables.jsonpaths import JSONPathError, jsonpath_values, parse_jsonpath
from nrop.localcluster.apiserver.tables.output import (
    BUILTIN_COLUMNS,
    crd_printer_columns,
    format_age,
    has_printer,
    human_duration,
    render_table,
    translate_timestamp,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    """An RFC 3339 timestamp ``seconds_ago`` before ``NOW``."""
    return rfc3339(NOW - timedelta(seconds=seconds_ago))


def meta(name: str, age: float = 300, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": ts(age), **extra}


def cells(group: str, resource: str, obj: dict[str, Any], **kwargs: Any) -> list[Any]:
    table = render_table(group, resource, [obj], now=NOW, **kwargs)
    return table["rows"][0]["cells"]


def column_names(group: str, resource: str) -> list[str]:
    return [c["name"] for c in BUILTIN_COLUMNS[(group, resource)]]


# --------------------------------------------------------------------------- ages

MIN, HOUR, DAY, YEAR = 60, 3600, 86400, 365 * 86400


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param(-5, "<invalid>", id="future-beyond-skew"),
        pytest.param(-1.5, "0s", id="future-within-skew"),
        pytest.param(0, "0s", id="now"),
        pytest.param(5, "5s", id="seconds"),
        pytest.param(119.9, "119s", id="under-two-minutes-stays-seconds"),
        pytest.param(2 * MIN, "2m", id="two-minutes"),
        pytest.param(2 * MIN + 3, "2m3s", id="minutes-seconds"),
        pytest.param(9 * MIN + 59, "9m59s", id="last-minute-seconds"),
        pytest.param(10 * MIN + 30, "10m", id="ten-minutes-drops-seconds"),
        pytest.param(179 * MIN, "179m", id="minutes-below-three-hours"),
        pytest.param(3 * HOUR, "3h", id="three-hours"),
        pytest.param(3 * HOUR + 4 * MIN, "3h4m", id="hours-minutes"),
        pytest.param(8 * HOUR + 4 * MIN, "8h", id="eight-hours-drops-minutes"),
        pytest.param(47 * HOUR, "47h", id="hours-below-two-days"),
        pytest.param(2 * DAY, "2d", id="two-days"),
        pytest.param(5 * DAY + 3 * HOUR, "5d3h", id="days-hours"),
        pytest.param(8 * DAY + 3 * HOUR, "8d", id="eight-days-drops-hours"),
        pytest.param(700 * DAY, "700d", id="days-below-two-years"),
        pytest.param(2 * YEAR, "2y", id="two-years"),
        pytest.param(2 * YEAR + 10 * DAY, "2y10d", id="years-days"),
        pytest.param(9 * YEAR + 10 * DAY, "9y", id="many-years"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected
    assert format_age(NOW - timedelta(seconds=seconds), NOW) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(ts(125), "2m5s", id="time"),
        pytest.param("2025-06-01T11:59:30.123456Z", "29s", id="micro-time"),
        pytest.param(None, "<unknown>", id="missing"),
        pytest.param("", "<unknown>", id="empty"),
    ],
)
def test_translate_timestamp(value: Any, expected: str) -> None:
    assert translate_timestamp(value, NOW) == expected


def test_format_age_accepts_naive_datetimes_as_utc() -> None:
    assert format_age(datetime(2025, 6, 1, 11, 0, 0), NOW) == "60m"


# --------------------------------------------------------------------------- pods


def container_status(
    name: str, state: dict[str, Any], *, ready: bool = False, restarts: int = 0, **extra: Any
):
    return {"name": name, "state": state, "ready": ready, "restartCount": restarts, "image": "img", **extra}


def pod(
    *,
    containers: int = 1,
    init: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    deleting: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    metadata = meta("p1", 10)
    if deleting:
        metadata["deletionTimestamp"] = ts(1)
    return {
        "metadata": metadata,
        "spec": {
            "containers": [{"name": f"c{i}", "image": "img"} for i in range(containers)],
            **({"initContainers": init} if init else {}),
            **spec,
        },
        "status": status or {},
    }


RUNNING = {"running": {"startedAt": ts(8)}}
READY_CONDITIONS = [
    {"type": "Initialized", "status": "True"},
    {"type": "Ready", "status": "True"},
    {"type": "PodScheduled", "status": "True"},
]


@pytest.mark.parametrize(
    ("obj", "ready", "status"),
    [
        pytest.param(pod(status={"phase": "Pending"}), "0/1", "Pending", id="pending-unscheduled"),
        pytest.param(
            pod(
                status={
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
                }
            ),
            "0/1",
            "SchedulingGated",
            id="scheduling-gated",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Pending",
                    "containerStatuses": [
                        container_status("c0", {"waiting": {"reason": "ContainerCreating"}})
                    ],
                }
            ),
            "0/1",
            "ContainerCreating",
            id="waiting-reason",
        ),
        pytest.param(
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "conditions": READY_CONDITIONS,
                    "containerStatuses": [
                        container_status("c0", RUNNING, ready=True),
                        container_status("c1", RUNNING, ready=True),
                    ],
                },
            ),
            "2/2",
            "Running",
            id="running-ready",
        ),
        pytest.param(
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "containerStatuses": [
                        container_status("c0", RUNNING, ready=True),
                        container_status("c1", RUNNING, ready=False),
                    ],
                },
            ),
            "1/2",
            "Running",
            id="running-partly-ready",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Running",
                    "containerStatuses": [
                        container_status("c0", {"waiting": {"reason": "CrashLoopBackOff"}})
                    ],
                }
            ),
            "0/1",
            "CrashLoopBackOff",
            id="crash-loop",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Succeeded",
                    "containerStatuses": [
                        container_status("c0", {"terminated": {"exitCode": 0, "reason": "Completed"}})
                    ],
                }
            ),
            "0/1",
            "Completed",
            id="completed",
        ),
        pytest.param(
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "conditions": READY_CONDITIONS,
                    "containerStatuses": [
                        container_status("c0", RUNNING, ready=True),
                        container_status("c1", {"terminated": {"exitCode": 0, "reason": "Completed"}}),
                    ],
                },
            ),
            "1/2",
            "Running",
            id="completed-with-one-still-running-is-running",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Failed",
                    "containerStatuses": [container_status("c0", {"terminated": {"exitCode": 137}})],
                }
            ),
            "0/1",
            "ExitCode:137",
            id="exit-code-without-reason",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Failed",
                    "containerStatuses": [
                        container_status("c0", {"terminated": {"exitCode": 0, "signal": 9}})
                    ],
                }
            ),
            "0/1",
            "Signal:9",
            id="signal-without-reason",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Failed",
                    "reason": "TopologyAffinityError",
                    "message": "Resources cannot be allocated",
                }
            ),
            "0/1",
            "TopologyAffinityError",
            id="failed-admission-reason",
        ),
        pytest.param(
            pod(
                deleting=True,
                status={
                    "phase": "Running",
                    "containerStatuses": [container_status("c0", RUNNING, ready=True)],
                },
            ),
            "1/1",
            "Terminating",
            id="terminating",
        ),
        pytest.param(
            pod(deleting=True, status={"phase": "Running", "reason": "NodeLost"}),
            "0/1",
            "Unknown",
            id="deleting-on-lost-node",
        ),
        pytest.param(
            pod(
                deleting=True,
                status={"phase": "Failed", "reason": "TopologyAffinityError"},
            ),
            "0/1",
            "TopologyAffinityError",
            id="deleting-terminal-pod-keeps-reason",
        ),
        pytest.param(
            pod(
                init=[{"name": "i0", "image": "img"}],
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        container_status("i0", {"waiting": {"reason": "PodInitializing"}})
                    ],
                    "containerStatuses": [container_status("c0", {"waiting": {"reason": "PodInitializing"}})],
                },
            ),
            "0/1",
            "Init:0/1",
            id="init-progress",
        ),
        pytest.param(
            pod(
                init=[{"name": "i0", "image": "img"}, {"name": "i1", "image": "img"}],
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        container_status("i0", {"terminated": {"exitCode": 0, "reason": "Completed"}}),
                        container_status("i1", RUNNING),
                    ],
                },
            ),
            "0/1",
            "Init:1/2",
            id="init-second-of-two",
        ),
        pytest.param(
            pod(
                init=[{"name": "i0", "image": "img"}],
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        container_status("i0", {"waiting": {"reason": "ErrImagePull"}})
                    ],
                },
            ),
            "0/1",
            "Init:ErrImagePull",
            id="init-waiting-reason",
        ),
        pytest.param(
            pod(
                init=[{"name": "i0", "image": "img"}],
                status={
                    "phase": "Failed",
                    "initContainerStatuses": [container_status("i0", {"terminated": {"exitCode": 3}})],
                },
            ),
            "0/1",
            "Init:ExitCode:3",
            id="init-failed",
        ),
        pytest.param(
            pod(
                init=[{"name": "sidecar", "image": "img", "restartPolicy": "Always"}],
                status={
                    "phase": "Running",
                    "conditions": READY_CONDITIONS,
                    "initContainerStatuses": [container_status("sidecar", RUNNING, ready=True, started=True)],
                    "containerStatuses": [container_status("c0", RUNNING, ready=True)],
                },
            ),
            "2/2",
            "Running",
            id="sidecar-counts-as-container",
        ),
    ],
)
def test_pod_ready_and_status(obj: dict[str, Any], ready: str, status: str) -> None:
    row = cells("", "pods", obj)
    assert (row[1], row[2]) == (ready, status)


def test_pod_columns_and_wide_cells() -> None:
    assert column_names("", "pods") == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert [c["priority"] for c in BUILTIN_COLUMNS[("", "pods")]] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    obj = pod(
        nodeName="node-a",
        readinessGates=[{"conditionType": "example.com/gate"}, {"conditionType": "example.com/other"}],
        status={
            "phase": "Running",
            "podIP": "10.0.0.7",
            "podIPs": [{"ip": "10.0.0.7"}],
            "conditions": [*READY_CONDITIONS, {"type": "example.com/gate", "status": "True"}],
            "containerStatuses": [container_status("c0", RUNNING, ready=True)],
        },
    )
    assert cells("", "pods", obj) == [
        "p1",
        "1/1",
        "Running",
        "0",
        "10s",
        "10.0.0.7",
        "node-a",
        "<none>",
        "1/2",
    ]
    assert cells("", "pods", pod()) == ["p1", "0/1", "", "0", "10s", "<none>", "<none>", "<none>", "<none>"]


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        pytest.param([container_status("c0", RUNNING, ready=True)], "0", id="never-restarted"),
        pytest.param(
            [container_status("c0", RUNNING, ready=True, restarts=5)],
            "5",
            id="restarts-without-last-state",
        ),
        pytest.param(
            [
                container_status(
                    "c0", RUNNING, ready=True, restarts=2, lastState={"terminated": {"finishedAt": ts(5)}}
                ),
                container_status(
                    "c1", RUNNING, ready=True, restarts=1, lastState={"terminated": {"finishedAt": ts(600)}}
                ),
            ],
            "3 (5s ago)",
            id="latest-restart-suffix",
        ),
    ],
)
def test_pod_restarts(statuses: list[dict[str, Any]], expected: str) -> None:
    obj = pod(containers=len(statuses), status={"phase": "Running", "containerStatuses": statuses})
    assert cells("", "pods", obj)[3] == expected


@pytest.mark.parametrize(
    ("phase", "conditions"),
    [
        pytest.param("Running", None, id="running-no-conditions"),
        pytest.param(
            "Succeeded",
            [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "The pod has completed successfully.",
                }
            ],
            id="succeeded",
        ),
        pytest.param(
            "Failed",
            [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
            id="failed",
        ),
    ],
)
def test_pod_row_conditions(phase: str, conditions: list[dict[str, Any]] | None) -> None:
    row = render_table("", "pods", [pod(status={"phase": phase})], now=NOW)["rows"][0]
    assert row.get("conditions") == conditions


# --------------------------------------------------------------------------- nodes


def node(
    name: str = "node-a",
    *,
    ready: str | None = "True",
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    return {
        "metadata": {"name": name, "creationTimestamp": ts(5 * DAY), "labels": labels or {}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "conditions": conditions,
            "addresses": [
                {"type": "Hostname", "address": name},
                {"type": "InternalIP", "address": "127.0.0.2"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.33.0",
                "osImage": "Emulated Linux",
                "kernelVersion": "6.1.0",
                "containerRuntimeVersion": "emulated://1.0",
            },
        },
    }


@pytest.mark.parametrize(
    ("obj", "status", "roles"),
    [
        pytest.param(node(), "Ready", "<none>", id="ready-worker"),
        pytest.param(node(ready="False"), "NotReady", "<none>", id="not-ready"),
        pytest.param(node(ready="Unknown"), "NotReady", "<none>", id="ready-unknown-is-not-ready"),
        pytest.param(node(ready=None), "Unknown", "<none>", id="no-ready-condition"),
        pytest.param(node(unschedulable=True), "Ready,SchedulingDisabled", "<none>", id="cordoned"),
        pytest.param(
            node(ready="False", unschedulable=True),
            "NotReady,SchedulingDisabled",
            "<none>",
            id="cordoned-not-ready",
        ),
        pytest.param(
            node(labels={"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}),
            "Ready",
            "control-plane,worker",
            id="roles-sorted",
        ),
        pytest.param(
            node(labels={"kubernetes.io/role": "infra", "node-role.kubernetes.io/": ""}),
            "Ready",
            "infra",
            id="legacy-role-label-and-empty-role-ignored",
        ),
    ],
)
def test_node_status_and_roles(obj: dict[str, Any], status: str, roles: str) -> None:
    row = cells("", "nodes", obj)
    assert (row[1], row[2]) == (status, roles)


def test_node_cells() -> None:
    assert column_names("", "nodes") == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
        "Internal-IP",
        "External-IP",
        "OS-Image",
        "Kernel-Version",
        "Container-Runtime",
    ]
    assert cells("", "nodes", node()) == [
        "node-a",
        "Ready",
        "<none>",
        "5d",
        "v1.33.0",
        "127.0.0.2",
        "<none>",
        "Emulated Linux",
        "6.1.0",
        "emulated://1.0",
    ]


# --------------------------------------------------------------------------- other built-ins

TEMPLATE = {
    "metadata": {"labels": {"app": "rte"}},
    "spec": {
        "nodeSelector": {"kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""},
        "containers": [{"name": "rte", "image": "quay.io/rte:1"}, {"name": "helper", "image": "busybox"}],
    },
}
SELECTOR = {
    "matchLabels": {"app": "rte"},
    "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["b", "a"]},
        {"key": "debug", "operator": "DoesNotExist"},
    ],
}


@pytest.mark.parametrize(
    ("group", "resource", "obj", "expected"),
    [
        pytest.param(
            "",
            "namespaces",
            {"metadata": meta("ns1", 20), "status": {"phase": "Terminating"}},
            ["ns1", "Terminating", "20s"],
            id="namespace",
        ),
        pytest.param(
            "",
            "configmaps",
            {"metadata": meta("cm", 3 * HOUR), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}},
            ["cm", 3, "3h"],
            id="configmap-counts-binary-data",
        ),
        pytest.param(
            "",
            "secrets",
            {"metadata": meta("s"), "type": "Opaque", "data": {"k": "dg=="}},
            ["s", "Opaque", 1, "5m"],
            id="secret",
        ),
        pytest.param(
            "", "serviceaccounts", {"metadata": meta("default")}, ["default", 0, "5m"], id="serviceaccount"
        ),
        pytest.param(
            "",
            "services",
            {
                "metadata": meta("svc"),
                "spec": {
                    "type": "NodePort",
                    "clusterIP": "10.96.0.10",
                    "clusterIPs": ["10.96.0.10"],
                    "ports": [
                        {"port": 80, "protocol": "TCP", "nodePort": 30080},
                        {"port": 53, "protocol": "UDP"},
                    ],
                    "selector": {"app": "web"},
                },
            },
            ["svc", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "5m", "app=web"],
            id="service-nodeport",
        ),
        pytest.param(
            "",
            "services",
            {"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIP": "None"}},
            ["lb", "LoadBalancer", "None", "<pending>", "<none>", "5m", "<none>"],
            id="service-loadbalancer-pending",
        ),
        pytest.param(
            "",
            "endpoints",
            {
                "metadata": meta("svc"),
                "subsets": [
                    {
                        "addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)],
                        "ports": [{"port": 80}, {"port": 443}],
                    }
                ],
            },
            ["svc", "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more...", "5m"],
            id="endpoints-truncated",
        ),
        pytest.param(
            "", "endpoints", {"metadata": meta("svc")}, ["svc", "<none>", "5m"], id="endpoints-empty"
        ),
        pytest.param(
            "",
            "events",
            {
                "metadata": meta("p1.17a"),
                "involvedObject": {"kind": "Pod", "name": "p1", "fieldPath": "spec.containers{c0}"},
                "reason": "Scheduled",
                "type": "Normal",
                "message": "Successfully assigned default/p1 to node-a\n",
                "source": {"component": "default-scheduler"},
                "firstTimestamp": ts(90),
                "lastTimestamp": ts(30),
                "count": 2,
            },
            [
                "30s",
                "Normal",
                "Scheduled",
                "pod/p1",
                "spec.containers{c0}",
                "default-scheduler",
                "Successfully assigned default/p1 to node-a",
                "90s",
                2,
                "p1.17a",
            ],
            id="event-core",
        ),
        pytest.param(
            "",
            "events",
            {
                "metadata": meta("e2"),
                "involvedObject": {"kind": "Node"},
                "reason": "Started",
                "type": "Warning",
                "message": "m",
                "eventTime": "2025-06-01T11:59:00.000000Z",
                "reportingController": "kopf",
                "reportingInstance": "op-1",
            },
            ["60s", "Warning", "Started", "node", "", "kopf, op-1", "m", "60s", 1, "e2"],
            id="event-new-api-singleton",
        ),
        pytest.param(
            "apps",
            "deployments",
            {
                "metadata": meta("web", 2 * DAY),
                "spec": {"replicas": 3, "selector": SELECTOR, "template": TEMPLATE},
                "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
            },
            ["web", "2/3", 3, 2, "2d", "rte,helper", "quay.io/rte:1,busybox", "app=rte,!debug,tier in (a,b)"],
            id="deployment",
        ),
        pytest.param(
            "apps",
            "replicasets",
            {
                "metadata": meta("web-1"),
                "spec": {"selector": {"matchLabels": {"app": "rte"}}, "template": TEMPLATE},
            },
            ["web-1", 1, 0, 0, "5m", "rte,helper", "quay.io/rte:1,busybox", "app=rte"],
            id="replicaset-defaults",
        ),
        pytest.param(
            "apps",
            "statefulsets",
            {
                "metadata": meta("db"),
                "spec": {"replicas": 2, "template": TEMPLATE},
                "status": {"readyReplicas": 1},
            },
            ["db", "1/2", "5m", "rte,helper", "quay.io/rte:1,busybox"],
            id="statefulset",
        ),
        pytest.param(
            "apps",
            "daemonsets",
            {
                "metadata": meta("rte"),
                "spec": {"selector": {"matchLabels": {"app": "rte"}}, "template": TEMPLATE},
                "status": {
                    "desiredNumberScheduled": 2,
                    "currentNumberScheduled": 2,
                    "numberReady": 1,
                    "updatedNumberScheduled": 2,
                    "numberAvailable": 1,
                },
            },
            [
                "rte",
                2,
                2,
                1,
                2,
                1,
                "kubernetes.io/os=linux,node-role.kubernetes.io/worker=",
                "5m",
                "rte,helper",
                "quay.io/rte:1,busybox",
                "app=rte",
            ],
            id="daemonset",
        ),
        pytest.param(
            "batch",
            "jobs",
            {
                "metadata": meta("j"),
                "spec": {"completions": 3, "template": TEMPLATE},
                "status": {"succeeded": 1, "startTime": ts(125)},
            },
            ["j", "Running", "1/3", "2m5s", "5m", "rte,helper", "quay.io/rte:1,busybox", "<none>"],
            id="job-running",
        ),
        pytest.param(
            "batch",
            "jobs",
            {
                "metadata": meta("j"),
                "spec": {"parallelism": 2, "template": TEMPLATE},
                "status": {
                    "succeeded": 1,
                    "startTime": ts(200),
                    "completionTime": ts(100),
                    "conditions": [{"type": "Complete", "status": "True"}],
                },
            },
            ["j", "Complete", "1/1 of 2", "100s", "5m", "rte,helper", "quay.io/rte:1,busybox", "<none>"],
            id="job-complete",
        ),
        pytest.param(
            "batch",
            "jobs",
            {
                "metadata": meta("j"),
                "spec": {"template": TEMPLATE},
                "status": {
                    "conditions": [
                        {"type": "FailureTarget", "status": "True"},
                        {"type": "Failed", "status": "True"},
                    ]
                },
            },
            ["j", "Failed", "0/1", "", "5m", "rte,helper", "quay.io/rte:1,busybox", "<none>"],
            id="job-failed",
        ),
        pytest.param(
            "coordination.k8s.io",
            "leases",
            {"metadata": meta("node-a"), "spec": {"holderIdentity": "node-a"}},
            ["node-a", "node-a", "5m"],
            id="lease",
        ),
        pytest.param(
            "coordination.k8s.io",
            "leases",
            {"metadata": meta("free"), "spec": {}},
            ["free", "", "5m"],
            id="lease-free",
        ),
        pytest.param(
            "scheduling.k8s.io",
            "priorityclasses",
            {"metadata": meta("high"), "value": 1000, "globalDefault": True, "preemptionPolicy": "Never"},
            ["high", 1000, True, "5m", "Never"],
            id="priorityclass",
        ),
        pytest.param(
            "node.k8s.io",
            "runtimeclasses",
            {"metadata": meta("kata"), "handler": "kata"},
            ["kata", "kata", "5m"],
            id="runtimeclass",
        ),
        pytest.param(
            "rbac.authorization.k8s.io",
            "rolebindings",
            {
                "metadata": meta("rb"),
                "roleRef": {"kind": "Role", "name": "reader"},
                "subjects": [
                    {"kind": "User", "name": "alice"},
                    {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "name": "rte", "namespace": "nrop"},
                    {"kind": "ServiceAccount", "name": "sched", "namespace": "nrop"},
                ],
            },
            ["rb", "Role/reader", "5m", "alice", "devs", "nrop/rte, nrop/sched"],
            id="rolebinding",
        ),
        pytest.param(
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            {"metadata": meta("crb"), "roleRef": {"kind": "ClusterRole", "name": "admin"}},
            ["crb", "ClusterRole/admin", "5m", "", "", ""],
            id="clusterrolebinding-no-subjects",
        ),
    ],
)
def test_builtin_cells(group: str, resource: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells(group, resource, obj) == expected
    assert len(BUILTIN_COLUMNS[(group, resource)]) == len(expected)


@pytest.mark.parametrize(
    ("group", "resource", "names"),
    [
        pytest.param("", "namespaces", ["Name", "Status", "Age"], id="namespaces"),
        pytest.param("", "configmaps", ["Name", "Data", "Age"], id="configmaps"),
        pytest.param("", "secrets", ["Name", "Type", "Data", "Age"], id="secrets"),
        pytest.param("", "serviceaccounts", ["Name", "Secrets", "Age"], id="serviceaccounts"),
        pytest.param(
            "",
            "services",
            ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"],
            id="services",
        ),
        pytest.param(
            "",
            "events",
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name",
            ],
            id="events",
        ),
        pytest.param(
            "apps",
            "deployments",
            ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"],
            id="deployments",
        ),
        pytest.param(
            "apps",
            "daemonsets",
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            id="daemonsets",
        ),
        pytest.param(
            "batch",
            "jobs",
            ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"],
            id="jobs",
        ),
        pytest.param("coordination.k8s.io", "leases", ["Name", "Holder", "Age"], id="leases"),
        pytest.param(
            "scheduling.k8s.io",
            "priorityclasses",
            ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
            id="priorityclasses",
        ),
    ],
)
def test_builtin_column_names(group: str, resource: str, names: list[str]) -> None:
    assert column_names(group, resource) == names


def test_column_definitions_carry_all_fields() -> None:
    for key, definitions in BUILTIN_COLUMNS.items():
        for definition in definitions:
            assert set(definition) == {"name", "type", "format", "description", "priority"}, key
            assert definition["type"] in ("string", "integer", "boolean", "number", "date"), key
            assert definition["description"], key
        name_columns = [d for d in definitions if d["name"] == "Name"]
        assert [d["format"] for d in name_columns] == ["name"], key


@pytest.mark.parametrize(
    ("group", "resource", "expected"),
    [
        pytest.param("", "pods", True, id="pods"),
        pytest.param("apps", "deployments", True, id="deployments"),
        pytest.param("rbac.authorization.k8s.io", "roles", False, id="roles-use-default"),
        pytest.param("rbac.authorization.k8s.io", "clusterroles", False, id="clusterroles-use-default"),
        pytest.param("apiextensions.k8s.io", "customresourcedefinitions", False, id="crds-use-default"),
        pytest.param("topology.node.k8s.io", "noderesourcetopologies", False, id="custom-resource"),
    ],
)
def test_has_printer(group: str, resource: str, expected: bool) -> None:
    assert has_printer(group, resource) is expected


def test_default_table_is_name_and_created_at() -> None:
    crd = {"metadata": {"name": "widgets.example.com", "creationTimestamp": "2025-05-01T08:00:00Z"}}
    table = render_table("apiextensions.k8s.io", "customresourcedefinitions", [crd], now=NOW)
    assert [(c["name"], c["type"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Created At", "date", ""),
    ]
    assert table["rows"][0]["cells"] == ["widgets.example.com", "2025-05-01T08:00:00Z"]


# --------------------------------------------------------------------------- custom resources

NRT = {
    "apiVersion": "topology.node.k8s.io/v1alpha2",
    "kind": "NodeResourceTopology",
    "metadata": meta("node-a", 2 * HOUR),
    "topologyPolicies": ["SingleNUMANodeContainerLevel"],
    "zones": [
        {"name": "node-0", "type": "Node", "costs": [{"name": "node-0", "value": 10}]},
        {"name": "node-1", "type": "Node", "costs": [{"name": "node-1", "value": 10}]},
    ],
    "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
    "status": {
        "conditions": [
            {"type": "Available", "status": "True", "lastTransitionTime": ts(600)},
            {"type": "Degraded", "status": "False"},
        ],
        "replicas": 2,
        "ratio": 0.5,
        "paused": False,
        "selector": {"app": "x"},
    },
}


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        pytest.param(
            {"name": "Zones", "type": "string", "jsonPath": ".zones[*].name"},
            "node-0",
            id="string-first-match",
        ),
        pytest.param(
            {"name": "Z1", "type": "string", "jsonPath": ".zones[1].name"}, "node-1", id="string-index"
        ),
        pytest.param(
            {
                "name": "Policy",
                "type": "string",
                "jsonPath": '.attributes[?(@.name=="topologyManagerPolicy")].value',
            },
            "single-numa-node",
            id="string-filter",
        ),
        pytest.param(
            {
                "name": "Available",
                "type": "string",
                "jsonPath": '.status.conditions[?(@.type=="Available")].status',
            },
            "True",
            id="condition-status",
        ),
        pytest.param(
            {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas"}, 2, id="integer"
        ),
        pytest.param(
            {"name": "Ratio", "type": "integer", "jsonPath": ".status.ratio"}, 0, id="integer-truncates-float"
        ),
        pytest.param({"name": "Ratio", "type": "number", "jsonPath": ".status.ratio"}, 0.5, id="number"),
        pytest.param(
            {"name": "Replicas", "type": "number", "jsonPath": ".status.replicas"}, 2.0, id="number-from-int"
        ),
        pytest.param(
            {"name": "Paused", "type": "boolean", "jsonPath": ".status.paused"}, False, id="boolean"
        ),
        pytest.param(
            {"name": "Paused", "type": "string", "jsonPath": ".status.paused"}, "false", id="bool-as-string"
        ),
        pytest.param(
            {"name": "Replicas", "type": "string", "jsonPath": ".status.replicas"}, "2", id="int-as-string"
        ),
        pytest.param(
            {"name": "Selector", "type": "string", "jsonPath": ".status.selector"},
            '{"app":"x"}',
            id="map-as-json",
        ),
        pytest.param(
            {"name": "Policy", "type": "integer", "jsonPath": ".topologyPolicies[0]"},
            None,
            id="type-mismatch",
        ),
        pytest.param(
            {"name": "Missing", "type": "string", "jsonPath": ".status.nothing"}, None, id="missing"
        ),
        pytest.param(
            {"name": "Missing", "type": "string", "jsonPath": ".zones[5].name"}, None, id="index-out-of-range"
        ),
        pytest.param(
            {
                "name": "Since",
                "type": "date",
                "jsonPath": '.status.conditions[?(@.type=="Available")].lastTransitionTime',
            },
            "10m",
            id="date-rendered-as-age",
        ),
        pytest.param(
            {"name": "Bad", "type": "date", "jsonPath": ".metadata.name"}, "<invalid>", id="date-unparsable"
        ),
        pytest.param(
            {"name": "Bad", "type": "string", "jsonPath": ".zones[?(@.name"}, None, id="bad-expression"
        ),
    ],
)
def test_custom_column_cells(column: dict[str, Any], expected: Any) -> None:
    assert cells("topology.node.k8s.io", "noderesourcetopologies", NRT, columns=[column]) == [
        "node-a",
        expected,
    ]


def test_custom_column_definitions_and_priority() -> None:
    columns = [
        {"name": "Policy", "type": "string", "jsonPath": ".topologyPolicies[0]", "description": "The policy"},
        {"name": "Zones", "type": "string", "jsonPath": ".zones[*].name", "priority": 1},
        {"name": "Replicas", "type": "integer", "format": "int32", "jsonPath": ".status.replicas"},
    ]
    table = render_table("topology.node.k8s.io", "noderesourcetopologies", [NRT], now=NOW, columns=columns)
    assert table["columnDefinitions"][0]["name"] == "Name"
    assert [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"][1:]] == [
        ("Policy", "string", "", 0),
        ("Zones", "string", "", 1),
        ("Replicas", "integer", "int32", 0),
    ]
    assert table["columnDefinitions"][1]["description"] == "The policy"
    assert table["columnDefinitions"][2]["description"] == (
        "Custom resource definition column (in JSONPath format): .zones[*].name"
    )
    assert table["rows"][0]["cells"] == ["node-a", "SingleNUMANodeContainerLevel", "node-0", 2]


def test_custom_resource_without_columns_gets_age() -> None:
    table = render_table("topology.node.k8s.io", "noderesourcetopologies", [NRT], now=NOW, columns=[])
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert table["rows"][0]["cells"] == ["node-a", "120m"]  # under 3h ages stay in minutes


def test_crd_printer_columns_picks_version() -> None:
    crd = {
        "spec": {
            "versions": [
                {
                    "name": "v1alpha1",
                    "additionalPrinterColumns": [{"name": "Old", "jsonPath": ".a", "type": "string"}],
                },
                {"name": "v1alpha2"},
            ]
        }
    }
    assert crd_printer_columns(crd, "v1alpha1") == [{"name": "Old", "jsonPath": ".a", "type": "string"}]
    assert crd_printer_columns(crd, "v1alpha2") == []
    assert crd_printer_columns(crd, "v9") == []


# --------------------------------------------------------------------------- table envelope


@pytest.mark.parametrize(
    ("include_object", "expected"),
    [
        pytest.param(
            "Metadata",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta("cm")},
            id="metadata",
        ),
        pytest.param(
            "Object",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cm"), "data": {"a": "b"}},
            id="object",
        ),
        pytest.param("None", None, id="none"),
    ],
)
def test_include_object(include_object: str, expected: dict[str, Any] | None) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cm"), "data": {"a": "b"}}
    row = render_table("", "configmaps", [cm], now=NOW, include_object=include_object)["rows"][0]
    assert row.get("object") == expected
    assert ("object" in row) is (expected is not None)


def test_include_object_rejects_unknown_value() -> None:
    with pytest.raises(ValueError, match="includeObject"):
        render_table("", "configmaps", [], now=NOW, include_object="Full")


def test_table_envelope() -> None:
    objs = [{"metadata": meta("a")}, {"metadata": meta("b")}]
    table = render_table(
        "",
        "configmaps",
        objs,
        now=NOW,
        resource_version="105",
        continue_token="tok",
        include_column_definitions=True,
    )
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "105", "continue": "tok"}
    assert [r["cells"][0] for r in table["rows"]] == ["a", "b"]
    assert table["columnDefinitions"] == BUILTIN_COLUMNS[("", "configmaps")]
    bare = render_table("", "configmaps", objs, now=NOW, include_column_definitions=False)
    assert bare["columnDefinitions"] == []
    assert bare["metadata"] == {}
    assert render_table("", "pods", [], now=NOW)["rows"] == []


def test_column_definitions_are_copies() -> None:
    table = render_table("", "configmaps", [], now=NOW)
    table["columnDefinitions"][0]["name"] = "Mutated"
    assert BUILTIN_COLUMNS[("", "configmaps")][0]["name"] == "Name"


# --------------------------------------------------------------------------- jsonpath

DOC = {
    "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "rte", "tier": "node"}},
    "spec": {"items": [{"name": "a", "n": 1}, {"name": "b", "n": 2}, {"name": "c", "n": 3}]},
    "status": {
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Degraded", "status": "False", "reason": "AsExpected"},
        ],
        "empty": None,
    },
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param(".metadata.name", ["x"], id="field"),
        pytest.param("{.metadata.name}", ["x"], id="braces"),
        pytest.param("$.metadata.name", ["x"], id="root"),
        pytest.param(".spec.items[0].name", ["a"], id="index"),
        pytest.param(".spec.items[-1].name", ["c"], id="negative-index"),
        pytest.param(".spec.items[7].name", [], id="index-out-of-range"),
        pytest.param(".spec.items[*].name", ["a", "b", "c"], id="wildcard"),
        pytest.param(".spec.items[0:2].name", ["a", "b"], id="slice"),
        pytest.param(".spec.items[::2].n", [1, 3], id="slice-step"),
        pytest.param(".spec.items.*.n", [1, 2, 3], id="star-on-list"),
        pytest.param(".metadata.labels.*", ["rte", "node"], id="star-on-map"),
        pytest.param(".metadata.labels['app.kubernetes.io/name']", ["rte"], id="quoted-key-with-dots"),
        pytest.param('.metadata.labels["tier"]', ["node"], id="double-quoted-key"),
        pytest.param(r".metadata.labels.app\.kubernetes\.io/name", ["rte"], id="escaped-dots"),
        pytest.param('.status.conditions[?(@.type=="Ready")].status', ["True"], id="filter-eq"),
        pytest.param(
            ".status.conditions[?(@.type=='Degraded')].reason", ["AsExpected"], id="filter-single-quotes"
        ),
        pytest.param('.status.conditions[?(@.type!="Ready")].type', ["Degraded"], id="filter-ne"),
        pytest.param(".status.conditions[?(@.reason)].type", ["Degraded"], id="filter-exists"),
        pytest.param(".spec.items[?(@.n>1)].name", ["b", "c"], id="filter-number-gt"),
        pytest.param(".spec.items[?(@.n<=1)].name", ["a"], id="filter-number-le"),
        pytest.param('.spec.items[?(@.n=="1")].name', [], id="filter-type-mismatch"),
        pytest.param(".status.empty", [None], id="explicit-null"),
        pytest.param(".status.missing.deeper", [], id="missing"),
        pytest.param("..name", ["x", "a", "b", "c"], id="recursive-descent"),
    ],
)
def test_jsonpath_values(expr: str, expected: list[Any]) -> None:
    assert jsonpath_values(DOC, expr) == expected


@pytest.mark.parametrize(
    "expr",
    [
        pytest.param("", id="empty"),
        pytest.param("metadata.name", id="no-leading-dot"),
        pytest.param(".spec.items[0", id="unclosed-bracket"),
        pytest.param(".spec.items[a]", id="bad-index"),
        pytest.param(".spec.items[?(@.n==)]", id="bad-filter"),
        pytest.param(".a..", id="empty-field"),
    ],
)
def test_jsonpath_rejects(expr: str) -> None:
    with pytest.raises(JSONPathError):
        parse_jsonpath(expr)
