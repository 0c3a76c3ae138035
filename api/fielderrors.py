"""Field errors as apimachinery's ``field.Error`` builds and prints them, for the pure rules of ``api/``.

The validation rules that mirror ``pkg/apis/core/validation`` (node affinity, tolerations)
return :class:`FieldError` values: the error type, the field path, the bad value already
rendered the way ``ErrorBody`` renders it, and the detail. The API server turns them into
``Invalid`` Status causes (``reason`` and ``message``); other callers print them with
``str()``, which is ``field.Error.Error()``.

Bad values render as upstream's ``ErrorBody`` does: strings with Go's ``%q``, integers
plainly, and a struct as the caller renders it (see :func:`go_struct`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ErrorType",
    "FieldError",
    "forbidden",
    "go_quote",
    "go_struct",
    "invalid",
    "not_supported",
    "required",
]


class ErrorType(enum.StrEnum):
    """The ``field.ErrorType`` values these rules produce, with their ``String()``."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    FORBIDDEN = "FieldValueForbidden"
    NOT_SUPPORTED = "FieldValueNotSupported"

    @property
    def text(self) -> str:
        return _TEXTS[self]


_TEXTS = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
}


@dataclass(frozen=True)
class FieldError:
    """One ``field.Error``: ``value`` is the bad value as rendered (empty for Required/Forbidden)."""

    type: ErrorType
    field: str
    detail: str = ""
    value: str = ""

    @property
    def reason(self) -> str:
        """The Status cause's ``reason`` (``FieldValueInvalid``, ...)."""
        return self.type.value

    def body(self) -> str:
        """``ErrorBody()``: the message without the field, the Status cause's ``message``."""
        text = self.type.text
        if self.type in (ErrorType.INVALID, ErrorType.NOT_SUPPORTED):
            text += f": {self.value}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


#: The control characters strconv.Quote writes as a letter escape; the others are ``\xNN``.
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q``) for the characters label keys and values may hold."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif not char.isprintable():
            code = ord(char)
            out.append(
                f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def go_struct(type_name: str, fields: Iterable[tuple[str, str]]) -> str:
    """A struct as Go's ``%#v`` prints it: ``pkg.Type{A:"x", B:(*int64)(nil)}``; values pre-rendered."""
    return type_name + "{" + ", ".join(f"{name}:{value}" for name, value in fields) + "}"


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, detail)


def invalid(field: str, value: str | int, detail: str) -> FieldError:
    """``field.Invalid`` with a string (quoted) or integer value; see :func:`go_struct` for structs."""
    rendered = go_quote(value) if isinstance(value, str) else str(value)
    return FieldError(ErrorType.INVALID, field, detail, rendered)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, field, detail)


def not_supported(field: str, value: str, supported: Iterable[str]) -> FieldError:
    """``field.NotSupported``: the supported values listed in the order given (upstream does not sort)."""
    listed = ", ".join(go_quote(s) for s in supported)
    return FieldError(
        ErrorType.NOT_SUPPORTED, field, f"supported values: {listed}" if listed else "", go_quote(value)
    )
