"""A real device plugin (v1beta1) with configurable devices, for tests and numacell-like needs.

:class:`DevicePluginStub` serves ``DevicePlugin`` on its own socket in the
device-plugins directory and registers with the kubelet socket, like the plugins the
kubelet e2e tests use (``sample-device-plugin``, ``numacell``):

* ``ListAndWatch`` sends the device list at once and again after every
  :meth:`~DevicePluginStub.set_device_health` / :meth:`~DevicePluginStub.set_devices`;
* ``GetPreferredAllocation`` keeps a container on as few NUMA nodes as it can, starting
  with the nodes of the devices it must include;
* ``Allocate`` names the devices in an environment variable (``EXAMPLE_COM_GPU=gpu0,gpu1``
  for ``example.com/gpu``) and an annotation keyed by the resource name, and rejects
  unknown ids with the sample plugin's text;
* every request is recorded for assertions.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import grpc

from nrop.api.deviceplugin import KUBELET_SOCKET_NAME, VERSION, Device
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nrop.localcluster.kubelet.grpcservers._unixgrpc import UnixGrpcServer, go_rpc_error, unix_address
from nrop.localcluster.kubelet.grpcservers.deviceplugins import device_to_pb

__all__ = ["DevicePluginStub", "RegistrationError", "env_name_for", "preferred_devices"]

log = logging.getLogger(__name__)

#: How often an idle ``ListAndWatch`` stream checks that its client is still there.
_STREAM_POLL = 0.2


class RegistrationError(Exception):
    """``Register`` failed; ``details`` is the kubelet's error text."""

    def __init__(self, message: str, details: str) -> None:
        super().__init__(message)
        self.details = details


def env_name_for(resource: str) -> str:
    """``example.com/gpu`` -> ``EXAMPLE_COM_GPU``."""
    return re.sub(r"[^A-Za-z0-9]", "_", resource).upper()


