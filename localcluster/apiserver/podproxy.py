"""``pods/proxy``: the API server forwards a request to a pod, as kube-apiserver's pod ``ResourceLocation``.

``/api/v1/namespaces/<ns>/pods/<id>/proxy/<path>`` where ``<id>`` is ``name``,
``name:port`` or ``scheme:name:port`` (scheme ``http`` or ``https``). Without a port
the first ``containerPort`` of the pod's containers is used. The request (method,
path, query, body and headers, minus hop-by-hop headers and the caller's credentials)
goes to the pod IP; the answer comes back as is, streamed. HTTPS targets are not
verified, like the API server's proxy transport.

Upstream refuses pod IPs that are not global unicast; the embedded cluster's pod IPs
are loopback addresses (``127.x.y.z``), so here any address is accepted. A pod that
cannot be reached gives ``503`` with ``error trying to reach service: ...``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from nrop.localcluster.apiserver import errors

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import StoreReads

__all__ = ["proxy_pod", "split_scheme_name_port"]

log = logging.getLogger(__name__)

_VALID_SCHEMES = ("", "http", "https")
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_CREDENTIALS = ("authorization", "impersonate-")
_CONNECT_TIMEOUT = 5.0


def split_scheme_name_port(text: str) -> tuple[str, str, str] | None:
    """``utilnet.SplitSchemeNamePort``: ``(scheme, name, port)``, or ``None`` when not valid."""
    parts = text.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in _VALID_SCHEMES:
        return None
    return scheme, name, port


def _pod_ip(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    ips = status.get("podIPs") or ()
    return str(ips[0].get("ip", "")) if ips else str(status.get("podIP") or "")


def _first_port(pod: dict[str, Any]) -> str:
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            return str(port.get("containerPort", ""))
    return ""


def _forwarded(headers: Any) -> dict[str, str]:
    return {
        key: value
        for key, value in headers.items()
        if key.lower() not in _HOP_BY_HOP and not key.lower().startswith(_CREDENTIALS)
    }


async def proxy_pod(
    store: StoreReads, request: web.Request, namespace: str, id_: str, rest_path: str
) -> web.StreamResponse:
    split = split_scheme_name_port(id_)
    if split is None:
        raise errors.BadRequest(f'invalid pod request "{id_}"')
    scheme, name, port = split
    pod = store.get(("", "pods"), namespace, name)
    if pod is None:
        raise errors.NotFound.for_object("pods", "", name)
    pod_ip = _pod_ip(pod)
    if not pod_ip:
        raise errors.BadRequest("address not allowed")
    port = port or _first_port(pod)
    host = f"{pod_ip}:{port}" if port else pod_ip
    url = f"{scheme or 'http'}://{host}/{rest_path}"
    if request.query_string:
        url += "?" + request.query_string
    body = await request.read()
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session:
        try:
            upstream = await session.request(
                request.method,
                url,
                headers=_forwarded(request.headers),
                data=body or None,
                allow_redirects=False,
                ssl=False,
            )
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            raise errors.ServiceUnavailable(f"error trying to reach service: {exc}") from None
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    response.headers.add(key, value)
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            except aiohttp.ClientError as exc:  # the pod went away mid-answer: end what was sent
                log.info("proxying to %s ended early: %s", url, exc)
            await response.write_eof()
            return response
