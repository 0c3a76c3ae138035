"""The kubelet PodResources API v1 server (``/var/lib/kubelet/pod-resources/kubelet.sock``).

A thin I/O shell over :class:`PodResourcesProvider`: the kubelet's managers decide what
is reported (exclusive CPUs only, restartable init containers before app containers,
one ``ContainerDevices`` per (device, NUMA node), memory blocks of the Static policy);
this module only turns their records (the model of :mod:`nrop.api.podresources`, which
the exporter reads back) into protobuf and maps failures to the
status the upstream server produces (``pkg/kubelet/apis/podresources/server_v1.go``):

* ``Get`` of an unknown pod fails with ``pod NAME in namespace NS not found``.  Upstream
  returns a plain Go error, which grpc-go sends as code ``Unknown``; we do the same, so a
  client written against this server also works against a real kubelet.
* ``Get`` with the ``KubeletPodResourcesGet`` gate off: ``PodResources API Get method disabled``.
* Every RPC passes a token bucket (qps 100, burst 10 by default); over it the call
  fails with ``ResourceExhausted`` / ``rejected by rate limit``.

The helpers :func:`devices_by_numa` and :func:`devices_from_inventory` do upstream's
per-(device, NUMA node) expansion for providers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import grpc

from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.localcluster.kubelet.grpcservers._unixgrpc import Clock, UnixGrpcServer, abort_handler

__all__ = [
    "DEFAULT_RATE_LIMIT",
    "POD_RESOURCES_SOCKET",
    "PodResourcesProvider",
    "PodResourcesServer",
    "RateLimit",
    "devices_by_numa",
    "devices_from_inventory",
    "pod_resources_socket",
]

log = logging.getLogger(__name__)

#: Relative to a node's root directory.
POD_RESOURCES_SOCKET = Path("var/lib/kubelet/pod-resources/kubelet.sock")
#: NUMA key of devices without topology in the device manager's records.
_NO_TOPOLOGY = -1


def pod_resources_socket(root: Path) -> Path:
    """``<root>/var/lib/kubelet/pod-resources/kubelet.sock``."""
    return Path(root) / POD_RESOURCES_SOCKET


# ----------------------------------------------------------------------------- providers


class PodResourcesProvider(Protocol):
    """What the kubelet knows, as immutable snapshots.

    Called on the process's gRPC loop (:mod:`nrop.api.grpc.aioloop`), concurrently with the
    kubelet's own threads: implementations must answer at once, never waiting on a lock that
    another thread may hold while it waits for that loop (the kubelet's admission does, for
    its device plugin calls), and return values that they will not mutate afterwards (the
    model's dataclasses are frozen; build new ones rather than sharing mutable lists).
    """

    def list_pods(self) -> Sequence[PodResources]:
        """Active pods (``KubeletPodResourcesListUseActivePods``), in any order."""
        ...

    def allocatable(self) -> AllocatableResources: ...

    def get_pod(self, namespace: str, name: str) -> PodResources | None:
        """The same record as :meth:`list_pods` gives for that pod, or ``None``."""
        ...


# ----------------------------------------------------------------------------- expansion helpers


def devices_by_numa(resource: str, per_numa: Mapping[int, Iterable[str]]) -> list[ContainerDevices]:
    """A container's devices as ``List`` reports them (``podDevices.getContainerDevices``).

    ``per_numa`` is the device manager's record (NUMA node or ``-1`` -> ids): one entry per
    (NUMA node, device) with that single node, and no topology for the ``-1`` key.
    """
    result = []
    for node in sorted(per_numa):
        for device_id in per_numa[node]:
            nodes = None if node == _NO_TOPOLOGY else (node,)
            result.append(ContainerDevices(resource, (device_id,), nodes))
    return result


def devices_from_inventory(
    resource: str, devices: Mapping[str, Sequence[int] | None]
) -> list[ContainerDevices]:
    """Allocatable devices (``containerDevicesFromResourceDeviceInstances``).

    ``devices`` maps each *healthy* device id to its ``Topology.Nodes`` (``None``: the
    plugin sent no topology, reported without one).  A device is listed once per node,
    so a device with a topology but no nodes is not listed at all, as upstream.
    """
    result = []
    for device_id, nodes in devices.items():
        if nodes is None:
            result.append(ContainerDevices(resource, (device_id,)))
            continue
        result.extend(ContainerDevices(resource, (device_id,), (node,)) for node in nodes)
    return result


# ----------------------------------------------------------------------------- protobuf


def _topology(nodes: tuple[int, ...] | None) -> api_pb2.TopologyInfo | None:
    if nodes is None:
        return None
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in nodes])


def _device_pb(device: ContainerDevices) -> api_pb2.ContainerDevices:
    return api_pb2.ContainerDevices(
        resource_name=device.resource, device_ids=list(device.ids), topology=_topology(device.numa_nodes)
    )


def _memory_pb(memory: ContainerMemory) -> api_pb2.ContainerMemory:
    return api_pb2.ContainerMemory(
        memory_type=memory.type, size=memory.size, topology=_topology(memory.numa_nodes)
    )


def _container_pb(container: ContainerResources) -> api_pb2.ContainerResources:
    return api_pb2.ContainerResources(
        name=container.name,
        devices=[_device_pb(d) for d in container.devices],
        cpu_ids=list(container.cpu_ids),
        memory=[_memory_pb(m) for m in container.memory],
    )


def _pod_pb(pod: PodResources) -> api_pb2.PodResources:
    return api_pb2.PodResources(
        name=pod.name,
        namespace=pod.namespace,
        containers=[_container_pb(c) for c in pod.containers],
        cpu_ids=list(pod.cpu_ids),
        memory=[_memory_pb(m) for m in pod.memory],
    )


def _allocatable_pb(allocatable: AllocatableResources) -> api_pb2.AllocatableResourcesResponse:
    return api_pb2.AllocatableResourcesResponse(
        devices=[_device_pb(d) for d in allocatable.devices],
        cpu_ids=list(allocatable.cpu_ids),
        memory=[_memory_pb(m) for m in allocatable.memory],
    )


# ----------------------------------------------------------------------------- rate limit


@dataclass(frozen=True)
class RateLimit:
    """``podresources.DefaultQPS`` / ``DefaultBurstTokens``."""

    qps: float = 100.0
    burst: int = 10


DEFAULT_RATE_LIMIT = RateLimit()


class _TokenBucket:
    """``rate.Limiter.Allow()``: starts full, refills at ``qps`` up to ``burst``."""

    def __init__(self, limit: RateLimit, clock: Clock) -> None:
        self._limit = limit
        self._clock = clock
        self._tokens = float(limit.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            now = self._clock()
            elapsed = max(0.0, now - self._last)
            self._last = now
            self._tokens = min(float(self._limit.burst), self._tokens + elapsed * self._limit.qps)
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False


class _RateLimitInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, bucket: _TokenBucket) -> None:
        self._bucket = bucket
        self._reject = abort_handler(grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        if self._bucket.allow():
            return await continuation(handler_call_details)
        return self._reject


# ----------------------------------------------------------------------------- server

_T = TypeVar("_T")

#: Counter names of ``kubelet_pod_resources_endpoint_*`` (label ``server_api_version="v1"``).
METRICS = (
    "requests_total",
    "requests_list",
    "requests_get_allocatable",
    "errors_get_allocatable",
    "requests_get",
    "errors_get",
)


class _Servicer(api_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, owner: PodResourcesServer) -> None:
        self._owner = owner

    async def List(self, request, context):
        self._owner._count("requests_total", "requests_list")
        pods = await self._owner._call(context, "list", self._owner.provider.list_pods)
        return api_pb2.ListPodResourcesResponse(pod_resources=[_pod_pb(p) for p in pods])

    async def GetAllocatableResources(self, request, context):
        self._owner._count("requests_total", "requests_get_allocatable")
        try:
            allocatable = await self._owner._call(
                context, "get_allocatable", self._owner.provider.allocatable
            )
        except Exception:
            self._owner._count("errors_get_allocatable")
            raise
        return _allocatable_pb(allocatable)

    async def Get(self, request, context):
        owner = self._owner
        owner._count("requests_total", "requests_get")
        if not owner.get_enabled:
            owner._count("errors_get")
            await context.abort(grpc.StatusCode.UNKNOWN, "PodResources API Get method disabled")
        pod = await owner._call(
            context, "get", lambda: owner.provider.get_pod(request.pod_namespace, request.pod_name)
        )
        if pod is None:
            owner._count("errors_get")
            await context.abort(
                grpc.StatusCode.UNKNOWN,
                f"pod {request.pod_name} in namespace {request.pod_namespace} not found",
            )
        return api_pb2.GetPodResourcesResponse(pod_resources=_pod_pb(pod))


class PodResourcesServer(UnixGrpcServer):
    """``PodResourcesLister`` v1 on a unix socket; see the module docstring for the semantics.

    ``rate_limit=None`` disables the token bucket; ``clock`` drives it (tests inject one).
    ``metrics`` holds the ``kubelet_pod_resources_endpoint_*`` counters.
    """

    def __init__(
        self,
        provider: PodResourcesProvider,
        socket_path: Path,
        *,
        rate_limit: RateLimit | None = DEFAULT_RATE_LIMIT,
        get_enabled: bool = True,
        clock: Clock = time.monotonic,
    ) -> None:
        interceptors = [] if rate_limit is None else [_RateLimitInterceptor(_TokenBucket(rate_limit, clock))]
        super().__init__(socket_path, interceptors=interceptors)
        self.provider = provider
        self.get_enabled = get_enabled
        self._metrics_lock = threading.Lock()
        self._metrics = dict.fromkeys(METRICS, 0)

    @property
    def metrics(self) -> dict[str, int]:
        with self._metrics_lock:
            return dict(self._metrics)

    def _count(self, *names: str) -> None:
        with self._metrics_lock:
            for name in names:
                self._metrics[name] += 1

    async def _call(self, context: grpc.aio.ServicerContext, what: str, fn: Callable[[], _T]) -> _T:
        # A provider failure is a plain Go error upstream: code Unknown, its text as details.
        try:
            return fn()
        except Exception as exc:
            log.exception("podresources %s: provider failed", what)
            await context.abort(grpc.StatusCode.UNKNOWN, str(exc))
            raise  # unreachable: abort raises

    def _add_servicers(self, server: grpc.aio.Server) -> None:
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(_Servicer(self), server)
