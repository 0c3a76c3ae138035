"""The scheduler cache: assumed pods count at once, bound pods replace them, failures forget them."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.sched.framework.cache import SchedulerCache
from nrop.sched.framework.interface import ActionType
from nrop.sched.main import main
from nrop.sched.scheduler import node_change


def node(name: str, cpu: str = "8", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **extra.get("metadata", {})},
        "spec": extra.get("spec", {}),
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}, **extra.get("status", {})},
    }


def pod(name: str, cpu: str = "1", node_name: str = "", phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
        "status": {"phase": phase},
    }


def requested(cache: SchedulerCache, name: str) -> int:
    info = cache.node_info(name)
    assert info is not None
    return info.requested.get("cpu", 0)


def test_an_assumed_pod_counts_until_bound_then_the_bound_copy_replaces_it() -> None:
    cache = SchedulerCache()
    cache.add_or_update_node(node("w1"))
    cache.assume(pod("a", "2", "w1"), "w1")
    assert requested(cache, "w1") == 2000
    assert cache.is_assumed(pod("a"))
    cache.add_or_update_pod(pod("a", "2", "w1", phase="Running"))
    assert requested(cache, "w1") == 2000
    assert not cache.is_assumed(pod("a"))
    assert cache.pod_count() == 1


def test_forgetting_an_assumed_pod_frees_its_share_but_bound_pods_are_not_forgotten() -> None:
    cache = SchedulerCache()
    cache.add_or_update_node(node("w1"))
    cache.assume(pod("a", "2", "w1"), "w1")
    cache.forget(pod("a"))
    assert requested(cache, "w1") == 0
    cache.add_or_update_pod(pod("b", "3", "w1", phase="Running"))
    cache.forget(pod("b"))
    assert requested(cache, "w1") == 3000


def test_assuming_twice_is_a_bug() -> None:
    cache = SchedulerCache()
    cache.add_or_update_node(node("w1"))
    cache.assume(pod("a"), "w1")
    with pytest.raises(ValueError, match="already in the scheduler cache"):
        cache.assume(pod("a"), "w1")


@pytest.mark.parametrize(
    ("phase", "expected"),
    [("Running", 1000), ("Succeeded", 0), ("Failed", 0)],
    ids=["running-counts", "succeeded-frees", "failed-frees"],
)
def test_terminal_pods_free_their_resources(phase: str, expected: int) -> None:
    cache = SchedulerCache()
    cache.add_or_update_node(node("w1"))
    cache.add_or_update_pod(pod("a", "1", "w1", phase="Running"))
    cache.add_or_update_pod(pod("a", "1", "w1", phase=phase))
    assert requested(cache, "w1") == expected


def test_pods_seen_before_their_node_are_counted_when_it_arrives() -> None:
    cache = SchedulerCache()
    cache.add_or_update_pod(pod("a", "2", "w2", phase="Running"))
    cache.add_or_update_node(node("w2"))
    assert requested(cache, "w2") == 2000
    cache.remove_pod(pod("a", "2", "w2"))
    assert requested(cache, "w2") == 0


def test_nodes_are_listed_by_name_and_updates_keep_pods() -> None:
    cache = SchedulerCache()
    for name in ("w3", "w1", "w2"):
        cache.add_or_update_node(node(name))
    cache.add_or_update_pod(pod("a", "1", "w1", phase="Running"))
    cache.add_or_update_node(node("w1", cpu="16"))
    assert [i.name for i in cache.node_infos()] == ["w1", "w2", "w3"]
    info = cache.node_info("w1")
    assert info is not None and info.allocatable["cpu"] == 16000 and info.requested["cpu"] == 1000
    cache.remove_node(node("w2"))
    assert [i.name for i in cache.node_infos()] == ["w1", "w3"]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, node("w"), ActionType.ADD),
        (node("w"), node("w", cpu="4"), ActionType.UPDATE_NODE_ALLOCATABLE),
        (node("w"), node("w", metadata={"labels": {"a": "b"}}), ActionType.UPDATE_NODE_LABEL),
        (
            node("w"),
            node("w", spec={"taints": [{"key": "k", "effect": "NoSchedule"}]}),
            ActionType.UPDATE_NODE_TAINT,
        ),
        (node("w"), node("w", spec={"unschedulable": True}), ActionType.UPDATE_NODE_TAINT),
        (node("w"), node("w", status={"conditions": [{"type": "Ready"}]}), ActionType.UPDATE_NODE_CONDITION),
        (node("w"), node("w"), ActionType(0)),
    ],
    ids=["add", "allocatable", "label", "taint", "cordon", "condition", "nothing"],
)
def test_node_changes_map_to_upstream_actions(
    old: dict[str, Any] | None, new: dict[str, Any], expected: ActionType
) -> None:
    assert node_change(old, new) == expected


def test_an_invalid_configuration_exits_1_naming_the_field(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeResourceTopologyMatch\n"
        "    args: {scoringStrategy: {type: Nope}}\n"
    )
    assert main(["--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "profiles[0].pluginConfig[0].args.scoringStrategy.type" in err
    assert "Nope" in err
