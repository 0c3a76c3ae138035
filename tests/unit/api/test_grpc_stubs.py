"""The generated kubelet gRPC stubs: importable together, wire-compatible, current, and working."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2 as dp
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2_grpc as dp_grpc
from nrop.api.grpc.podresources.v1 import api_pb2 as pr
from nrop.api.grpc.podresources.v1 import api_pb2_grpc as pr_grpc


def test_both_apis_load_in_one_interpreter_without_clashing() -> None:
    assert pr.DESCRIPTOR.package == "v1"
    assert dp.DESCRIPTOR.package == "v1beta1"
    assert pr.DESCRIPTOR.name != dp.DESCRIPTOR.name
    assert pr.TopologyInfo.DESCRIPTOR.full_name == "v1.TopologyInfo"
    assert dp.TopologyInfo.DESCRIPTOR.full_name == "v1beta1.TopologyInfo"
    assert pr.CDIDevice.DESCRIPTOR.full_name == "v1.CDIDevice"
    assert dp.CDIDevice.DESCRIPTOR.full_name == "v1beta1.CDIDevice"


def _fields(message: type) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


# Field numbers of k8s.io/kubelet (podresources v1, 1.36; pod-level fields from master).
PODRESOURCES_FIELDS = [
    pytest.param(
        pr.AllocatableResourcesResponse, {"devices": 1, "cpu_ids": 2, "memory": 3}, id="Allocatable"
    ),
    pytest.param(pr.ListPodResourcesResponse, {"pod_resources": 1}, id="ListResponse"),
    pytest.param(
        pr.PodResources,
        {"name": 1, "namespace": 2, "containers": 3, "cpu_ids": 4, "memory": 5},
        id="PodResources",
    ),
    pytest.param(
        pr.ContainerResources,
        {"name": 1, "devices": 2, "cpu_ids": 3, "memory": 4, "dynamic_resources": 5},
        id="ContainerResources",
    ),
    pytest.param(pr.ContainerMemory, {"memory_type": 1, "size": 2, "topology": 3}, id="ContainerMemory"),
    pytest.param(
        pr.ContainerDevices, {"resource_name": 1, "device_ids": 2, "topology": 3}, id="ContainerDevices"
    ),
    pytest.param(pr.TopologyInfo, {"nodes": 1}, id="TopologyInfo"),
    pytest.param(pr.NUMANode, {"ID": 1}, id="NUMANode"),
    pytest.param(
        pr.DynamicResource,
        {"claim_name": 2, "claim_namespace": 3, "claim_resources": 4},
        id="DynamicResource",
    ),
    pytest.param(
        pr.ClaimResource,
        {"cdi_devices": 1, "driver_name": 2, "pool_name": 3, "device_name": 4, "share_id": 5},
        id="ClaimResource",
    ),
    pytest.param(pr.CDIDevice, {"name": 1}, id="CDIDevice"),
    pytest.param(pr.GetPodResourcesRequest, {"pod_name": 1, "pod_namespace": 2}, id="GetRequest"),
    pytest.param(pr.GetPodResourcesResponse, {"pod_resources": 1}, id="GetResponse"),
]

DEVICEPLUGIN_FIELDS = [
    pytest.param(
        dp.DevicePluginOptions, {"pre_start_required": 1, "get_preferred_allocation_available": 2}, id="Opts"
    ),
    pytest.param(
        dp.RegisterRequest, {"version": 1, "endpoint": 2, "resource_name": 3, "options": 4}, id="Register"
    ),
    pytest.param(dp.ListAndWatchResponse, {"devices": 1}, id="ListAndWatchResponse"),
    pytest.param(dp.Device, {"ID": 1, "health": 2, "topology": 3}, id="Device"),
    pytest.param(dp.PreStartContainerRequest, {"devices_ids": 1}, id="PreStart"),
    pytest.param(
        dp.ContainerPreferredAllocationRequest,
        {"available_deviceIDs": 1, "must_include_deviceIDs": 2, "allocation_size": 3},
        id="PreferredRequest",
    ),
    pytest.param(dp.ContainerPreferredAllocationResponse, {"deviceIDs": 1}, id="PreferredResponse"),
    pytest.param(dp.ContainerAllocateRequest, {"devices_ids": 1}, id="AllocateRequest"),
    pytest.param(
        dp.ContainerAllocateResponse,
        {"envs": 1, "mounts": 2, "devices": 3, "annotations": 4, "cdi_devices": 5},
        id="AllocateResponse",
    ),
    pytest.param(dp.Mount, {"container_path": 1, "host_path": 2, "read_only": 3}, id="Mount"),
    pytest.param(dp.DeviceSpec, {"container_path": 1, "host_path": 2, "permissions": 3}, id="DeviceSpec"),
]


@pytest.mark.parametrize(("message", "expected"), PODRESOURCES_FIELDS + DEVICEPLUGIN_FIELDS)
def test_field_numbers_match_upstream(message: type, expected: dict[str, int]) -> None:
    assert _fields(message) == expected


@pytest.mark.parametrize(
    ("module", "service", "methods"),
    [
        pytest.param(pr, "PodResourcesLister", ["List", "GetAllocatableResources", "Get"], id="podresources"),
        pytest.param(dp, "Registration", ["Register"], id="registration"),
        pytest.param(
            dp,
            "DevicePlugin",
            [
                "GetDevicePluginOptions",
                "ListAndWatch",
                "GetPreferredAllocation",
                "Allocate",
                "PreStartContainer",
            ],
            id="deviceplugin",
        ),
    ],
)
def test_services_match_upstream(module: object, service: str, methods: list[str]) -> None:
    descriptor = module.DESCRIPTOR.services_by_name[service]  # type: ignore[attr-defined]
    assert [m.name for m in descriptor.methods] == methods


def test_share_id_has_presence() -> None:
    claim = pr.ClaimResource(driver_name="d")
    assert not claim.HasField("share_id")
    claim.share_id = ""
    assert claim.HasField("share_id")


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools is not installed")
def test_committed_stubs_match_a_fresh_regeneration() -> None:
    from nrop.api.grpc import regenerate

    stale = regenerate.stale_files()
    assert stale == [], f"stale stubs {stale}: run `.venv/bin/python -m nrop.api.grpc.regenerate`"


# ----------------------------------------------------------------- real calls


class _Lister(pr_grpc.PodResourcesListerServicer):
    def List(
        self, request: pr.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> pr.ListPodResourcesResponse:
        container = pr.ContainerResources(
            name="app",
            cpu_ids=[2, 3],
            devices=[
                pr.ContainerDevices(
                    resource_name="example.com/dev",
                    device_ids=["dev1"],
                    topology=pr.TopologyInfo(nodes=[pr.NUMANode(ID=1)]),
                )
            ],
            memory=[
                pr.ContainerMemory(memory_type="memory", size=1 << 30, topology=pr.TopologyInfo(nodes=[]))
            ],
        )
        return pr.ListPodResourcesResponse(
            pod_resources=[pr.PodResources(name="pod-a", namespace="ns", containers=[container])]
        )

    def Get(
        self, request: pr.GetPodResourcesRequest, context: grpc.ServicerContext
    ) -> pr.GetPodResourcesResponse:
        context.abort(
            grpc.StatusCode.NOT_FOUND,
            f"pod {request.pod_name} in namespace {request.pod_namespace} not found",
        )
        raise AssertionError("unreachable")


@pytest.fixture
def socket_path() -> Iterator[str]:
    # Unix socket paths are limited to ~107 bytes and pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="nrop-", dir="/tmp" if os.path.isdir("/tmp") else None) as tmp:
        yield f"unix://{tmp}/kubelet.sock"


@pytest.fixture
def lister_server(socket_path: str) -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pr_grpc.add_PodResourcesListerServicer_to_server(_Lister(), server)
    server.add_insecure_port(socket_path)
    server.start()
    try:
        yield socket_path
    finally:
        server.stop(grace=None).wait()


def test_list_round_trips_over_a_unix_socket(lister_server: str) -> None:
    with grpc.insecure_channel(lister_server) as channel:
        stub = pr_grpc.PodResourcesListerStub(channel)
        response = stub.List(pr.ListPodResourcesRequest(), timeout=10)
        (pod,) = response.pod_resources
        assert (pod.namespace, pod.name) == ("ns", "pod-a")
        (container,) = pod.containers
        assert list(container.cpu_ids) == [2, 3]
        assert container.devices[0].topology.nodes[0].ID == 1
        assert container.memory[0].size == 1 << 30

        with pytest.raises(grpc.RpcError) as caught:
            stub.Get(pr.GetPodResourcesRequest(pod_name="x", pod_namespace="y"), timeout=10)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        assert caught.value.details() == "pod x in namespace y not found"

        with pytest.raises(grpc.RpcError) as unimplemented:
            stub.GetAllocatableResources(pr.AllocatableResourcesRequest(), timeout=10)
        assert unimplemented.value.code() == grpc.StatusCode.UNIMPLEMENTED


class _Plugin(dp_grpc.DevicePluginServicer):
    def ListAndWatch(
        self, request: dp.Empty, context: grpc.ServicerContext
    ) -> Iterator[dp.ListAndWatchResponse]:
        for health in ("Healthy", "Unhealthy"):
            yield dp.ListAndWatchResponse(
                devices=[
                    dp.Device(ID="dev1", health=health, topology=dp.TopologyInfo(nodes=[dp.NUMANode(ID=0)]))
                ]
            )

    def Allocate(self, request: dp.AllocateRequest, context: grpc.ServicerContext) -> dp.AllocateResponse:
        return dp.AllocateResponse(
            container_responses=[
                dp.ContainerAllocateResponse(envs={"DEVICES": ",".join(r.devices_ids)})
                for r in request.container_requests
            ]
        )


def test_device_plugin_stream_and_allocate(socket_path: str) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    dp_grpc.add_DevicePluginServicer_to_server(_Plugin(), server)
    server.add_insecure_port(socket_path)
    server.start()
    try:
        with grpc.insecure_channel(socket_path) as channel:
            stub = dp_grpc.DevicePluginStub(channel)
            healths = [r.devices[0].health for r in stub.ListAndWatch(dp.Empty(), timeout=10)]
            assert healths == ["Healthy", "Unhealthy"]
            reply = stub.Allocate(
                dp.AllocateRequest(container_requests=[dp.ContainerAllocateRequest(devices_ids=["a", "b"])]),
                timeout=10,
            )
            assert dict(reply.container_responses[0].envs) == {"DEVICES": "a,b"}
    finally:
        server.stop(grace=None).wait()
