"""The kubelet side of the device plugin API v1beta1: registration server and plugin clients.

Owns the I/O of upstream ``pkg/kubelet/cm/devicemanager/plugin/v1beta1``:

* :class:`RegistrationServer` serves ``Registration.Register`` on
  ``<root>/var/lib/kubelet/device-plugins/kubelet.sock``.  It checks the version
  (``v1beta1``) and that the resource is an extended resource name with upstream's
  error texts, dials the plugin at ``<device-plugins dir>/<endpoint>`` and hands the
  connected :class:`PluginClient` to the :class:`DevicePluginHandler`.  A second
  registration of a resource replaces (and closes) the previous client.
* :class:`PluginClient` asks ``GetDevicePluginOptions`` once, keeps ``ListAndWatch`` open
  and reports every device list, and offers the per-admission RPCs
  (``GetPreferredAllocation``, ``Allocate``, ``PreStartContainer``).

Servers, channels and streams are ``grpc.aio`` on the process's gRPC loop
(:mod:`nrop.api.grpc.aioloop`): an idle node costs no wake-ups. What may wait on the kubelet's
locks (the handler's calls) runs in the loop's worker threads, because the kubelet's admission
holds those locks while it waits on the loop for a plugin's ``Allocate``.

When a plugin's stream ends (the plugin died or stopped) the handler first receives the
last device list with every device unhealthy (``markResourceUnhealthy``: capacity stays,
allocatable drops to zero), then ``plugin_disconnected``; the kubelet forgets the resource
after :data:`ENDPOINT_STOP_GRACE_PERIOD` unless the plugin registers again.

What to allocate is decided by the pure :mod:`nrop.localcluster.kubelet.cm.devicemanager`;
devices are reported as :class:`nrop.api.deviceplugin.Device`. The plugin side of the API is
:mod:`nrop.numacell.server`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import grpc

from nrop.api.deviceplugin import DEVICE_PLUGIN_PATH, HEALTHY, KUBELET_SOCKET_NAME, VERSION, Device
from nrop.api.grpc import aioloop
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nrop.api.resources import is_extended_resource as is_extended_resource_name
from nrop.localcluster.kubelet.grpcservers._unixgrpc import UnixGrpcServer, go_rpc_error, unix_address

__all__ = [
    "DEVICE_PLUGIN_DIR",
    "DIAL_TIMEOUT",
    "ENDPOINT_STOP_GRACE_PERIOD",
    "PRE_START_CONTAINER_TIMEOUT",
    "SUPPORTED_VERSIONS",
    "DevicePluginError",
    "DevicePluginHandler",
    "PluginClient",
    "RegistrationServer",
    "device_from_pb",
    "device_plugin_dir",
    "is_extended_resource_name",
    "kubelet_socket",
]

log = logging.getLogger(__name__)

_R = TypeVar("_R")

SUPPORTED_VERSIONS = (VERSION,)
#: Relative to a node's root directory (``pluginapi.DevicePluginPath``).
DEVICE_PLUGIN_DIR = Path(DEVICE_PLUGIN_PATH).relative_to("/")
CHECKPOINT_FILE = "kubelet_internal_checkpoint"
#: ``KubeletPreStartContainerRPCTimeoutInSecs``.
PRE_START_CONTAINER_TIMEOUT = 30.0
#: ``dial`` in ``client.go`` blocks at most this long.
DIAL_TIMEOUT = 10.0
#: ``endpointStopGracePeriod``: a dead plugin's resource is dropped after this.
ENDPOINT_STOP_GRACE_PERIOD = 5 * 60.0

_ERR_UNSUPPORTED_VERSION = 'requested API version "{}" is not supported by kubelet. Supported version is [{}]'
_ERR_INVALID_RESOURCE_NAME = 'the ResourceName "{}" is invalid'
_ERR_FAILED_TO_DIAL = "failed to dial device plugin:"


def device_plugin_dir(root: Path) -> Path:
    """``<root>/var/lib/kubelet/device-plugins``."""
    return Path(root) / DEVICE_PLUGIN_DIR


def kubelet_socket(root: Path) -> Path:
    """``<root>/var/lib/kubelet/device-plugins/kubelet.sock``."""
    return device_plugin_dir(root) / KUBELET_SOCKET_NAME


class DevicePluginError(Exception):
    """A failed call to a device plugin, worded as the kubelet logs and reports it."""


def device_from_pb(device: api_pb2.Device) -> Device:
    """``Topology`` unset -> ``numa_nodes=None``; health other than ``Healthy`` is unhealthy."""
    nodes = tuple(n.ID for n in device.topology.nodes) if device.HasField("topology") else None
    return Device(id=device.ID, healthy=device.health == HEALTHY, numa_nodes=nodes)


class DevicePluginHandler(Protocol):
    """The kubelet's device manager as the registration server sees it (``ClientHandler``).

    Called from the gRPC loop's worker threads, one call at a time per server: implementations
    must lock whatever the kubelet's other loops also touch.
    """

    def plugin_connected(self, resource: str, client: PluginClient) -> None:
        """A plugin registered and answered ``GetDevicePluginOptions`` (replaces any earlier one)."""
        ...

    def plugin_devices(self, resource: str, devices: list[Device]) -> None:
        """The full device list of ``resource`` (each ``ListAndWatch`` message)."""
        ...

    def plugin_disconnected(self, resource: str) -> None:
        """The plugin's stream ended; its devices were just reported unhealthy."""
        ...


