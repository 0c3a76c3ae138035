"""The Kubernetes REST API's shape, shared by the asyncio and the blocking client.

Owns what does not depend on how requests travel: a REST :class:`Resource` and its paths,
the well-known resources the components use, the :class:`PatchType` content types, query
values as the API server parses them (:func:`query`), and the one small hierarchy of
:class:`ApiError` that a failed request or a watch ``ERROR`` event becomes, carrying the
Kubernetes ``Status`` (:class:`ApiConnectionError` when no response came at all).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson

from nrop.api import nrt, reflector
from nrop.api.status import Status, generic_server_response

__all__ = [
    "EVENTS",
    "JSON",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "NRTS",
    "PODS",
    "ApiConnectionError",
    "ApiError",
    "ConflictError",
    "GoneError",
    "NotFoundError",
    "PatchType",
    "Resource",
    "error_from_response",
    "error_from_status",
    "query",
    "request_headers",
]

Obj = dict[str, Any]

# ------------------------------------------------------------------------------ errors


class ApiError(Exception):
    """A failed API request: HTTP ``status``, the Status ``reason`` and ``message``, the whole ``body``."""

    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body: Obj = body or {}

    @property
    def details(self) -> Obj:
        return self.body.get("details") or {}

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def expired(self) -> bool:
        """A resourceVersion or continue token too old to serve (410, ``Expired``/``Gone``)."""
        return reflector.expired(self.status, self.reason)


class NotFoundError(ApiError):
    """404: the object, or the resource itself (a CRD not installed yet)."""


class ConflictError(ApiError):
    """409: a stale resourceVersion, an existing name (``already_exists``), a pod already bound."""


class GoneError(ApiError):
    """410: the requested resourceVersion was compacted away; list again."""


class ApiConnectionError(ApiError):
    """No HTTP response: refused, reset, TLS failure or timeout (``status`` is 0)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "ConnectionError", message, {})


_BY_STATUS: dict[int, type[ApiError]] = {404: NotFoundError, 409: ConflictError, 410: GoneError}


def _error(status: Status, body: Mapping[str, Any]) -> ApiError:
    return _BY_STATUS.get(status.code, ApiError)(status.code, status.reason, status.message, dict(body))


def error_from_status(status_obj: Mapping[str, Any], http_status: int = 0) -> ApiError:
    """The typed error for a ``kind: Status`` body (from a response or a watch ``ERROR`` event)."""
    return _error(Status.from_dict(status_obj, http_status), status_obj)


def error_from_response(status: int, raw: bytes, what: str = "") -> ApiError:
    """The typed error for an HTTP error response; a body that is not a ``Status`` gets client-go's
    generic reason and message, ``what`` (``GET /api/v1/...``) naming the request after it."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return error_from_status(body, status)
    verb, _, path = what.partition(" ")
    generic = generic_server_response(status, verb, raw[:512].decode("utf-8", errors="replace").strip(), path)
    return _error(generic, generic.to_dict())


# ------------------------------------------------------------------------------ resources


@dataclass(frozen=True, slots=True)
class Resource:
    """A REST resource: group (``""`` for core), version, plural, and whether it lives in namespaces."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group}" if self.group else f"{self.plural}.{self.version}"


PODS = Resource("", "v1", "pods")
NODES = Resource("", "v1", "nodes", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases")
EVENTS = Resource("events.k8s.io", "v1", "events")
NRTS = Resource(nrt.GROUP, nrt.VERSION, nrt.PLURAL, namespaced=False)


class PatchType(enum.StrEnum):
    """Patch flavours (``PatchType("merge")`` works too) and the content type each is sent with."""

    JSON = "json"
    MERGE = "merge"
    STRATEGIC = "strategic"
    APPLY = "apply"

    @property
    def content_type(self) -> str:
        return _PATCH_CONTENT_TYPES[self]


_PATCH_CONTENT_TYPES = {
    PatchType.JSON: "application/json-patch+json",
    PatchType.MERGE: "application/merge-patch+json",
    PatchType.STRATEGIC: "application/strategic-merge-patch+json",
    PatchType.APPLY: "application/apply-patch+yaml",
}

JSON = "application/json"


def request_headers(user_agent: str, token: str, content_type: str | None) -> dict[str, str]:
    """Every request's headers: JSON accepted, the client's name, the bearer token when there is
    one, the body's content type when there is a body."""
    headers = {"Accept": JSON, "User-Agent": user_agent}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if content_type:
        headers["Content-Type"] = content_type
    return headers


def query(**params: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None or value == "":
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out
