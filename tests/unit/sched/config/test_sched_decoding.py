"""Strict decoding helpers: Go durations, integer widths, value rendering in field errors."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.sched.config.decoding import get_duration, get_int, get_number, show, struct
from nrop.sched.errors import ConfigError

DURATIONS = {
    "seconds": ("15s", 15.0),
    "minutes and seconds": ("1m30s", 90.0),
    "hours": ("2h", 7200.0),
    "milliseconds": ("500ms", 0.5),
    "micro sign": ("250µs", 0.00025),
    "greek mu": ("250μs", 0.00025),
    "us": ("3us", 3e-6),
    "nanoseconds": ("10ns", 1e-8),
    "fraction": ("1.5s", 1.5),
    "leading dot": (".5s", 0.5),
    "trailing dot": ("5.s", 5.0),
    "bare zero": ("0", 0.0),
    "negative": ("-2s", -2.0),
    "explicit plus": ("+3s", 3.0),
}


@pytest.mark.parametrize(("text", "seconds"), DURATIONS.values(), ids=DURATIONS.keys())
def test_go_durations(text: str, seconds: float) -> None:
    assert get_duration({"d": text}, "d", "x") == pytest.approx(seconds)


BAD_DURATIONS = {
    "no unit": "10",
    "empty": "",
    "sign only": "-",
    "unknown unit": "3d",
    "spaces": "1 s",
    "dot only": ".s",
    "trailing garbage": "1s!",
    "a number": 15,
}


@pytest.mark.parametrize("value", BAD_DURATIONS.values(), ids=BAD_DURATIONS.keys())
def test_bad_durations_name_the_field(value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        get_duration({"d": value}, "d", "leaderElection")
    assert err.value.field == "leaderElection.d"
    assert err.value.detail.startswith(f"Invalid value: {show(value)}: expected a duration")


def test_absent_and_null_fields_are_none() -> None:
    assert get_duration({}, "d", "") is None
    assert get_int({"n": None}, "n", "") is None
    assert get_number({}, "q", "") is None


INTS = {
    "int32 max": (2**31 - 1, 32, None),
    "int32 overflow": (2**31, 32, "out of range for a 32-bit integer"),
    "int32 min": (-(2**31), 32, None),
    "int64 accepts beyond int32": (2**40, 64, None),
    "int64 overflow": (2**63, 64, "out of range for a 64-bit integer"),
    "a boolean is not an integer": (True, 32, "expected an integer"),
    "a float is not an integer": (1.0, 32, "expected an integer"),
}


@pytest.mark.parametrize(("value", "bits", "error"), INTS.values(), ids=INTS.keys())
def test_integer_widths(value: Any, bits: int, error: str | None) -> None:
    if error is None:
        assert get_int({"n": value}, "n", "", bits=bits) == value
        return
    with pytest.raises(ConfigError) as err:
        get_int({"n": value}, "n", "", bits=bits)
    assert err.value.field == "n"
    assert err.value.detail.endswith(error)


def test_numbers_accept_integers_but_not_booleans() -> None:
    assert get_number({"q": 5}, "q", "") == 5.0
    with pytest.raises(ConfigError):
        get_number({"q": False}, "q", "")


SHOWN = {
    "string": ("x", '"x"'),
    "null": (None, "null"),
    "boolean": (False, "false"),
    "integer": (3, "3"),
    "float": (1.5, "1.5"),
    "list": (["a", 1], '["a", 1]'),
    "object, keys sorted": ({"b": 1, "a": 2}, '{"a": 2, "b": 1}'),
}


@pytest.mark.parametrize(("value", "text"), SHOWN.values(), ids=SHOWN.keys())
def test_values_are_shown_as_upstream_prints_them(value: Any, text: str) -> None:
    assert show(value) == text


def test_struct_rejects_unknown_and_non_string_keys() -> None:
    assert struct(None, "p", ("a",)) == {}
    with pytest.raises(ConfigError) as err:
        struct({1: "x"}, "p", ("a",))
    assert (err.value.field, err.value.detail) == ("p.1", "unknown field; known fields: a")
    with pytest.raises(ConfigError) as err:
        struct("text", "p", ("a",))
    assert str(err.value) == 'p: Invalid value: "text": expected an object'
