"""The kubelet podresources v1 client: unix-socket gRPC in, plain :mod:`nrop.api.podresources` records out.

This module owns talking to ``PodResourcesLister`` the way upstream RTE does (insecure
gRPC on a unix socket, 16 MiB receive limit, 10 s per call) and the exporter's
robustness at that edge:

* every failure is a :class:`PodResourcesError` naming the call (``list``,
  ``get_allocatable_resources``, the names of upstream's failure metric) and saying
  what is wrong: a missing socket ("is the kubelet running?") is told apart from an
  RPC error, which is printed as grpc-go prints it;
* after ``UNAVAILABLE`` (the kubelet restarted, the socket was replaced) the channel is
  rebuilt, so the next call dials the new socket at once instead of waiting out gRPC's
  own reconnect back-off;
* :func:`retry` calls until success or stop, with exponential :class:`Backoff` and one
  log line per change of error (then a reminder every ``remind`` seconds), never raising.

Pod-level ``cpu_ids`` / ``memory`` (gate ``PodLevelResourceManagers``) are left empty, as
upstream RTE ignores them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

import grpc

from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.rte.retrying import Backoff, FailureLog

__all__ = [
    "CALL_GET_ALLOCATABLE",
    "CALL_LIST",
    "DEFAULT_SOCKET",
    "PodResourcesClient",
    "PodResourcesError",
    "allocatable_from_pb",
    "parse_endpoint",
    "pods_from_pb",
    "retry",
]

log = logging.getLogger(__name__)

DEFAULT_SOCKET: Final = "unix:///podresources/kubelet.sock"
CALL_LIST: Final = "list"
CALL_GET_ALLOCATABLE: Final = "get_allocatable_resources"
DEFAULT_TIMEOUT: Final = 10.0
MAX_RECEIVE_BYTES: Final = 16 * 1024 * 1024

_T = TypeVar("_T")


class PodResourcesError(Exception):
    """A podresources call failed; ``call`` is ``list`` or ``get_allocatable_resources``."""

    def __init__(self, call: str, message: str, *, socket_missing: bool = False) -> None:
        super().__init__(f"podresources {call}: {message}")
        self.call = call
        self.socket_missing = socket_missing


def parse_endpoint(value: str) -> Path:
    """``unix:///path`` or ``/path`` → the socket path; anything else is a ``ValueError``."""
    path = value[len("unix://") :] if value.startswith("unix://") else value
    if "://" in path or not path.startswith("/"):
        raise ValueError(f"unsupported podresources endpoint {value!r}: expected unix:///absolute/path")
    return Path(path)


# ----------------------------------------------------------------------------- protobuf → data


def _numa_nodes(message: api_pb2.ContainerDevices | api_pb2.ContainerMemory) -> tuple[int, ...] | None:
    if not message.HasField("topology"):
        return None
    return tuple(int(node.ID) for node in message.topology.nodes)


def _device(message: api_pb2.ContainerDevices) -> ContainerDevices:
    return ContainerDevices(message.resource_name, tuple(message.device_ids), _numa_nodes(message))


def _memory(message: api_pb2.ContainerMemory) -> ContainerMemory:
    return ContainerMemory(message.memory_type, int(message.size), _numa_nodes(message))


def pods_from_pb(response: api_pb2.ListPodResourcesResponse) -> list[PodResources]:
    return [
        PodResources(
            namespace=pod.namespace,
            name=pod.name,
            containers=tuple(
                ContainerResources(
                    name=c.name,
                    cpu_ids=tuple(int(cpu) for cpu in c.cpu_ids),
                    devices=tuple(_device(d) for d in c.devices),
                    memory=tuple(_memory(m) for m in c.memory),
                )
                for c in pod.containers
            ),
        )
        for pod in response.pod_resources
    ]


def allocatable_from_pb(response: api_pb2.AllocatableResourcesResponse) -> AllocatableResources:
    return AllocatableResources(
        cpu_ids=tuple(int(cpu) for cpu in response.cpu_ids),
        devices=tuple(_device(d) for d in response.devices),
        memory=tuple(_memory(m) for m in response.memory),
    )


# ----------------------------------------------------------------------------- client


def _rpc_error_text(err: grpc.RpcError) -> str:
    if isinstance(err, grpc.Call):
        code = "".join(part.capitalize() for part in err.code().name.split("_"))
        return f"rpc error: code = {code} desc = {err.details()}"
    return str(err)


class PodResourcesClient:
    """``List`` and ``GetAllocatableResources`` on one unix socket; safe from one thread."""

    def __init__(self, socket_path: Path, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.socket_path = Path(socket_path)
        self.timeout = timeout
        self._channel: grpc.Channel | None = None
        self._stub: api_pb2_grpc.PodResourcesListerStub | None = None

    def _connect(self) -> api_pb2_grpc.PodResourcesListerStub:
        if self._stub is None:
            self._channel = grpc.insecure_channel(
                f"unix://{self.socket_path}",
                options=[
                    ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
                    ("grpc.initial_reconnect_backoff_ms", 100),
                    ("grpc.max_reconnect_backoff_ms", 2000),
                ],
            )
            self._stub = api_pb2_grpc.PodResourcesListerStub(self._channel)
        return self._stub

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = self._stub = None

    def _call(self, call: str, invoke: Callable[[api_pb2_grpc.PodResourcesListerStub], _T]) -> _T:
        if not self.socket_path.exists():
            self.close()
            raise PodResourcesError(
                call,
                f"socket {self.socket_path} does not exist (is the kubelet running?)",
                socket_missing=True,
            )
        try:
            return invoke(self._connect())
        except grpc.RpcError as err:
            if isinstance(err, grpc.Call) and err.code() == grpc.StatusCode.UNAVAILABLE:
                self.close()  # the next call dials afresh (a restarted kubelet has a new socket)
            raise PodResourcesError(call, _rpc_error_text(err)) from err

    def list_pods(self) -> list[PodResources]:
        response = self._call(
            CALL_LIST, lambda stub: stub.List(api_pb2.ListPodResourcesRequest(), timeout=self.timeout)
        )
        return pods_from_pb(response)

    def allocatable(self) -> AllocatableResources:
        response = self._call(
            CALL_GET_ALLOCATABLE,
            lambda stub: stub.GetAllocatableResources(
                api_pb2.AllocatableResourcesRequest(), timeout=self.timeout
            ),
        )
        return allocatable_from_pb(response)

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ----------------------------------------------------------------------------- retrying


def retry(
    attempt: Callable[[], _T],
    stop: threading.Event,
    *,
    what: str,
    backoff: Backoff | None = None,
    on_error: Callable[[PodResourcesError], None] | None = None,
) -> _T | None:
    """``attempt()`` until it succeeds (its value) or ``stop`` is set (None)."""
    backoff = backoff or Backoff()
    failures = FailureLog(log)
    while not stop.is_set():
        try:
            value = attempt()
        except PodResourcesError as err:
            if on_error is not None:
                on_error(err)
            delay = backoff.next_delay()
            failures.failed(f"{what}: {err}", delay)
            stop.wait(delay)
            continue
        failures.recovered(what)
        backoff.reset()
        return value
    return None
