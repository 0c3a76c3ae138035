"""The numacell device plugin: names and devices from sysfs (tables), and the program against a real
kubelet registration server (the embedded kubelet's) over unix sockets, including a kubelet restart."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nrop.api.deviceplugin import Device
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2
from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    DevicePluginError,
    PluginClient,
    RegistrationServer,
)
from nrop.numacell import deviceplugin as numacell
from nrop.numacell import server
from nrop.suite.e2e.wait.polling import wait_for

TIMEOUT = 10.0


@pytest.mark.parametrize(
    ("cell", "device", "resource", "socket"),
    [
        pytest.param(0, "numacell00", "kni.node/numacell00", "kni.node_numacell00", id="cell-0"),
        pytest.param(3, "numacell03", "kni.node/numacell03", "kni.node_numacell03", id="cell-3"),
        pytest.param(12, "numacell12", "kni.node/numacell12", "kni.node_numacell12", id="two-digits"),
    ],
)
def test_names(cell: int, device: str, resource: str, socket: str) -> None:
    assert numacell.device_id(cell) == device
    assert numacell.resource_name(cell) == resource
    assert numacell.socket_name(cell) == socket


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("kni.node/numacell00", True, id="cell"),
        pytest.param("kni.node/numacell", True, id="bare-prefix"),
        pytest.param("kni.node/other", False, id="other-resource"),
        pytest.param("example.com/numacell00", False, id="other-namespace"),
        pytest.param("cpu", False, id="native"),
    ],
)
def test_is_resource_name(name: str, expected: bool) -> None:
    assert numacell.is_resource_name(name) is expected


def _sysfs(root: Path, entries: list[str]) -> Path:
    node_dir = root / "devices/system/node"
    node_dir.mkdir(parents=True)
    for name in entries:
        (node_dir / name).mkdir()
    (node_dir / "online").write_text("0-1\n")
    return root


@pytest.mark.parametrize(
    ("entries", "cells"),
    [
        pytest.param(["node0", "node1"], [0, 1], id="two-cells"),
        pytest.param(["node10", "node2", "node0"], [0, 2, 10], id="numeric-order"),
        pytest.param(["node0", "power", "nodeX"], [0], id="other-entries-ignored"),
    ],
)
def test_read_cells(tmp_path: Path, entries: list[str], cells: list[int]) -> None:
    assert numacell.read_cells(_sysfs(tmp_path, entries)) == cells


def test_read_cells_without_numa_is_one_cell(tmp_path: Path) -> None:
    assert numacell.read_cells(tmp_path) == [0]


def test_cell_devices() -> None:
    assert numacell.cell_devices(1, 3) == [
        Device("numacell01-000", True, (1,)),
        Device("numacell01-001", True, (1,)),
        Device("numacell01-002", True, (1,)),
    ]
    assert len(numacell.cell_devices(0)) == numacell.DEVICE_COUNT == 15
    assert len(numacell.cell_devices(0, 0)) == 15, "a non-positive count falls back to the default"


def test_cell_plugin() -> None:
    plugin = numacell.cell_plugin(1, Path("/dp"), 2)
    assert (plugin.resource_name, plugin.socket_path) == (
        "kni.node/numacell01",
        Path("/dp/kni.node_numacell01"),
    )
    assert plugin.devices == numacell.cell_devices(1, 2)
    assert plugin.options() == api_pb2.DevicePluginOptions(), "upstream registers with empty options"


@pytest.mark.parametrize(
    ("requests", "error"),
    [
        pytest.param([["numacell01-000", "numacell01-001"]], "can't allocate more than 1 numacell", id="two"),
        pytest.param([[]], "can't allocate more than 1 numacell", id="none"),
        pytest.param([["gpu0"]], 'cannot allocate numacell "gpu0"', id="foreign"),
    ],
)
def test_allocate_refusals(requests: list[list[str]], error: str) -> None:
    with pytest.raises(server.AllocationError, match=error):
        numacell.allocate(1, requests)


def test_allocate_one_device_per_container() -> None:
    response = numacell.allocate(1, [["numacell01-000"], ["numacell01-004"]])
    assert [dict(c.envs) for c in response.container_responses] == [{"KNI_NODE_CELL_ID": "1"}] * 2
    (spec,) = response.container_responses[0].devices
    assert (spec.host_path, spec.container_path, spec.permissions) == ("/dev/null", "/dev/null", "rw")


# -- against the kubelet's registration server ------------------------------------------------------


class Recorder:
    """The kubelet's device manager as the registration server reports to it."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.devices: dict[str, list[Device]] = {}
        self.clients: dict[str, PluginClient] = {}
        self.connects = 0

    def plugin_connected(self, resource: str, client: PluginClient) -> None:
        with self.cond:
            self.clients[resource] = client
            self.connects += 1
            self.cond.notify_all()

    def plugin_devices(self, resource: str, devices: list[Device]) -> None:
        with self.cond:
            self.devices[resource] = devices
            self.cond.notify_all()

    def plugin_disconnected(self, resource: str) -> None:
        with self.cond:
            self.clients.pop(resource, None)
            self.cond.notify_all()

    def healthy(self) -> dict[str, int]:
        with self.cond:
            return {r: sum(d.healthy for d in ds) for r, ds in self.devices.items()}


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="nc-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def plugin_dir(root: Path) -> Path:
    path = root / "dp"
    path.mkdir()
    return path


