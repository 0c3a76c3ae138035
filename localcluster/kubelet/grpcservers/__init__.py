"""The emulated kubelet's gRPC endpoints on unix sockets, as thin shells over its managers.

* :mod:`.podresources`: the PodResources API v1 server that RTE reads;
* :mod:`.deviceplugins`: the device plugin v1beta1 registration server and plugin clients
  (the plugins' side is :mod:`nrop.numacell.server`).

Every socket lives under a node's root directory (``<root>/var/lib/kubelet/...``).

Code outside this package imports only what ``__all__`` lists: the names below, and the two server
modules for their constants.
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
    PodResourcesProvider,
    PodResourcesServer,
    pod_resources_socket,
)

__all__ = [
    "DevicePluginError",
    "DevicePluginHandler",
    "PluginClient",
    "PodResourcesProvider",
    "PodResourcesServer",
    "RegistrationServer",
    "device_plugin_dir",
    "deviceplugins",
    "kubelet_socket",
    "pod_resources_socket",
    "podresources",
]
