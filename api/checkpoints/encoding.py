"""What the three checkpoint formats share: their errors, the checksum hash, Go's JSON output.

:class:`CheckpointError` (the content is not a checkpoint of that kind) and
:class:`CorruptCheckpointError` (the checksum does not match); Go's ``hash/fnv`` FNV-32a, which
each format runs over its go-spew rendering; ``encoding/json.Marshal``'s compact, HTML-escaped
output; and the decoding rules of ``encoding/json`` the formats' parsers share (a JSON object,
fields matched exactly then case-insensitively, integers that are not booleans, a uint32 checksum).
"""

from __future__ import annotations

import json
from typing import Any, Final

_UINT32_MAX: Final = 0xFFFFFFFF


class CheckpointError(ValueError):
    """The bytes are not a checkpoint of the expected kind; the text says which field is wrong."""


class CorruptCheckpointError(CheckpointError):
    """The checkpoint's checksum does not match its content (``checkpoint is corrupted``)."""


# --- shared encodings ------------------------------------------------------------------------


def fnv32a(data: bytes) -> int:
    """Go's ``hash/fnv`` 32-bit FNV-1a."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & _UINT32_MAX
    return value


def go_json(value: Any) -> str:
    """``encoding/json.Marshal``: compact, keys in the given order, non-ASCII kept, HTML characters escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def _parse_json_object(data: bytes | str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise CheckpointError(f"could not parse checkpoint: {exc}") from None
    if not isinstance(obj, dict):
        raise CheckpointError("could not parse checkpoint: not a JSON object")
    return obj


def _field(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    # encoding/json matches struct fields by exact name first, then case-insensitively.
    if name in obj:
        return True, obj[name]
    for key, value in obj.items():
        if key.lower() == name.lower():
            return True, value
    return False, None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checksum_field(value: Any) -> int:
    if value is None:
        return 0
    if not _is_int(value) or not 0 <= value <= _UINT32_MAX:
        raise CheckpointError("could not parse checkpoint: checksum must be a uint32")
    return value
