"""What every Table column source shares: the ``Name`` and ``Age`` cells.

Owns how a server-side Table prints time (apimachinery's ``HumanDuration`` ages,
``translateTimestampSince``, RFC 3339 parsing), the column-definition shape, and
nil-safe field access into plain JSON objects.  Both the built-in printers
(``printers``) and the CRD/default tables (``tables``) build on it; it is kept
apart so neither of those has to import the other's internals.  Pure: every
function takes the objects and an injected ``now``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from nrop.api import metatime

__all__ = [
    "AGE_DESCRIPTION",
    "NAME_DESCRIPTION",
    "Cell",
    "Obj",
    "RowFn",
    "column_definition",
    "format_age",
    "get_field",
    "human_duration",
    "list_field",
    "name_column",
    "object_age",
    "object_name",
    "parse_time",
    "translate_timestamp",
]

Obj = dict[str, Any]
Cell = Any
RowFn = Callable[[Obj, datetime], list[Cell]]

NAME_DESCRIPTION = "Name must be unique within a namespace. Cannot be updated."
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created."
)


# --------------------------------------------------------------------------- time


def human_duration(seconds_total: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ~2-3 significant figures."""
    seconds = int(seconds_total)  # truncates toward zero, like Go's int(d.Seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        sec = seconds % 60
        return f"{minutes}m" if sec == 0 else f"{minutes}m{sec}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        mins = minutes % 60
        return f"{hours}h" if mins == 0 else f"{hours}h{mins}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d" if rem == 0 else f"{hours // 24}d{rem}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def format_age(created: datetime, now: datetime) -> str:
    """The age of something created at ``created``, as kubectl's AGE column shows it."""
    return human_duration((_aware(now) - _aware(created)).total_seconds())


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 ``Time``/``MicroTime``; ``None`` when absent or unparsable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return metatime.parse_time(value)
    except ValueError:
        return None


def translate_timestamp(value: Any, now: datetime) -> str:
    """Upstream ``translateTimestampSince``: ``<unknown>`` for a missing (zero) time."""
    moment = parse_time(value)
    return "<unknown>" if moment is None else format_age(moment, now)


# --------------------------------------------------------------------------- helpers


def get_field(obj: Any, *path: str | int) -> Any:
    """``obj[path...]`` through dicts and list indices; ``None`` when anything is missing."""
    for key in path:
        if isinstance(key, int):
            obj = obj[key] if isinstance(obj, list) and -len(obj) <= key < len(obj) else None
        else:
            obj = obj.get(key) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def list_field(obj: Any, *path: str) -> list[Any]:
    """The list at ``path``; ``[]`` when missing or not a list."""
    value = get_field(obj, *path)
    return value if isinstance(value, list) else []


def column_definition(
    name: str, description: str, *, type_: str = "string", priority: int = 0, fmt: str = ""
) -> Obj:
    """One ``TableColumnDefinition``."""
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


def name_column() -> Obj:
    """The leading ``Name`` column every table has."""
    return column_definition("Name", NAME_DESCRIPTION, fmt="name")


def object_name(obj: Obj) -> str:
    """The ``Name`` cell."""
    return str(get_field(obj, "metadata", "name") or "")


def object_age(obj: Obj, now: datetime) -> str:
    """The ``Age`` cell."""
    return translate_timestamp(get_field(obj, "metadata", "creationTimestamp"), now)
