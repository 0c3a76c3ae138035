"""Device plugin v1beta1 end to end over unix sockets: the kubelet side against the project's plugin
server (:mod:`nrop.numacell.server`), configured here with devices of its own."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from nrop.api.deviceplugin import Device
from nrop.api.grpc import aioloop
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    DevicePluginError,
    PluginClient,
    RegistrationServer,
    device_plugin_dir,
    is_extended_resource_name,
    kubelet_socket,
)
from nrop.numacell.server import DevicePluginServer

RESOURCE = "example.com/gpu"
GPUS = [
    Device("gpu0", True, (0,)),
    Device("gpu1", True, (0,)),
    Device("gpu2", True, (1,)),
    Device("gpu3", True, (1,)),
    Device("gpu4", True, (1,)),
    Device("gpu9", True, None),
]
TIMEOUT = 5.0


class RecordingHandler:
    """A device manager stand-in that records what the registration server reports."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[tuple[str, str, object]] = []
        self.devices: dict[str, list[Device]] = {}
        self.clients: dict[str, PluginClient] = {}

    def plugin_connected(self, resource: str, client: PluginClient) -> None:
        with self.cond:
            self.clients[resource] = client
            self.events.append(("connected", resource, client))
            self.cond.notify_all()

    def plugin_devices(self, resource: str, devices: list[Device]) -> None:
        with self.cond:
            self.devices[resource] = devices
            self.events.append(("devices", resource, devices))
            self.cond.notify_all()

    def plugin_disconnected(self, resource: str) -> None:
        with self.cond:
            self.events.append(("disconnected", resource, None))
            self.cond.notify_all()

    def wait(self, predicate: Callable[[], bool], what: str) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, TIMEOUT):
                pytest.fail(f"expected {what}, got instead: {self.events}")

    def wait_devices(self, resource: str, expected: list[Device]) -> None:
        self.wait(lambda: self.devices.get(resource) == expected, f"devices {expected}")

    def kinds(self) -> list[str]:
        with self.cond:
            return [kind for kind, _, _ in self.events]


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _per_server(thread: threading.Thread) -> bool:
    """Not one of the process-wide gRPC threads: the aio loop, its workers, grpc.aio's poller."""
    return not thread.name.startswith(aioloop.THREAD_NAME) and "_poll_wrapper" not in thread.name


@pytest.fixture
def _no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        leftover = [t for t in set(threading.enumerate()) - before if t.is_alive() and _per_server(t)]
        if not leftover:
            return
        time.sleep(0.02)
    pytest.fail(f"threads left running: {leftover}")


@pytest.fixture
def handler() -> RecordingHandler:
    return RecordingHandler()


@pytest.fixture
def kubelet(root: Path, handler: RecordingHandler, _no_leaked_threads: None) -> Iterator[RegistrationServer]:
    server = RegistrationServer(kubelet_socket(root), handler)
    server.start()
    yield server
    server.stop(grace=0)
    assert [p.name for p in device_plugin_dir(root).iterdir() if p.is_socket()] == []


@pytest.fixture
def plugin(root: Path, kubelet: RegistrationServer) -> Iterator[DevicePluginServer]:
    device_plugin = DevicePluginServer(RESOURCE, GPUS, device_plugin_dir(root))
    device_plugin.start()
    yield device_plugin
    device_plugin.stop(grace=0)


@pytest.fixture
def client(plugin: DevicePluginServer, handler: RecordingHandler) -> PluginClient:
    plugin.register()
    handler.wait_devices(RESOURCE, GPUS)
    return handler.clients[RESOURCE]


def test_path_conventions(root: Path) -> None:
    assert kubelet_socket(root) == root / "var/lib/kubelet/device-plugins/kubelet.sock"
    assert device_plugin_dir(root) == root / "var/lib/kubelet/device-plugins"


def test_registration_connects_and_list_and_watch_delivers_devices_with_topology(
    client: PluginClient, handler: RecordingHandler, kubelet: RegistrationServer, plugin: DevicePluginServer
) -> None:
    assert handler.kinds()[:2] == ["connected", "devices"]
    assert kubelet.clients == {RESOURCE: client}
    assert client.socket_path == plugin.socket_path
    assert client.options.get_preferred_allocation_available
    assert not client.options.pre_start_required
    assert client.devices == GPUS
    by_id = {d.id: d for d in handler.devices[RESOURCE]}
    assert by_id["gpu2"].numa_nodes == (1,)
    assert by_id["gpu9"].numa_nodes is None


