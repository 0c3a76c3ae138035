"""Structural schemas applied to custom resources: what a CRD's ``openAPIV3Schema`` does to a CR.

Owns ``CustomResourceSchema`` — one version's schema applied to a custom resource,
over plain JSON dicts, as apiextensions-apiserver does it: ``prune`` (drop
unknown fields, report their paths for ``fieldValidation``), ``default``
(``default:`` values, null handling) and ``validate`` (the OpenAPI value
validations plus ``x-kubernetes-list-type`` uniqueness), with messages shaped
like kube-openapi's as apiextensions turns them into field causes.  Also owns
the vocabulary shared with ``schemaviolations`` (which decides whether a schema
is acceptable and structural in the first place): the ``x-kubernetes-*``
extension names, schema accessors, and the field-cause constructors.

Pure: no I/O, no clients; dicts in, dicts and ``Cause`` lists out.  CEL rules
(``x-kubernetes-validations``) are evaluated after this module's checks, by
``celrules``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import ipaddress
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from nrop.localcluster.apiserver.errors import (
    Cause,
    duplicate,
    go_number,
    invalid,
    not_supported,
    render,
    required,
    too_long,
    too_many,
    type_invalid,
)

__all__ = [
    "EMBEDDED",
    "INT_OR_STRING",
    "LIST_MAP_KEYS",
    "LIST_TYPE",
    "MAP_TYPE",
    "PRESERVE",
    "SCHEMA_TYPES",
    "CustomResourceSchema",
    "additional_of",
    "child_path",
    "compiled_regex",
    "items_of",
    "props_of",
]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
MAP_TYPE = "x-kubernetes-map-type"

SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")
#: A JSON number that does not fit int64 is decoded as a float64; a float64 counts as an integer
#: only within ±(2^53 - 1) (go-openapi ``swag.IsFloat64AJSONInteger``).
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_JSON_INTEGER = 2**53 - 1
_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
# ObjectMeta's JSON fields: what survives pruning inside an embedded resource's metadata.
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


# --- paths and messages ----------------------------------------------------------------------------


def child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# --- schema accessors ------------------------------------------------------------------------------


def props_of(s: dict[str, Any]) -> dict[str, Any]:
    p = s.get("properties")
    return p if isinstance(p, dict) else {}


def items_of(s: dict[str, Any] | None) -> dict[str, Any] | None:
    i = s.get("items") if s else None
    return i if isinstance(i, dict) else None


def additional_of(s: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """(declared, schema): ``additionalProperties`` may be a schema or a bare boolean."""
    a = s.get("additionalProperties")
    if a is None:
        return False, None
    return True, a if isinstance(a, dict) else None


def _kind(x: Any) -> str:
    """The JSON type name of a value, as kube-openapi reports it in type errors."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        if _INT64_MIN <= x <= _INT64_MAX:
            return "integer"
        return "number"  # decoded as a float64 upstream, beyond the exact-integer range
    if isinstance(x, float):
        # kube-openapi's IsFloat64AJSONInteger: integral and within ±(2^53 - 1)
        return "integer" if x.is_integer() and abs(x) <= _MAX_JSON_INTEGER else "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, dict):
        return "object"
    return "array" if isinstance(x, list) else "unknown"


def _canonical(x: Any) -> str:
    """A key for deep equality that keeps ``1 == 1.0`` but ``true != 1``."""

    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(w) for k, w in v.items()}
        if isinstance(v, list):
            return [norm(w) for w in v]
        return v

    return json.dumps(norm(x), sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=512)
def compiled_regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


# --- string formats (kube-openapi's strfmt registry, leniently) ------------------------------------

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", re.IGNORECASE)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def _format_ok(fmt: str, value: str) -> bool:
    """Known string formats; unknown ones (and int32/int64, which only apply to numbers) pass."""
    try:
        if fmt == "date-time":
            return bool(_DATE_TIME.fullmatch(value))
        if fmt == "date":
            return bool(_DATE.fullmatch(value))
        if fmt == "uuid":
            return bool(_UUID.fullmatch(value))
        if fmt == "byte":
            base64.b64decode(value, validate=True)
            return True
        if fmt == "ipv4":
            ipaddress.IPv4Address(value)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(value)
            return True
        if fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
            return True
        if fmt == "hostname":
            return len(value) <= 253 and bool(_HOSTNAME.fullmatch(value))
        if fmt == "email":
            return bool(_EMAIL.fullmatch(value))
    except (ValueError, binascii.Error):
        return False
    return True