class PluginClient:
    """The kubelet's connection to one device plugin (``client.go`` + ``endpoint.go``).

    The channel and its ``ListAndWatch`` stream live on the process's gRPC loop
    (:mod:`nrop.api.grpc.aioloop`). ``on_devices(resource, devices)`` receives each list and
    ``on_stream_end(client)`` runs once when the stream is over, unless :meth:`close` ended it;
    both run in the loop's worker threads, one at a time, so they may take locks. The
    per-admission RPCs block the calling thread (never the loop's).
    """

    def __init__(
        self,
        resource: str,
        socket_path: Path,
        on_devices: Callable[[str, list[Device]], None],
        on_stream_end: Callable[[PluginClient], None] | None = None,
    ) -> None:
        self.resource = resource
        self.socket_path = Path(socket_path)
        self.options = api_pb2.DevicePluginOptions()
        self._on_devices = on_devices
        self._on_stream_end = on_stream_end
        self._channel: grpc.aio.Channel | None = None
        self._stub: api_pb2_grpc.DevicePluginStub | None = None
        self._follower: asyncio.Task[None] | None = None
        self._closer: asyncio.Task[None] | None = None
        self._stream_over = threading.Event()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._devices: list[Device] = []

    def __repr__(self) -> str:
        return f"PluginClient({self.resource!r}, {str(self.socket_path)!r})"

    # lifecycle

    async def connect(self, timeout: float = DIAL_TIMEOUT) -> None:
        """On the gRPC loop: dial the plugin and read its options; raises :class:`DevicePluginError`."""
        if not self.socket_path.exists():
            raise DevicePluginError(
                f"{_ERR_FAILED_TO_DIAL} dial unix {self.socket_path}: connect: no such file or directory"
            )
        channel = grpc.aio.insecure_channel(
            unix_address(self.socket_path), options=[("grpc.default_authority", "localhost")]
        )
        try:
            await asyncio.wait_for(channel.channel_ready(), timeout)
        except TimeoutError:
            await channel.close()
            raise DevicePluginError(f"{_ERR_FAILED_TO_DIAL} context deadline exceeded") from None
        stub = api_pb2_grpc.DevicePluginStub(channel)
        try:
            self.options = await stub.GetDevicePluginOptions(api_pb2.Empty(), timeout=timeout)
        except grpc.RpcError as err:
            await channel.close()
            raise DevicePluginError(f"failed to get device plugin options: {go_rpc_error(err)}") from err
        self._channel, self._stub = channel, stub

    def run(self) -> None:
        """Open ``ListAndWatch`` and follow it on the gRPC loop (from any thread)."""
        if self._stub is None:
            raise RuntimeError(f"{self!r} is not connected")
        aioloop.call_soon(self._start_following)

    def _start_following(self) -> None:
        if self._closing.is_set():
            self._stream_over.set()
            return
        self._follower = asyncio.get_running_loop().create_task(
            self._follow(), name=f"listandwatch-{self.resource}"
        )

    async def _follow(self) -> None:
        assert self._stub is not None
        loop = asyncio.get_running_loop()
        try:
            async for response in self._stub.ListAndWatch(api_pb2.Empty()):
                devices = [device_from_pb(d) for d in response.devices]
                with self._lock:
                    self._devices = devices
                log.debug("state pushed for device plugin %s: %d devices", self.resource, len(devices))
                try:
                    await loop.run_in_executor(None, self._on_devices, self.resource, list(devices))
                except Exception:
                    log.exception("device plugin %s: handling a ListAndWatch update failed", self.resource)
            if not self._closing.is_set():
                log.error(
                    "ListAndWatch ended unexpectedly for device plugin %s: stream closed", self.resource
                )
        except grpc.RpcError as err:
            if not self._closing.is_set():
                log.error(
                    "ListAndWatch ended unexpectedly for device plugin %s: %s",
                    self.resource,
                    go_rpc_error(err),
                )
        finally:
            self._stream_over.set()
        if not self._closing.is_set() and self._on_stream_end is not None:
            await loop.run_in_executor(None, self._on_stream_end, self)

    async def _close(self) -> None:
        follower = self._follower
        if follower is not None and follower is not asyncio.current_task():
            follower.cancel()
            await asyncio.wait([follower])
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    def close(self, timeout: float = 5.0) -> None:
        """Cancel the stream and close the channel (idempotent; from any thread).

        Off the gRPC loop it waits up to ``timeout`` seconds for both; on it, it only schedules them.
        """
        self._closing.set()
        if self._follower is None:
            self._stream_over.set()
        if aioloop.on_loop():
            # Held until done: the loop keeps only a weak reference to its tasks.
            self._closer = asyncio.get_running_loop().create_task(self._close())
            return
        try:
            aioloop.run(self._close(), timeout)
        except TimeoutError:
            log.warning("device plugin %s: closing its connection took over %.0fs", self.resource, timeout)

    @property
    def devices(self) -> list[Device]:
        """The last list received."""
        with self._lock:
            return list(self._devices)

    @property
    def stream_alive(self) -> bool:
        return self._follower is not None and not self._stream_over.is_set()

    def wait_stream_end(self, timeout: float) -> bool:
        return self._follower is None or self._stream_over.wait(timeout)

    # per-admission RPCs

    def _call(self, rpc: Callable[[api_pb2_grpc.DevicePluginStub], Awaitable[_R]]) -> _R:
        """One unary RPC on the gRPC loop, the calling thread waiting for it; errors as the kubelet words them."""
        if self._stub is None or self._closing.is_set():
            raise DevicePluginError(f"device plugin {self.resource} is not connected")
        stub = self._stub

        async def call() -> _R:
            return await rpc(stub)

        try:
            return aioloop.run(call())
        except grpc.RpcError as err:
            raise DevicePluginError(go_rpc_error(err)) from err

    @property
    def preferred_allocation(self) -> Callable[[frozenset[str], frozenset[str], int], list[str]] | None:
        """:meth:`get_preferred_allocation` if the plugin offers it (for ``devices_to_allocate``)."""
        return self.get_preferred_allocation if self.options.get_preferred_allocation_available else None

    def get_preferred_allocation(
        self, available: Iterable[str], must_include: Iterable[str], size: int
    ) -> list[str]:
        """One container's ``GetPreferredAllocation``; ``[]`` when the plugin does not offer it."""
        if not self.options.get_preferred_allocation_available:
            return []
        request = api_pb2.PreferredAllocationRequest(
            container_requests=[
                api_pb2.ContainerPreferredAllocationRequest(
                    available_deviceIDs=sorted(available),
                    must_include_deviceIDs=sorted(must_include),
                    allocation_size=size,
                )
            ]
        )
        response = self._call(lambda stub: stub.GetPreferredAllocation(request))
        if len(response.container_responses) != 1:
            raise DevicePluginError(
                f"device plugin {self.resource} returned {len(response.container_responses)} preferred allocations for 1 request"
            )
        return list(response.container_responses[0].deviceIDs)

    def allocate(self, container_requests: Sequence[Iterable[str]]) -> api_pb2.AllocateResponse:
        """``Allocate`` with one ``ContainerAllocateRequest`` per element (device ids)."""
        request = api_pb2.AllocateRequest(
            container_requests=[
                api_pb2.ContainerAllocateRequest(devices_ids=list(ids)) for ids in container_requests
            ]
        )
        return self._call(lambda stub: stub.Allocate(request))

    def pre_start_container(
        self, device_ids: Iterable[str], timeout: float = PRE_START_CONTAINER_TIMEOUT
    ) -> None:
        """``PreStartContainer`` if the plugin asked for it (``pre_start_required``), else nothing."""
        if not self.options.pre_start_required:
            return
        request = api_pb2.PreStartContainerRequest(devices_ids=list(device_ids))
        self._call(lambda stub: stub.PreStartContainer(request, timeout=timeout))


