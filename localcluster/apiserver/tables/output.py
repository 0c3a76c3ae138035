"""Server-side ``meta.k8s.io/v1`` Table output: what ``kubectl get`` prints.

kubectl asks for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints whatever columns the server returns, so the columns and cells here are
the ones the upstream API server produces (kube-apiserver's built-in printers,
apiextensions' CRD column convertor and the generic default convertor).
Everything is a pure function of the objects and an injected ``now``.

Three column sources, in the order ``render_table`` picks them:

* ``columns`` given (a custom resource): the CRD version's
  ``additionalPrinterColumns`` after a leading ``Name``; an empty list means
  upstream's default ``Age`` column.  ``date`` cells are rendered as ages by the
  server, like upstream.
* a built-in printer for ``(group, resource)`` (``has_printer``): upstream's
  column set, from ``printers`` (re-exported here as ``BUILTIN_COLUMNS`` and
  ``has_printer``).  Like upstream the server always fills the priority-1
  (``-o wide``) cells; kubectl drops them unless asked.
* anything else (RBAC roles, CRDs, ...): the default ``Name`` + ``Created At``
  (RFC 3339 timestamp) table.

This module owns the table envelope (``render_table``), the CRD column
convertor and the default table; ages and timestamps come from ``cells``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from nrop.api.metatime import rfc3339
from nrop.localcluster.apiserver.tables.cells import (
    AGE_DESCRIPTION,
    Cell,
    Obj,
    RowFn,
    column_definition,
    format_age,
    get_field,
    human_duration,
    list_field,
    name_column,
    object_name,
    parse_time,
    translate_timestamp,
)
from nrop.localcluster.apiserver.tables.jsonpaths import JSONPathError, jsonpath_values
from nrop.localcluster.apiserver.tables.printers import BUILTIN_COLUMNS, PRINTERS, has_printer, pod_conditions

__all__ = [
    "BUILTIN_COLUMNS",
    "crd_printer_columns",
    "format_age",
    "has_printer",
    "human_duration",
    "render_table",
    "translate_timestamp",
]

# --------------------------------------------------------------------------- custom resources


def crd_printer_columns(crd: Obj, version: str) -> list[Obj]:
    """The ``additionalPrinterColumns`` of one served version of a CRD (``[]`` if none)."""
    for entry in list_field(crd, "spec", "versions"):
        if entry.get("name") == version:
            return list(entry.get("additionalPrinterColumns") or [])
    return []


_DEFAULT_CR_COLUMNS = [
    {"name": "Age", "type": "date", "description": AGE_DESCRIPTION, "jsonPath": ".metadata.creationTimestamp"}
]


def _go_text(value: Any) -> str:
    """How client-go's JSONPath prints one value into a string column."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _custom_cell(column: Obj, obj: Obj, now: datetime) -> Cell:
    """Upstream ``cellForJSONValue``: the first match, typed; ``None`` prints as ``<none>``."""
    try:
        found = jsonpath_values(obj, str(column.get("jsonPath", "")))
    except JSONPathError:
        return None
    if not found or found[0] is None:
        return None
    value, type_ = found[0], column.get("type", "string")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if type_ == "string":
        return _go_text(value)
    if type_ == "integer":
        return int(value) if number else None
    if type_ == "number":
        return float(value) if number else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if type_ == "date" and isinstance(value, str):
        if not value:
            return "<unknown>"
        moment = parse_time(value)
        return "<invalid>" if moment is None else format_age(moment, now)
    return None


def _custom_definitions(columns: list[Obj]) -> list[Obj]:
    defs = [name_column()]
    for column in columns:
        path = column.get("jsonPath", "")
        description = (
            column.get("description") or f"Custom resource definition column (in JSONPath format): {path}"
        )
        defs.append(
            column_definition(
                str(column.get("name", "")),
                description,
                type_=str(column.get("type", "string")),
                priority=int(column.get("priority") or 0),
                fmt=str(column.get("format") or ""),
            )
        )
    return defs


# --------------------------------------------------------------------------- tables


def _default_created_at(obj: Obj) -> str:
    moment = parse_time(get_field(obj, "metadata", "creationTimestamp"))
    moment = moment or datetime(1, 1, 1, tzinfo=UTC)
    return rfc3339(moment)


def _row_object(obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def render_table(
    group: str,
    resource: str,
    objects: list[Obj],
    *,
    now: datetime,
    columns: list[Obj] | None = None,
    include_object: str = "Metadata",
    resource_version: str = "",
    continue_token: str = "",
    include_column_definitions: bool = True,
) -> Obj:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (one row each).

    ``columns`` are a CRD version's ``additionalPrinterColumns`` (pass ``[]`` for a
    custom resource without any); ``None`` selects the built-in printer or the
    default table.  ``include_object`` is ``Metadata`` (``PartialObjectMetadata``
    rows, sharing sub-dicts with the input), ``Object`` or ``None``.
    """
    if include_object not in ("Metadata", "Object", "None"):
        raise ValueError(f"includeObject must be Metadata, Object or None, not {include_object!r}")
    definitions: list[Obj]
    row_fn: RowFn
    if columns is not None:
        custom = columns or _DEFAULT_CR_COLUMNS
        definitions = _custom_definitions(custom)

        def row_fn(obj: Obj, now: datetime) -> list[Cell]:
            return [object_name(obj), *(_custom_cell(column, obj, now) for column in custom)]

    elif (group, resource) in PRINTERS:
        definitions, row_fn = PRINTERS[(group, resource)]
    else:
        definitions = [name_column(), column_definition("Created At", AGE_DESCRIPTION, type_="date")]

        def row_fn(obj: Obj, now: datetime) -> list[Cell]:
            return [object_name(obj), _default_created_at(obj)]

    rows: list[Obj] = []
    for obj in objects:
        row: Obj = {"cells": row_fn(obj, now)}
        conditions = pod_conditions(obj) if (group, resource) == ("", "pods") and columns is None else None
        if conditions:
            row["conditions"] = conditions
        row_object = _row_object(obj, include_object)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    metadata: Obj = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [dict(d) for d in definitions] if include_column_definitions else [],
        "rows": rows,
    }
