"""The Kubernetes JSONPath subset that CRD ``additionalPrinterColumns`` use.

A column's ``jsonPath`` (``.status.phase``, ``.spec.nodes[0]``,
``.status.conditions[?(@.type=="Ready")].status``,
``.metadata.labels['app.kubernetes.io/name']``) is evaluated by the API server
for every row of a Table.  This module parses such an expression once
(cached) and evaluates it over plain JSON data, with client-go's
``AllowMissingKeys(true)`` semantics: a missing key or an index out of range
yields no value instead of an error.

Supported: ``$`` root, ``{...}`` template braces, ``.field`` (``\\.`` escapes a
dot), ``.*``, ``..field`` (recursive descent), ``[N]`` (negative counts from
the end), ``[start:end:step]``, ``[*]``, ``['key']`` / ``["key"]`` and filters
``[?(@.path)]`` / ``[?(@.path OP literal)]`` with ``== != < <= > >=``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["JSONPathError", "jsonpath_values", "parse_jsonpath"]


class JSONPathError(ValueError):
    """The expression is outside the supported JSONPath subset."""


@dataclass(frozen=True)
class _Field:
    name: str


@dataclass(frozen=True)
class _Wildcard:
    pass


@dataclass(frozen=True)
class _Recursive:
    pass


@dataclass(frozen=True)
class _Slice:
    start: int | None
    end: int | None
    step: int | None
    single: bool  # ``[N]``: one element, not a slice


@dataclass(frozen=True)
class _Filter:
    path: tuple[_Step, ...]
    op: str  # "" means "the path exists"
    literal: str | float | bool | None


_Step = _Field | _Wildcard | _Recursive | _Slice | _Filter

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_FILTER_RE = re.compile(r"^\?\(\s*@(?P<path>[^=!<>\s]*)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*\)$")


def parse_jsonpath(expr: str) -> tuple[_Step, ...]:
    """Parse ``expr`` into steps; raises ``JSONPathError`` when unsupported."""
    return _parse_cached(expr.strip())


@functools.lru_cache(maxsize=512)
def _parse_cached(expr: str) -> tuple[_Step, ...]:
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1].strip()
    if expr.startswith("$"):
        expr = expr[1:]
    if not expr:
        raise JSONPathError("empty JSONPath expression")
    if not expr.startswith((".", "[")):
        raise JSONPathError(f"JSONPath {expr!r} must start with '.' or '['")
    return _parse_steps(expr)


def _parse_steps(expr: str) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    i, n = 0, len(expr)
    while i < n:
        ch = expr[i]
        if ch == ".":
            if expr.startswith("..", i):
                steps.append(_Recursive())
                i += 2
            else:
                i += 1
            if i < n and expr[i] == "*":
                steps.append(_Wildcard())
                i += 1
                continue
            if i < n and expr[i] == "[":
                continue
            name, i = _read_name(expr, i)
            if not name:
                raise JSONPathError(f"empty field name at offset {i} in {expr!r}")
            steps.append(_Field(name))
        elif ch == "[":
            end = _matching_bracket(expr, i)
            steps.append(_parse_bracket(expr[i + 1 : end].strip(), expr))
            i = end + 1
        else:
            raise JSONPathError(f"unexpected {ch!r} at offset {i} in {expr!r}")
    return tuple(steps)


def _read_name(expr: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(expr):
        ch = expr[i]
        if ch == "\\" and i + 1 < len(expr):
            out.append(expr[i + 1])
            i += 2
            continue
        if ch in ".[":
            break
        out.append(ch)
        i += 1
    return "".join(out), i


def _matching_bracket(expr: str, start: int) -> int:
    depth, quote = 0, ""
    for j in range(start, len(expr)):
        ch = expr[j]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return j
    raise JSONPathError(f"unclosed '[' at offset {start} in {expr!r}")


def _parse_bracket(inner: str, expr: str) -> _Step:
    if inner == "*":
        return _Wildcard()
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return _Field(inner[1:-1])
    if inner.startswith("?"):
        match = _FILTER_RE.fullmatch(inner)
        if match is None:
            raise JSONPathError(f"unsupported filter [{inner}] in {expr!r}")
        path = _parse_steps(match["path"]) if match["path"] else ()
        op = match["op"] or ""
        literal = _parse_literal(match["lit"], expr) if op else None
        return _Filter(path, op, literal)
    try:
        if ":" in inner:
            parts = [p.strip() for p in inner.split(":")]
            if len(parts) > 3:
                raise ValueError(inner)
            nums = [int(p) if p else None for p in parts] + [None] * (3 - len(parts))
            return _Slice(nums[0], nums[1], nums[2], single=False)
        return _Slice(int(inner), None, None, single=True)
    except ValueError as exc:
        raise JSONPathError(f"unsupported subscript [{inner}] in {expr!r}") from exc


def _parse_literal(text: str, expr: str) -> str | float | bool | None:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    try:
        return float(text)
    except ValueError as exc:
        raise JSONPathError(f"unsupported filter literal {text!r} in {expr!r}") from exc


def jsonpath_values(obj: Any, expr: str) -> list[Any]:
    """Every value ``expr`` selects in ``obj`` (possibly none), in document order."""
    return _evaluate(obj, parse_jsonpath(expr))


def _evaluate(obj: Any, steps: tuple[_Step, ...]) -> list[Any]:
    current = [obj]
    for step in steps:
        nxt: list[Any] = []
        for value in current:
            nxt.extend(_apply(step, value))
        current = nxt
    return current


def _apply(step: _Step, value: Any) -> list[Any]:
    if isinstance(step, _Field):
        return [value[step.name]] if isinstance(value, dict) and step.name in value else []
    if isinstance(step, _Wildcard):
        if isinstance(value, dict):
            return [value[k] for k in sorted(value)]
        return list(value) if isinstance(value, list) else []
    if isinstance(step, _Recursive):
        return _descendants(value)
    if not isinstance(value, list):
        return []
    if isinstance(step, _Slice):
        if step.single:
            index = step.start if step.start is not None else 0
            return [value[index]] if -len(value) <= index < len(value) else []
        return value[step.start : step.end : step.step]
    return [item for item in value if _matches(step, item)]


def _descendants(value: Any) -> list[Any]:
    out = [value]
    children = (
        [value[k] for k in sorted(value)]
        if isinstance(value, dict)
        else value
        if isinstance(value, list)
        else []
    )
    for child in children:
        out.extend(_descendants(child))
    return out


def _matches(flt: _Filter, item: Any) -> bool:
    found = _evaluate(item, flt.path)
    if not flt.op:
        return bool(found)
    if not found:
        return False
    left, right = found[0], flt.literal
    if isinstance(right, float) and isinstance(left, int | float) and not isinstance(left, bool):
        pair: tuple[Any, Any] = (float(left), right)
    elif type(left) is type(right) or (left is None and right is None):
        pair = (left, right)
    else:
        return flt.op == "!="
    a, b = pair
    if flt.op not in ("==", "!=") and (a is None or isinstance(a, bool)):
        return False
    return bool(_COMPARE[flt.op](a, b))
