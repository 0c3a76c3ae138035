"""The PodResources v1 server over a real unix socket, queried with the generated stub."""

from __future__ import annotations

import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.localcluster.kubelet.grpcservers.podresources import (
    PodResourcesServer,
    RateLimit,
    devices_by_numa,
    devices_from_inventory,
    pod_resources_socket,
)

GIB = 1 << 30


@dataclass
class FakeProvider:
    pods: list[PodResources] = field(default_factory=list)
    alloc: AllocatableResources = field(default_factory=AllocatableResources)
    fail: str | None = None

    def list_pods(self) -> list[PodResources]:
        if self.fail:
            raise RuntimeError(self.fail)
        return list(self.pods)

    def allocatable(self) -> AllocatableResources:
        if self.fail:
            raise RuntimeError(self.fail)
        return self.alloc

    def get_pod(self, namespace: str, name: str) -> PodResources | None:
        return next((p for p in self.pods if (p.namespace, p.name) == (namespace, name)), None)


GU_POD = PodResources(
    name="gu",
    namespace="ns1",
    containers=(
        ContainerResources(
            name="sidecar",
            cpu_ids=(2,),
        ),
        ContainerResources(
            name="app",
            cpu_ids=(4, 5),
            devices=(
                ContainerDevices("example.com/gpu", ("gpu0",), (0,)),
                ContainerDevices("example.com/nic", ("nic9",), None),
            ),
            memory=(
                ContainerMemory("memory", 2 * GIB, (0,)),
                ContainerMemory("hugepages-2Mi", 4 * 2 << 20, (0, 1)),
            ),
        ),
    ),
)
BE_POD = PodResources(name="be", namespace="ns2", containers=(ContainerResources(name="c"),))
ALLOCATABLE = AllocatableResources(
    cpu_ids=(0, 2, 3, 4, 5, 6, 7),
    devices=tuple(devices_from_inventory("example.com/gpu", {"gpu0": [0], "gpu1": [1], "gpu2": None})),
    memory=(ContainerMemory("memory", 30 * GIB, (0,)), ContainerMemory("memory", 31 * GIB, (1,))),
)