# --- the custom resource side ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CustomResourceSchema:
    """One CRD version's ``openAPIV3Schema``, applied to custom resource bodies.

    The server calls, on every write: ``prune`` (unknown fields; the returned
    paths drive ``fieldValidation=Strict|Warn``), then ``default``, then
    ``validate``; and ``default`` again on every read from storage.  Root
    ``apiVersion``, ``kind`` and ``metadata`` are left to the server.  ``source``
    is the ``openAPIV3Schema`` dict itself (not copied), so a cache can tell
    by identity whether the CRD changed.
    """

    source: dict[str, Any]

    def prune(self, obj: dict[str, Any]) -> list[str]:
        """Remove fields the schema does not specify, in place; return their dotted paths."""
        removed: list[str] = []
        _prune(obj, self.source, "", removed, root=True)
        return removed

    def default(self, obj: dict[str, Any]) -> None:
        """Drop non-nullable nulls that have no default, then apply ``default:`` values, in place."""
        _prune_nulls(obj, self.source)
        _default(obj, self.source)

    def validate(self, obj: Any, path: str = "") -> list[Cause]:
        """Value validation (kube-openapi) followed by list-type and embedded-resource checks."""
        found = _Found()
        _validate(obj, self.source, path, found)
        return found.errs + found.later


@dataclass
class _Found:
    """Causes of one validation: kube-openapi's first, then the list-type and embedded checks."""

    errs: list[Cause] = field(default_factory=list)
    later: list[Cause] = field(default_factory=list)


def _prune(x: Any, s: dict[str, Any] | None, path: str, out: list[str], *, root: bool = False) -> None:
    if s is not None and s.get(PRESERVE) is True:
        _skip_prune(x, s, path, out, root=root)
        return
    if isinstance(x, dict):
        if s is None:
            for k in list(x):
                out.append(child_path(path, k))
                del x[k]
            return
        embedded = root or s.get(EMBEDDED) is True
        props = props_of(s)
        has_additional, additional = additional_of(s)
        for k in list(x):
            if embedded and k in _META_FIELDS:
                if k == "metadata" and not root:
                    _prune_object_meta(x[k], child_path(path, k), out)
                continue
            if k in props:
                _prune(x[k], props[k], child_path(path, k), out)
            elif has_additional:
                _prune(x[k], additional, child_path(path, k), out)
            else:
                out.append(child_path(path, k))
                del x[k]
    elif isinstance(x, list):
        items = items_of(s)
        for i, v in enumerate(x):
            _prune(v, items, _index(path, i), out)


