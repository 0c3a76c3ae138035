"""The Kubernetes ``Status`` object (apimachinery ``metav1.Status`` and ``pkg/api/errors``).

One copy of its shape for both sides of the API: the embedded API server renders every
failure as a :class:`Status` (``to_dict``), and clients read one back (``from_dict``). A
response that is not a ``Status`` (a proxy's HTML page, an empty 500) gets the reason and
message client-go gives it (:func:`generic_server_response`, upstream's
``NewGenericServerResponse``), with the body kept as an ``UnexpectedServerResponse`` cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from nrop.api.fielderrors import go_quote

__all__ = ["UNEXPECTED_SERVER_RESPONSE", "Cause", "Status", "generic_server_response"]

#: The cause type of a response body that was not a ``Status``.
UNEXPECTED_SERVER_RESPONSE: Final = "UnexpectedServerResponse"


@dataclass(frozen=True)
class Cause:
    """One entry of ``details.causes`` (``metav1.StatusCause``): which field failed, and why.

    ``reason`` is the cause type (``FieldValueInvalid`` …); JSON names it ``reason``."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> Cause:
        return cls(
            str(body.get("reason") or ""), str(body.get("message") or ""), str(body.get("field") or "")
        )


@dataclass(frozen=True)
class Status:
    """A failed request: ``code``, ``reason``, ``message`` and the ``details`` (the object's
    name, group and kind — the resource, as upstream fills it —, causes, retry delay)."""

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: tuple[Cause, ...] = ()
    retry_after: int | None = None

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            body["details"] = details
        return body

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], http_status: int = 0) -> Status:
        """A ``kind: Status`` body (a response or a watch ``ERROR`` event); what it leaves out
        comes from ``http_status`` and the generic response for that code."""
        code = int(body.get("code") or http_status or 500)
        reason = str(body.get("reason") or generic_server_response(code, "", "").reason)
        details = body.get("details") or {}
        retry = details.get("retryAfterSeconds")
        return cls(
            code=code,
            reason=reason,
            message=str(body.get("message") or reason),
            name=str(details.get("name") or ""),
            group=str(details.get("group") or ""),
            kind=str(details.get("kind") or ""),
            causes=tuple(Cause.from_dict(c) for c in details.get("causes") or () if isinstance(c, Mapping)),
            retry_after=None if retry is None else int(retry),
        )


#: code → (reason, message) of ``NewGenericServerResponse``; 403, 406 and 415 keep the server's message.
_GENERIC: Final[dict[int, tuple[str, str | None]]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", None),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable", None),
    409: ("Conflict", "the server reported a conflict"),
    415: ("UnsupportedMediaType", None),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be processing the request",
    ),
}


def generic_server_response(code: int, verb: str, server_message: str, resource: str = "") -> Status:
    """The Status a client makes of a response with ``code`` that is not a ``Status``
    (``NewGenericServerResponse``): a 409 to a POST is ``AlreadyExists``; ``resource`` (what
    was requested) is named after the message as ``(<verb> <resource>)``."""
    reason, message = (
        "Unknown",
        f"the server responded with the status code {code} but did not return more information",
    )
    if code in _GENERIC:
        reason, known = _GENERIC[code]
        message = server_message if known is None else known
        if code == 409 and verb.upper() == "POST":
            reason = "AlreadyExists"
    elif code >= 500:
        reason = "InternalError"
        message = (
            f"an error on the server ({go_quote(server_message)}) has prevented the request from succeeding"
        )
    if resource:
        message = f"{message} ({verb.lower()} {resource})"
    return Status(
        code=code, reason=reason, message=message, causes=(Cause(UNEXPECTED_SERVER_RESPONSE, server_message),)
    )
