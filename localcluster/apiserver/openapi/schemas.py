"""The ``components.schemas`` of the OpenAPI v3 documents, for built-in kinds.

Built-in kinds' schemas come from the kubernetes-validate JSON-Schema
definitions; this converts them to OpenAPI 3.0 Schema Objects (``$defs`` refs
become ``#/components/schemas/`` refs, JSON-Schema-only keywords are dropped,
type lists become ``nullable``/``anyOf``) and finds the closure of definitions
a document must carry for its roots.  ``openapi`` builds the paths and
operations around them.  Pure; both the conversions and the closures are
memoised per ``Definitions`` instance because kubectl asks for the documents on
every ``apply``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nrop.localcluster.apiserver.openapi.definitions import Definitions

__all__ = ["COMPONENTS_REF", "closure", "converted_definition"]

_JS_REF = "#/$defs/"
COMPONENTS_REF = "#/components/schemas/"

# The OpenAPI 3.0 Schema Object's keywords; anything else that is not an
# ``x-`` extension is JSON-Schema-only and is dropped.
_OA_KEYWORD_TEXT = (
    "title multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern "
    "maxItems minItems uniqueItems maxProperties minProperties required enum type allOf oneOf anyOf not "
    "items properties additionalProperties description format default nullable readOnly writeOnly "
    "externalDocs example deprecated $ref"
)
_OA_KEYWORDS = frozenset(_OA_KEYWORD_TEXT.split())

# Converted definitions and their reachable closures, per Definitions instance.
_converted: dict[int, tuple[Definitions, dict[str, dict[str, Any]], dict[str, frozenset[str]]]] = {}


def _convert(schema: Any) -> Any:
    """One kubernetes-validate JSON-Schema node as an OpenAPI 3.0 schema node."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-"):
            out[key] = value  # extensions are opaque: their content is not schema
        elif key not in _OA_KEYWORDS:
            continue
        elif key == "$ref":
            out[key] = COMPONENTS_REF + value[len(_JS_REF) :] if value.startswith(_JS_REF) else value
        elif key == "type":
            _convert_type(value, out)
        elif key == "properties":
            out[key] = {name: _convert(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _convert(value)
        elif key in ("allOf", "oneOf", "anyOf"):
            out[key] = [_convert(sub) for sub in value]
        else:
            out[key] = value
    if "$ref" in out and len(out) > 1:
        # OpenAPI 3.0 ignores siblings of $ref; upstream wraps the ref in allOf to keep them.
        out["allOf"] = [{"$ref": out.pop("$ref")}]
    return out


def _convert_type(declared: Any, out: dict[str, Any]) -> None:
    types = [declared] if isinstance(declared, str) else list(declared)
    concrete = [t for t in types if t != "null"]
    if len(concrete) == 1:
        out["type"] = concrete[0]
    elif not concrete:
        out["nullable"] = True
    else:
        out.setdefault("anyOf", [{"type": t} for t in concrete])
        if "null" in types:
            out["nullable"] = True


def _refs(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                into.add(value.rsplit("/", 1)[-1])
            elif key == "properties":
                for sub in value.values():
                    _refs(sub, into)
            elif not key.startswith("x-"):
                _refs(value, into)
    elif isinstance(node, list):
        for item in node:
            _refs(item, into)


def _definition_tables(
    defs: Definitions,
) -> tuple[dict[str, dict[str, Any]], dict[str, frozenset[str]]]:
    entry = _converted.get(id(defs))
    if entry is None or entry[0] is not defs:
        entry = (defs, {}, {})
        _converted[id(defs)] = entry
    return entry[1], entry[2]


def converted_definition(defs: Definitions, name: str) -> dict[str, Any]:
    converted, _ = _definition_tables(defs)
    out = converted.get(name)
    if out is None:
        out = _convert(defs.defs[name])
        converted[name] = out
    return out


def closure(defs: Definitions, roots: Iterable[str]) -> set[str]:
    """Every definition reachable from ``roots`` (the roots included)."""
    _, closures = _definition_tables(defs)
    seen: set[str] = set()
    for root in roots:
        if root in seen or root not in defs.defs:
            continue
        cached = closures.get(root)
        if cached is None:
            cached = _walk_closure(defs, root)
            closures[root] = cached
        seen |= cached
    return seen


def _walk_closure(defs: Definitions, root: str) -> frozenset[str]:
    seen = {root}
    todo = [root]
    while todo:
        found: set[str] = set()
        _refs(defs.defs[todo.pop()], found)
        for name in found - seen:
            if name in defs.defs:
                seen.add(name)
                todo.append(name)
    return frozenset(seen)
