"""The NRT writer's paths (create, update, patch, resync, fallbacks) and the exporter cycle, against fakes."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from nrop.api.nrt import AttributeInfo, ResourceInfo, Zone
from nrop.api.podresources import AllocatableResources, ContainerResources, PodResources
from nrop.api.restapi import NODES, NRTS, ApiError
from nrop.rte.config import Config
from nrop.rte.decisions.nrtinfo import TopologyManager, Trigger
from nrop.rte.decisions.scan import ScanResult
from nrop.rte.main import Exporter
from nrop.rte.metrics import Metrics
from nrop.rte.podres import PodResourcesError
from nrop.rte.publish import Publisher, PublishError
from nrop.rte.sysinfo import MachineInfo, NUMANodeInfo

TM = TopologyManager("single-numa-node", "pod")


def result(available: int) -> ScanResult:
    return ScanResult(
        zones=[Zone("node-0", "Node", resources=[ResourceInfo.of("cpu", 4, 4, available)])],
        attributes=[AttributeInfo("nodeTopologyPodsFingerprint", "pfp0v001aaaaaaaaaaaaaaaa")],
        annotations={},
    )


class FakeAPI:
    """The exporter's requests (the NRT's get, create, update and merge patch; the Node's get) over one
    stored object; failures on demand."""

    def __init__(self) -> None:
        self.obj: dict[str, Any] | None = None
        self.rv = 0
        self.calls: list[str] = []
        self.fail: dict[str, int] = {}  # call -> HTTP status of its next failure
        self.node_uid: str | None = "uid-1"

    def _maybe_fail(self, call: str) -> None:
        self.calls.append(call)
        if call in self.fail:
            raise ApiError(self.fail.pop(call), "Injected", "injected failure")

    def _store(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.obj = obj
        return copy.deepcopy(obj)

    def request(self, method: str, path: str, *, body: Any = None, content_type: str = "", **_: Any) -> Any:
        if path == NODES.path(name="worker-0"):
            assert method == "GET"
            self.calls.append("read_node")
            if self.node_uid is None:
                raise ApiError(404, "NotFound", 'nodes "worker-0" not found')
            return {"metadata": {"name": "worker-0", "uid": self.node_uid}}
        if method == "POST":
            assert path == NRTS.path()
            self._maybe_fail("create")
            return self._store(body)
        assert path == NRTS.path(name="worker-0"), path
        if method == "GET":
            self._maybe_fail("get")
            if self.obj is None:
                raise ApiError(404, "NotFound", "not found")
            return copy.deepcopy(self.obj)
        if method == "PUT":
            self._maybe_fail("update")
            return self._store(body)
        assert method == "PATCH" and content_type == "application/merge-patch+json"
        self._maybe_fail("patch")
        assert self.obj is not None
        merged = copy.deepcopy(self.obj)
        _apply_merge_patch(merged, body)
        return self._store(merged)


def _apply_merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _apply_merge_patch(target[key], value)
        else:
            target[key] = value


@pytest.fixture
def api() -> FakeAPI:
    return FakeAPI()


def publisher(api: FakeAPI, **kwargs: Any) -> Publisher:
    return Publisher(api, "worker-0", TM, metrics=Metrics("worker-0"), **kwargs)  # type: ignore[arg-type]


def avail(api: FakeAPI) -> str:
    assert api.obj is not None
    return api.obj["zones"][0]["resources"][0]["available"]


def test_create_then_patches_then_a_resync(api: FakeAPI) -> None:
    pub = publisher(api, patch_resync=2)
    pub.publish(result(4), Trigger.REACTIVE)
    assert api.calls == ["get", "read_node", "create"]
    assert api.obj is not None and api.obj["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    pub.publish(result(3), Trigger.REACTIVE)
    pub.publish(result(2), Trigger.PERIODIC)
    assert api.calls[3:] == ["patch", "patch"]
    assert avail(api) == "2"
    assert api.obj["metadata"]["annotations"]["k8stopoawareschedwg/rte-update"] == "periodic"
    pub.publish(result(1), Trigger.PERIODIC)  # patch_resync reached: a full update
    assert api.calls[5:] == ["get", "update"]
    assert avail(api) == "1"
    metrics = pub.metrics.render().decode() if pub.metrics else ""
    assert (
        'rte_noderesourcetopology_writes_total{node="worker-0",operation="create",trigger="reactive"} 1.0'
        in metrics
    )
    assert (
        'rte_noderesourcetopology_writes_total{node="worker-0",operation="update",trigger="periodic"} 1.0'
        in metrics
    )


def test_update_mode_always_gets_and_updates(api: FakeAPI) -> None:
    pub = publisher(api, patch_mode=False)
    for n in (4, 3, 2):
        pub.publish(result(n), Trigger.REACTIVE)
    assert api.calls == ["get", "read_node", "create", "get", "update", "get", "update"]
    assert avail(api) == "2"


def test_failed_patch_falls_back_to_update_and_conflict_drops_the_cache(api: FakeAPI) -> None:
    pub = publisher(api)
    pub.publish(result(4), Trigger.REACTIVE)
    api.fail["patch"] = 500
    pub.publish(result(3), Trigger.REACTIVE)
    assert api.calls[-3:] == ["patch", "get", "update"]
    assert avail(api) == "3"
    api.fail["patch"] = 409
    pub.publish(result(2), Trigger.REACTIVE)
    assert api.calls[-3:] == ["patch", "get", "update"]
    assert 'trigger="send_patch"} 2.0' in (pub.metrics.render().decode() if pub.metrics else "")


def test_api_errors_become_publish_errors(api: FakeAPI) -> None:
    pub = publisher(api)
    api.fail["get"] = 503
    with pytest.raises(PublishError, match="get noderesourcetopologies/worker-0: 503 Injected") as exc:
        pub.publish(result(4), Trigger.REACTIVE)
    assert exc.value.status == 503
    api.fail["create"] = 403
    with pytest.raises(PublishError, match=r"create .*: 403 Injected"):
        pub.publish(result(4), Trigger.REACTIVE)
    pub.publish(result(4), Trigger.REACTIVE)  # and it recovers
    assert avail(api) == "4"


def test_owner_is_looked_up_until_the_node_exists(api: FakeAPI) -> None:
    api.node_uid = None
    pub = publisher(api, patch_mode=False)
    pub.publish(result(4), Trigger.REACTIVE)
    assert api.obj is not None and "ownerReferences" not in api.obj["metadata"]
    api.node_uid = "late"
    pub.publish(result(4), Trigger.REACTIVE)
    assert api.obj["metadata"]["ownerReferences"][0]["uid"] == "late"
    pub.publish(result(4), Trigger.REACTIVE)
    assert api.calls.count("read_node") == 2  # cached once found


def test_no_owner_when_disabled(api: FakeAPI) -> None:
    publisher(api, add_owner=False).publish(result(4), Trigger.REACTIVE)
    assert "read_node" not in api.calls


# ----------------------------------------------------------------------------- the exporter cycle


class FakePodres:
    socket_path = Path("/nonexistent")

    def __init__(self) -> None:
        self.pods: list[PodResources] = []
        self.fail_list = False
        self.allocatable_calls = 0
        self.open = False
        self.closes = 0

    def close(self) -> None:
        self.open = False
        self.closes += 1

    def allocatable(self) -> AllocatableResources:
        self.open = True
        self.allocatable_calls += 1
        return AllocatableResources(cpu_ids=(1, 2, 3))

    def list_pods(self) -> list[PodResources]:
        self.open = True
        if self.fail_list:
            raise PodResourcesError(
                "list", "socket /x does not exist (is the kubelet running?)", socket_missing=True
            )
        return list(self.pods)


MACHINE = MachineInfo(nodes=(NUMANodeInfo(0, (0, 1, 2, 3), (10,), 0),))


def test_cycle_prints_with_no_publish_and_survives_podresources_failures() -> None:
    out = io.StringIO()
    podres = FakePodres()
    metrics = Metrics("w")
    exporter = Exporter(Config(hostname="w", no_publish=True), TM, MACHINE, podres, None, metrics, out=out)  # type: ignore[arg-type]
    assert exporter.cycle(Trigger.REACTIVE)
    obj = json.loads(out.getvalue())
    assert obj["zones"][0]["resources"][0] == {
        "name": "cpu",
        "capacity": "4",
        "allocatable": "3",
        "available": "3",
    }
    podres.fail_list = True
    assert not exporter.cycle(Trigger.PERIODIC)
    assert (
        'rte_podresource_api_call_failures_total{function_name="list",node="w"} 1.0'
        in metrics.render().decode()
    )
    podres.fail_list = False
    podres.pods = [PodResources(namespace="ns", name="p", containers=(ContainerResources("c", (1,)),))]
    assert exporter.cycle(Trigger.PERIODIC)
    assert podres.allocatable_calls == 2  # re-read after the failure: the kubelet may have restarted
    assert not podres.open and podres.closes == 3  # the channel is not kept between scans, failed or not
    last = json.loads(out.getvalue().splitlines()[-1])
    assert last["zones"][0]["resources"][0]["available"] == "2"
    assert last["metadata"]["annotations"]["k8stopoawareschedwg/rte-update"] == "periodic"


def test_cycle_survives_publish_errors() -> None:
    class Failing:
        def publish(self, result: ScanResult, trigger: Trigger) -> dict[str, Any]:
            raise PublishError("update noderesourcetopologies/w: HTTP 500 Injected", 500)

    exporter = Exporter(Config(hostname="w"), TM, MACHINE, FakePodres(), Failing(), Metrics("w"))  # type: ignore[arg-type]
    assert not exporter.cycle(Trigger.REACTIVE)


def test_fingerprint_status_file_is_written_atomically(tmp_path: Path) -> None:
    status = tmp_path / "pfp.json"
    podres = FakePodres()
    podres.pods = [
        PodResources(namespace="ns", name="p", containers=(ContainerResources("c", (1,)),)),
        PodResources(namespace="ns", name="shared", containers=(ContainerResources("c"),)),
    ]
    cfg = Config(hostname="w", no_publish=True, pods_fingerprint_status_file=str(status))
    exporter = Exporter(cfg, TM, MACHINE, podres, None, Metrics("w"), out=io.StringIO())  # type: ignore[arg-type]
    assert exporter.cycle(Trigger.REACTIVE)
    data = json.loads(status.read_text())
    assert data["pods"] == [{"Namespace": "ns", "Name": "p"}]
    assert data["nodeName"] == "w"
    assert data["fingerprintComputed"] == data["fingerprintExpected"]
    assert not (tmp_path / "__pfp.json").exists()
