"""The API server's error hierarchy: every error carries the Kubernetes ``Status`` it serialises to
(the body is :class:`nrop.api.status.Status`, one copy for server and clients).

Handlers raise these classes; the HTTP layer turns them into a ``kind: Status``
body with the same code, reason, message and details the upstream API server
would send (apimachinery ``pkg/api/errors``).  Pure modules raise them too, so
a selector parse error or a schema violation reaches the client unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from nrop.api.status import Cause, Status


class StatusError(Exception):
    """A failed request, rendered as a ``Status`` with ``code``, ``reason`` and ``details``."""

    code = 500
    reason = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        name: str = "",
        group: str = "",
        kind: str = "",
        causes: list[Cause] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.causes = causes or []
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        return Status(
            code=self.code,
            reason=self.reason,
            message=self.message,
            name=self.name,
            group=self.group,
            kind=self.kind,
            causes=tuple(self.causes),
            retry_after=self.retry_after,
        ).to_dict()


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``widgets.example.com``: how upstream names a group-resource in messages."""
    return f"{resource}.{group}" if group else resource


class BadRequest(StatusError):
    code = 400
    reason = "BadRequest"


class Unauthorized(StatusError):
    code = 401
    reason = "Unauthorized"


class Forbidden(StatusError):
    code = 403
    reason = "Forbidden"

    @classmethod
    def for_object(cls, resource: str, group: str, name: str, why: str) -> Forbidden:
        gr = qualified(resource, group)
        subject = f'{gr} "{name}"' if name else gr
        return cls(f"{subject} is forbidden: {why}", name=name, group=group, kind=resource)


class NotFound(StatusError):
    code = 404
    reason = "NotFound"

    @classmethod
    def for_object(cls, resource: str, group: str, name: str) -> NotFound:
        return cls(
            f'{qualified(resource, group)} "{name}" not found',
            name=name,
            group=group,
            kind=resource,
        )

    @classmethod
    def unknown_path(cls) -> NotFound:
        return cls("the server could not find the requested resource")


class MethodNotAllowed(StatusError):
    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(StatusError):
    code = 406
    reason = "NotAcceptable"


class AlreadyExists(StatusError):
    code = 409
    reason = "AlreadyExists"

    @classmethod
    def for_object(cls, resource: str, group: str, name: str) -> AlreadyExists:
        return cls(
            f'{qualified(resource, group)} "{name}" already exists',
            name=name,
            group=group,
            kind=resource,
        )


class Conflict(StatusError):
    code = 409
    reason = "Conflict"

    @classmethod
    def modified(cls, resource: str, group: str, name: str) -> Conflict:
        return cls(
            f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": '
            "the object has been modified; please apply your changes to the latest "
            "version and try again",
            name=name,
            group=group,
            kind=resource,
        )


class Gone(StatusError):
    code = 410
    reason = "Expired"


class RequestEntityTooLarge(StatusError):
    code = 413
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(StatusError):
    code = 415
    reason = "UnsupportedMediaType"


class Invalid(StatusError):
    """422: ``<Kind>[.<group>] "name" is invalid: field: Type: detail, …`` with one cause per field."""

    code = 422
    reason = "Invalid"

    @classmethod
    def for_fields(cls, kind: str, group: str, name: str, causes: list[Cause]) -> Invalid:
        qualified_kind = f"{kind}.{group}" if group else kind
        if len(causes) == 1:
            detail = cause_text(causes[0])
        else:
            detail = "[" + ", ".join(cause_text(c) for c in causes) + "]"
        return cls(
            f'{qualified_kind} "{name}" is invalid: {detail}',
            name=name,
            group=group,
            kind=kind,
            causes=causes,
        )


def cause_text(cause: Cause) -> str:
    return f"{cause.field}: {cause.message}" if cause.field else cause.message


class TooManyRequests(StatusError):
    code = 429
    reason = "TooManyRequests"


class InternalError(StatusError):
    code = 500
    reason = "InternalError"


class ServiceUnavailable(StatusError):
    code = 503
    reason = "ServiceUnavailable"


class ServerTimeout(StatusError):
    code = 504
    reason = "Timeout"


# Messages of field causes, shaped like apimachinery's field.Error.Error().
def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {render(value)}: {detail}", path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def not_supported(path: str, value: Any, allowed: list[Any]) -> Cause:
    listed = ", ".join(render(a) for a in allowed)
    return Cause(
        "FieldValueNotSupported", f"Unsupported value: {render(value)}: supported values: {listed}", path
    )


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {render(value)}", path)


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {limit} bytes", path)


def too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", path)


def type_invalid(path: str, actual_type: str, expected: str) -> Cause:
    """A schema type mismatch, as apiextensions reports it (``spec.x in body must be of type …``)."""
    message = f'Invalid value: "{actual_type}": {path} in body must be of type {expected}: "{actual_type}"'
    return Cause("FieldValueTypeInvalid", message, path)


def go_number(value: float | int) -> str:
    """Numbers as Go's ``%v`` prints them: ``10`` not ``10.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def render(value: Any) -> str:
    """A bad value as apimachinery's field errors print it (scalars plain, compounds as JSON)."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return go_number(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
