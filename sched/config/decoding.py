"""Strict decoding of component-config documents into plain values, with errors that name the field.

Upstream decodes ``KubeSchedulerConfiguration`` and plugin args with a strict codec:
an unknown field, a key given twice or a value of the wrong JSON type is an error.
These helpers do the same over the dicts and lists YAML gives, one field at a time:
each reader takes the object, the key and the JSON path of the object, returns None for
an absent or null field (Go leaves the zero value or a nil pointer), and raises
:class:`~nrop.sched.errors.ConfigError` worded like upstream's field errors
(``profiles[0].parallelism: Invalid value: "x": expected an integer``).  Plugin
``parse_args`` implementations use them too.  Pure but for :func:`read_document`.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from nrop.api.durations import parse_duration
from nrop.api.fielderrors import go_quote
from nrop.sched.errors import ConfigError

__all__ = [
    "child",
    "get_bool",
    "get_duration",
    "get_int",
    "get_list",
    "get_number",
    "get_str",
    "invalid",
    "read_document",
    "show",
    "struct",
]


def child(path: str, key: str) -> str:
    """The JSON path of a field of the object at ``path`` (``""`` is the document)."""
    return f"{path}.{key}" if path else key


def show(value: Any) -> str:
    """A bad value as upstream's field errors print it: strings quoted, numbers and booleans bare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return go_quote(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def invalid(path: str, value: Any, detail: str) -> ConfigError:
    """Upstream's ``field.Invalid``: ``<path>: Invalid value: <value>: <detail>``."""
    return ConfigError(path, f"Invalid value: {show(value)}: {detail}")


def struct(value: Any, path: str, fields: Sequence[str]) -> Mapping[str, Any]:
    """An object with only the given fields (strict decoding); null is the empty object."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise invalid(path, value, "expected an object")
    for key in value:
        if key not in fields:
            raise ConfigError(child(path, str(key)), f"unknown field; known fields: {', '.join(fields)}")
    return value


def get_list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    """A list field; absent or null is the empty list."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid(child(path, key), value, "expected a list")
    return value


def get_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise invalid(child(path, key), value, "expected a string")
    return value


def get_bool(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, bool):
        raise invalid(child(path, key), value, "expected true or false")
    return value


def get_int(obj: Mapping[str, Any], key: str, path: str, bits: int = 32) -> int | None:
    """An integer that fits Go's ``int32`` (or ``int64`` with ``bits=64``); 1.0 or "1" are not integers."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(child(path, key), value, "expected an integer")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise invalid(child(path, key), value, f"out of range for a {bits}-bit integer")
    return value


def get_number(obj: Mapping[str, Any], key: str, path: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(child(path, key), value, "expected a number")
    return float(value)


def get_duration(obj: Mapping[str, Any], key: str, path: str) -> float | None:
    """A ``metav1.Duration``: a Go duration string (``15s``, ``1m30s``, ``-2s``, ``0``), in seconds."""
    value = obj.get(key)
    if value is None:
        return None
    seconds = _parse_duration(value) if isinstance(value, str) else None
    if seconds is None:
        raise invalid(child(path, key), value, 'expected a duration such as "15s", "1m30s" or "500ms"')
    return seconds


def _parse_duration(text: str) -> float | None:
    try:
        return parse_duration(text)
    except ValueError:
        return None


def read_document(path: str | Path, what: str) -> Any:
    """The YAML (or ``.json``) document in a file; unreadable or malformed files name the file.

    Keys given twice in one mapping are errors, as with upstream's strict decoder.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError("", f"cannot read {what} {path}: {reason}") from exc
    try:
        if str(path).endswith(".json"):
            return json.loads(text, object_pairs_hook=_unique_keys)
        return yaml.load(text, Loader=_StrictLoader)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(
            "", f"{what} {path} is not valid {'JSON' if str(path).endswith('.json') else 'YAML'}: {exc}"
        ) from exc


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, but a key given twice in one mapping is an error (merge keys aside)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result
