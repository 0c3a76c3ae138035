"""The exporter pod's conditions (``--podreadiness``) and the terminal-pods middleware, over plain data and fakes."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from nrop.api.podresources import AllocatableResources, ContainerResources, PodResources
from nrop.api.restapi import PODS, ApiError
from nrop.rte.config import Config
from nrop.rte.decisions.nrtinfo import TopologyManager, Trigger
from nrop.rte.decisions.scan import ScanResult, exclude_terminal_pods
from nrop.rte.main import Exporter
from nrop.rte.metrics import Metrics
from nrop.rte.podreadiness import (
    ConditionInjector,
    ConditionType,
    PodRef,
    make_condition,
    pod_from_env,
    same_condition,
    with_condition,
)
from nrop.rte.podres import PodResourcesError
from nrop.rte.publish import PublishError
from nrop.rte.sysinfo import MachineInfo, NUMANodeInfo
from nrop.rte.terminalpods import field_selector

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
FETCHED = ConditionType.PODRESOURCES_FETCHED
UPDATED = ConditionType.NODE_TOPOLOGY_UPDATED


# ----------------------------------------------------------------------------- conditions


@pytest.mark.parametrize(
    ("kind", "ok", "expected"),
    [
        pytest.param(FETCHED, True, {"type": "PodresourcesFetched", "status": "True"}, id="fetched"),
        pytest.param(
            FETCHED,
            False,
            {
                "type": "PodresourcesFetched",
                "status": "False",
                "reason": "ScanFailed",
                "message": "failed to scan pod resources",
            },
            id="scan-failed",
        ),
        pytest.param(UPDATED, True, {"type": "NodeTopologyUpdated", "status": "True"}, id="updated"),
        pytest.param(
            UPDATED,
            False,
            {
                "type": "NodeTopologyUpdated",
                "status": "False",
                "reason": "UpdateFailed",
                "message": "failed to update noderesourcetopology object",
            },
            id="update-failed",
        ),
    ],
)
def test_make_condition(kind: ConditionType, ok: bool, expected: dict[str, str]) -> None:
    assert make_condition(kind, ok, T0) == {
        **expected,
        "lastProbeTime": None,
        "lastTransitionTime": "2025-01-02T03:04:05Z",
    }


@pytest.mark.parametrize(
    ("previous", "ok", "same"),
    [
        pytest.param(None, True, False, id="never-written"),
        pytest.param(
            make_condition(FETCHED, True, T0 - timedelta(hours=1)), True, True, id="only-time-differs"
        ),
        pytest.param(make_condition(FETCHED, True, T0), False, False, id="status-differs"),
        pytest.param(
            {**make_condition(FETCHED, False, T0), "message": "other"}, False, False, id="message-differs"
        ),
        pytest.param(make_condition(UPDATED, True, T0), True, False, id="type-differs"),
    ],
)
def test_same_condition(previous: dict[str, Any] | None, ok: bool, same: bool) -> None:
    assert same_condition(previous, make_condition(FETCHED, ok, T0)) is same


READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("existing", "expected_types"),
    [
        pytest.param([], ["PodresourcesFetched"], id="empty"),
        pytest.param([READY], ["Ready", "PodresourcesFetched"], id="appended"),
        pytest.param(
            [{"type": "PodresourcesFetched", "status": "False"}, READY],
            ["PodresourcesFetched", "Ready"],
            id="replaced-in-place",
        ),
    ],
)
def test_with_condition(existing: list[dict[str, Any]], expected_types: list[str]) -> None:
    condition = make_condition(FETCHED, True, T0)
    out = with_condition(existing, condition)
    assert [c["type"] for c in out] == expected_types
    assert next(c for c in out if c["type"] == "PodresourcesFetched") == condition
    assert READY in out or READY not in existing


def test_pod_from_env() -> None:
    assert pod_from_env({"REFERENCE_NAMESPACE": "ns", "REFERENCE_POD_NAME": "p"}) == PodRef("ns", "p")
    with pytest.raises(ValueError, match="REFERENCE_NAMESPACE and REFERENCE_POD_NAME"):
        pod_from_env({})


class FakeCore:
    """The exporter pod's ``GET`` and ``PUT pods/status`` over one pod; failures on demand."""

    def __init__(self) -> None:
        self.pod: dict[str, Any] = {
            "metadata": {"name": "rte-x", "namespace": "rte", "resourceVersion": "1"},
            "status": {"phase": "Running", "conditions": [dict(READY)]},
        }
        self.calls: list[str] = []
        self.fail: dict[str, int] = {}

    def _maybe_fail(self, call: str) -> None:
        self.calls.append(call)
        if call in self.fail:
            raise ApiError(self.fail.pop(call), "Injected", "injected failure")

    def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if method == "GET":
            assert path == PODS.path("rte", "rte-x")
            self._maybe_fail("get")
            return json.loads(json.dumps(self.pod))
        assert (method, path) == ("PUT", PODS.path("rte", "rte-x", "status"))
        self._maybe_fail("update")
        assert body["metadata"]["resourceVersion"] == self.pod["metadata"]["resourceVersion"]
        self.pod = body
        self.pod["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        return body

    def conditions(self) -> dict[str, tuple[str, str | None]]:
        return {c["type"]: (c["status"], c.get("reason")) for c in self.pod["status"]["conditions"]}


def injector(core: FakeCore, now: list[datetime]) -> ConditionInjector:
    return ConditionInjector(core, PodRef("rte", "rte-x"), clock=lambda: now[0])  # type: ignore[arg-type]


def test_injector_writes_only_changes_and_retries_failed_writes(caplog: pytest.LogCaptureFixture) -> None:
    core, now = FakeCore(), [T0]
    inj = injector(core, now)
    assert inj.set(FETCHED, True)
    assert inj.set(UPDATED, True)
    assert core.calls == ["get", "update", "get", "update"]
    assert core.conditions() == {
        "Ready": ("True", None),
        "PodresourcesFetched": ("True", None),
        "NodeTopologyUpdated": ("True", None),
    }
    now[0] = T0 + timedelta(minutes=1)
    assert inj.set(FETCHED, True)  # unchanged since our last write: no API call at all
    assert len(core.calls) == 4

    assert inj.set(UPDATED, False)
    assert core.conditions()["NodeTopologyUpdated"] == ("False", "UpdateFailed")
    stored = next(c for c in core.pod["status"]["conditions"] if c["type"] == "NodeTopologyUpdated")
    assert stored["lastTransitionTime"] == "2025-01-02T03:05:05Z"

    core.fail["update"] = 409
    with caplog.at_level("ERROR", logger="nrop.rte.podreadiness"):
        assert not inj.set(UPDATED, True)  # logged, never raised
    assert (
        "failed to update pod rte/rte-x status with condition NodeTopologyUpdated=True: 409 Injected"
        in caplog.text
    )
    assert core.conditions()["NodeTopologyUpdated"] == ("False", "UpdateFailed")
    calls = len(core.calls)
    assert inj.set(UPDATED, True)  # not remembered after the failure: tried again
    assert core.calls[calls:] == ["get", "update"]
    assert core.conditions()["NodeTopologyUpdated"] == ("True", None)

    core.fail["get"] = 404  # the pod is gone (or not created yet)
    assert not inj.set(FETCHED, False)
    assert core.calls[-1] == "get"


# ----------------------------------------------------------------------------- the exporter cycle


class RecordingInjector:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def set(self, kind: ConditionType, ok: bool) -> bool:
        self.calls.append((kind.value, ok))
        return True


class FakePodres:
    socket_path = Path("/nonexistent")

    def __init__(self) -> None:
        self.pods: list[PodResources] = []
        self.fail = False

    def allocatable(self) -> AllocatableResources:
        return AllocatableResources(cpu_ids=(0, 1, 2, 3))

    def close(self) -> None:
        pass

    def list_pods(self) -> list[PodResources]:
        if self.fail:
            raise PodResourcesError("list", "rpc error: code = Unavailable desc = gone")
        return list(self.pods)


class FlakyPublisher:
    def __init__(self) -> None:
        self.fail = False
        self.published: list[ScanResult] = []

    def publish(self, result: ScanResult, trigger: Trigger) -> dict[str, Any]:
        if self.fail:
            raise PublishError("update noderesourcetopologies/w: HTTP 404 Not Found", 404)
        self.published.append(result)
        return {}


MACHINE = MachineInfo(nodes=(NUMANodeInfo(0, (0, 1, 2, 3), (10,), 0),))
TM = TopologyManager("single-numa-node", "pod")


@pytest.mark.parametrize(
    ("scan_fails", "write_fails", "ok", "expected"),
    [
        pytest.param(
            False, False, True, [("PodresourcesFetched", True), ("NodeTopologyUpdated", True)], id="ok"
        ),
        pytest.param(True, False, False, [("PodresourcesFetched", False)], id="scan-failed-no-write"),
        pytest.param(
            False,
            True,
            False,
            [("PodresourcesFetched", True), ("NodeTopologyUpdated", False)],
            id="write-failed",
        ),
    ],
)
def test_cycle_reports_each_step(scan_fails: bool, write_fails: bool, ok: bool, expected: list[Any]) -> None:
    podres, publisher, readiness = FakePodres(), FlakyPublisher(), RecordingInjector()
    podres.fail, publisher.fail = scan_fails, write_fails
    fakes: dict[str, Any] = {"podres": podres, "publisher": publisher, "readiness": readiness}
    exporter = Exporter(Config(hostname="w"), TM, MACHINE, metrics=Metrics("w"), **fakes)
    assert exporter.cycle(Trigger.REACTIVE) is ok
    assert readiness.calls == expected


def test_no_publish_counts_as_an_update() -> None:
    readiness = RecordingInjector()
    cfg = Config(hostname="w", no_publish=True)
    fakes: dict[str, Any] = {"podres": FakePodres(), "readiness": readiness}
    exporter = Exporter(cfg, TM, MACHINE, publisher=None, metrics=Metrics("w"), out=io.StringIO(), **fakes)
    assert exporter.cycle(Trigger.PERIODIC)
    assert readiness.calls == [("PodresourcesFetched", True), ("NodeTopologyUpdated", True)]


# ----------------------------------------------------------------------------- terminal pods


def test_terminal_field_selector_matches_what_upstream_means() -> None:
    # Upstream's "status.phase==Failed,status.phase==Succeeded" ANDs its terms and so matches nothing.
    assert field_selector("worker-0") == (
        "spec.nodeName=worker-0,status.phase!=Pending,status.phase!=Running,status.phase!=Unknown"
    )


EXCLUSIVE = (ContainerResources("c", (1,)),)


@pytest.mark.parametrize(
    ("terminal", "kept"),
    [
        pytest.param(set(), ["a/run", "a/done", "b/done"], id="none-known"),
        pytest.param({("a", "done")}, ["a/run", "b/done"], id="namespace-and-name-must-match"),
        pytest.param({("a", "done"), ("b", "done"), ("z", "other")}, ["a/run"], id="several"),
    ],
)
def test_exclude_terminal_pods(terminal: set[tuple[str, str]], kept: list[str]) -> None:
    pods = [
        PodResources(namespace="a", name="run", containers=EXCLUSIVE),
        PodResources(namespace="a", name="done", containers=EXCLUSIVE),
        PodResources(namespace="b", name="done"),
    ]
    assert [f"{p.namespace}/{p.name}" for p in exclude_terminal_pods(pods, terminal)] == kept


def test_terminal_pods_are_dropped_before_the_scan() -> None:
    class Known:
        def current(self) -> frozenset[tuple[str, str]]:
            return frozenset({("ns", "done")})

    podres = FakePodres()
    podres.pods = [
        PodResources(namespace="ns", name="done", containers=EXCLUSIVE),
        PodResources(namespace="ns", name="run", containers=(ContainerResources("c", (2,)),)),
    ]
    cfg = Config(hostname="w", no_publish=True, exclude_terminal_pods=True)
    out = io.StringIO()
    fakes: dict[str, Any] = {"podres": podres, "terminal_pods": Known()}
    exporter = Exporter(cfg, TM, MACHINE, publisher=None, metrics=Metrics("w"), out=out, **fakes)
    assert exporter.cycle(Trigger.REACTIVE)
    obj = json.loads(out.getvalue())
    assert obj["zones"][0]["resources"][0]["available"] == "3"  # only the running pod's CPU is taken