def test_health_change_propagates(
    client: PluginClient, handler: RecordingHandler, plugin: DevicePluginServer
) -> None:
    plugin.set_device_health("gpu1", healthy=False)
    expected = [Device(d.id, d.id != "gpu1", d.numa_nodes) for d in GPUS]
    handler.wait_devices(RESOURCE, expected)
    plugin.set_device_health("gpu1", healthy=True)
    handler.wait_devices(RESOURCE, GPUS)
    plugin.set_devices(GPUS[:2])
    handler.wait_devices(RESOURCE, GPUS[:2])


def test_allocate_round_trip(client: PluginClient, plugin: DevicePluginServer) -> None:
    response = client.allocate([["gpu0", "gpu1"], ["gpu9"]])
    first, second = response.container_responses
    assert dict(first.envs) == {"EXAMPLE_COM_GPU": "gpu0,gpu1"}
    assert dict(first.annotations) == {RESOURCE: "gpu0,gpu1"}
    assert dict(second.envs) == {"EXAMPLE_COM_GPU": "gpu9"}
    assert [list(c.devices_ids) for c in plugin.allocate_requests[0].container_requests] == [
        ["gpu0", "gpu1"],
        ["gpu9"],
    ]


def test_allocate_errors_read_like_grpc_go(client: PluginClient, plugin: DevicePluginServer) -> None:
    with pytest.raises(DevicePluginError) as info:
        client.allocate([["gpu7"]])
    assert str(info.value) == (
        'rpc error: code = Unknown desc = invalid allocation request for "example.com/gpu": unknown device: gpu7'
    )
    plugin.allocate_error = "device busy"
    with pytest.raises(DevicePluginError, match=r"desc = device busy$"):
        client.allocate([["gpu0"]])


def test_get_preferred_allocation_round_trip(client: PluginClient, plugin: DevicePluginServer) -> None:
    assert client.preferred_allocation is not None
    ids = client.get_preferred_allocation(frozenset(d.id for d in GPUS), frozenset(), 2)
    assert ids == ["gpu0", "gpu1"]
    ids = client.get_preferred_allocation(frozenset(d.id for d in GPUS), frozenset({"gpu2"}), 2)
    assert ids == ["gpu2", "gpu3"], "must-include devices pull the rest onto their NUMA node"
    request = plugin.preferred_requests[-1].container_requests[0]
    assert (list(request.must_include_deviceIDs), request.allocation_size) == (["gpu2"], 2)


def test_pre_start_container_only_when_requested(
    root: Path, kubelet: RegistrationServer, handler: RecordingHandler
) -> None:
    device_plugin = DevicePluginServer(
        "example.com/fpga",
        [Device("f0", True, (0,))],
        device_plugin_dir(root),
        pre_start_required=True,
        get_preferred_allocation_available=False,
    )
    with device_plugin:
        device_plugin.register()
        handler.wait(lambda: "example.com/fpga" in handler.devices, "fpga devices")
        client = handler.clients["example.com/fpga"]
        assert client.preferred_allocation is None
        assert client.get_preferred_allocation({"f0"}, set(), 1) == []
        client.pre_start_container(["f0"])
        assert [list(r.devices_ids) for r in device_plugin.pre_start_requests] == [["f0"]]
        assert not device_plugin.preferred_requests


def test_wrong_version_is_rejected_with_the_upstream_message(
    plugin: DevicePluginServer, kubelet: RegistrationServer, handler: RecordingHandler
) -> None:
    with pytest.raises(grpc.RpcError) as info:
        plugin.register(version="v1alpha1")
    assert info.value.details() == (
        'requested API version "v1alpha1" is not supported by kubelet. Supported version is ["v1beta1"]'
    )
    assert kubelet.clients == {}
    assert handler.events == []


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        pytest.param("example.com/gpu", True, id="domain-prefixed"),
        pytest.param("nvidia.com/gpu", True, id="nvidia"),
        pytest.param("gpu", False, id="no-domain"),
        pytest.param("kubernetes.io/gpu", False, id="native-prefix"),
        pytest.param("cpu", False, id="native"),
        pytest.param("requests.example.com/gpu", False, id="quota-prefix"),
        pytest.param("Example.com/gpu", False, id="uppercase-domain"),
        pytest.param("example.com/gpu/x", False, id="two-slashes"),
    ],
)
def test_is_extended_resource_name(name: str, valid: bool) -> None:
    assert is_extended_resource_name(name) is valid