def _skip_prune(x: Any, s: dict[str, Any] | None, path: str, out: list[str], *, root: bool = False) -> None:
    """Under ``x-kubernetes-preserve-unknown-fields``: keep unknowns, still prune inside known fields."""
    if s is None:
        return
    if isinstance(x, dict):
        embedded = root or s.get(EMBEDDED) is True
        props = props_of(s)
        has_additional, additional = additional_of(s)
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                if k == "metadata" and not root:
                    _prune_object_meta(v, child_path(path, k), out)
                continue
            if k in props:
                _prune(v, props[k], child_path(path, k), out)
            elif has_additional:
                _prune(v, additional, child_path(path, k), out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _skip_prune(v, items_of(s), _index(path, i), out)


def _prune_object_meta(meta: Any, path: str, out: list[str]) -> None:
    if isinstance(meta, dict):
        for k in [k for k in meta if k not in _OBJECT_META_FIELDS]:
            out.append(child_path(path, k))
            del meta[k]


def _schema_for_field(s: dict[str, Any] | None, k: str) -> dict[str, Any] | None:
    if s is None:
        return None
    props = props_of(s)
    if k in props:
        return props[k]
    return additional_of(s)[1]


def _prune_nulls(x: Any, s: dict[str, Any] | None) -> None:
    if isinstance(x, dict):
        for k in list(x):
            sub = _schema_for_field(s, k)
            if x[k] is None and sub is not None and not sub.get("nullable") and "default" not in sub:
                del x[k]
            else:
                _prune_nulls(x[k], sub)
    elif isinstance(x, list):
        for v in x:
            _prune_nulls(v, items_of(s))


def _non_nullable_null(x: Any, s: dict[str, Any] | None) -> bool:
    return x is None and s is not None and not s.get("nullable")


def _default(x: Any, s: dict[str, Any] | None) -> None:
    if s is None:
        return
    if isinstance(x, dict):
        props = props_of(s)
        for k, prop in props.items():
            if "default" in prop and (k not in x or _non_nullable_null(x[k], prop)):
                x[k] = copy.deepcopy(prop["default"])
        additional = additional_of(s)[1]
        for k in list(x):
            if k in props:
                _default(x[k], props[k])
            elif additional is not None:
                if _non_nullable_null(x[k], additional) and "default" in additional:
                    x[k] = copy.deepcopy(additional["default"])
                _default(x[k], additional)
    elif isinstance(x, list):
        items = items_of(s)
        for i in range(len(x)):
            if items is not None and _non_nullable_null(x[i], items) and "default" in items:
                x[i] = copy.deepcopy(items["default"])
            _default(x[i], items)


def _type_ok(kind: str, s: dict[str, Any]) -> tuple[bool, str]:
    """Whether a value of ``kind`` fits the node's type; the expected type name for the message."""
    if s.get(INT_OR_STRING) is True:
        return kind in ("integer", "string"), "integer,string"
    t = s.get("type")
    if not t:
        return True, ""
    if t == "number":
        return kind in ("integer", "number"), t
    return kind == t, t


def _validate(x: Any, s: dict[str, Any], path: str, found: _Found) -> None:
    errs = found.errs
    kind = _kind(x)
    if x is None and s.get("nullable") is True:
        return
    ok, expected = _type_ok(kind, s)
    if not ok:
        errs.append(type_invalid(path, kind, expected))
        return
    if x is None:
        return
    # kube-openapi's validator order: type, junctors, string, format, number, array, enum, object.
    name = path or "."
    _validate_junctors(x, s, path, name, errs)
    if isinstance(x, str):
        _validate_string(x, s, path, name, errs)
    elif kind in ("integer", "number"):
        _validate_number(x, s, path, name, errs)
    elif isinstance(x, list):
        _validate_array(x, s, path, name, found)
    if isinstance(s.get("enum"), list) and _canonical(x) not in {_canonical(e) for e in s["enum"]}:
        listed = [e if isinstance(e, str) else json.dumps(e, separators=(",", ":")) for e in s["enum"]]
        errs.append(not_supported(path, x, listed))
    if isinstance(x, dict):
        _validate_object(x, s, path, name, found)


def _validate_string(x: str, s: dict[str, Any], path: str, name: str, errs: list[Cause]) -> None:
    if isinstance(s.get("maxLength"), int) and len(x) > s["maxLength"]:
        errs.append(too_long(path, s["maxLength"]))
    if isinstance(s.get("minLength"), int) and len(x) < s["minLength"]:
        errs.append(invalid(path, x, f"{name} in body should be at least {s['minLength']} chars long"))
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        rx = compiled_regex(pattern)
        if rx is not None and not rx.search(x):
            errs.append(invalid(path, x, f"{name} in body should match '{pattern}'"))
    fmt = s.get("format")
    if isinstance(fmt, str) and not _format_ok(fmt, x):
        message = f'Invalid value: {render(x)}: {name} in body must be of type {fmt}: "{x}"'
        errs.append(Cause("FieldValueTypeInvalid", message, path))


def _validate_number(x: float, s: dict[str, Any], path: str, name: str, errs: list[Cause]) -> None:
    maximum = s.get("maximum")
    if isinstance(maximum, int | float) and not isinstance(maximum, bool):
        exclusive = s.get("exclusiveMaximum") is True
        if x > maximum or (exclusive and x == maximum):
            how = "less than" if exclusive else "less than or equal to"
            errs.append(invalid(path, x, f"{name} in body should be {how} {go_number(maximum)}"))
    minimum = s.get("minimum")
    if isinstance(minimum, int | float) and not isinstance(minimum, bool):
        exclusive = s.get("exclusiveMinimum") is True
        if x < minimum or (exclusive and x == minimum):
            how = "greater than" if exclusive else "greater than or equal to"
            errs.append(invalid(path, x, f"{name} in body should be {how} {go_number(minimum)}"))
    factor = s.get("multipleOf")
    if isinstance(factor, int | float) and not isinstance(factor, bool) and factor > 0:
        try:
            rest = Decimal(str(x)) % Decimal(str(factor))
        except InvalidOperation:
            rest = Decimal(0)
        if rest != 0:
            errs.append(invalid(path, x, f"{name} in body should be a multiple of {go_number(factor)}"))


def _validate_array(x: list[Any], s: dict[str, Any], path: str, name: str, found: _Found) -> None:
    errs = found.errs
    if isinstance(s.get("maxItems"), int) and len(x) > s["maxItems"]:
        errs.append(too_many(path, len(x), s["maxItems"]))
    if isinstance(s.get("minItems"), int) and len(x) < s["minItems"]:
        errs.append(invalid(path, len(x), f"{name} in body should have at least {s['minItems']} items"))
    if s.get("uniqueItems") is True and len({_canonical(v) for v in x}) != len(x):
        errs.append(invalid(path, "", f"{name} in body shouldn't contain duplicates"))
    items = items_of(s)
    if items is not None:
        for i, v in enumerate(x):
            _validate(v, items, _index(path, i), found)
    list_type = s.get(LIST_TYPE)
    if list_type == "set":
        found.later.extend(duplicate(_index(path, i), x[i]) for i in _non_unique(x))
    elif list_type == "map":
        found.later.extend(_list_map_errors(x, s.get(LIST_MAP_KEYS) or [], path))


def _non_unique(values: list[Any]) -> list[int]:
    """Indices of the second appearance of each repeated value (upstream reports each once)."""
    seen: dict[str, int] = {}
    out = []
    for i, v in enumerate(values):
        key = _canonical(v)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(i)
    return out


def _list_map_errors(x: list[Any], keys: list[str], path: str) -> list[Cause]:
    for i, v in enumerate(x):
        if v is not None and not isinstance(v, dict):
            return [invalid(_index(path, i), v, "must be an object for an array of list-type map")]
    key_maps = [{k: v[k] for k in keys if k in v} if isinstance(v, dict) else {} for v in x]
    return [duplicate(_index(path, i), key_maps[i]) for i in _non_unique(key_maps)]


def _validate_object(x: dict[str, Any], s: dict[str, Any], path: str, name: str, found: _Found) -> None:
    errs = found.errs
    for r in s.get("required") or []:
        if r not in x:
            errs.append(required(child_path(path, r)))
    if isinstance(s.get("maxProperties"), int) and len(x) > s["maxProperties"]:
        errs.append(too_many(path, len(x), s["maxProperties"]))
    if isinstance(s.get("minProperties"), int) and len(x) < s["minProperties"]:
        n = s["minProperties"]
        errs.append(invalid(path, n, f"{name} in body should have at least {n} properties"))
    props = props_of(s)
    has_additional, additional = additional_of(s)
    for k, v in x.items():
        if k in props:
            _validate(v, props[k], child_path(path, k), found)
        elif additional is not None:
            _validate(v, additional, child_path(path, k), found)
        elif has_additional and s.get("additionalProperties") is False:
            errs.append(invalid(path, k, f"{name}.{k} in body is a forbidden property"))
    if s.get(EMBEDDED) is True:
        for type_field in ("apiVersion", "kind"):
            if type_field not in x:
                found.later.append(required(child_path(path, type_field), "must not be empty"))


def _validate_junctors(x: Any, s: dict[str, Any], path: str, name: str, errs: list[Cause]) -> None:
    """``allOf``/``anyOf``/``oneOf``/``not`` (value validation only).

    Upstream reports these without a field path (``<nil>``); the node's path is
    used here so the cause points somewhere useful.
    """

    def passes(sub: Any) -> tuple[bool, list[Cause]]:
        if not isinstance(sub, dict):
            return True, []
        branch = _Found()
        _validate(x, sub, path, branch)
        return not branch.errs, branch.errs

    all_of = s.get("allOf")
    if isinstance(all_of, list) and all_of:
        results = [passes(sub) for sub in all_of]
        failed = [causes for ok, causes in results if not ok]
        for causes in failed:
            errs.extend(causes)
        if failed:
            extra = ". None validated" if len(failed) == len(all_of) else ""
            errs.append(invalid(path, "", f"{name} must validate all the schemas (allOf){extra}"))
    any_of = s.get("anyOf")
    if isinstance(any_of, list) and any_of and not any(passes(sub)[0] for sub in any_of):
        errs.append(invalid(path, "", f'"{name}" must validate at least one schema (anyOf)'))
    one_of = s.get("oneOf")
    if isinstance(one_of, list) and one_of:
        valid = sum(1 for sub in one_of if passes(sub)[0])
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errs.append(invalid(path, "", f'"{name}" must validate one and only one schema (oneOf). {extra}'))
    not_ = s.get("not")
    if isinstance(not_, dict) and passes(not_)[0]:
        errs.append(invalid(path, "", f'"{name}" must not validate the schema (not)'))