class _RegistrationServicer(api_pb2_grpc.RegistrationServicer):
    def __init__(self, owner: RegistrationServer) -> None:
        self._owner = owner

    async def Register(self, request, context):
        error = await self._owner._register(request)
        if error is not None:
            # A plain Go error upstream, which grpc-go sends as code Unknown.
            await context.abort(grpc.StatusCode.UNKNOWN, error)
        return api_pb2.Empty()


class RegistrationServer(UnixGrpcServer):
    """``Registration`` v1beta1 on the kubelet socket, and the plugin clients it connected.

    ``start`` removes leftover sockets from the directory first (``CleanupPluginDirectory``),
    which is how plugins notice a kubelet restart; pass ``cleanup_sockets=False`` to keep them.
    """

    def __init__(
        self,
        socket_path: Path,
        handler: DevicePluginHandler,
        *,
        cleanup_sockets: bool = True,
        dial_timeout: float = DIAL_TIMEOUT,
    ) -> None:
        super().__init__(socket_path)
        self.socket_dir = self.socket_path.parent
        self.handler = handler
        self.cleanup_sockets = cleanup_sockets
        self.dial_timeout = dial_timeout
        self._clients: dict[str, PluginClient] = {}
        self._clients_lock = threading.Lock()
        # Serialises handler calls and the "is this client still current" checks before them.
        self._deliver_lock = threading.RLock()

    @property
    def clients(self) -> dict[str, PluginClient]:
        with self._clients_lock:
            return dict(self._clients)

    def _add_servicers(self, server: grpc.aio.Server) -> None:
        api_pb2_grpc.add_RegistrationServicer_to_server(_RegistrationServicer(self), server)

    def start(self) -> None:
        if self.cleanup_sockets and self.socket_dir.is_dir():
            for entry in self.socket_dir.iterdir():
                if entry.name != CHECKPOINT_FILE and entry.is_socket():
                    log.info("removing leftover device plugin socket %s", entry)
                    entry.unlink(missing_ok=True)
        super().start()

    def stop(self, grace: float | None = 1.0) -> None:
        super().stop(grace)
        with self._clients_lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
            self._report_gone(client)

    async def _register(self, request: api_pb2.RegisterRequest) -> str | None:
        """On the gRPC loop: the request's error text, or ``None`` once the plugin is connected."""
        resource = request.resource_name
        log.info("got registration request from device plugin with resource %s", resource)
        if request.version not in SUPPORTED_VERSIONS:
            error = _ERR_UNSUPPORTED_VERSION.format(
                request.version, " ".join(f'"{v}"' for v in SUPPORTED_VERSIONS)
            )
            log.error("bad registration request from device plugin with resource %s: %s", resource, error)
            return error
        if not is_extended_resource_name(resource):
            error = _ERR_INVALID_RESOURCE_NAME.format(resource)
            log.error("bad registration request from device plugin: %s", error)
            return error
        client = PluginClient(
            resource,
            self.socket_dir / request.endpoint,
            lambda _resource, devices: self._deliver_devices(client, devices),
            self._stream_ended,
        )
        try:
            await client.connect(self.dial_timeout)
        except DevicePluginError as err:
            log.error("error connecting to device plugin client %s: %s", resource, err)
            return str(err)
        # The handler takes the kubelet's locks: in a worker thread, never on the loop.
        previous = await asyncio.get_running_loop().run_in_executor(None, self._install, client)
        log.info("connected to new client for resource %s at %s", resource, client.socket_path)
        client.run()
        if previous is not None:
            log.info("device plugin %s registered again; closing the previous connection", resource)
            previous.close()
        return None

    def _install(self, client: PluginClient) -> PluginClient | None:
        """Make ``client`` its resource's current one and tell the handler; the replaced client, if any."""
        with self._deliver_lock:
            with self._clients_lock:
                previous = self._clients.get(client.resource)
                self._clients[client.resource] = client
            self.handler.plugin_connected(client.resource, client)
        return previous

    def _deliver_devices(self, client: PluginClient, devices: list[Device]) -> None:
        with self._deliver_lock:
            with self._clients_lock:
                current = self._clients.get(client.resource) is client
            if current:
                self.handler.plugin_devices(client.resource, devices)

    def _stream_ended(self, client: PluginClient) -> None:
        with self._deliver_lock:
            with self._clients_lock:
                if self._clients.get(client.resource) is not client:
                    return
                del self._clients[client.resource]
            log.warning(
                "device plugin %s disconnected (%s); marking its devices unhealthy",
                client.resource,
                client.socket_path,
            )
            self._report_gone(client)
        client.close()

    def _report_gone(self, client: PluginClient) -> None:
        with self._deliver_lock:
            unhealthy = [Device(d.id, False, d.numa_nodes) for d in client.devices]
            self.handler.plugin_devices(client.resource, unhealthy)
            self.handler.plugin_disconnected(client.resource)