def test_invalid_resource_name_is_rejected(root: Path, kubelet: RegistrationServer) -> None:
    with (
        DevicePluginServer("gpu", GPUS, device_plugin_dir(root)) as device_plugin,
        pytest.raises(grpc.RpcError) as info,
    ):
        device_plugin.register()
    assert info.value.details() == 'the ResourceName "gpu" is invalid'


def test_missing_endpoint_socket_is_rejected(root: Path, kubelet: RegistrationServer) -> None:
    device_plugin = DevicePluginServer(RESOURCE, GPUS, device_plugin_dir(root))  # never started
    with pytest.raises(grpc.RpcError) as info:
        device_plugin.register()
    assert info.value.details().startswith("failed to dial device plugin: dial unix ")
    assert info.value.details().endswith("connect: no such file or directory")
    assert kubelet.clients == {}


def test_plugin_stopped_reports_devices_unhealthy_then_disconnected(
    client: PluginClient, handler: RecordingHandler, kubelet: RegistrationServer, plugin: DevicePluginServer
) -> None:
    plugin.stop(grace=0)
    handler.wait(lambda: handler.kinds()[-1:] == ["disconnected"], "a disconnect")
    kind, resource, devices = handler.events[-2]
    assert (kind, resource) == ("devices", RESOURCE)
    assert devices == [Device(d.id, False, d.numa_nodes) for d in GPUS]
    assert kubelet.clients == {}
    assert client.wait_stream_end(TIMEOUT)
    assert not plugin.socket_path.exists()


def test_reregistration_replaces_the_old_client_silently(
    client: PluginClient, handler: RecordingHandler, kubelet: RegistrationServer, plugin: DevicePluginServer
) -> None:
    plugin.register()
    handler.wait(lambda: handler.kinds().count("connected") == 2, "a second connection")
    new_client = handler.clients[RESOURCE]
    assert new_client is not client
    assert client.wait_stream_end(TIMEOUT), "the replaced client's stream must be closed"
    handler.wait_devices(RESOURCE, GPUS)
    assert kubelet.clients == {RESOURCE: new_client}
    plugin.set_device_health("gpu0", healthy=False)
    handler.wait(lambda: handler.devices[RESOURCE][0].healthy is False, "gpu0 unhealthy")
    assert "disconnected" not in handler.kinds()
    with pytest.raises(DevicePluginError, match="not connected"):
        client.allocate([["gpu0"]])


def test_kubelet_stop_disconnects_plugins(
    client: PluginClient, handler: RecordingHandler, kubelet: RegistrationServer
) -> None:
    kubelet.stop(grace=0)
    assert handler.kinds()[-1] == "disconnected"
    assert not client.stream_alive


def test_kubelet_start_removes_leftover_plugin_sockets(root: Path, handler: RecordingHandler) -> None:
    device_plugin = DevicePluginServer(RESOURCE, GPUS, device_plugin_dir(root))
    with device_plugin:
        assert device_plugin.socket_path.is_socket()
        server = RegistrationServer(kubelet_socket(root), handler)
        with server:
            assert not device_plugin.socket_path.exists()


def test_raw_client_sees_the_initial_list_immediately(root: Path, _no_leaked_threads: None) -> None:
    # The wire format as any kubelet would see it, without our client.
    device_plugin = DevicePluginServer(RESOURCE, GPUS[:1], device_plugin_dir(root))
    with device_plugin, grpc.insecure_channel(device_plugin.address) as channel:
        stream = api_pb2_grpc.DevicePluginStub(channel).ListAndWatch(api_pb2.Empty(), timeout=TIMEOUT)
        first = next(stream)
        stream.cancel()
    (device,) = first.devices
    assert (device.ID, device.health, [n.ID for n in device.topology.nodes]) == ("gpu0", "Healthy", [0])
