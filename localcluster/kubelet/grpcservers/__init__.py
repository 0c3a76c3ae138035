"""The emulated kubelet's gRPC endpoints on unix sockets, as thin shells over its managers.

* :mod:`.podresources`: the PodResources API v1 server that RTE reads;
* :mod:`.deviceplugins`: the device plugin v1beta1 registration server and plugin clients;
* :mod:`.testdeviceplugin`: a configurable device plugin for tests.

Every socket lives under a node's root directory (``<root>/var/lib/kubelet/...``).
"""

from __future__ import annotations

from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    DevicePluginError,
    DevicePluginHandler,
    PluginClient,
    RegistrationServer,
    device_plugin_dir,
    kubelet_socket,
)
from nrop.localcluster.kubelet.grpcservers.podresources import (
    AllocatableResources,
    ContainerDevice,
    ContainerMemory,
    ContainerResources,
    PodResources,
    PodResourcesProvider,
    PodResourcesServer,
    pod_resources_socket,
)
from nrop.localcluster.kubelet.grpcservers.testdeviceplugin import DevicePluginStub

__all__ = [
    "AllocatableResources",
    "ContainerDevice",
    "ContainerMemory",
    "ContainerResources",
    "DevicePluginError",
    "DevicePluginHandler",
    "DevicePluginStub",
    "PluginClient",
    "PodResources",
    "PodResourcesProvider",
    "PodResourcesServer",
    "RegistrationServer",
    "device_plugin_dir",
    "kubelet_socket",
    "pod_resources_socket",
]