@pytest.fixture
def root() -> Iterator[Path]:
    # pytest's tmp_path can exceed the 107-byte limit of unix socket paths.
    path = Path(tempfile.mkdtemp(prefix="pr-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def provider() -> FakeProvider:
    return FakeProvider(pods=[GU_POD, BE_POD], alloc=ALLOCATABLE)


@pytest.fixture
def server(root: Path, provider: FakeProvider) -> Iterator[PodResourcesServer]:
    srv = PodResourcesServer(provider, pod_resources_socket(root), rate_limit=None)
    srv.start()
    yield srv
    srv.stop(grace=0)


@pytest.fixture
def stub(server: PodResourcesServer) -> Iterator[api_pb2_grpc.PodResourcesListerStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield api_pb2_grpc.PodResourcesListerStub(channel)


def _nodes(topology: api_pb2.TopologyInfo) -> list[int]:
    return [n.ID for n in topology.nodes]


def test_socket_lives_under_the_node_root_with_owner_only_permissions(
    server: PodResourcesServer, root: Path
) -> None:
    assert server.socket_path == root / "var/lib/kubelet/pod-resources/kubelet.sock"
    mode = server.socket_path.stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_list_converts_pods_containers_cpus_devices_and_memory(stub) -> None:
    response = stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
    assert [(p.namespace, p.name) for p in response.pod_resources] == [("ns1", "gu"), ("ns2", "be")]
    gu = response.pod_resources[0]
    assert [c.name for c in gu.containers] == ["sidecar", "app"]
    sidecar, app = gu.containers
    assert list(sidecar.cpu_ids) == [2]
    assert not sidecar.devices and not sidecar.memory
    assert list(app.cpu_ids) == [4, 5]
    gpu, nic = app.devices
    assert (gpu.resource_name, list(gpu.device_ids), _nodes(gpu.topology)) == (
        "example.com/gpu",
        ["gpu0"],
        [0],
    )
    assert (nic.resource_name, list(nic.device_ids)) == ("example.com/nic", ["nic9"])
    assert not nic.HasField("topology"), "a device without topology must leave the field unset"
    memory, hugepages = app.memory
    assert (memory.memory_type, memory.size, _nodes(memory.topology)) == ("memory", 2 * GIB, [0])
    assert (hugepages.memory_type, hugepages.size, _nodes(hugepages.topology)) == (
        "hugepages-2Mi",
        8 << 20,
        [0, 1],
    )
    be = response.pod_resources[1]
    assert [c.name for c in be.containers] == ["c"]
    assert not be.containers[0].cpu_ids and not be.containers[0].devices


def test_list_reflects_the_provider_at_each_call(stub, provider: FakeProvider) -> None:
    provider.pods = [BE_POD]
    assert [p.name for p in stub.List(api_pb2.ListPodResourcesRequest()).pod_resources] == ["be"]
    provider.pods = []
    assert list(stub.List(api_pb2.ListPodResourcesRequest()).pod_resources) == []


def test_get_allocatable_resources(stub) -> None:
    response = stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=5)
    assert list(response.cpu_ids) == [0, 2, 3, 4, 5, 6, 7]
    devices = [
        (d.device_ids[0], _nodes(d.topology) if d.HasField("topology") else None) for d in response.devices
    ]
    assert devices == [("gpu0", [0]), ("gpu1", [1]), ("gpu2", None)]
    assert [(m.memory_type, m.size, _nodes(m.topology)) for m in response.memory] == [
        ("memory", 30 * GIB, [0]),
        ("memory", 31 * GIB, [1]),
    ]


def test_get_returns_the_same_record_as_list(stub) -> None:
    response = stub.Get(api_pb2.GetPodResourcesRequest(pod_name="gu", pod_namespace="ns1"), timeout=5)
    listed = stub.List(api_pb2.ListPodResourcesRequest()).pod_resources[0]
    assert response.pod_resources == listed


def test_get_of_an_unknown_pod_fails_like_the_kubelet(stub) -> None:
    with pytest.raises(grpc.RpcError) as info:
        stub.Get(api_pb2.GetPodResourcesRequest(pod_name="gu", pod_namespace="other"), timeout=5)
    # Upstream returns a plain Go error, which grpc-go sends as Unknown.
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    assert info.value.details() == "pod gu in namespace other not found"


def test_get_disabled_by_gate(root: Path, provider: FakeProvider) -> None:
    srv = PodResourcesServer(provider, pod_resources_socket(root), get_enabled=False)
    with srv, grpc.insecure_channel(srv.address) as channel, pytest.raises(grpc.RpcError) as info:
        api_pb2_grpc.PodResourcesListerStub(channel).Get(
            api_pb2.GetPodResourcesRequest(pod_name="gu", pod_namespace="ns1"), timeout=5
        )
    assert info.value.details() == "PodResources API Get method disabled"
    assert srv.metrics["errors_get"] == 1


def test_provider_failure_becomes_unknown_with_its_text(stub, provider: FakeProvider) -> None:
    provider.fail = "state not ready"
    with pytest.raises(grpc.RpcError) as info:
        stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
    assert (info.value.code(), info.value.details()) == (grpc.StatusCode.UNKNOWN, "state not ready")


def test_metrics_count_requests(stub, server: PodResourcesServer) -> None:
    stub.List(api_pb2.ListPodResourcesRequest())
    stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest())
    stub.Get(api_pb2.GetPodResourcesRequest(pod_name="be", pod_namespace="ns2"))
    with pytest.raises(grpc.RpcError):
        stub.Get(api_pb2.GetPodResourcesRequest(pod_name="nope", pod_namespace="ns2"))
    assert server.metrics == {
        "requests_total": 4,
        "requests_list": 1,
        "requests_get_allocatable": 1,
        "errors_get_allocatable": 0,
        "requests_get": 2,
        "errors_get": 1,
    }


def test_rate_limit_rejects_beyond_the_burst_until_tokens_refill(root: Path, provider: FakeProvider) -> None:
    now = [100.0]
    srv = PodResourcesServer(
        provider, pod_resources_socket(root), rate_limit=RateLimit(qps=100, burst=10), clock=lambda: now[0]
    )
    with srv, grpc.insecure_channel(srv.address) as channel:
        stub = api_pb2_grpc.PodResourcesListerStub(channel)
        for _ in range(10):
            stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
        with pytest.raises(grpc.RpcError) as info:
            stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=5)
        assert (info.value.code(), info.value.details()) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "rejected by rate limit",
        )
        now[0] += 0.025  # two and a half tokens at 100 qps
        stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
        stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
        with pytest.raises(grpc.RpcError):
            stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)


