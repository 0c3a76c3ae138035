"""Executing one container probe against a process container, as the kubelet's prober does.

Owns the I/O of a single probe (the decisions around it are :mod:`.probes`):

* ``httpGet``: a GET to ``scheme://host:port/path`` (host: the pod IP unless given) with
  ``User-Agent: kube-probe/<major.minor>`` and the probe's headers; redirects are not
  followed; a status from 200 to 399 succeeds; HTTPS does not verify certificates;
* ``tcpSocket``: a TCP connection opens;
* ``exec``: the command, resolved like the container's own command (an entry point of
  this distribution), runs with the container's environment and exits 0;
* ``grpc``: ``grpc.health.v1.Health/Check`` answers ``SERVING``.

Each has ``timeoutSeconds``; the result is ``(success, message)`` with a message shaped
like the kubelet's ``Unhealthy`` event text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc

from nrop.localcluster.apiserver.discovery import KUBE_MAJOR, KUBE_MINOR
from nrop.localcluster.kubelet.decisions.probes import (
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    ProbeError,
    ProbeSpec,
    TCPSocketAction,
    resolve_port,
)
from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor

__all__ = ["ProbeTarget", "run_probe"]

_HEALTH_CHECK = "/grpc.health.v1.Health/Check"
_SERVING = b"\x08\x01"  # HealthCheckResponse{status: SERVING}


@dataclass(frozen=True)
class ProbeTarget:
    """The container a probe runs against."""

    pod_ip: str
    ports: Sequence[Mapping[str, Any]]
    #: Builds the process of an ``exec`` probe's command, or says why it cannot run.
    exec_process: Callable[[tuple[str, ...]], ProcessSpec | str]
    supervisor: Supervisor


_USER_AGENT = f"kube-probe/{KUBE_MAJOR}.{KUBE_MINOR}"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


async def _http(action: HTTPGetAction, target: ProbeTarget, timeout: float) -> tuple[bool, str]:
    port = resolve_port(action.port, target.ports)
    host = action.host or target.pod_ip
    path = action.path if action.path.startswith("/") else "/" + action.path
    url = f"{action.scheme.lower()}://{host}:{port}{path}"
    headers = {"User-Agent": _USER_AGENT, "Accept": "*/*"}
    headers.update(dict(action.headers))
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(url, headers=headers, allow_redirects=False, ssl=False) as response,
        ):
            await response.read()
            if 200 <= response.status < 400:
                return True, ""
            return False, f"HTTP probe failed with statuscode: {response.status}"
    except TimeoutError:
        return (
            False,
            f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
        )
    except aiohttp.ClientError as exc:
        return False, f'Get "{url}": {exc}'


async def _tcp(action: TCPSocketAction, target: ProbeTarget, timeout: float) -> tuple[bool, str]:
    port = resolve_port(action.port, target.ports)
    host = action.host or target.pod_ip
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return False, f"dial tcp {host}:{port}: i/o timeout"
    except OSError as exc:
        return False, f"dial tcp {host}:{port}: connect: {exc.strerror or exc}"
    writer.close()
    await writer.wait_closed()
    return True, ""


async def _exec(action: ExecAction, target: ProbeTarget, timeout: float) -> tuple[bool, str]:
    spec = target.exec_process(action.command)
    if isinstance(spec, str):
        return False, spec
    try:
        code, output = await target.supervisor.run(spec, timeout)
    except OSError as exc:
        return False, str(exc)
    if code is None:
        return False, f"command {list(action.command)!r} timed out"
    if code == 0:
        return True, ""
    return False, output.strip() or f"command {list(action.command)!r} exited with {code}"


async def _grpc(action: GRPCAction, target: ProbeTarget, timeout: float) -> tuple[bool, str]:
    address = f"{target.pod_ip}:{action.port}"
    request = b""
    if action.service:
        encoded = action.service.encode()
        request = b"\x0a" + _varint(len(encoded)) + encoded  # HealthCheckRequest{service}
    async with grpc.aio.insecure_channel(address) as channel:
        check = channel.unary_unary(_HEALTH_CHECK)
        try:
            response = await check(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            return False, f"failed to connect service {address!r} within {timeout:g}s: {exc.code().name}"
    if response == _SERVING:
        return True, ""
    return False, f"service unhealthy (responded with {response!r})"


async def run_probe(spec: ProbeSpec, target: ProbeTarget) -> tuple[bool, str]:
    """Run ``spec`` once against ``target``."""
    action = spec.action
    try:
        if isinstance(action, HTTPGetAction):
            return await _http(action, target, spec.timeout)
        if isinstance(action, TCPSocketAction):
            return await _tcp(action, target, spec.timeout)
        if isinstance(action, ExecAction):
            return await _exec(action, target, spec.timeout)
        return await _grpc(action, target, spec.timeout)
    except ProbeError as exc:
        return False, str(exc)
