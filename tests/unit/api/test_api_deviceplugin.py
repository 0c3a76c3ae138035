"""The device plugin API's shared model: device id order and a device's NUMA nodes."""

from __future__ import annotations

import pytest

from nrop.api.deviceplugin import DEVICE_PLUGIN_PATH, KUBELET_SOCKET_NAME, Device, sorted_device_ids


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        pytest.param(["gpu10", "gpu2", "gpu1"], ["gpu1", "gpu2", "gpu10"], id="numbers-by-value"),
        pytest.param(
            ["numacell01-010", "numacell01-002", "numacell00-014"],
            ["numacell00-014", "numacell01-002", "numacell01-010"],
            id="several-numbers",
        ),
        pytest.param(["b", "a1", "a"], ["a", "a1", "b"], id="no-number-first"),
        pytest.param([], [], id="empty"),
    ],
)
def test_sorted_device_ids(ids: list[str], expected: list[str]) -> None:
    assert sorted_device_ids(ids) == expected


@pytest.mark.parametrize(
    ("device", "nodes"),
    [
        pytest.param(Device("d", True, (1, 0)), (1, 0), id="topology"),
        pytest.param(Device("d", True, ()), (), id="empty-topology"),
        pytest.param(Device("d"), (), id="no-topology"),
    ],
)
def test_device_nodes(device: Device, nodes: tuple[int, ...]) -> None:
    assert device.nodes() == nodes


def test_kubelet_socket_is_upstreams() -> None:
    assert f"{DEVICE_PLUGIN_PATH}/{KUBELET_SOCKET_NAME}" == "/var/lib/kubelet/device-plugins/kubelet.sock"
