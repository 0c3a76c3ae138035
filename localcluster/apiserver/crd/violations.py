"""Is a CRD version's ``openAPIV3Schema`` acceptable, and is it *structural*?

Owns ``schema_violations``: the schema-side walks of apiextensions-apiserver,
over plain JSON dicts — the OpenAPI keyword checks (unsupported keywords,
``type``, ``x-kubernetes-list-type``/``-map-type`` rules), the structural-schema
invariants (every node typed, value validations only under ``anyOf``/``allOf``/
``oneOf``/``not``, root ``metadata`` restricted to ``name``/``generateName``,
every field a value validation mentions also present in the structural part),
and each ``default:`` validated against its own node.  Causes carry
upstream-like paths such as
``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``.

What a schema then does to custom resources lives in ``structural``.  Pure: no
I/O, no clients; dicts in, ``Cause`` lists out.
"""

from __future__ import annotations

import copy
from typing import Any

from nrop.api.status import Cause
from nrop.localcluster.apiserver.crd.structural import (
    EMBEDDED,
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    MAP_TYPE,
    PRESERVE,
    SCHEMA_TYPES,
    CustomResourceSchema,
    additional_of,
    child_path,
    compiled_regex,
    items_of,
    props_of,
)
from nrop.localcluster.apiserver.errors import cause_text, forbidden, invalid, not_supported, required

__all__ = ["schema_violations"]

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
    for k, v in props_of(s).items():
        if isinstance(v, dict):
            out.append((v, f"{path}.properties[{k}]"))
    additional = additional_of(s)[1]
    if additional is not None:
        out.append((additional, f"{path}.additionalProperties"))
    items = items_of(s)
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
        errs.append(invalid(child_path(path, "properties"), props, "must be an object of schemas"))
    for k, v in props_of(s).items():
        if not isinstance(v, dict):
            errs.append(invalid(f"{path}.properties[{k}]", v, "must be a schema object"))
    if s.get("additionalProperties") is not None and not isinstance(s["additionalProperties"], bool | dict):
        errs.append(
            invalid(
                child_path(path, "additionalProperties"),
                s["additionalProperties"],
                "must be a schema or a boolean",
            )
        )
    if s.get("items") is not None and not isinstance(s["items"], dict | list):
        errs.append(invalid(child_path(path, "items"), s["items"], "must be a schema object"))
    for junctor in _JUNCTORS:
        value = s.get(junctor)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            errs.append(invalid(child_path(path, junctor), value, "must be a list of schema objects"))
    if s.get("not") is not None and not isinstance(s["not"], dict):
        errs.append(invalid(child_path(path, "not"), s["not"], "must be a schema object"))
    return errs


