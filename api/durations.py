"""Go durations (``time.ParseDuration`` / ``Duration.String``): ``10s``, ``1m30s``, ``500ms``, ``-1.5h``, ``0``.

The one copy of the rule for everything that reads or writes ``metav1.Duration`` values and
Go-style duration flags: the exporter's flags, the operator's CR fields, the scheduler's
configuration and the suite's ``E2E_NROP_*`` timeouts. Errors carry Go's texts
(``time: invalid duration "soon"``, ``time: missing unit in duration "10"``). Pure.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["format_duration", "parse_duration"]

_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_NUMBER: Final = re.compile(r"[0-9]*(?:\.[0-9]*)?")
_UNIT: Final = re.compile(r"[^0-9.]*")


def parse_duration(text: str) -> float:
    """Seconds of a Go duration string; ``ValueError`` with Go's message when it is not one."""
    quoted = f'"{text}"'
    value = text
    sign = 1.0
    if value[:1] in ("+", "-"):
        sign, value = (-1.0 if value[0] == "-" else 1.0), value[1:]
    if value == "0":
        return 0.0
    if not value:
        raise ValueError(f"time: invalid duration {quoted}")
    total, pos = 0.0, 0
    while pos < len(value):
        number = _NUMBER.match(value, pos)
        digits = number.group() if number else ""
        if digits in ("", "."):
            raise ValueError(f"time: invalid duration {quoted}")
        pos += len(digits)
        unit_match = _UNIT.match(value, pos)
        unit = unit_match.group() if unit_match else ""
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration {quoted}')
        total += float(digits) * _UNITS[unit]
        pos += len(unit)
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String``: ``0s``, ``500ms``, ``1.5s``, ``1m0s``, ``1h0m0s``."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(nanos / size) + unit
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _trim(rest / 1e9) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".") or "0"