def _kubelet(plugin_dir: Path, recorder: Recorder) -> RegistrationServer:
    server = RegistrationServer(plugin_dir / "kubelet.sock", recorder)
    server.start()
    return server


@pytest.fixture
def manager(plugin_dir: Path) -> Iterator[numacell.Manager]:
    plugins = [numacell.cell_plugin(cell, plugin_dir) for cell in (0, 1)]
    mgr = numacell.Manager(plugins, plugin_dir, interval=0.05)
    thread = threading.Thread(target=mgr.run, daemon=True)
    thread.start()
    yield mgr
    mgr.stop()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert not any(p.socket_path.exists() for p in plugins), "plugin sockets removed on stop"


EXPECTED = {"kni.node/numacell00": 15, "kni.node/numacell01": 15}


def test_registers_every_cell_with_topology_and_allocates(
    plugin_dir: Path, manager: numacell.Manager
) -> None:
    recorder = Recorder()
    kubelet = _kubelet(plugin_dir, recorder)
    try:
        wait_for(recorder.healthy, lambda h: h == EXPECTED, "15 healthy devices per cell", TIMEOUT)
        assert {d.numa_nodes for d in recorder.devices["kni.node/numacell01"]} == {(1,)}
        client = recorder.clients["kni.node/numacell01"]
        assert not client.options.get_preferred_allocation_available
        response = client.allocate([["numacell01-007"]])
        assert dict(response.container_responses[0].envs) == {"KNI_NODE_CELL_ID": "1"}
        with pytest.raises(DevicePluginError, match="can't allocate more than 1 numacell"):
            client.allocate([["numacell01-000", "numacell01-001"]])
    finally:
        kubelet.stop(grace=0)


def test_registers_again_when_the_kubelet_restarts(plugin_dir: Path, manager: numacell.Manager) -> None:
    recorder = Recorder()
    kubelet = _kubelet(plugin_dir, recorder)
    wait_for(recorder.healthy, lambda h: h == EXPECTED, "devices from the first kubelet", TIMEOUT)
    kubelet.stop(grace=0)
    wait_for(recorder.healthy, lambda h: set(h.values()) == {0}, "devices unhealthy after the stop", TIMEOUT)
    # A new kubelet removes the leftover plugin sockets and re-creates its own socket.
    second = Recorder()
    kubelet = _kubelet(plugin_dir, second)
    try:
        wait_for(second.healthy, lambda h: h == EXPECTED, "devices registered with the new kubelet", TIMEOUT)
        assert manager.registrations >= 4
    finally:
        kubelet.stop(grace=0)


def test_waits_for_a_late_kubelet(plugin_dir: Path, manager: numacell.Manager) -> None:
    assert manager.registrations == 0
    recorder = Recorder()
    kubelet = _kubelet(plugin_dir, recorder)
    try:
        wait_for(recorder.healthy, lambda h: h == EXPECTED, "devices after the kubelet came up", TIMEOUT)
    finally:
        kubelet.stop(grace=0)


def _program() -> list[str]:
    script = Path(sys.executable).with_name("numacell")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nrop.numacell.deviceplugin"]


def test_cli_discover_accepts_upstream_flags(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path / "sys", ["node0", "node1"])
    result = subprocess.run(
        [*_program(), "-alsologtostderr", "-v", "3", "-sysfs", str(sysfs), "--discover"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert result.stdout == "NUMA node 0\nNUMA node 1\n"


def test_cli_serves_until_sigterm(root: Path, plugin_dir: Path) -> None:
    sysfs = _sysfs(root / "sys", ["node0", "node1"])
    recorder = Recorder()
    kubelet = _kubelet(plugin_dir, recorder)
    proc = subprocess.Popen(
        [*_program(), "-v=4", "--sysfs", str(sysfs), "--device-plugin-path", str(plugin_dir)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(recorder.healthy, lambda h: h == EXPECTED, "devices of the numacell process", TIMEOUT)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(TIMEOUT) == 0
        stderr = proc.stderr.read() if proc.stderr else ""
        assert "received signal SIGTERM, shutting down" in stderr
        assert not (plugin_dir / "kni.node_numacell00").exists()
    finally:
        proc.kill()
        proc.wait()
        kubelet.stop(grace=0)


def test_cli_refuses_socket_paths_too_long_for_unix_sockets(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path / "sys", ["node0"])
    plugin_dir = tmp_path / ("d" * 100)
    result = subprocess.run(
        [*_program(), "--sysfs", str(sysfs), "--device-plugin-path", str(plugin_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert "unix socket paths longer than 107 bytes" in result.stderr
