"""LIST with upstream semantics: selectors, ``resourceVersion`` and pagination.

This owns the read path of a collection: which fields a kind can be selected
by (the built-in ones and a CRD's ``selectableFields``), whether an object
matches label and field selectors (also used to filter watches), how
``resourceVersion``/``resourceVersionMatch`` pick the snapshot served, and the
``limit``/``continue`` pagination whose opaque tokens pin later pages to the
first page's snapshot, with ``remainingItemCount`` as upstream reports it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.crd import conversion
from nrop.localcluster.apiserver.crd import schema as crdschema
from nrop.localcluster.apiserver.decisions.selectors import (
    FieldSelector,
    LabelSelector,
    check_field_selector,
    object_fields,
    supported_fields,
)
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.store import Store

Obj = dict[str, Any]


@dataclass
class ListResult:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


def list_objects(
    store: Store,
    kind: Kind,
    namespace: str | None,
    *,
    labels: LabelSelector | None = None,
    fields: FieldSelector | None = None,
    limit: int = 0,
    continue_token: str = "",
    resource_version: str = "",
    resource_version_match: str = "",
) -> ListResult:
    """The objects of ``kind`` (in ``namespace``, or all) matching the selectors, one page at a time."""
    check_fields(kind, fields)
    snapshot_rv = store.rv
    start = ""
    if continue_token:
        snapshot_rv, start = _decode_continue(continue_token)
    elif resource_version and resource_version != "0":
        requested = _parse_rv(resource_version)
        if requested > store.rv:
            raise errors.ServerTimeout(
                f"Timeout: Too large resource version: {requested}, current: {store.rv}",
                retry_after=1,
            )
        if resource_version_match == "Exact":
            snapshot_rv = requested
    objs = store.snapshot(kind.storage, namespace, snapshot_rv)
    matched: list[Obj] = []
    remaining = 0
    next_start = ""
    for obj in objs:
        meta = obj["metadata"]
        if start and (meta.get("namespace", ""), meta["name"]) <= _split_key(start):
            continue
        if not matches(kind, obj, labels, fields):
            continue
        if limit and len(matched) >= limit:
            remaining += 1
            continue
        matched.append(obj)
    token = ""
    if remaining and matched:
        last = matched[-1]["metadata"]
        next_start = f"{last.get('namespace', '')}/{last['name']}"
        token = _encode_continue(snapshot_rv, next_start)
    return ListResult(
        items=[conversion.served(kind, o) for o in matched],
        resource_version=str(snapshot_rv),
        continue_token=token,
        remaining=remaining if token else None,
    )


def check_fields(kind: Kind, fields: FieldSelector | None) -> None:
    """Reject a field selector (of a list or a watch) on a field ``kind`` cannot be selected by."""
    if fields is not None:
        check_field_selector(fields, _selectable(kind), kind.plural)


def _selectable(kind: Kind) -> frozenset[str]:
    """The field paths a field selector on ``kind`` may use."""
    extra = crdschema.selectable_fields(kind.crd, kind.version) if kind.custom else {}
    return supported_fields(*kind.storage) | frozenset(extra)


def matches(kind: Kind, obj: Obj, labels: LabelSelector | None, fields: FieldSelector | None) -> bool:
    """Whether ``obj`` matches both selectors (``None`` matches everything); watches filter with it too."""
    if labels is not None and not labels.matches(obj["metadata"].get("labels") or {}):
        return False
    if fields is not None:
        extra = crdschema.selectable_fields(kind.crd, kind.version) if kind.custom else None
        if not fields.matches(object_fields(*kind.storage, obj, extra)):
            return False
    return True


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise errors.BadRequest(
            f'resourceVersion: Invalid value: "{text}": must be a decimal integer'
        ) from None
    if value < 0:
        raise errors.BadRequest(f'resourceVersion: Invalid value: "{text}": must be non-negative')
    return value


def _encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        return int(data["rv"]), str(data["start"])
    except Exception:
        raise errors.BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None


def _split_key(start: str) -> tuple[str, str]:
    namespace, _, name = start.partition("/")
    return namespace, name
