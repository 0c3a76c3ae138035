"""DaemonSet decisions: tolerations and taints, node affinity, eligibility, pods, manage, rolling update, status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.localcluster.controllers.decisions import daemonplacement as dp

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
HASH = "newhash"


def node(name: str, labels: dict | None = None, taints: list | None = None) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def ds(
    spec: dict | None = None, *, surge: int = 0, unavailable: int = 1, strategy: str = "RollingUpdate"
) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ns", "uid": "ds1", "generation": 2},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": spec or {"containers": [{"name": "c"}]},
            },
            "updateStrategy": {
                "type": strategy,
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
            },
        },
    }


def taint(key: str, effect: str, value: str | None = None) -> dict:
    return {"key": key, "effect": effect, **({"value": value} if value else {})}


def test_default_tolerations_are_added_once_and_replace_equal_ones() -> None:
    spec = {
        "tolerations": [
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 5,
            }
        ]
    }
    tolerations = dp.add_daemon_tolerations(spec)
    assert [t["key"] for t in tolerations] == [t["key"] for t in dp.DAEMON_TOLERATIONS[1:2]] + [
        t["key"] for t in (dp.DAEMON_TOLERATIONS[0], *dp.DAEMON_TOLERATIONS[2:])
    ]
    assert all("tolerationSeconds" not in t for t in tolerations)
    host = dp.add_daemon_tolerations({"hostNetwork": True})
    assert host[-1]["key"] == "node.kubernetes.io/network-unavailable"


@pytest.mark.parametrize(
    ("spec", "n", "expected"),
    [
        pytest.param({}, node("a"), (True, True), id="plain-node"),
        pytest.param(
            {},
            node("cp", taints=[taint("node-role.kubernetes.io/control-plane", "NoSchedule")]),
            (False, True),
            id="noschedule-taint-keeps-running",
        ),
        pytest.param(
            {},
            node("x", taints=[taint("dedicated", "NoExecute")]),
            (False, False),
            id="noexecute-taint-evicts",
        ),
        pytest.param(
            {
                "tolerations": [
                    {
                        "key": "node-role.kubernetes.io/control-plane",
                        "operator": "Exists",
                        "effect": "NoSchedule",
                    }
                ]
            },
            node("cp", taints=[taint("node-role.kubernetes.io/control-plane", "NoSchedule")]),
            (True, True),
            id="tolerated",
        ),
        pytest.param(
            {},
            node("x", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")]),
            (True, True),
            id="default-tolerations-apply",
        ),
        pytest.param(
            {},
            node("x", taints=[taint("node.kubernetes.io/unschedulable", "NoSchedule")]),
            (True, True),
            id="unschedulable-tolerated",
        ),
        pytest.param(
            {"nodeSelector": {"role": "w"}}, node("a", {"role": "w"}), (True, True), id="selector-match"
        ),
        pytest.param({"nodeSelector": {"role": "w"}}, node("a"), (False, False), id="selector-mismatch"),
        pytest.param({"nodeName": "b"}, node("a"), (False, False), id="other-node-name"),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                                {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]},
                            ]
                        }
                    }
                }
            },
            node("a", {"cores": "16"}),
            (True, True),
            id="affinity-terms-are-ored",
        ),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "NotIn", "values": ["z1"]}
                                    ],
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["b"]}
                                    ],
                                },
                            ]
                        }
                    }
                }
            },
            node("a"),
            (False, False),
            id="affinity-fields-and-expressions-anded",
        ),
    ],
)
def test_should_run(spec: dict, n: dict, expected: tuple[bool, bool]) -> None:
    assert dp.should_run(ds({"containers": [{"name": "c"}], **spec}), n) == expected


def test_pod_for_node_pins_the_node_by_affinity_and_keeps_preferences() -> None:
    template = dp.daemon_pod_template(
        {
            **ds(
                {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "k", "operator": "Exists"}]}
                                ]
                            },
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 1, "preference": {}}
                            ],
                        }
                    }
                }
            ),
            "metadata": {"name": "agent", "annotations": {dp.TEMPLATE_GENERATION_ANNOTATION: "3"}},
        },
        HASH,
    )
    pod = dp.pod_for_node(template, "worker-1")
    affinity = pod["spec"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}
        ]
    }
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 1, "preference": {}}]
    assert pod["metadata"]["labels"] == {
        "app": "agent",
        dp.REVISION_HASH_LABEL: HASH,
        dp.TEMPLATE_GENERATION_LABEL: "3",
    }
    assert "nodeName" not in pod["spec"]
    assert dp.target_node(pod) == "worker-1"
    assert dp.target_node({"spec": {"nodeName": "n"}}) == "n"


def pod(
    name: str,
    node_name: str,
    *,
    new: bool = True,
    ready: bool = True,
    phase: str = "Running",
    created: str = "2025-01-01T10:00:00Z",
    deleting: bool = False,
) -> dict:
    meta: dict = {
        "name": name,
        "uid": name,
        "creationTimestamp": created,
        "labels": {dp.REVISION_HASH_LABEL: HASH if new else "old"},
    }
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T11:00:00Z"
    status: dict = {"phase": phase}
    if ready:
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T10:00:00Z"}
        ]
    return {"metadata": meta, "spec": {"nodeName": node_name}, "status": status}


NODES = [node("a"), node("b"), node("c")]


@pytest.mark.parametrize(
    ("pods", "create", "delete", "failed"),
    [
        pytest.param({}, ["a", "b", "c"], [], [], id="one-per-node"),
        pytest.param(
            {"a": [pod("a1", "a")], "b": [pod("b1", "b")], "c": [pod("c1", "c")]}, [], [], [], id="steady"
        ),
        pytest.param(
            {
                "a": [pod("a1", "a"), pod("a2", "a", created="2025-01-01T11:00:00Z")],
                "b": [pod("b1", "b")],
                "c": [pod("c1", "c")],
            },
            [],
            ["a2"],
            [],
            id="surplus-newest-deleted",
        ),
        pytest.param(
            {"a": [pod("a1", "a", phase="Failed")], "b": [pod("b1", "b")], "c": [pod("c1", "c")]},
            [],
            [],
            ["a1"],
            id="failed-pod",
        ),
        pytest.param(
            {
                "a": [pod("a1", "a")],
                "b": [pod("b1", "b")],
                "c": [pod("c1", "c")],
                "gone": [pod("g1", "gone")],
            },
            [],
            ["g1"],
            [],
            id="vanished-node",
        ),
        pytest.param(
            {"a": [pod("a1", "a", deleting=True)], "b": [pod("b1", "b")], "c": [pod("c1", "c")]},
            [],
            [],
            [],
            id="terminating-pod-waited-for",
        ),
    ],
)
def test_manage(pods: dict, create: list[str], delete: list[str], failed: list[str]) -> None:
    plan = dp.manage(ds(), NODES, pods, HASH, NOW)
    assert plan.create_on == create
    assert [p["metadata"]["name"] for p in plan.delete] == delete
    assert [p["metadata"]["name"] for p in plan.failed] == failed


def test_manage_deletes_pods_on_ineligible_nodes() -> None:
    nodes = [node("a", {"role": "w"}), node("b")]
    plan = dp.manage(
        ds({"nodeSelector": {"role": "w"}}), nodes, {"a": [pod("a1", "a")], "b": [pod("b1", "b")]}, HASH, NOW
    )
    assert [p["metadata"]["name"] for p in plan.delete] == ["b1"]


@pytest.mark.parametrize(
    ("daemon", "pods", "deleted", "surged"),
    [
        pytest.param(
            ds(),
            {
                "a": [pod("a1", "a", new=False)],
                "b": [pod("b1", "b", new=False)],
                "c": [pod("c1", "c", new=False)],
            },
            ["a1"],
            [],
            id="one-at-a-time",
        ),
        pytest.param(
            ds(),
            {
                "a": [pod("a2", "a", ready=False)],
                "b": [pod("b1", "b", new=False)],
                "c": [pod("c1", "c", new=False)],
            },
            [],
            [],
            id="waits-for-the-new-pod",
        ),
        pytest.param(
            ds(),
            {
                "a": [pod("a2", "a", ready=False)],
                "b": [pod("b1", "b", new=False, ready=False)],
                "c": [pod("c1", "c", new=False)],
            },
            ["b1"],
            [],
            id="unavailable-old-replaced-at-once",
        ),
        pytest.param(
            ds(unavailable=2),
            {
                "a": [pod("a1", "a", new=False)],
                "b": [pod("b1", "b", new=False)],
                "c": [pod("c1", "c", new=False)],
            },
            ["a1", "b1"],
            [],
            id="max-unavailable-two",
        ),
        pytest.param(
            ds(surge=1, unavailable=0),
            {
                "a": [pod("a1", "a", new=False)],
                "b": [pod("b1", "b", new=False)],
                "c": [pod("c1", "c", new=False)],
            },
            [],
            ["a"],
            id="surge-creates-next-to-old",
        ),
        pytest.param(
            ds(surge=1, unavailable=0),
            {
                "a": [pod("a1", "a", new=False), pod("a2", "a")],
                "b": [pod("b1", "b", new=False)],
                "c": [pod("c1", "c", new=False)],
            },
            ["a1"],
            ["b"],
            id="surge-deletes-old-once-new-available",
        ),
    ],
)
def test_rolling_update(daemon: dict, pods: dict, deleted: list[str], surged: list[str]) -> None:
    old, wanting = dp.rolling_update(daemon, pods, HASH, 3, NOW)
    assert [p["metadata"]["name"] for p in old] == deleted
    assert wanting == surged


def test_status_counts() -> None:
    nodes = [*NODES, node("cp", taints=[taint("node-role.kubernetes.io/control-plane", "NoSchedule")])]
    pods = {
        "a": [pod("a1", "a")],
        "b": [pod("b1", "b", new=False, ready=False)],
        "cp": [pod("x", "cp")],
    }
    assert dp.daemon_set_status(ds(), nodes, pods, HASH, NOW) == {
        "currentNumberScheduled": 2,
        "desiredNumberScheduled": 3,
        "numberMisscheduled": 1,
        "numberReady": 1,
        "numberAvailable": 1,
        "numberUnavailable": 2,
        "updatedNumberScheduled": 1,
        "observedGeneration": 2,
    }
    assert dp.daemon_set_status(ds(), [], {}, HASH, NOW) == {
        "currentNumberScheduled": 0,
        "desiredNumberScheduled": 0,
        "numberMisscheduled": 0,
        "numberReady": 0,
        "observedGeneration": 2,
    }