def test_stale_socket_is_replaced_and_socket_removed_on_stop(root: Path, provider: FakeProvider) -> None:
    path = pod_resources_socket(root)
    path.parent.mkdir(parents=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # leaves the file behind, as a crashed kubelet would
    assert path.is_socket()
    srv = PodResourcesServer(provider, path, rate_limit=None)
    with srv, grpc.insecure_channel(srv.address) as channel:
        response = api_pb2_grpc.PodResourcesListerStub(channel).List(
            api_pb2.ListPodResourcesRequest(), timeout=5
        )
        assert len(response.pod_resources) == 2
    assert not path.exists()


def test_refuses_to_replace_a_regular_file(root: Path, provider: FakeProvider) -> None:
    path = pod_resources_socket(root)
    path.parent.mkdir(parents=True)
    path.write_text("not a socket")
    with pytest.raises(FileExistsError):
        PodResourcesServer(provider, path).start()


def test_rejects_socket_paths_too_long_for_sockaddr_un(provider: FakeProvider) -> None:
    with pytest.raises(ValueError, match="longer than 107 bytes"):
        PodResourcesServer(provider, Path("/tmp") / ("x" * 120) / "kubelet.sock")


def test_no_threads_left_after_stop(root: Path, provider: FakeProvider) -> None:
    before = set(threading.enumerate())
    srv = PodResourcesServer(provider, pod_resources_socket(root))
    with srv, grpc.insecure_channel(srv.address) as channel:
        api_pb2_grpc.PodResourcesListerStub(channel).List(api_pb2.ListPodResourcesRequest(), timeout=5)
    # gRPC's own channel threads wind down asynchronously after close: allow them a moment.
    deadline = time.monotonic() + 5
    leftover = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    while leftover and time.monotonic() < deadline:
        time.sleep(0.05)
        leftover = [t for t in leftover if t.is_alive()]
    assert leftover == []


@pytest.mark.parametrize(
    ("per_numa", "expected"),
    [
        pytest.param({0: ["a"]}, [("a", (0,))], id="one-device-one-node"),
        pytest.param({1: ["b"], 0: ["a", "c"]}, [("a", (0,)), ("c", (0,)), ("b", (1,))], id="sorted-by-node"),
        pytest.param({-1: ["x"]}, [("x", None)], id="no-topology"),
        pytest.param({0: ["m"], 1: ["m"]}, [("m", (0,)), ("m", (1,))], id="multi-numa-device-twice"),
    ],
)
def test_devices_by_numa_expands_per_device_and_node(per_numa, expected) -> None:
    devices = devices_by_numa("r/x", per_numa)
    assert [(d.ids[0], d.numa_nodes) for d in devices] == expected
    assert all(len(d.ids) == 1 and d.resource == "r/x" for d in devices)


@pytest.mark.parametrize(
    ("inventory", "expected"),
    [
        pytest.param({"a": [0, 1]}, [("a", (0,)), ("a", (1,))], id="one-entry-per-node"),
        pytest.param({"a": None}, [("a", None)], id="no-topology-listed-once"),
        pytest.param({"a": []}, [], id="empty-topology-not-listed"),
    ],
)
def test_devices_from_inventory(inventory, expected) -> None:
    assert [(d.ids[0], d.numa_nodes) for d in devices_from_inventory("r/x", inventory)] == expected
