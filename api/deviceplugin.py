"""The device plugin API v1beta1 as plain data: its constants and the device a plugin reports.

Owns what both ends of ``k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1`` agree on: the API
version, the health strings, where plugins and the kubelet put their sockets
(``constants.go``), and one :class:`Device` model. The plugins' server
(:mod:`nrop.numacell.server`) turns devices into ``ListAndWatch`` messages; the emulated
kubelet's plugin client turns those back into devices, and its device manager decides over
them. Device ids are ordered naturally (``dev2`` before ``dev10``) wherever either end picks
among them. No I/O: the wire messages are :mod:`nrop.api.grpc.deviceplugin.v1beta1`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DEVICE_PLUGIN_PATH",
    "HEALTHY",
    "KUBELET_SOCKET_NAME",
    "UNHEALTHY",
    "VERSION",
    "Device",
    "sorted_device_ids",
]

VERSION = "v1beta1"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
#: The kubelet's directory of plugin sockets (``DevicePluginPath``, without its trailing slash).
DEVICE_PLUGIN_PATH = "/var/lib/kubelet/device-plugins"
#: The kubelet's ``Registration`` socket in that directory (``KubeletSocket``).
KUBELET_SOCKET_NAME = "kubelet.sock"


@dataclass(frozen=True)
class Device:
    """One device as ``ListAndWatch`` reports it."""

    id: str
    healthy: bool = True
    #: ``Topology.Nodes`` ids; ``None`` when the plugin sent no ``Topology`` at all.
    numa_nodes: tuple[int, ...] | None = None

    def nodes(self) -> tuple[int, ...]:
        return self.numa_nodes or ()


def _natural_key(device_id: str) -> list[str | int]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", device_id)]


def sorted_device_ids(ids: Iterable[str]) -> list[str]:
    """``ids`` in natural order (``gpu2`` < ``gpu10``).

    Upstream's kubelet picks devices in Go map order (random); a stable order keeps the
    emulated kubelet's and the plugins' choices reproducible.
    """
    return sorted(ids, key=_natural_key)
