"""The plugin side of the device plugin API v1beta1: one resource's devices, served on a unix socket.

Owns the project's one device plugin server, :class:`DevicePluginServer`, configured by what it
serves rather than subclassed. numacell (:mod:`.deviceplugin`) runs one per NUMA cell with
upstream's answers; tests run it with the devices, health, topology and options they need
against the emulated kubelet, as the kubelet's e2e tests run ``sample-device-plugin``:

* it serves ``DevicePlugin`` on ``<plugin dir>/<socket name>`` and registers its resource with
  the kubelet's ``Registration`` socket (``<plugin dir>/kubelet.sock`` by default);
* ``ListAndWatch`` sends the device list at once and again after every
  :meth:`~DevicePluginServer.set_devices` / :meth:`~DevicePluginServer.set_device_health`
  (the server is ``grpc.aio`` on the process's gRPC loop, :mod:`nrop.api.grpc.aioloop`: an
  idle stream costs nothing until the list changes);
* ``GetPreferredAllocation``, when the plugin offers it, keeps a container on as few NUMA nodes
  as it can (:func:`preferred_devices`);
* ``Allocate`` gives the plugin's answer: by default :func:`name_devices` (the devices in an
  environment variable and an annotation), numacell's its own; ``allocate_error`` makes it fail;
* the last :data:`REQUEST_HISTORY` requests of each RPC are kept for assertions.

The answers are plain functions over plain data (:mod:`nrop.api.deviceplugin`'s ``Device``);
the server is the gRPC shell around them. The kubelet's side of the API is the emulated
kubelet's (``nrop.localcluster.kubelet.grpcservers.deviceplugins``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import grpc

from nrop.api.deviceplugin import (
    HEALTHY,
    KUBELET_SOCKET_NAME,
    UNHEALTHY,
    VERSION,
    Device,
    sorted_device_ids,
)
from nrop.api.grpc import aioloop
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc

__all__ = [
    "AllocationError",
    "Allocator",
    "DevicePluginServer",
    "device_to_pb",
    "env_name_for",
    "name_devices",
    "preferred_devices",
]

# numacell's logger: the daemon's lines read the same whichever module writes them.
log = logging.getLogger("numacell")

#: Requests of each RPC a server keeps: enough for any test, bounded for a long-running plugin.
REQUEST_HISTORY = 100

#: An ``Allocate`` answer: the device ids of each container -> the response; raises :class:`AllocationError`.
Allocator = Callable[[Sequence[Sequence[str]]], api_pb2.AllocateResponse]


# -- pure part ------------------------------------------------------------------------------------


class AllocationError(Exception):
    """An ``Allocate`` request the plugin refuses; the kubelet gets the text (code ``Unknown``, a Go error)."""


def env_name_for(resource: str) -> str:
    """``example.com/gpu`` -> ``EXAMPLE_COM_GPU``."""
    return re.sub(r"[^A-Za-z0-9]", "_", resource).upper()


def device_to_pb(device: Device) -> api_pb2.Device:
    """A device as ``ListAndWatch`` sends it: ``numa_nodes=None`` sends no ``Topology``."""
    topology = None
    if device.numa_nodes is not None:
        topology = api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in device.numa_nodes])
    return api_pb2.Device(ID=device.id, health=HEALTHY if device.healthy else UNHEALTHY, topology=topology)


def preferred_devices(
    devices: Mapping[str, Device], available: Iterable[str], must_include: Iterable[str], size: int
) -> list[str]:
    """Pick ``size`` ids: ``must_include`` first, then fill NUMA node by NUMA node.

    Nodes already used by ``must_include`` come first, then the smallest node that can
    hold the whole remainder alone (best fit keeps big nodes whole for later requests),
    then larger nodes first; devices without topology come last.
    """
    chosen = sorted_device_ids(set(must_include))[:size]
    remaining = size - len(chosen)
    if remaining <= 0:
        return chosen
    per_node: dict[int | None, list[str]] = {}
    for device_id in sorted_device_ids(set(available) - set(chosen)):
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


def name_devices(
    resource: str, env_name: str, known: Collection[str], container_requests: Sequence[Sequence[str]]
) -> api_pb2.AllocateResponse:
    """The default ``Allocate`` answer: each container's devices, comma-separated, in ``env_name``
    and in an annotation keyed by ``resource``; an id not in ``known`` is refused with the sample
    plugin's text."""
    responses = []
    for ids in container_requests:
        for device_id in ids:
            if device_id not in known:
                raise AllocationError(
                    f'invalid allocation request for "{resource}": unknown device: {device_id}'
                )
        names = ",".join(ids)
        responses.append(
            api_pb2.ContainerAllocateResponse(envs={env_name: names}, annotations={resource: names})
        )
    return api_pb2.AllocateResponse(container_responses=responses)


