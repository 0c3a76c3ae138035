"""The exporter's object mutations (nrtinfo) and its refresh scheduling (refreshing), with an injected clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nrop.api.nrt import AttributeInfo, ResourceInfo, Zone
from nrop.rte.decisions.nrtinfo import (
    TopologyManager,
    Trigger,
    merge_patch,
    new_nrt,
    patch_size_ratio,
    set_node_owner,
    update_nrt_info,
)
from nrop.rte.decisions.scan import ScanResult
from nrop.rte.refreshing import NotifyFileError, NotifyWatcher, Pacer, Scheduler, prepare_notify_file
from nrop.rte.retrying import Backoff, FailureLog

TM = TopologyManager("single-numa-node", "container")


def result(available: int = 3, sign: str = "pfp0v001aaaaaaaaaaaaaaaa") -> ScanResult:
    return ScanResult(
        zones=[Zone("node-0", "Node", resources=[ResourceInfo.of("cpu", 4, 4, available)])],
        attributes=[
            AttributeInfo("nodeTopologyPodsFingerprint", sign),
            AttributeInfo("nodeTopologyPodsFingerprintMethod", "with-exclusive-resources"),
        ],
        annotations={"topology.node.k8s.io/fingerprint": sign},
    )


# ----------------------------------------------------------------------------- nrtinfo


def test_update_nrt_info_as_upstream() -> None:
    existing = new_nrt("worker-0")
    existing["metadata"]["annotations"] = {"keep": "me", "k8stopoawareschedwg/rte-update": "periodic"}
    existing["topologyPolicies"] = ["SingleNUMANodeContainerLevel"]
    obj = update_nrt_info(existing, result(), TM, Trigger.REACTIVE)
    assert obj["metadata"]["annotations"] == {
        "keep": "me",
        "k8stopoawareschedwg/rte-update": "reactive",
        "topology.node.k8s.io/fingerprint": "pfp0v001aaaaaaaaaaaaaaaa",
    }
    assert [a["name"] for a in obj["attributes"]] == [
        "nodeTopologyPodsFingerprint",
        "nodeTopologyPodsFingerprintMethod",
        "topologyManagerScope",
        "topologyManagerPolicy",
    ]
    assert obj["attributes"][-1]["value"] == "single-numa-node"
    assert obj["zones"] == [
        {
            "name": "node-0",
            "type": "Node",
            "resources": [{"name": "cpu", "capacity": "4", "allocatable": "4", "available": "3"}],
        }
    ]
    assert obj["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]  # left alone
    assert existing["metadata"]["annotations"]["k8stopoawareschedwg/rte-update"] == "periodic"  # not mutated


def test_owner_reference_replaces_others() -> None:
    obj = new_nrt("n")
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "old", "uid": "1"}]
    set_node_owner(obj, "n", "uid-2")
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "uid-2"}
    ]


@pytest.mark.parametrize(
    ("original", "modified", "patch"),
    [
        pytest.param({"a": 1}, {"a": 1}, {}, id="equal"),
        pytest.param({"a": 1}, {"a": 2}, {"a": 2}, id="scalar"),
        pytest.param({"a": 1, "b": 2}, {"a": 1}, {"b": None}, id="removal"),
        pytest.param({"m": {"x": 1, "y": 2}}, {"m": {"x": 1, "y": 3}}, {"m": {"y": 3}}, id="nested"),
        pytest.param({"l": [1, 2]}, {"l": [1, 3]}, {"l": [1, 3]}, id="lists-wholesale"),
        pytest.param({"m": {"x": 1}}, {"m": [1]}, {"m": [1]}, id="type-change"),
    ],
)
def test_merge_patch(original: dict, modified: dict, patch: dict) -> None:
    assert merge_patch(original, modified) == patch


def test_patch_between_two_scans_touches_only_what_changed() -> None:
    prev = update_nrt_info(new_nrt("n"), result(3), TM, Trigger.PERIODIC)
    prev["metadata"]["resourceVersion"] = "42"
    new = update_nrt_info(prev, result(1), TM, Trigger.REACTIVE)
    patch = merge_patch(prev, new)
    assert set(patch) == {"metadata", "zones"}
    assert patch["metadata"] == {"annotations": {"k8stopoawareschedwg/rte-update": "reactive"}}
    assert 0 < patch_size_ratio(patch, new) < 1


# ----------------------------------------------------------------------------- scheduling


def test_initial_scan_is_reactive_then_periodic() -> None:
    sched = Scheduler(10.0, Pacer(1, 1.0), now=0.0)
    assert sched.due(0.0) == Trigger.REACTIVE
    assert sched.due(5.0) is None
    assert sched.next_deadline(5.0) == pytest.approx(5.0)
    assert sched.due(10.0) == Trigger.PERIODIC
    # A stall: missed ticks give one scan, and the schedule keeps its phase.
    assert sched.due(35.0) == Trigger.PERIODIC
    assert sched.due(39.0) is None
    assert sched.due(40.0) == Trigger.PERIODIC


def test_zero_interval_disables_the_timer() -> None:
    sched = Scheduler(0.0, Pacer(0, 1.0), now=0.0)
    assert sched.due(0.0) == Trigger.REACTIVE
    assert sched.due(1e6) is None
    assert sched.next_deadline(1e6) == float("inf")


def test_rate_limit_paces_and_coalesces() -> None:
    sched = Scheduler(0.0, Pacer(2, 1.0), now=0.0)  # two per second: 0.5 s apart
    assert sched.due(0.0) == Trigger.REACTIVE
    sched.notify()
    sched.notify()
    sched.notify()
    assert sched.due(0.1) is None
    assert sched.next_deadline(0.1) == pytest.approx(0.4)
    assert sched.due(0.5) == Trigger.REACTIVE
    assert sched.due(2.0) is None  # the three notifications were one scan


def test_later_trigger_wins_when_coalescing() -> None:
    sched = Scheduler(1.0, Pacer(1, 10.0), now=0.0)
    assert sched.due(0.0) == Trigger.REACTIVE
    sched.notify()
    assert sched.due(1.0) is None  # paced; the tick arrives and replaces the pending reactive event
    assert sched.due(10.0) == Trigger.PERIODIC


def test_retry_keeps_its_trigger_and_is_superseded_by_a_scan() -> None:
    sched = Scheduler(100.0, Pacer(0, 1.0), now=0.0)
    assert sched.due(0.0) == Trigger.REACTIVE
    sched.retry(now=0.0, delay=2.0, trigger=Trigger.REACTIVE)
    assert sched.next_deadline(0.5) == pytest.approx(1.5)
    assert sched.due(1.0) is None
    assert sched.due(2.0) == Trigger.REACTIVE
    sched.retry(now=3.0, delay=2.0, trigger=Trigger.PERIODIC)
    sched.notify()
    assert sched.due(3.5) == Trigger.REACTIVE
    assert sched.due(6.0) is None


def test_backoff_and_failure_log(caplog: pytest.LogCaptureFixture) -> None:
    backoff = Backoff(initial=0.5, factor=2.0, maximum=3.0)
    assert [backoff.next_delay() for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    backoff.reset()
    assert backoff.next_delay() == 0.5

    import logging

    now = [0.0]
    failures = FailureLog(logging.getLogger("t"), remind=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="t"):
        failures.failed("socket missing", 1.0)
        now[0] = 1.0
        failures.failed("socket missing", 1.0)  # same text, too soon: debug only
        now[0] = 12.0
        failures.failed("socket missing", 1.0)
        failures.failed("connection refused")
        failures.recovered("podresources")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "socket missing; retrying in 1.0s",
        "socket missing (still failing after 3 attempts); retrying in 1.0s",
        "connection refused",
        "podresources recovered after 4 failed attempts",
    ]


# ----------------------------------------------------------------------------- notify file


def test_notify_file_is_created_and_watched(tmp_path: Path) -> None:
    path = tmp_path / "run/rte/notify"
    prepare_notify_file(path)
    assert path.is_file() and path.stat().st_size == 0
    watcher = NotifyWatcher(path)
    assert not watcher.changed()
    os.utime(path, ns=(1, 10**18))  # what `touch` does
    assert watcher.changed()
    assert not watcher.changed()
    os.chmod(path, 0o600)
    assert watcher.changed()
    path.unlink()
    assert watcher.changed()  # recreated, and that is a change
    assert path.is_file()


@pytest.mark.parametrize("kind", ["directory", "non-empty"])
def test_notify_file_must_be_an_empty_regular_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "notify"
    if kind == "directory":
        path.mkdir()
    else:
        path.write_text("data")
    with pytest.raises(NotifyFileError, match="not an empty regular file"):
        prepare_notify_file(path)


def test_rte_never_imports_the_embedded_cluster() -> None:
    """The exporter must run unchanged on a real node."""
    import ast

    import nrop.rte

    for path in Path(nrop.rte.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.startswith("nrop.localcluster") for n in names), f"{path.name} imports {names}"
