"""The device plugin server: its answers as tables, and the server as a raw gRPC client sees it
(the kubelet's side against it is tests/unit/localcluster/kubelet/test_grpc_deviceplugins.py)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc
import pytest

from nrop.api.deviceplugin import Device
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nrop.numacell.server import (
    AllocationError,
    DevicePluginServer,
    device_to_pb,
    env_name_for,
    name_devices,
    preferred_devices,
)

#: NUMA node -> its devices; ``None``: devices without topology.
LAYOUT: dict[int | None, list[str]] = {0: ["gpu0", "gpu1"], 1: ["gpu2", "gpu3", "gpu4"], None: ["gpu9"]}
GPUS = [Device(i, True, None if node is None else (node,)) for node, ids in LAYOUT.items() for i in ids]
TIMEOUT = 5.0


@pytest.mark.parametrize(
    ("resource", "env"),
    [
        pytest.param("example.com/gpu", "EXAMPLE_COM_GPU", id="domain"),
        pytest.param("kni.node/numacell00", "KNI_NODE_NUMACELL00", id="digits-kept"),
        pytest.param("vendor-x.io/fpga_a", "VENDOR_X_IO_FPGA_A", id="dash"),
    ],
)
def test_env_name_for(resource: str, env: str) -> None:
    assert env_name_for(resource) == env


@pytest.mark.parametrize(
    ("device", "health", "topology"),
    [
        pytest.param(Device("d0", True, (1,)), "Healthy", [1], id="one-node"),
        pytest.param(Device("d0", False, (0, 1)), "Unhealthy", [0, 1], id="unhealthy-two-nodes"),
        pytest.param(Device("d0", True, ()), "Healthy", [], id="empty-topology"),
        pytest.param(Device("d0", True, None), "Healthy", None, id="no-topology"),
    ],
)
def test_device_to_pb(device: Device, health: str, topology: list[int] | None) -> None:
    message = device_to_pb(device)
    assert (message.ID, message.health) == ("d0", health)
    sent = [n.ID for n in message.topology.nodes] if message.HasField("topology") else None
    assert sent == topology


@pytest.mark.parametrize(
    ("available", "must", "size", "expected"),
    [
        pytest.param(
            ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4"], [], 3, ["gpu2", "gpu3", "gpu4"], id="node-that-fits"
        ),
        pytest.param(
            ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4"], [], 2, ["gpu0", "gpu1"], id="smallest-node-that-fits"
        ),
        pytest.param(
            ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4"],
            [],
            4,
            ["gpu2", "gpu3", "gpu4", "gpu0"],
            id="larger-node-first-when-none-fits",
        ),
        pytest.param(["gpu0", "gpu1", "gpu2"], ["gpu0"], 2, ["gpu0", "gpu1"], id="must-include-node"),
        pytest.param(["gpu0", "gpu2", "gpu9"], [], 3, ["gpu0", "gpu2", "gpu9"], id="spill-then-no-topology"),
        pytest.param(["gpu0", "gpu1"], ["gpu1", "gpu0"], 1, ["gpu0"], id="must-include-truncated"),
    ],
)
def test_preferred_devices(available, must, size, expected) -> None:
    assert preferred_devices({d.id: d for d in GPUS}, available, must, size) == expected


@pytest.mark.parametrize(
    ("requests", "envs"),
    [
        pytest.param([["gpu0", "gpu1"], ["gpu9"]], ["gpu0,gpu1", "gpu9"], id="two-containers"),
        pytest.param([[]], [""], id="no-device"),
    ],
)
def test_name_devices(requests: list[list[str]], envs: list[str]) -> None:
    response = name_devices("example.com/gpu", "GPUS", {"gpu0", "gpu1", "gpu9"}, requests)
    assert [dict(c.envs) for c in response.container_responses] == [{"GPUS": e} for e in envs]
    assert [dict(c.annotations) for c in response.container_responses] == [
        {"example.com/gpu": e} for e in envs
    ]


def test_name_devices_refuses_unknown_ids() -> None:
    with pytest.raises(AllocationError) as info:
        name_devices("example.com/gpu", "GPUS", {"gpu0"}, [["gpu0"], ["gpu7"]])
    assert str(info.value) == 'invalid allocation request for "example.com/gpu": unknown device: gpu7'


# -- the server, through a raw client ---------------------------------------------------------------


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dps-", dir="/tmp"))
    yield path / "device-plugins"  # created by the server
    shutil.rmtree(path, ignore_errors=True)


def _refuse_two(requests: Sequence[Sequence[str]]) -> api_pb2.AllocateResponse:
    if len(requests) > 1:
        raise AllocationError("one container at a time")
    return api_pb2.AllocateResponse(container_responses=[api_pb2.ContainerAllocateResponse()])


def test_plugin_answers_and_refuses_as_configured(plugin_dir: Path) -> None:
    server = DevicePluginServer(
        "example.com/gpu", GPUS, plugin_dir, allocate=_refuse_two, get_preferred_allocation_available=False
    )
    with server, grpc.insecure_channel(server.address) as channel:
        api = api_pb2_grpc.DevicePluginStub(channel)
        options = api.GetDevicePluginOptions(api_pb2.Empty(), timeout=TIMEOUT)
        assert not options.get_preferred_allocation_available
        preferred = api.GetPreferredAllocation(
            api_pb2.PreferredAllocationRequest(
                container_requests=[
                    api_pb2.ContainerPreferredAllocationRequest(
                        available_deviceIDs=["gpu0"], allocation_size=1
                    )
                ]
            ),
            timeout=TIMEOUT,
        )
        assert preferred == api_pb2.PreferredAllocationResponse(), "a plugin not offering it answers nothing"
        two = api_pb2.AllocateRequest(
            container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=["gpu0"])] * 2
        )
        with pytest.raises(grpc.RpcError) as info:
            api.Allocate(two, timeout=TIMEOUT)
        assert (info.value.code(), info.value.details()) == (
            grpc.StatusCode.UNKNOWN,
            "one container at a time",
        )
        assert len(server.allocate_requests) == 1


def test_start_again_serves_on_a_fresh_socket_and_ends_the_old_streams(plugin_dir: Path) -> None:
    server = DevicePluginServer("example.com/gpu", GPUS[:1], plugin_dir)

    def first_list() -> tuple[list[str], Iterator[api_pb2.ListAndWatchResponse]]:
        stream = api_pb2_grpc.DevicePluginStub(channel).ListAndWatch(api_pb2.Empty(), timeout=TIMEOUT)
        return [d.ID for d in next(stream).devices], stream

    with server, grpc.insecure_channel(server.address) as channel:
        ids, old = first_list()
        assert ids == ["gpu0"]
        server.start()
        # Ended cleanly if the stream saw the stop first, else cancelled (no grace by default).
        with pytest.raises((StopIteration, grpc.RpcError)):
            next(old)
        assert server.serving
        ids, new = first_list()
        assert ids == ["gpu0"]
        new.cancel()
    assert not server.socket_path.exists()