def _openapi_checks(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    errs.extend(_shape_errors(s, path))
    for keyword, why in _NOT_SUPPORTED_KEYWORDS.items():
        if keyword in s:
            errs.append(forbidden(child_path(path, keyword), why))
    t = s.get("type")
    if t == "null":
        errs.append(forbidden(child_path(path, "type"), "type cannot be set to null"))
    elif t and t not in SCHEMA_TYPES:
        errs.append(not_supported(child_path(path, "type"), t, list(SCHEMA_TYPES)))
    if isinstance(s.get("items"), list):
        errs.append(forbidden(child_path(path, "items"), "items must be a schema object and not an array"))
    if s.get("uniqueItems") is True:
        errs.append(
            forbidden(
                child_path(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    additional = s.get("additionalProperties")
    if props_of(s) and (additional is False or isinstance(additional, dict)):
        errs.append(
            forbidden(
                child_path(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if s.get(PRESERVE) is False:
        errs.append(invalid(child_path(path, PRESERVE), False, "must be true or undefined"))
    _list_type_checks(s, path, errs)
    map_type = s.get(MAP_TYPE)
    if map_type is not None:
        if map_type not in ("granular", "atomic"):
            errs.append(not_supported(child_path(path, MAP_TYPE), map_type, ["atomic", "granular"]))
        elif t != "object":
            errs.append(invalid(child_path(path, MAP_TYPE), map_type, "must only be used if type is object"))
    for sub, sub_path in _subschemas(s, path):
        _openapi_checks(sub, sub_path, errs)


def _list_type_checks(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    list_type = s.get(LIST_TYPE)
    keys = s.get(LIST_MAP_KEYS) or []
    items = items_of(s)
    if list_type is not None:
        if list_type not in ("atomic", "set", "map"):
            errs.append(not_supported(child_path(path, LIST_TYPE), list_type, ["atomic", "set", "map"]))
        if s.get("type") != "array":
            errs.append(invalid(child_path(path, LIST_TYPE), list_type, "must only be used if type is array"))
    if keys and list_type != "map":
        if list_type is None:
            errs.append(
                required(
                    child_path(path, LIST_TYPE), "must be map if x-kubernetes-list-map-keys is non-empty"
                )
            )
        else:
            errs.append(
                invalid(
                    child_path(path, LIST_TYPE),
                    list_type,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if list_type != "map":
        return
    if not keys:
        errs.append(
            required(child_path(path, LIST_MAP_KEYS), "must not be empty if x-kubernetes-list-type is map")
        )
    if items is None:
        errs.append(
            required(child_path(path, "items"), "must have a schema if x-kubernetes-list-type is map")
        )
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
    item_props = props_of(items)
    for k in keys:
        if k not in item_props:
            errs.append(
                invalid(child_path(path, LIST_MAP_KEYS), keys, "entries must all be names of item properties")
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
        errs.append(invalid(child_path(path, LIST_MAP_KEYS), keys, "must not contain duplicate entries"))


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and any_of == [{"type": "integer"}, {"type": "string"}]


def _invariants(s: dict[str, Any], level: str, path: str, errs: list[Cause]) -> None:
    t = s.get("type") or ""
    items = items_of(s)
    embedded = s.get(EMBEDDED) is True
    int_or_string = s.get(INT_OR_STRING) is True
    preserve = s.get(PRESERVE) is True
    if t == "array" and "items" not in s:
        errs.append(required(child_path(path, "items"), "must be specified"))
    if items is not None:
        _invariants(items, _ITEM, f"{path}.items", errs)
    props = props_of(s)
    for k, v in props.items():
        if isinstance(v, dict):
            _invariants(v, _FIELD, f"{path}.properties[{k}]", errs)
    has_additional, additional = additional_of(s)
    if has_additional and level == _ROOT:
        errs.append(forbidden(child_path(path, "additionalProperties"), "must not be used at the root"))
    if additional is not None:
        _invariants(additional, _FIELD, child_path(path, "additionalProperties"), errs)
    if int_or_string and preserve:
        errs.append(
            invalid(child_path(path, PRESERVE), True, "must be false if x-kubernetes-int-or-string is true")
        )
    if int_or_string and embedded:
        errs.append(
            invalid(child_path(path, EMBEDDED), True, "must be false if x-kubernetes-int-or-string is true")
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
                required(child_path(path, "type"), "must be object if x-kubernetes-embedded-resource is true")
            )
        else:
            errs.append(
                invalid(
                    child_path(path, "type"), t, "must be object if x-kubernetes-embedded-resource is true"
                )
            )
    elif not t and not int_or_string and not preserve:
        detail = {
            _ROOT: "must not be empty at the root",
            _ITEM: "must not be empty for specified array items",
            _FIELD: "must not be empty for specified object fields",
        }[level]
        errs.append(required(child_path(path, "type"), detail))
    if embedded and has_additional:
        errs.append(
            forbidden(
                child_path(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == _ROOT and t and t != "object":
        errs.append(invalid(child_path(path, "type"), t, "must be object at the root"))

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
        meta_props = set(props_of(metadata))
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
                child_path(path, "properties"),
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
    if isinstance(pattern, str) and compiled_regex(pattern) is None:
        errs.append(
            invalid(
                child_path(path, "pattern"),
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
    items = items_of(v)
    if items is not None:
        _nested(items, False, level, f"{path}.items", errs)
    for k, sub in props_of(v).items():
        if isinstance(sub, dict):
            _nested(sub, False, _FIELD, f"{path}.properties[{k}]", errs)
    for keyword, present, why in _NESTED_FORBIDDEN:
        if keyword in v and present(v[keyword]):
            errs.append(forbidden(child_path(path, keyword), why))
    if "metadata" in props_of(v):
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
    items = items_of(v)
    if items is not None:
        _nested_completeness(items, items_of(s), f"{s_path}.items", f"{v_path}.items", errs)
    s_props = props_of(s)
    additional = additional_of(s)[1]
    for k, sub in props_of(v).items():
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
            errs.append(forbidden(child_path(sub_path, "default"), "must not be set for metadata"))
            continue
        _check_default(sub, sub_path, errs)
        _default_checks(sub, sub_path, errs, root=False)


def _check_default(s: dict[str, Any], path: str, errs: list[Cause]) -> None:
    if "default" not in s:
        return
    value = copy.deepcopy(s["default"])
    node = {k: v for k, v in s.items() if k != "default"}
    errs.extend(CustomResourceSchema(node).validate(value, child_path(path, "default")))