# -- gRPC part ------------------------------------------------------------------------------------


def _address(path: Path) -> str:
    return f"unix://{path}"


async def _register(address: str, request: api_pb2.RegisterRequest, timeout: float) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        await api_pb2_grpc.RegistrationStub(channel).Register(request, timeout=timeout)


class _Servicer(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, plugin: DevicePluginServer) -> None:
        self._plugin = plugin

    async def GetDevicePluginOptions(self, request, context):
        return self._plugin.options()

    async def ListAndWatch(self, request, context) -> AsyncIterator[api_pb2.ListAndWatchResponse]:
        # A client that leaves cancels this coroutine where it waits.
        plugin = self._plugin
        log.debug("ListAndWatch for %s", plugin.resource_name)
        seen = -1
        while (update := await plugin._next_devices(seen)) is not None:
            seen, devices = update
            yield api_pb2.ListAndWatchResponse(devices=[device_to_pb(d) for d in devices])

    async def GetPreferredAllocation(self, request, context):
        return self._plugin._preferred_allocation(request)

    async def Allocate(self, request, context):
        try:
            return self._plugin._allocate(request)
        except AllocationError as err:
            await context.abort(grpc.StatusCode.UNKNOWN, str(err))

    async def PreStartContainer(self, request, context):
        return self._plugin._pre_start_container(request)


