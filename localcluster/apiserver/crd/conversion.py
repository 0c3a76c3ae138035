"""Conversion between a stored object and a view of it served under another group/version.

``events.k8s.io/v1`` Events are the same objects as ``core/v1`` Events, stored
once in the core shape; reads convert to the events.k8s.io field names and
writes convert back, as kube-apiserver's conversion does.  Custom resources
are stored in the version they were written in and served in the version asked
for, with only ``apiVersion`` changing (no conversion webhooks).
"""

from __future__ import annotations

from typing import Any

from nrop.localcluster.apiserver.registry import Kind

Obj = dict[str, Any]

# events.k8s.io/v1 field -> core/v1 field
_EVENT_FIELDS = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_FIELDS = {core: view for view, core in _EVENT_FIELDS.items()}


def _rename(obj: Obj, names: dict[str, str], api_version: str) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        out[names.get(key, key)] = value
    out["apiVersion"] = api_version
    out["kind"] = "Event"
    return out


def to_view(group: str, obj: Obj) -> Obj:
    """The stored object as served under ``group`` (only events.k8s.io differs)."""
    if group == "events.k8s.io":
        return _rename(obj, _CORE_FIELDS, "events.k8s.io/v1")
    return obj


def to_storage(group: str, obj: Obj) -> Obj:
    """An object written under ``group`` in the shape it is stored in."""
    if group == "events.k8s.io":
        return _rename(obj, _EVENT_FIELDS, "v1")
    return obj


def served(kind: Kind, obj: Obj) -> Obj:
    """The stored object as served in ``kind``'s version (custom resources may differ)."""
    if kind.custom and obj.get("apiVersion") != kind.group_version:
        return {**obj, "apiVersion": kind.group_version}
    if kind.storage_plural:
        return to_view(kind.group, obj)
    return obj


def stored(kind: Kind, obj: Obj) -> Obj:
    """An object written through ``kind`` in its stored shape (views such as events.k8s.io)."""
    return to_storage(kind.group, obj) if kind.storage_plural else obj
