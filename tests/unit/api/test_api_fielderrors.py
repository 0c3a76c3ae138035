"""Field errors as apimachinery prints them (``nrop.api.fielderrors``)."""

from __future__ import annotations

import pytest

from nrop.api.fielderrors import (
    ErrorType,
    FieldError,
    forbidden,
    go_quote,
    go_struct,
    invalid,
    not_supported,
    required,
)
from nrop.api.selectors import dns1123_subdomain_errors


@pytest.mark.parametrize(
    ("error", "reason", "text"),
    [
        pytest.param(required("a.b"), "FieldValueRequired", "a.b: Required value", id="required-bare"),
        pytest.param(required("a.b", "why"), "FieldValueRequired", "a.b: Required value: why", id="required"),
        pytest.param(forbidden("a", "no"), "FieldValueForbidden", "a: Forbidden: no", id="forbidden"),
        pytest.param(
            invalid("a", "v", "bad"), "FieldValueInvalid", 'a: Invalid value: "v": bad', id="invalid-string"
        ),
        pytest.param(
            invalid("w", 0, "range"), "FieldValueInvalid", "w: Invalid value: 0: range", id="invalid-int"
        ),
        pytest.param(
            not_supported("op", "Maybe", ["Equal", "Exists"]),
            "FieldValueNotSupported",
            'op: Unsupported value: "Maybe": supported values: "Equal", "Exists"',
            id="not-supported-keeps-order",
        ),
        pytest.param(
            FieldError(
                ErrorType.INVALID,
                "t",
                "detail",
                go_struct("core.T", [("A", go_quote("x")), ("B", "(*int64)(nil)")]),
            ),
            "FieldValueInvalid",
            't: Invalid value: core.T{A:"x", B:(*int64)(nil)}: detail',
            id="invalid-struct",
        ),
    ],
)
def test_field_errors_print_like_apimachinery(error: FieldError, reason: str, text: str) -> None:
    assert (error.reason, str(error)) == (reason, text)
    assert str(error) == f"{error.field}: {error.body()}"


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        pytest.param("plain", '"plain"', id="plain"),
        pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote-and-backslash"),
        pytest.param("a\nb\tc", '"a\\nb\\tc"', id="newline-tab"),
        pytest.param("\x01", '"\\x01"', id="control"),
        pytest.param("\a\b\f\v\r", '"\\a\\b\\f\\v\\r"', id="letter-escapes"),
        pytest.param("\x7f\x85\u00a0", '"\\x7f\\u0085\\u00a0"', id="delete-c1-nbsp"),
        pytest.param("é", '"é"', id="printable-unicode-kept"),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("value", "count"),
    [
        pytest.param("worker-0", 0, id="valid"),
        pytest.param("Worker_0", 1, id="bad-characters"),
        pytest.param("a" * 254, 1, id="too-long"),
        pytest.param("-" * 254, 2, id="too-long-and-bad"),
    ],
)
def test_dns1123_subdomain_errors(value: str, count: int) -> None:
    assert len(dns1123_subdomain_errors(value)) == count
