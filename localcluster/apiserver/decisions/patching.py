"""PATCH bodies: content-type negotiation and the three classic patch algorithms.

This module owns how a PATCH request body changes a stored object: JSON patch
(RFC 6902, through the ``jsonpatch`` package), JSON merge patch (RFC 7386) and
Kubernetes' strategic merge patch, which reads ``x-kubernetes-patch-strategy`` and
``x-kubernetes-patch-merge-key`` from the built-in definitions.  Server-side apply
is only recognised here; it is implemented elsewhere.  Everything is pure: dicts in,
a new dict out, :mod:`errors` classes raised with the codes and messages upstream's
``endpoints/handlers/patch.go`` and ``strategicpatch`` produce.  Inputs are never
mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch
import jsonpointer

from nrop.localcluster.apiserver.errors import (
    BadRequest,
    Cause,
    InternalError,
    Invalid,
    RequestEntityTooLarge,
    UnsupportedMediaType,
)
from nrop.localcluster.apiserver.openapi.definitions import Definitions

__all__ = [
    "APPLY",
    "JSON",
    "MAX_JSON_PATCH_OPERATIONS",
    "MERGE",
    "PATCH_TYPES",
    "STRATEGIC",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "patch_type_for",
]

JSON = "json"
MERGE = "merge"
STRATEGIC = "strategic"
APPLY = "apply"

PATCH_TYPES: Mapping[str, str] = {
    "application/json-patch+json": JSON,
    "application/merge-patch+json": MERGE,
    "application/strategic-merge-patch+json": STRATEGIC,
    "application/apply-patch+yaml": APPLY,
}

# Accepted lists in the order the upstream handlers advertise them in the 415 message.
_BUILTIN_TYPES = tuple(PATCH_TYPES)
_CUSTOM_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)

MAX_JSON_PATCH_OPERATIONS = 10000


def patch_type_for(content_type: str, *, builtin: bool) -> str:
    """The patch kind (``json``, ``merge``, ``strategic``, ``apply``) of a PATCH Content-Type.

    Custom resources do not accept strategic merge patch: they have no patch
    metadata, so upstream answers 415 listing the other types.
    """
    media = content_type.split(";", 1)[0].strip()
    accepted = _BUILTIN_TYPES if builtin else _CUSTOM_TYPES
    if media not in accepted:
        raise UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(accepted)
        )
    return PATCH_TYPES[media]


# --- JSON patch (RFC 6902) ------------------------------------------------------------------

_OPS_NEEDING_VALUE = frozenset({"add", "replace", "test"})
_OPS_NEEDING_FROM = frozenset({"move", "copy"})


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "array"


def _check_json_patch(patch: Any) -> None:
    if not isinstance(patch, list):
        raise BadRequest(f"json: cannot unmarshal {_json_type(patch)} into Go value of type jsonpatch.Patch")
    for i, op in enumerate(patch):
        if not isinstance(op, dict):
            raise BadRequest(
                f"json: cannot unmarshal {_json_type(op)} into Go value of type jsonpatch.Operation"
            )
        kind = op.get("op")
        if kind not in jsonpatch.JsonPatch.operations:
            raise BadRequest(f"json patch operation {i}: unexpected kind: {kind}")
        if not isinstance(op.get("path"), str):
            raise BadRequest(f"json patch operation {i} ({kind}): missing or invalid path")
        if kind in _OPS_NEEDING_VALUE and "value" not in op:
            raise BadRequest(f"json patch operation {i} ({kind}): missing value")
        if kind in _OPS_NEEDING_FROM and not isinstance(op.get("from"), str):
            raise BadRequest(f"json patch operation {i} ({kind}): missing or invalid from")


def _rejected(detail: str) -> Invalid:
    # errors.NewGenericServerResponse(422, ...): a generic message, the cause carries the detail.
    return Invalid(
        "the server rejected our request due to an error in our request",
        causes=[Cause("UnexpectedServerResponse", detail)],
    )


def apply_json_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 6902 patch: malformed → 400, over 10000 operations → 413, failing op → 422."""
    _check_json_patch(patch)
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestEntityTooLarge(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}"
        )
    try:
        compiled = jsonpatch.JsonPatch(patch)
    except (jsonpatch.InvalidJsonPatch, jsonpointer.JsonPointerException) as exc:
        raise BadRequest(str(exc)) from None
    try:
        result = compiled.apply(obj, in_place=False)
    except jsonpatch.JsonPatchTestFailed as exc:
        path = getattr(getattr(exc, "op", None), "location", "")
        raise _rejected(f"testing value {path} failed: test failed") from None
    except jsonpatch.InvalidJsonPatch as exc:
        raise BadRequest(str(exc)) from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, LookupError, TypeError) as exc:
        raise _rejected(str(exc)) from None
    if not isinstance(result, dict):
        raise BadRequest(
            f"json: cannot unmarshal {_json_type(result)} into Go value of type map[string]interface {{}}"
        )
    return result


