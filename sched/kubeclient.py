"""The scheduler's Kubernetes client: asyncio, one aiohttp connection pool, orjson, typed errors.

Owns talking to an API server from an event loop: requests on the paths of a
:class:`~nrop.api.restapi.Resource`, bearer tokens and TLS from a
:class:`~nrop.api.clientconfig.ClientConfig` read once, the client-side QPS/burst limit
(:mod:`nrop.sched.config.ratelimit`), reading responses, and translating failures at the
edge into :mod:`nrop.api.restapi`'s errors, which carry the Kubernetes ``Status``.

It is lean on purpose (the scheduler binds 100+ pods/s): no discovery, no models,
bodies are plain dicts.  Watches are async iterators of ``(type, object)`` whose
``ERROR`` events are raised as :class:`ApiError` (a 410 as :class:`GoneError`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from nrop.api.clientconfig import ClientConfig, TokenSource
from nrop.api.restapi import (
    JSON,
    PODS,
    ApiConnectionError,
    GoneError,
    PatchType,
    Resource,
    error_from_response,
    error_from_status,
    query,
    request_headers,
)
from nrop.sched.config.ratelimit import DEFAULT_SCHEDULER_RATE_LIMIT, RateLimit, TokenBucket

__all__ = ["KubeClient"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# ------------------------------------------------------------------------------ the client


class _Transport:
    """What clients derived from one another share: the configuration, the token and the session."""

    def __init__(self, config: ClientConfig, clock: Callable[[], float], user_agent: str) -> None:
        self.config = config
        self.tokens = TokenSource(config, clock=clock)
        self.user_agent = user_agent
        # Built here, not at the first request, so that a bad certificate fails the construction.
        self._ssl = config.ssl_context()
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl or False, limit=100)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    def headers(self, content_type: str | None) -> dict[str, str]:
        return request_headers(self.user_agent, self.tokens.token(), content_type)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class KubeClient:
    """An asyncio client of one API server; create it anywhere, use and ``close()`` it in one event loop.

    ``rate_limit=None`` disables client-side throttling.  :meth:`with_rate_limit` gives a
    client with its own token bucket on the same connection pool (kube-scheduler writes
    events through a second client so that they never eat into the binding budget).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        rate_limit: RateLimit | None = DEFAULT_SCHEDULER_RATE_LIMIT,
        clock: Callable[[], float] = time.monotonic,
        request_timeout: float = 30.0,
        user_agent: str = "nrop-scheduler",
        _transport: _Transport | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._transport = _transport or _Transport(config, clock, user_agent)
        self._owner = _transport is None
        self._bucket = TokenBucket(rate_limit, clock()) if rate_limit is not None else None
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)
        self._base = config.server.rstrip("/")

    def with_rate_limit(self, rate_limit: RateLimit | None) -> KubeClient:
        """A client sharing this one's session and token but throttled by its own bucket."""
        return KubeClient(self.config, rate_limit=rate_limit, clock=self._clock, _transport=self._transport)

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection pool (only the client that created it owns it)."""
        if self._owner:
            await self._transport.close()

    # -- plumbing

    async def _throttle(self) -> None:
        if self._bucket is not None:
            delay = self._bucket.reserve(self._clock())
            if delay > 0:
                await asyncio.sleep(delay)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Any:
        """One request; returns the decoded JSON body (``None`` if empty), raises :class:`ApiError`."""
        await self._throttle()
        data = orjson.dumps(body) if body is not None else None
        headers = self._transport.headers(content_type if data is not None else None)
        what = f"{method} {path}"
        try:
            async with self._transport.session().request(
                method, self._base + path, params=params, data=data, headers=headers, timeout=self._timeout
            ) as response:
                raw = await response.read()
                status = response.status
        except aiohttp.ClientError as exc:
            raise ApiConnectionError(f"{what}: {exc or type(exc).__name__}") from exc
        except TimeoutError as exc:
            raise ApiConnectionError(f"{what}: timed out after {self._timeout.total}s") from exc
        if status >= 400:
            raise error_from_response(status, raw, what)
        return orjson.loads(raw) if raw else None

    @staticmethod
    def _namespace_of(
        resource: Resource, namespace: str | None, body: Mapping[str, Any] | None = None
    ) -> str | None:
        if not resource.namespaced:
            return None
        ns = namespace or ((body or {}).get("metadata") or {}).get("namespace")
        if not ns:
            raise ValueError(f"{resource}: namespace: Required value (the resource is namespaced)")
        return str(ns)

    # -- verbs

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        return await self.request("GET", resource.path(self._namespace_of(resource, namespace), name))

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int | None = None,
    ) -> Obj:
        """Every matching object (all namespaces when ``namespace`` is None), as one list.

        With ``page_size`` the list is read in pages of that many items (``limit`` and
        ``continue``, all from one snapshot); if the snapshot expires between pages, the
        list is read again in one piece, as client-go's pager does.
        """
        path = resource.path(namespace)
        base = query(labelSelector=label_selector, fieldSelector=field_selector)
        if not page_size:
            return await self.request("GET", path, params=base)
        items: list[Obj] = []
        token = ""
        while True:
            try:
                page = await self.request(
                    "GET", path, params={**base, **query(limit=page_size, **{"continue": token})}
                )
            except GoneError:
                if not token:
                    raise
                log.info(
                    "listing %s: continue token expired after %d items; listing in one piece",
                    resource,
                    len(items),
                )
                return await self.request("GET", path, params=base)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                page["items"] = items
                page.setdefault("metadata", {}).pop("continue", None)
                return page

    async def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        return await self.request(
            "POST", resource.path(self._namespace_of(resource, namespace, body)), body=body
        )

    async def update(
        self, resource: Resource, body: Obj, namespace: str | None = None, *, subresource: str | None = None
    ) -> Obj:
        """PUT the whole object; its ``metadata.resourceVersion`` makes it conditional (409 if stale)."""
        name = (body.get("metadata") or {}).get("name")
        if not name:
            raise ValueError(f"{resource}: metadata.name: Required value")
        path = resource.path(self._namespace_of(resource, namespace, body), name, subresource)
        return await self.request("PUT", path, body=body)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType | str = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Obj:
        """PATCH with a JSON, merge, strategic-merge or apply body (apply needs ``field_manager``)."""
        try:
            kind = PatchType(patch_type)
        except ValueError:
            supported = ", ".join(p.value for p in PatchType)
            raise ValueError(
                f"patch_type: Unsupported value: {patch_type!r}: supported values: {supported}"
            ) from None
        if kind is PatchType.APPLY and not field_manager:
            raise ValueError("field_manager: Required value for an apply patch")
        path = resource.path(self._namespace_of(resource, namespace), name, subresource)
        params = query(fieldManager=field_manager, force=force)
        return await self.request("PATCH", path, params=params, body=patch, content_type=kind.content_type)

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType | str = PatchType.MERGE,
    ) -> Obj:
        return await self.patch(resource, name, patch, namespace, patch_type=patch_type, subresource="status")

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Obj:
        params = query(gracePeriodSeconds=grace_period_seconds, propagationPolicy=propagation_policy)
        path = resource.path(self._namespace_of(resource, namespace), name)
        return await self.request("DELETE", path, params=params)

    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        """Assign ``pod`` to ``node`` through ``pods/<name>/binding`` (as the upstream DefaultBinder)."""
        meta = pod.get("metadata") or {}
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "target": {"kind": "Node", "name": node},
        }
        path = PODS.path(self._namespace_of(PODS, meta.get("namespace")), meta.get("name"), "binding")
        await self.request("POST", path, body=binding)

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
    ) -> AsyncIterator[tuple[str, Obj]]:
        """``(type, object)`` for each change after ``resource_version`` until the server ends the stream.

        ``BOOKMARK`` events are passed through (their object carries only the
        resourceVersion); an ``ERROR`` event is raised as the matching :class:`ApiError`.
        """
        params = query(
            watch=True,
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            allowWatchBookmarks=allow_bookmarks or None,
            timeoutSeconds=timeout_seconds,
        )
        path = resource.path(namespace)
        what = f"watch {path}"
        await self._throttle()
        # No overall timeout: the server ends the stream (timeoutSeconds); connecting is bounded.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout.total)
        try:
            response = await self._transport.session().get(
                self._base + path, params=params, headers=self._transport.headers(None), timeout=timeout
            )
        except aiohttp.ClientError as exc:
            raise ApiConnectionError(f"{what}: {exc or type(exc).__name__}") from exc
        except TimeoutError as exc:
            raise ApiConnectionError(f"{what}: timed out connecting") from exc
        try:
            if response.status >= 400:
                raise error_from_response(response.status, await response.read(), what)
            buffer = bytearray()
            async for chunk in response.content.iter_any():
                buffer.extend(chunk)
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    kind, obj = event.get("type", ""), event.get("object") or {}
                    if kind == "ERROR":
                        raise error_from_status(obj)
                    yield kind, obj
        except aiohttp.ClientError as exc:
            raise ApiConnectionError(f"{what}: stream broken: {exc or type(exc).__name__}") from exc
        except orjson.JSONDecodeError as exc:
            raise ApiConnectionError(f"{what}: undecodable event: {exc}") from exc
        finally:
            response.close()
