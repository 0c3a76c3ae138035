"""Structural schemas: what a CRD's ``openAPIV3Schema`` may say, and what it does to custom resources.

Owns the schema walks of apiextensions-apiserver, over plain JSON dicts:

* ``schema_violations`` — is a version's ``openAPIV3Schema`` acceptable, and is it
  *structural* (every node typed, value validations only under ``anyOf``/``allOf``/
  ``oneOf``/``not``, root ``metadata`` restricted to ``name``/``generateName``, …)?
  Causes carry upstream-like paths such as
  ``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``.
* ``CustomResourceSchema`` — one version's schema applied to a custom resource:
  ``prune`` (drop unknown fields, report their paths for ``fieldValidation``),
  ``default`` (``default:`` values, null handling) and ``validate`` (the OpenAPI
  value validations plus ``x-kubernetes-list-type`` uniqueness), with messages
  shaped like kube-openapi's as apiextensions turns them into field causes.

Pure: no I/O, no clients; dicts in, dicts and ``Cause`` lists out.  CEL rules
(``x-kubernetes-validations``) are not evaluated: they are accepted in schemas
and ignored on writes, so a CR that a real server would reject by a CEL rule is
accepted here.
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
    forbidden,
    not_supported,
    required,
    too_long,
    type_invalid,
)

__all__ = [
    "EMBEDDED",
    "INT_OR_STRING",
    "PRESERVE",
    "CustomResourceSchema",
    "cause_text",
    "duplicate",
    "invalid",
    "render",
    "schema_violations",
    "too_many",
]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
MAP_TYPE = "x-kubernetes-map-type"

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
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


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _go_number(value: float | int) -> str:
    """Numbers as Go's ``%v`` prints them: ``10`` not ``10.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def render(value: Any) -> str:
    """A bad value as apimachinery's field errors print it (scalars plain, compounds as JSON)."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return _go_number(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {render(value)}: {detail}", path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {render(value)}", path)


def too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", path)


def cause_text(cause: Cause) -> str:
    return f"{cause.field}: {cause.message}" if cause.field else cause.message


# --- schema accessors ------------------------------------------------------------------------------


def _props(s: dict[str, Any]) -> dict[str, Any]:
    p = s.get("properties")
    return p if isinstance(p, dict) else {}


def _items(s: dict[str, Any] | None) -> dict[str, Any] | None:
    i = s.get("items") if s else None
    return i if isinstance(i, dict) else None


def _additional(s: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
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
        return "integer"
    if isinstance(x, float):
        return "integer" if x.is_integer() else "number"
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
def _regex(pattern: str) -> re.Pattern[str] | None:
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
            return bool(_DATE_TIME.match(value))
        if fmt == "date":
            return bool(_DATE.match(value))
        if fmt == "uuid":
            return bool(_UUID.match(value))
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
            return len(value) <= 253 and bool(_HOSTNAME.match(value))
        if fmt == "email":
            return bool(_EMAIL.match(value))
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
                out.append(_child(path, k))
                del x[k]
            return
        embedded = root or s.get(EMBEDDED) is True
        props = _props(s)
        has_additional, additional = _additional(s)
        for k in list(x):
            if embedded and k in _META_FIELDS:
                if k == "metadata" and not root:
                    _prune_object_meta(x[k], _child(path, k), out)
                continue
            if k in props:
                _prune(x[k], props[k], _child(path, k), out)
            elif has_additional:
                _prune(x[k], additional, _child(path, k), out)
            else:
                out.append(_child(path, k))
                del x[k]
    elif isinstance(x, list):
        items = _items(s)
        for i, v in enumerate(x):
            _prune(v, items, _index(path, i), out)


def _skip_prune(x: Any, s: dict[str, Any] | None, path: str, out: list[str], *, root: bool = False) -> None:
    """Under ``x-kubernetes-preserve-unknown-fields``: keep unknowns, still prune inside known fields."""
    if s is None:
        return
    if isinstance(x, dict):
        embedded = root or s.get(EMBEDDED) is True
        props = _props(s)
        has_additional, additional = _additional(s)
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                if k == "metadata" and not root:
                    _prune_object_meta(v, _child(path, k), out)
                continue
            if k in props:
                _prune(v, props[k], _child(path, k), out)
            elif has_additional:
                _prune(v, additional, _child(path, k), out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _skip_prune(v, _items(s), _index(path, i), out)


def _prune_object_meta(meta: Any, path: str, out: list[str]) -> None:
    if isinstance(meta, dict):
        for k in [k for k in meta if k not in _OBJECT_META_FIELDS]:
            out.append(_child(path, k))
            del meta[k]


def _schema_for_field(s: dict[str, Any] | None, k: str) -> dict[str, Any] | None:
    if s is None:
        return None
    props = _props(s)
    if k in props:
        return props[k]
    return _additional(s)[1]


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
            _prune_nulls(v, _items(s))


def _non_nullable_null(x: Any, s: dict[str, Any] | None) -> bool:
    return x is None and s is not None and not s.get("nullable")


def _default(x: Any, s: dict[str, Any] | None) -> None:
    if s is None:
        return
    if isinstance(x, dict):
        props = _props(s)
        for k, prop in props.items():
            if "default" in prop and (k not in x or _non_nullable_null(x[k], prop)):
                x[k] = copy.deepcopy(prop["default"])
        additional = _additional(s)[1]
        for k in list(x):
            if k in props:
                _default(x[k], props[k])
            elif additional is not None:
                if _non_nullable_null(x[k], additional) and "default" in additional:
                    x[k] = copy.deepcopy(additional["default"])
                _default(x[k], additional)
    elif isinstance(x, list):
        items = _items(s)
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
        rx = _regex(pattern)
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
            errs.append(invalid(path, x, f"{name} in body should be {how} {_go_number(maximum)}"))
    minimum = s.get("minimum")
    if isinstance(minimum, int | float) and not isinstance(minimum, bool):
        exclusive = s.get("exclusiveMinimum") is True
        if x < minimum or (exclusive and x == minimum):
            how = "greater than" if exclusive else "greater than or equal to"
            errs.append(invalid(path, x, f"{name} in body should be {how} {_go_number(minimum)}"))
    factor = s.get("multipleOf")
    if isinstance(factor, int | float) and not isinstance(factor, bool) and factor > 0:
        try:
            rest = Decimal(str(x)) % Decimal(str(factor))
        except InvalidOperation:
            rest = Decimal(0)
        if rest != 0:
            errs.append(invalid(path, x, f"{name} in body should be a multiple of {_go_number(factor)}"))


def _validate_array(x: list[Any], s: dict[str, Any], path: str, name: str, found: _Found) -> None:
    errs = found.errs
    if isinstance(s.get("maxItems"), int) and len(x) > s["maxItems"]:
        errs.append(too_many(path, len(x), s["maxItems"]))
    if isinstance(s.get("minItems"), int) and len(x) < s["minItems"]:
        errs.append(invalid(path, len(x), f"{name} in body should have at least {s['minItems']} items"))
    if s.get("uniqueItems") is True and len({_canonical(v) for v in x}) != len(x):
        errs.append(invalid(path, "", f"{name} in body shouldn't contain duplicates"))
    items = _items(s)
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
            errs.append(required(_child(path, r)))
    if isinstance(s.get("maxProperties"), int) and len(x) > s["maxProperties"]:
        errs.append(too_many(path, len(x), s["maxProperties"]))
    if isinstance(s.get("minProperties"), int) and len(x) < s["minProperties"]:
        n = s["minProperties"]
        errs.append(invalid(path, n, f"{name} in body should have at least {n} properties"))
    props = _props(s)
    has_additional, additional = _additional(s)
    for k, v in x.items():
        if k in props:
            _validate(v, props[k], _child(path, k), found)
        elif additional is not None:
            _validate(v, additional, _child(path, k), found)
        elif has_additional and s.get("additionalProperties") is False:
            errs.append(invalid(path, k, f"{name}.{k} in body is a forbidden property"))
    if s.get(EMBEDDED) is True:
        for type_field in ("apiVersion", "kind"):
            if type_field not in x:
                found.later.append(required(_child(path, type_field), "must not be empty"))


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


# --- the schema side: is an openAPIV3Schema acceptable and structural? -----------------------------

_ROOT, _ITEM, _FIELD = "root", "item", "field"
_NOT_SUPPORTED_KEYWORDS = {
    "id": "id is not supported",
    "additionalItems": "additionalItems is not supported",
    "patternProperties": "patternProperties is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "$ref": "$ref is not supported",
}
_JUNCTORS = ("allOf", "anyOf", "oneOf")


def schema_violations(schema: dict[str, Any], path: str) -> list[Cause]:
    """Everything wrong with one ``openAPIV3Schema`` (at ``path``), as apiextensions reports it.

    OpenAPI keyword checks first, then the structural-schema violations (sorted by
    message, as upstream does), then invalid ``default:`` values — the last only
    when the schema is structural, since defaults are only defined for those.
    """
    if not isinstance(schema, dict):
        return [invalid(path, schema, "must be an object")]
    errs: list[Cause] = []
    _openapi_checks(schema, path, errs)
    structural: list[Cause] = []
    _invariants(schema, _ROOT, path, structural)
    _completeness_everywhere(schema, path, structural)
    structural.sort(key=cause_text)
    errs.extend(structural)
    if not structural:
        _default_checks(schema, path, errs)
    return errs


def _structural_children(s: dict[str, Any], path: str) -> list[tuple[dict[str, Any], str]]:
    out: list[tuple[dict[str, Any], str]] = []
    for k, v in _props(s).items():
        if isinstance(v, dict):
            out.append((v, f"{path}.properties[{k}]"))
    additional = _additional(s)[1]
    if additional is not None:
        out.append((additional, f"{path}.additionalProperties"))
    items = _items(s)
    if items is not None:
        out.append((items, f"{path}.items"))
    return out


def _subschemas(s: dict[str, Any], path: str) -> list[tuple[dict[str, Any], str]]:
    out = _structural_children(s, path)
    for junctor in _JUNCTORS:
        for i, v in enumerate(s.get(junctor) or []):
            if isinstance(v, dict):
                out.append((v, f"{path}.{junctor}[{i}]"))
    if isinstance(s.get("not"), dict):
        out.append((s["not"], f"{path}.not"))
    return out


def _shape_errors(s: dict[str, Any], path: str) -> list[Cause]:
    """Keywords whose value is not a schema where a schema belongs (a real server fails to decode them)."""
    errs = []
    props = s.get("properties")
    if props is not None and not isinstance(props, dict):
        errs.append(invalid(_child(path, "properties"), props, "must be an object of schemas"))
    for k, v in _props(s).items():
        if not isinstance(v, dict):
            errs.append(invalid(f"{path}.properties[{k}]", v, "must be a schema object"))
    if s.get("additionalProperties") is not None and not isinstance(s["additionalProperties"], bool | dict):
        errs.append(
            invalid(
                _child(path, "additionalProperties"),
                s["additionalProperties"],
                "must be a schema or a boolean",
            )
        )
    if s.get("items") is not None and not isinstance(s["items"], dict | list):
        errs.append(invalid(_child(path, "items"), s["items"], "must be a schema object"))
    for junctor in _JUNCTORS:
        value = s.get(junctor)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            errs.append(invalid(_child(path, junctor), value, "must be a list of schema objects"))
    if s.get("not") is not None and not isinstance(s["not"], dict):
        errs.append(invalid(_child(path, "not"), s["not"], "must be a schema object"))
    return errs


def _openapi_checks(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    errs.extend(_shape_errors(s, path))
    for keyword, why in _NOT_SUPPORTED_KEYWORDS.items():
        if keyword in s:
            errs.append(forbidden(_child(path, keyword), why))
    t = s.get("type")
    if t == "null":
        errs.append(forbidden(_child(path, "type"), "type cannot be set to null"))
    elif t and t not in _TYPES:
        errs.append(not_supported(_child(path, "type"), t, list(_TYPES)))
    if isinstance(s.get("items"), list):
        errs.append(forbidden(_child(path, "items"), "items must be a schema object and not an array"))
    if s.get("uniqueItems") is True:
        errs.append(
            forbidden(
                _child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    additional = s.get("additionalProperties")
    if _props(s) and (additional is False or isinstance(additional, dict)):
        errs.append(
            forbidden(
                _child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if s.get(PRESERVE) is False:
        errs.append(invalid(_child(path, PRESERVE), False, "must be true or undefined"))
    _list_type_checks(s, path, errs)
    map_type = s.get(MAP_TYPE)
    if map_type is not None:
        if map_type not in ("granular", "atomic"):
            errs.append(not_supported(_child(path, MAP_TYPE), map_type, ["atomic", "granular"]))
        elif t != "object":
            errs.append(invalid(_child(path, MAP_TYPE), map_type, "must only be used if type is object"))
    for sub, sub_path in _subschemas(s, path):
        _openapi_checks(sub, sub_path, errs)


def _list_type_checks(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    list_type = s.get(LIST_TYPE)
    keys = s.get(LIST_MAP_KEYS) or []
    items = _items(s)
    if list_type is not None:
        if list_type not in ("atomic", "set", "map"):
            errs.append(not_supported(_child(path, LIST_TYPE), list_type, ["atomic", "set", "map"]))
        if s.get("type") != "array":
            errs.append(invalid(_child(path, LIST_TYPE), list_type, "must only be used if type is array"))
    if keys and list_type != "map":
        if list_type is None:
            errs.append(
                required(_child(path, LIST_TYPE), "must be map if x-kubernetes-list-map-keys is non-empty")
            )
        else:
            errs.append(
                invalid(
                    _child(path, LIST_TYPE),
                    list_type,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if list_type != "map":
        return
    if not keys:
        errs.append(
            required(_child(path, LIST_MAP_KEYS), "must not be empty if x-kubernetes-list-type is map")
        )
    if items is None:
        errs.append(required(_child(path, "items"), "must have a schema if x-kubernetes-list-type is map"))
        return
    if items.get("type") != "object":
        errs.append(
            invalid(
                f"{path}.items.type",
                items.get("type", ""),
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
        return
    item_props = _props(items)
    for k in keys:
        if k not in item_props:
            errs.append(
                invalid(_child(path, LIST_MAP_KEYS), keys, "entries must all be names of item properties")
            )
        elif item_props[k].get("type") in ("array", "object"):
            errs.append(
                invalid(
                    f"{path}.items.properties[{k}].type",
                    item_props[k].get("type"),
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                )
            )
    if len(set(keys)) != len(keys):
        errs.append(invalid(_child(path, LIST_MAP_KEYS), keys, "must not contain duplicate entries"))


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and any_of == [{"type": "integer"}, {"type": "string"}]


def _invariants(s: dict[str, Any], level: str, path: str, errs: list[Cause]) -> None:
    t = s.get("type") or ""
    items = _items(s)
    embedded = s.get(EMBEDDED) is True
    int_or_string = s.get(INT_OR_STRING) is True
    preserve = s.get(PRESERVE) is True
    if t == "array" and "items" not in s:
        errs.append(required(_child(path, "items"), "must be specified"))
    if items is not None:
        _invariants(items, _ITEM, f"{path}.items", errs)
    props = _props(s)
    for k, v in props.items():
        if isinstance(v, dict):
            _invariants(v, _FIELD, f"{path}.properties[{k}]", errs)
    has_additional, additional = _additional(s)
    if has_additional and level == _ROOT:
        errs.append(forbidden(_child(path, "additionalProperties"), "must not be used at the root"))
    if additional is not None:
        _invariants(additional, _FIELD, _child(path, "additionalProperties"), errs)
    if int_or_string and preserve:
        errs.append(
            invalid(_child(path, PRESERVE), True, "must be false if x-kubernetes-int-or-string is true")
        )
    if int_or_string and embedded:
        errs.append(
            invalid(_child(path, EMBEDDED), True, "must be false if x-kubernetes-int-or-string is true")
        )

    skip_any_of = _is_int_or_string_any_of(s.get("anyOf"))
    all_of = s.get("allOf")
    skip_first_all_of = (
        isinstance(all_of, list)
        and bool(all_of)
        and _is_int_or_string_any_of(all_of[0].get("anyOf") if isinstance(all_of[0], dict) else None)
    )
    _value_validation(s, level, path, errs, skip_any_of=skip_any_of, skip_first_all_of=skip_first_all_of)

    if embedded and t != "object":
        if not t:
            errs.append(
                required(_child(path, "type"), "must be object if x-kubernetes-embedded-resource is true")
            )
        else:
            errs.append(
                invalid(_child(path, "type"), t, "must be object if x-kubernetes-embedded-resource is true")
            )
    elif not t and not int_or_string and not preserve:
        detail = {
            _ROOT: "must not be empty at the root",
            _ITEM: "must not be empty for specified array items",
            _FIELD: "must not be empty for specified object fields",
        }[level]
        errs.append(required(_child(path, "type"), detail))
    if embedded and has_additional:
        errs.append(
            forbidden(
                _child(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == _ROOT and t and t != "object":
        errs.append(invalid(_child(path, "type"), t, "must be object at the root"))

    if level == _ROOT or embedded:
        for field, want in (("kind", "string"), ("apiVersion", "string"), ("metadata", "object")):
            sub = props.get(field)
            if isinstance(sub, dict) and sub.get("type", "") != want:
                errs.append(
                    invalid(f"{path}.properties[{field}].type", sub.get("type", ""), f"must be {want}")
                )
    metadata = props.get("metadata")
    if level == _ROOT and isinstance(metadata, dict):
        extra = set(metadata) - {"type", "default", "properties"}
        meta_props = set(_props(metadata))
        if extra or not meta_props <= {"name", "generateName"}:
            errs.append(
                forbidden(
                    f"{path}.properties[metadata]",
                    "must not specify anything other than name and generateName, "
                    "but metadata is implicitly specified",
                )
            )
    if embedded and not preserve and not props:
        errs.append(
            required(
                _child(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )


def _value_validation(
    v: dict[str, Any], level: str, path: str, errs: list[Cause], *, skip_any_of: bool, skip_first_all_of: bool
) -> None:
    if not skip_any_of:
        for i, sub in enumerate(v.get("anyOf") or []):
            if isinstance(sub, dict):
                _nested(sub, False, level, f"{path}.anyOf[{i}]", errs)
    for i, sub in enumerate(v.get("allOf") or []):
        if isinstance(sub, dict):
            _nested(sub, skip_first_all_of and i == 0, level, f"{path}.allOf[{i}]", errs)
    for i, sub in enumerate(v.get("oneOf") or []):
        if isinstance(sub, dict):
            _nested(sub, False, level, f"{path}.oneOf[{i}]", errs)
    if isinstance(v.get("not"), dict):
        _nested(v["not"], False, level, f"{path}.not", errs)
    pattern = v.get("pattern")
    if isinstance(pattern, str) and _regex(pattern) is None:
        errs.append(
            invalid(
                _child(path, "pattern"),
                pattern,
                "must be a valid regular expression, but isn't: invalid syntax",
            )
        )


_NESTED_FORBIDDEN = (
    ("type", bool, "must be empty to be structural"),
    ("additionalProperties", lambda v: v is not None, "must be undefined to be structural"),
    ("default", lambda v: v is not None, "must be undefined to be structural"),
    ("title", bool, "must be empty to be structural"),
    ("description", bool, "must be empty to be structural"),
    ("nullable", lambda v: v is True, "must be false to be structural"),
    (PRESERVE, lambda v: v is True, "must be false to be structural"),
    (EMBEDDED, lambda v: v is True, "must be false to be structural"),
    (INT_OR_STRING, lambda v: v is True, "must be false to be structural"),
    (LIST_MAP_KEYS, bool, "must be empty to be structural"),
    (LIST_TYPE, lambda v: v is not None, "must be undefined to be structural"),
)


def _nested(v: dict[str, Any], skip_any_of: bool, level: str, path: str, errs: list[Cause]) -> None:
    """A schema under a logical junctor: value validations only, no structure-giving keywords."""
    _value_validation(v, level, path, errs, skip_any_of=skip_any_of, skip_first_all_of=False)
    items = _items(v)
    if items is not None:
        _nested(items, False, level, f"{path}.items", errs)
    for k, sub in _props(v).items():
        if isinstance(sub, dict):
            _nested(sub, False, _FIELD, f"{path}.properties[{k}]", errs)
    for keyword, present, why in _NESTED_FORBIDDEN:
        if keyword in v and present(v[keyword]):
            errs.append(forbidden(_child(path, keyword), why))
    if "metadata" in _props(v):
        errs.append(forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))


def _completeness_everywhere(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """Every field or items a value validation mentions must also be in the structural part."""
    _value_completeness(s, s, path, path, errs)
    for sub, sub_path in _structural_children(s, path):
        _completeness_everywhere(sub, sub_path, errs)


def _value_completeness(
    v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str, errs: list[Cause]
) -> None:
    if isinstance(v.get("not"), dict):
        _nested_completeness(v["not"], s, s_path, f"{v_path}.not", errs)
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(v.get(junctor) or []):
            if isinstance(sub, dict):
                _nested_completeness(sub, s, s_path, f"{v_path}.{junctor}[{i}]", errs)


def _nested_completeness(
    v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str, errs: list[Cause]
) -> None:
    if s is None:
        errs.append(required(s_path, f"because it is defined in {v_path}"))
        return
    _value_completeness(v, s, s_path, v_path, errs)
    items = _items(v)
    if items is not None:
        _nested_completeness(items, _items(s), f"{s_path}.items", f"{v_path}.items", errs)
    s_props = _props(s)
    additional = _additional(s)[1]
    for k, sub in _props(v).items():
        if not isinstance(sub, dict):
            continue
        if k in s_props:
            _nested_completeness(
                sub, s_props[k], f"{s_path}.properties[{k}]", f"{v_path}.properties[{k}]", errs
            )
        elif additional is not None:
            _nested_completeness(
                sub, additional, f"{s_path}.additionalProperties", f"{v_path}.properties[{k}]", errs
            )
        else:
            errs.append(
                required(f"{s_path}.properties[{k}]", f"because it is defined in {v_path}.properties[{k}]")
            )


def _default_checks(s: dict[str, Any], path: str, errs: list[Cause], *, root: bool = True) -> None:
    """Each ``default:`` must itself validate against its node, and is forbidden in root metadata."""
    for sub, sub_path in _structural_children(s, path):
        if root and sub_path == f"{path}.properties[metadata]" and "default" in sub:
            errs.append(forbidden(_child(sub_path, "default"), "must not be set for metadata"))
            continue
        _check_default(sub, sub_path, errs)
        _default_checks(sub, sub_path, errs, root=False)


def _check_default(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    if "default" not in s:
        return
    value = copy.deepcopy(s["default"])
    node = {k: v for k, v in s.items() if k != "default"}
    errs.extend(CustomResourceSchema(node).validate(value, _child(path, "default")))