def _natural_key(device_id: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", device_id)]


def preferred_devices(
    devices: dict[str, Device], available: Iterable[str], must_include: Iterable[str], size: int
) -> list[str]:
    """Pick ``size`` ids: ``must_include`` first, then fill NUMA node by NUMA node.

    Nodes already used by ``must_include`` come first, then the smallest node that can
    hold the whole remainder alone (best fit keeps big nodes whole for later requests),
    then larger nodes first; devices without topology come last.
    """
    chosen = sorted(set(must_include), key=_natural_key)[:size]
    remaining = size - len(chosen)
    if remaining <= 0:
        return chosen
    per_node: dict[int | None, list[str]] = {}
    for device_id in sorted(set(available) - set(chosen), key=_natural_key):
        device = devices.get(device_id)
        nodes = device.numa_nodes if device is not None and device.numa_nodes else (None,)
        per_node.setdefault(nodes[0], []).append(device_id)
    used = {
        node
        for device_id in chosen
        if (device := devices.get(device_id)) is not None and device.numa_nodes
        for node in device.numa_nodes
    }

    def rank(node: int | None) -> tuple[bool, bool, bool, int, int]:
        count = len(per_node[node])
        fits = count >= remaining
        return (node is None, node not in used, not fits, count if fits else -count, node or 0)

    for node in sorted(per_node, key=rank):
        take = per_node[node][:remaining]
        chosen.extend(take)
        remaining -= len(take)
        if remaining == 0:
            break
    return chosen


class _Servicer(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, plugin: DevicePluginStub) -> None:
        self._plugin = plugin

    def GetDevicePluginOptions(self, request, context):
        return self._plugin.options()

    def ListAndWatch(self, request, context):
        plugin = self._plugin
        cond = plugin._cond
        context.add_callback(plugin._wake)
        seen = -1
        while True:
            with cond:
                while plugin._generation == seen and not plugin._stopping and context.is_active():
                    cond.wait(_STREAM_POLL)
                if plugin._stopping or not context.is_active():
                    return
                seen = plugin._generation
                devices = list(plugin._devices.values())
            yield api_pb2.ListAndWatchResponse(devices=[device_to_pb(d) for d in devices])

    def GetPreferredAllocation(self, request, context):
        plugin = self._plugin
        with plugin._cond:
            plugin.preferred_requests.append(request)
            devices = dict(plugin._devices)
        return api_pb2.PreferredAllocationResponse(
            container_responses=[
                api_pb2.ContainerPreferredAllocationResponse(
                    deviceIDs=preferred_devices(
                        devices, r.available_deviceIDs, r.must_include_deviceIDs, r.allocation_size
                    )
                )
                for r in request.container_requests
            ]
        )

    def Allocate(self, request, context):
        plugin = self._plugin
        with plugin._cond:
            plugin.allocate_requests.append(request)
            known = set(plugin._devices)
            failure = plugin.allocate_error
        if failure is not None:
            context.abort(grpc.StatusCode.UNKNOWN, failure)
        responses = []
        for container in request.container_requests:
            for device_id in container.devices_ids:
                if device_id not in known:
                    context.abort(
                        grpc.StatusCode.UNKNOWN,
                        f'invalid allocation request for "{plugin.resource_name}": unknown device: {device_id}',
                    )
            names = ",".join(container.devices_ids)
            responses.append(
                api_pb2.ContainerAllocateResponse(
                    envs={plugin.env_name: names}, annotations={plugin.resource_name: names}
                )
            )
        return api_pb2.AllocateResponse(container_responses=responses)

    def PreStartContainer(self, request, context):
        with self._plugin._cond:
            self._plugin.pre_start_requests.append(request)
        return api_pb2.PreStartContainerResponse()


class DevicePluginStub(UnixGrpcServer):
    """A device plugin serving ``devices`` of ``resource_name`` on ``plugin_dir/socket_name``.

    ``start`` serves, ``register`` announces it to the kubelet socket (by default
    ``plugin_dir/kubelet.sock``), ``stop`` ends the streams, which the kubelet sees as
    the plugin's death.  Set ``allocate_error`` to make ``Allocate`` fail with that text.
    """

    def __init__(
        self,
        resource_name: str,
        devices: Sequence[Device],
        plugin_dir: Path,
        *,
        socket_name: str | None = None,
        pre_start_required: bool = False,
        get_preferred_allocation_available: bool = True,
        env_name: str | None = None,
    ) -> None:
        self.plugin_dir = Path(plugin_dir)
        self.socket_name = socket_name or f"{env_name_for(resource_name).lower()}.sock"
        super().__init__(self.plugin_dir / self.socket_name, thread_name=f"plugin-{self.socket_name}")
        self.resource_name = resource_name
        self.env_name = env_name or env_name_for(resource_name)
        self.pre_start_required = pre_start_required
        self.get_preferred_allocation_available = get_preferred_allocation_available
        self.allocate_error: str | None = None
        self.allocate_requests: list[api_pb2.AllocateRequest] = []
        self.preferred_requests: list[api_pb2.PreferredAllocationRequest] = []
        self.pre_start_requests: list[api_pb2.PreStartContainerRequest] = []
        self._cond = threading.Condition()
        self._devices: dict[str, Device] = {d.id: d for d in devices}
        self._generation = 0
        self._stopping = False

    def options(self) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions(
            pre_start_required=self.pre_start_required,
            get_preferred_allocation_available=self.get_preferred_allocation_available,
        )

    # devices

    @property
    def devices(self) -> list[Device]:
        with self._cond:
            return list(self._devices.values())

    def set_devices(self, devices: Iterable[Device]) -> None:
        """Replace the whole list and push it to every open ``ListAndWatch`` stream."""
        with self._cond:
            self._devices = {d.id: d for d in devices}
            self._generation += 1
            self._cond.notify_all()

    def set_device_health(self, device_id: str, healthy: bool) -> None:
        with self._cond:
            self._devices[device_id] = replace(self._devices[device_id], healthy=healthy)
            self._generation += 1
            self._cond.notify_all()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # lifecycle

    def _add_servicers(self, server: grpc.Server) -> None:
        api_pb2_grpc.add_DevicePluginServicer_to_server(_Servicer(self), server)

    def start(self) -> None:
        with self._cond:
            self._stopping = False
        super().start()

    def _before_stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def register(
        self, kubelet_socket: Path | None = None, *, version: str = VERSION, timeout: float = 5.0
    ) -> None:
        """``Registration.Register``; raises :class:`RegistrationError` with the kubelet's text."""
        socket = Path(kubelet_socket) if kubelet_socket is not None else self.plugin_dir / KUBELET_SOCKET_NAME
        request = api_pb2.RegisterRequest(
            version=version,
            endpoint=self.socket_name,
            resource_name=self.resource_name,
            options=self.options(),
        )
        with grpc.insecure_channel(unix_address(socket)) as channel:
            try:
                api_pb2_grpc.RegistrationStub(channel).Register(request, timeout=timeout, wait_for_ready=True)
            except grpc.RpcError as err:
                details = err.details() if isinstance(err, grpc.Call) else str(err)
                raise RegistrationError(
                    f"registering {self.resource_name} with {socket}: {go_rpc_error(err)}", details or ""
                ) from err
        log.info("device plugin %s registered with %s", self.resource_name, socket)