# --- JSON merge patch (RFC 7386) ------------------------------------------------------------


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def apply_merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 7386 merge patch: maps merge, ``null`` deletes, lists are replaced."""
    if not isinstance(patch, dict):
        raise BadRequest(
            f"json: cannot unmarshal {_json_type(patch)} into Go value of type map[string]interface {{}}"
        )
    return _merge(copy.deepcopy(obj), patch)


# --- strategic merge patch ------------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_FROM = "$deleteFromPrimitiveList"

# Text of mergepatch's sentinel errors; the handler maps them to 400 or 422.
_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
_BAD_SET_ORDER = "invalid patch format of setElementOrder list"


def _go(value: Any) -> str:
    """``%v`` of a decoded JSON value, so error texts read like upstream's."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class _Field:
    """Patch metadata of one field: its resolved schema, strategies and list merge key."""

    schema: dict[str, Any] | None
    strategies: frozenset[str] = frozenset()
    merge_key: str = ""

    @property
    def merges(self) -> bool:
        return "merge" in self.strategies

    @property
    def replaces(self) -> bool:
        return "replace" in self.strategies


_UNKNOWN = _Field(None)


class _StrategicMerger:
    """One patch application; destructive on the deep copies the public function hands it."""

    def __init__(self, defs: Definitions) -> None:
        self.defs = defs

    def field(self, parent: dict[str, Any] | None, name: str) -> _Field:
        if parent is None:
            return _UNKNOWN
        prop = (parent.get("properties") or {}).get(name)
        if prop is None:
            extra = parent.get("additionalProperties")
            prop = extra if isinstance(extra, dict) else None
        if prop is None:
            return _UNKNOWN
        resolved = self.defs.resolve(prop)
        strategy = prop.get("x-kubernetes-patch-strategy") or resolved.get("x-kubernetes-patch-strategy", "")
        merge_key = prop.get("x-kubernetes-patch-merge-key") or resolved.get(
            "x-kubernetes-patch-merge-key", ""
        )
        return _Field(resolved, frozenset(s for s in strategy.split(",") if s), merge_key)

    def item_schema(self, field: _Field) -> dict[str, Any] | None:
        return self.defs.items(field.schema) if field.schema is not None else None

    # -- values not present in the original: strip directives and nulls ----------------------

    def fresh(self, value: Any, field: _Field) -> Any:
        if isinstance(value, dict):
            return self.merge_map({}, value, field.schema)
        if isinstance(value, list):
            if field.merges:
                return self.merge_list([], value, field)
            item = self.item_schema(field)
            return [self.merge_map({}, v, item) if isinstance(v, dict) else v for v in value]
        return value

    # -- maps --------------------------------------------------------------------------------

    def merge_map(
        self, original: dict[str, Any], patch: dict[str, Any], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        directive = patch.pop(_DIRECTIVE, None)
        if directive == "delete":
            return {}
        if directive == "replace":
            original = {}
        elif directive not in (None, "merge"):
            raise InternalError(f"unknown patch type: {directive} in map: {_go(patch)}")
        self.retain_keys(original, patch)
        self.set_element_orders(original, patch, schema)
        for key, value in patch.items():
            if key.startswith(_DELETE_FROM):
                self.delete_from_list(original, key, value)
                continue
            if key.startswith("$"):
                continue  # directives never reach the stored object
            if value is None:
                original.pop(key, None)
                continue
            field = self.field(schema, key)
            current = original.get(key)
            if isinstance(current, dict) and isinstance(value, dict) and not field.replaces:
                original[key] = self.merge_map(current, value, field.schema)
            elif isinstance(current, list) and isinstance(value, list) and field.merges:
                original[key] = self.merge_list(current, value, field)
            else:
                original[key] = self.fresh(value, field)
        return original

    def retain_keys(self, original: dict[str, Any], patch: dict[str, Any]) -> None:
        if _RETAIN_KEYS not in patch:
            return
        keep = patch.pop(_RETAIN_KEYS)
        if not isinstance(keep, list):
            raise BadRequest(_BAD_RETAIN_KEYS)
        for key, value in patch.items():
            if value is None or key.startswith((_DELETE_FROM, _SET_ORDER)):
                continue
            if key not in keep:
                raise BadRequest(_BAD_RETAIN_KEYS)
        for key in [k for k in original if k not in keep]:
            del original[key]

    def delete_from_list(self, original: dict[str, Any], key: str, doomed: Any) -> None:
        prefix, _, name = key.partition("/")
        if prefix != _DELETE_FROM or not name:
            raise BadRequest(_BAD_PRIMITIVE_LIST)
        if not isinstance(doomed, list):
            raise BadRequest(_BAD_PRIMITIVE_LIST)
        current = original.get(name)
        if isinstance(current, list):
            original[name] = [v for v in current if v not in doomed]

    def set_element_orders(
        self, original: dict[str, Any], patch: dict[str, Any], schema: dict[str, Any] | None
    ) -> None:
        for key in [k for k in patch if k.startswith(_SET_ORDER)]:
            order = patch.pop(key)
            prefix, _, name = key.partition("/")
            if prefix != _SET_ORDER or not name or not isinstance(order, list):
                raise BadRequest(_BAD_SET_ORDER)
            current, patch_list = original.get(name), patch.get(name)
            if current is not None and not isinstance(current, list):
                raise InternalError(f"expected a slice, but received a {type(current).__name__}")
            if name in patch and not isinstance(patch_list, list):
                continue  # e.g. an explicit null: the main loop deletes the list
            field = self.field(schema, name)
            self.check_order(patch_list or [], order, field.merge_key)
            if current is None and patch_list is None:
                continue
            if patch_list is None:
                merged = list(current or [])
            elif current is None or not field.merges:
                merged = self.fresh(patch_list, field)
            else:
                merged = self.merge_list(current, patch_list, field)
            ordered, server_only = _partition(merged, order, field.merge_key)
            original[name] = _normalize(ordered, server_only, order, current or [], field.merge_key)
            patch.pop(name, None)

    @staticmethod
    def check_order(patch_list: list[Any], order: list[Any], key: str) -> None:
        """The patch list must be a subsequence of the order list (deletions aside)."""
        items = (
            [v for v in patch_list if not (isinstance(v, dict) and _DIRECTIVE in v)] if key else patch_list
        )
        i = 0
        for wanted in order:
            if i < len(items) and _key_of(items[i], key) == _key_of(wanted, key):
                i += 1
        if i < len(items):
            raise InternalError(
                f"The order in patch list:\n{_go(patch_list)}\n doesn't match {_SET_ORDER} list:\n{_go(order)}\n"
            )

    # -- lists with the merge strategy -------------------------------------------------------

    def merge_list(self, original: list[Any], patch: list[Any], field: _Field) -> list[Any]:
        if not original and not patch:
            return []
        kinds = {_kind(v) for v in [*original, *patch]}
        if "list" in kinds:
            raise _rejected("lists of lists are not supported")
        if len(kinds) > 1:
            raise InternalError(f"list element types are not identical: {_go([original, patch])}")
        key = field.merge_key
        if kinds != {"map"}:
            merged = list(original)
            merged.extend(v for v in patch if v not in merged)
            merged = [v for i, v in enumerate(merged) if v not in merged[:i]]
            ordered, server_only = _partition(merged, patch, "")
            return _normalize(ordered, server_only, patch, original, "")
        if not key:
            raise InternalError("cannot merge lists without merge key for type map")
        original, patch = self.special_elements(original, patch, field)
        item = self.item_schema(field)
        merged = list(original)
        for entry in patch:
            if key not in entry:
                raise InternalError(f"map: {_go(entry)} does not contain declared merge key: {key}")
            at = next((i for i, v in enumerate(merged) if key in v and v[key] == entry[key]), None)
            if at is None:
                merged.append(self.merge_map({}, entry, item))
            else:
                merged[at] = self.merge_map(merged[at], entry, item)
        ordered, server_only = _partition(merged, patch, key)
        return _normalize(ordered, server_only, patch, original, key)

    def special_elements(
        self, original: list[Any], patch: list[Any], field: _Field
    ) -> tuple[list[Any], list[Any]]:
        """Apply ``$patch`` list items: ``delete`` by merge key, ``replace`` of the whole list."""
        key = field.merge_key
        plain: list[Any] = []
        replace = False
        for entry in patch:
            directive = entry.get(_DIRECTIVE)
            if directive is None:
                plain.append(entry)
            elif directive == "delete":
                if key not in entry:
                    raise InternalError(f"map: {_go(entry)} does not contain declared merge key: {key}")
                original = [v for v in original if not (key in v and v[key] == entry[key])]
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                rest = {k: v for k, v in entry.items() if k != _DIRECTIVE}
                if rest:
                    plain.append(rest)
            else:
                raise InternalError(f"unknown patch type: {directive} in map: {_go(entry)}")
        if replace:
            item = self.item_schema(field)
            return [self.merge_map({}, v, item) for v in plain], []
        return original, plain


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    return "list" if isinstance(value, list) else "scalar"


def _key_of(value: Any, key: str) -> Any:
    if not key:
        return value
    return value.get(key) if isinstance(value, dict) else None


def _index(order: list[Any], value: Any, key: str) -> int:
    wanted = _key_of(value, key)
    for i, candidate in enumerate(order):
        if _key_of(candidate, key) == wanted:
            return i
    return -1


def _partition(items: list[Any], by: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    """Split into (items present in ``by``, the server-only rest), keeping relative order."""
    wanted = [_key_of(v, key) for v in by]
    present = [v for v in items if _key_of(v, key) in wanted]
    rest = [v for v in items if _key_of(v, key) not in wanted]
    return present, rest


def _normalize(
    from_patch: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any], key: str
) -> list[Any]:
    """Order a merged list as upstream does: patch order first, live order for the rest.

    Patch items are sorted by ``patch_order`` (a ``$setElementOrder`` list or the
    patch list), server-only items by the live list, then the server-only items are
    slotted in before the first patch item that comes after them in the live list.
    An item the live list does not know (a new one) therefore goes before the
    remaining server-only items: strategic merge never simply appends.
    """
    from_patch = sorted(from_patch, key=lambda v: _rank(patch_order, v, key))
    server_only = sorted(server_only, key=lambda v: _rank(server_order, v, key))
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(from_patch):
        if j >= len(from_patch):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(from_patch[j])
            j += 1
        else:
            left, right = _index(server_order, server_only[i], key), _index(server_order, from_patch[j], key)
            if left >= 0 and right >= 0 and left < right:
                out.append(server_only[i])
                i += 1
            else:
                out.append(from_patch[j])
                j += 1
    return out


def _rank(order: list[Any], value: Any, key: str) -> int:
    at = _index(order, value, key)
    return at if at >= 0 else len(order)


def apply_strategic_merge_patch(
    obj: dict[str, Any], patch: Any, schema: dict[str, Any], defs: Definitions
) -> dict[str, Any]:
    """Apply a strategic merge patch to a built-in object described by ``schema``.

    ``schema`` is the kind's definition (a ``$ref`` is followed).  Fields the
    schema does not declare merge like plain maps and their lists are replaced.
    """
    if not isinstance(patch, dict):
        raise BadRequest(
            f"json: cannot unmarshal {_json_type(patch)} into Go value of type map[string]interface {{}}"
        )
    merger = _StrategicMerger(defs)
    return merger.merge_map(copy.deepcopy(obj), copy.deepcopy(patch), defs.resolve(schema))