class DevicePluginServer:
    """The device plugin of ``resource_name``, serving ``devices`` on ``plugin_dir/socket_name``.

    ``start`` serves (on a fresh socket: a running server is stopped first), ``register``
    announces the plugin to the kubelet, ``stop`` ends the streams, which the kubelet sees as
    the plugin's death, and removes the socket. ``allocate`` answers ``Allocate`` (by default
    :func:`name_devices` over the current devices); set ``allocate_error`` to make every
    ``Allocate`` fail with that text.
    """

    def __init__(
        self,
        resource_name: str,
        devices: Iterable[Device],
        plugin_dir: Path,
        *,
        socket_name: str | None = None,
        allocate: Allocator | None = None,
        pre_start_required: bool = False,
        get_preferred_allocation_available: bool = True,
        env_name: str | None = None,
    ) -> None:
        self.resource_name = resource_name
        self.plugin_dir = Path(plugin_dir)
        self.socket_name = socket_name or f"{env_name_for(resource_name).lower()}.sock"
        self.socket_path = self.plugin_dir / self.socket_name
        self.address = _address(self.socket_path)
        self.env_name = env_name or env_name_for(resource_name)
        self.pre_start_required = pre_start_required
        self.get_preferred_allocation_available = get_preferred_allocation_available
        self.allocate_error: str | None = None
        self.allocate_requests: deque[api_pb2.AllocateRequest] = deque(maxlen=REQUEST_HISTORY)
        self.preferred_requests: deque[api_pb2.PreferredAllocationRequest] = deque(maxlen=REQUEST_HISTORY)
        self.pre_start_requests: deque[api_pb2.PreStartContainerRequest] = deque(maxlen=REQUEST_HISTORY)
        self._allocator = allocate
        self._lock = threading.Lock()
        self._devices: dict[str, Device] = {d.id: d for d in devices}
        self._generation = 0
        self._stopping = False
        # Set (on the gRPC loop) when the list changed or the server stops; then replaced.
        self._changed = asyncio.Event()
        self._server: grpc.aio.Server | None = None

    def options(self) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions(
            pre_start_required=self.pre_start_required,
            get_preferred_allocation_available=self.get_preferred_allocation_available,
        )

    # devices

    @property
    def devices(self) -> list[Device]:
        with self._lock:
            return list(self._devices.values())

    def set_devices(self, devices: Iterable[Device]) -> None:
        """Replace the whole list and push it to every open ``ListAndWatch`` stream."""
        with self._lock:
            self._devices = {d.id: d for d in devices}
            self._generation += 1
        self._notify()

    def set_device_health(self, device_id: str, healthy: bool) -> None:
        with self._lock:
            self._devices[device_id] = replace(self._devices[device_id], healthy=healthy)
            self._generation += 1
        self._notify()

    def _notify(self) -> None:
        """Wake the streams (from any thread)."""
        if aioloop.on_loop():
            self._wake()
        else:
            aioloop.call_soon(self._wake)

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _next_devices(self, seen: int) -> tuple[int, list[Device]] | None:
        """On the gRPC loop: the list once it is newer than generation ``seen``; ``None`` once the
        server stops."""
        while True:
            with self._lock:
                if self._stopping:
                    return None
                if self._generation != seen:
                    return self._generation, list(self._devices.values())
            await self._changed.wait()

    # answers

    def _preferred_allocation(
        self, request: api_pb2.PreferredAllocationRequest
    ) -> api_pb2.PreferredAllocationResponse:
        with self._lock:
            self.preferred_requests.append(request)
            devices = dict(self._devices)
        if not self.get_preferred_allocation_available:
            return api_pb2.PreferredAllocationResponse()
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

    def _allocate(self, request: api_pb2.AllocateRequest) -> api_pb2.AllocateResponse:
        with self._lock:
            self.allocate_requests.append(request)
            known = set(self._devices)
            failure = self.allocate_error
        requests = [list(c.devices_ids) for c in request.container_requests]
        log.debug("Allocate %s: %s", self.resource_name, requests)
        if failure is not None:
            raise AllocationError(failure)
        if self._allocator is not None:
            return self._allocator(requests)
        return name_devices(self.resource_name, self.env_name, known, requests)

    def _pre_start_container(
        self, request: api_pb2.PreStartContainerRequest
    ) -> api_pb2.PreStartContainerResponse:
        with self._lock:
            self.pre_start_requests.append(request)
        return api_pb2.PreStartContainerResponse()

    # lifecycle

    @property
    def serving(self) -> bool:
        return self._server is not None

    async def _serve(self) -> grpc.aio.Server:
        server = grpc.aio.server()
        api_pb2_grpc.add_DevicePluginServicer_to_server(_Servicer(self), server)
        return await aioloop.start_server(server, self.address)

    async def _stop(self, server: grpc.aio.Server, grace: float | None) -> None:
        self._wake()
        await server.stop(grace)

    def start(self) -> None:
        """Serve on a fresh socket, creating the directory if need be."""
        self.stop()
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        self.socket_path.unlink(missing_ok=True)
        with self._lock:
            self._stopping = False
        self._server = aioloop.run(self._serve())
        log.info("serving %s on %s", self.resource_name, self.socket_path)

    def stop(self, grace: float | None = None) -> None:
        """End the streams, stop serving (in-flight calls get ``grace`` seconds) and remove the socket."""
        with self._lock:
            self._stopping = True
        server, self._server = self._server, None
        if server is None:
            return
        aioloop.run(self._stop(server, grace))
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> DevicePluginServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def register(
        self, kubelet_socket: Path | None = None, *, version: str = VERSION, timeout: float = 5.0
    ) -> None:
        """``Registration.Register`` with the kubelet (by default ``<plugin dir>/kubelet.sock``).

        Raises ``grpc.RpcError``; a refusal's text is the kubelet's, in ``details()``.
        """
        socket = Path(kubelet_socket) if kubelet_socket is not None else self.plugin_dir / KUBELET_SOCKET_NAME
        request = api_pb2.RegisterRequest(
            version=version,
            endpoint=self.socket_name,
            resource_name=self.resource_name,
            options=self.options(),
        )
        aioloop.run(_register(_address(socket), request, timeout))
        log.info("registered %s with %s (%d devices)", self.resource_name, socket, len(self.devices))
