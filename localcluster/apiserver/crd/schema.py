"""CustomResourceDefinitions (apiextensions.k8s.io/v1): defaults, validation and the views the server needs.

Owns what apiextensions-apiserver decides about a CRD object itself:

* ``crd_defaults`` — the v1 defaulting (``singular``, ``listKind``, conversion ``None``…);
* ``validate_crd`` — the create/update validation (name, group, scope, names,
  versions, schemas, subresources, printer columns, selectable fields), as
  ``Cause`` lists with upstream field paths, ready for ``Invalid.for_fields``;
* ``accepted_names`` — what ``status.acceptedNames`` says once names are accepted;
* per-version views: storage and served versions, subresources, printer columns,
  selectable fields and the ``CustomResourceSchema`` that prunes, defaults and
  validates the custom resources (see ``structural``).

Pure: plain dicts in and out, no I/O.  Name conflicts between CRDs
(``NamesAccepted=False``) and the Established condition are the server's.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from nrop.api.selectors import dns1035_label_errors, dns1123_subdomain_errors
from nrop.localcluster.apiserver.crd.structural import (
    INT_OR_STRING,
    PRESERVE,
    CustomResourceSchema,
)
from nrop.localcluster.apiserver.crd.violations import schema_violations
from nrop.localcluster.apiserver.errors import (
    Cause,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
)

__all__ = [
    "CustomResourceSchema",
    "accepted_names",
    "crd_defaults",
    "custom_resource_schema",
    "has_status_subresource",
    "printer_columns",
    "printer_columns_of_version",
    "scale_subresource",
    "selectable_fields",
    "selectable_fields_of_version",
    "served_versions",
    "sort_versions",
    "storage_version",
    "validate_crd",
    "version_entry",
]

PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
SCOPES = ("Cluster", "Namespaced")
MAX_SELECTABLE_FIELDS = 8

# The column every CRD gets when it declares none (upstream's table convertor default).
AGE_COLUMN: dict[str, Any] = {
    "name": "Age",
    "type": "date",
    "format": "",
    "description": "CreationTimestamp is a timestamp representing the server time when this object was created.",
    "priority": 0,
    "jsonPath": ".metadata.creationTimestamp",
}

_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


# --- defaulting ------------------------------------------------------------------------------------


def crd_defaults(crd: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``crd`` with the v1 defaults filled in, as the server stores it.

    Printer-column ``priority`` is *not* written (upstream omits a zero priority);
    ``printer_columns`` reports the effective value.
    """
    out = copy.deepcopy(crd)
    spec = out.setdefault("spec", {})
    if not isinstance(spec, dict) or not isinstance(spec.setdefault("names", {}), dict):
        return out
    names = spec["names"]
    kind = names.get("kind") or ""
    if kind and not names.get("singular"):
        names["singular"] = kind.lower()
    if kind and not names.get("listKind"):
        names["listKind"] = kind + "List"
    if not spec.get("conversion"):
        spec["conversion"] = {"strategy": "None"}
    service = _as_dict(_as_dict(_as_dict(spec["conversion"]).get("webhook")).get("clientConfig")).get(
        "service"
    )
    if isinstance(service, dict):
        service.setdefault("port", 443)
    return out


def accepted_names(crd: dict[str, Any]) -> dict[str, Any]:
    """``status.acceptedNames`` for a CRD whose names do not conflict, in upstream's field order."""
    names = crd_defaults(crd)["spec"]["names"]
    out: dict[str, Any] = {}
    for key in ("plural", "singular", "shortNames", "kind", "listKind", "categories"):
        if names.get(key):
            out[key] = copy.deepcopy(names[key])
    return out


# --- validation ------------------------------------------------------------------------------------


def validate_crd(crd: dict[str, Any]) -> list[Cause]:
    """Everything upstream rejects in a v1 CRD (after defaulting), as field causes.

    A CRD whose versions are all unserved is accepted, as upstream accepts it.
    """
    crd = crd_defaults(crd)
    meta = _as_dict(crd.get("metadata"))
    spec = _as_dict(crd.get("spec"))
    names = _as_dict(spec.get("names"))
    group = spec.get("group") or ""
    errs: list[Cause] = []

    name = meta.get("name") or ""
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(invalid("metadata.name", name, msg) for msg in dns1123_subdomain_errors(name))
        if name != f"{names.get('plural', '')}.{group}":
            errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))

    if not group:
        errs.append(required("spec.group"))
    elif msgs := dns1123_subdomain_errors(group):
        errs.append(invalid("spec.group", group, ",".join(msgs)))
    elif "." not in group:
        errs.append(invalid("spec.group", group, "should be a domain with at least one dot"))

    scope = spec.get("scope") or ""
    if not scope:
        errs.append(required("spec.scope"))
    elif scope not in SCOPES:
        errs.append(not_supported("spec.scope", scope, list(SCOPES)))

    versions = spec.get("versions") if isinstance(spec.get("versions"), list) else []
    versions = [_as_dict(v) for v in versions]
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        vname = version.get("name") or ""
        unique = unique and vname not in seen
        seen.add(vname)
        if msgs := dns1035_label_errors(vname):
            errs.append(invalid(f"spec.versions[{i}].name", vname, ",".join(msgs)))
        errs.extend(_validate_version(version, f"spec.versions[{i}]"))
    if not unique:
        errs.append(invalid("spec.versions", versions, "must contain unique version names"))
    if sum(1 for v in versions if v.get("storage") is True) != 1:
        errs.append(
            invalid("spec.versions", versions, "must have exactly one version marked as storage version")
        )

    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(required(f"spec.names.{key}"))
    errs.extend(_validate_names(names, "spec.names"))

    if spec.get("preserveUnknownFields") is True:
        errs.append(
            invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    errs.extend(_validate_conversion(_as_dict(spec.get("conversion")), "spec.conversion"))
    return errs


def _as_dict(value: Any) -> dict[str, Any]:
    """Malformed bodies (a list where an object belongs) validate as empty objects instead of crashing."""
    return value if isinstance(value, dict) else {}


def _validate_names(names: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in ("plural", "singular"):
        value = names.get(key) or ""
        if value and (msgs := dns1035_label_errors(value)):
            errs.append(invalid(f"{path}.{key}", value, ",".join(msgs)))
    for key in ("kind", "listKind"):
        value = names.get(key) or ""
        if value and (msgs := dns1035_label_errors(value.lower())):
            errs.append(
                invalid(
                    f"{path}.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(msgs),
                )
            )
    for key in ("shortNames", "categories"):
        for i, value in enumerate(names.get(key) or []):
            if msgs := dns1035_label_errors(value):
                errs.append(invalid(f"{path}.{key}[{i}]", value, ",".join(msgs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same"))
    return errs


def _validate_version(version: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    schema = _as_dict(version.get("schema")).get("openAPIV3Schema")
    if schema is None:
        errs.append(required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
    else:
        errs.extend(schema_violations(schema, f"{path}.schema.openAPIV3Schema"))
    scale = _as_dict(version.get("subresources")).get("scale")
    if scale is not None:
        errs.extend(_validate_scale(_as_dict(scale), f"{path}.subresources.scale"))
    for i, column in enumerate(version.get("additionalPrinterColumns") or []):
        errs.extend(_validate_column(_as_dict(column), f"{path}.additionalPrinterColumns[{i}]"))
    fields = [_as_dict(f) for f in version.get("selectableFields") or []]
    if fields:
        errs.extend(_validate_selectable_fields(fields, _as_dict(schema), f"{path}.selectableFields"))
    return errs


def _simple_json_path_errors(value: str, path: str) -> list[Cause]:
    if not value:
        return [invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def _validate_scale(scale: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key, prefixes, where in (
        ("specReplicasPath", (".spec.",), ".spec"),
        ("statusReplicasPath", (".status.",), ".status"),
        ("labelSelectorPath", (".spec.", ".status."), "either .spec or .status"),
    ):
        value = scale.get(key) or ""
        if not value:
            if key != "labelSelectorPath":
                errs.append(required(f"{path}.{key}"))
            continue
        if found := _simple_json_path_errors(value, f"{path}.{key}"):
            errs.extend(found)
        elif not value.startswith(prefixes):
            errs.append(invalid(f"{path}.{key}", value, f"should be a json path under {where}"))
    return errs


def _validate_column(column: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    if not column.get("name"):
        errs.append(required(f"{path}.name"))
    ctype = column.get("type") or ""
    must = "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    if not ctype:
        errs.append(required(f"{path}.type", must))
    elif ctype not in PRINTER_COLUMN_TYPES:
        errs.append(invalid(f"{path}.type", ctype, must))
    fmt = column.get("format") or ""
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        errs.append(invalid(f"{path}.format", fmt, "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = column.get("jsonPath") or ""
    if not json_path:
        errs.append(required(f"{path}.jsonPath"))
    else:
        errs.extend(_simple_json_path_errors(json_path, f"{path}.jsonPath"))
    return errs


def _schema_at(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for part in json_path.lstrip(".").split("."):
        props = (node or {}).get("properties")
        node = props.get(part) if isinstance(props, dict) else None
        if not isinstance(node, dict):
            return None
    return node


def _validate_selectable_fields(
    fields: list[dict[str, Any]], schema: dict[str, Any], path: str
) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, entry in enumerate(fields):
        json_path = entry.get("jsonPath") or ""
        at = f"{path}[{i}].jsonPath"
        if not json_path:
            errs.append(required(at))
            continue
        if found := _simple_json_path_errors(json_path, at):
            errs.extend(found)
            continue
        if json_path in seen:
            errs.append(duplicate(at, json_path))
        seen.add(json_path)
        node = _schema_at(schema, json_path)
        if node is None:
            errs.append(invalid(at, json_path, "is an invalid path: does not refer to a valid field"))
        elif node.get(INT_OR_STRING) or node.get("type") not in ("string", "boolean", "integer"):
            errs.append(
                invalid(
                    at,
                    json_path,
                    "must point to a field of type string, boolean or integer. "
                    "Enum string fields and strings with formats are allowed.",
                )
            )
    if len(fields) > MAX_SELECTABLE_FIELDS:
        errs.append(too_many(path, len(fields), MAX_SELECTABLE_FIELDS))
    return errs


def _validate_conversion(conversion: dict[str, Any], path: str) -> list[Cause]:
    strategy = conversion.get("strategy") or ""
    if not strategy:
        return [required(f"{path}.strategy")]
    if strategy not in ("None", "Webhook"):
        return [not_supported(f"{path}.strategy", strategy, ["None", "Webhook"])]
    webhook = conversion.get("webhook")
    if strategy == "Webhook":
        if not webhook:
            return [required(f"{path}.webhook", "required when strategy is set to Webhook")]
        errs = []
        config = webhook.get("clientConfig") or {}
        if ("url" in config) == ("service" in config):
            errs.append(required(f"{path}.webhook.clientConfig", "exactly one of url or service is required"))
        if not webhook.get("conversionReviewVersions"):
            errs.append(
                required(
                    f"{path}.webhook.conversionReviewVersions",
                    "must include at least one of v1, v1beta1",
                )
            )
        return errs
    if webhook:
        return [forbidden(f"{path}.webhook", "should not be set when strategy is not set to Webhook")]
    return []


# --- per-version views -----------------------------------------------------------------------------


def _version_priority(name: str) -> tuple[int, int, int, str]:
    """Upstream's kube-aware order: GA > beta > alpha, higher major then minor first; others last, A–Z."""
    m = _KUBE_VERSION.fullmatch(name)
    if not m:
        return (3, 0, 0, name)
    stability = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stability, -int(m.group(1)), -int(m.group(3) or 0), name)


def sort_versions(names: list[str]) -> list[str]:
    """Version names in discovery order (``v2, v1, v1beta1, v1alpha1, foo``)."""
    return sorted(names, key=_version_priority)


def version_entry(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    for entry in (crd.get("spec") or {}).get("versions") or []:
        if entry.get("name") == version:
            return entry
    return None


def storage_version(crd: dict[str, Any]) -> str | None:
    for entry in (crd.get("spec") or {}).get("versions") or []:
        if entry.get("storage") is True:
            return entry.get("name")
    return None


def served_versions(crd: dict[str, Any]) -> list[str]:
    """Names of the served versions, in discovery order; the first is the preferred version."""
    entries = (crd.get("spec") or {}).get("versions") or []
    return sort_versions([e["name"] for e in entries if e.get("served") is True and e.get("name")])


def has_status_subresource(crd: dict[str, Any], version: str) -> bool:
    entry = version_entry(crd, version) or {}
    return (entry.get("subresources") or {}).get("status") is not None


def scale_subresource(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    """``{specReplicasPath, statusReplicasPath, labelSelectorPath?}`` when ``/scale`` is enabled."""
    entry = version_entry(crd, version) or {}
    return (entry.get("subresources") or {}).get("scale")


def printer_columns(crd: dict[str, Any], version: str) -> list[dict[str, Any]]:
    """The version's columns (after the implicit Name column), each with every Table field set.

    A version without ``additionalPrinterColumns`` gets the single ``Age`` column.
    An empty ``description`` means "use upstream's generated one".
    """
    return printer_columns_of_version(version_entry(crd, version) or {})


def printer_columns_of_version(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``printer_columns`` for a ``spec.versions[]`` entry already in hand."""
    columns = entry.get("additionalPrinterColumns") or []
    if not columns:
        return [dict(AGE_COLUMN)]
    return [
        {
            "name": c.get("name", ""),
            "type": c.get("type", ""),
            "format": c.get("format", ""),
            "description": c.get("description", ""),
            "priority": c.get("priority", 0),
            "jsonPath": c.get("jsonPath", ""),
        }
        for c in columns
    ]


def selectable_fields(crd: dict[str, Any], version: str) -> dict[str, str]:
    """Field-selector names the version adds (``spec.color`` → ``.spec.color``).

    ``metadata.name`` and ``metadata.namespace`` are always selectable and not listed.
    """
    return selectable_fields_of_version(version_entry(crd, version) or {})


def selectable_fields_of_version(entry: dict[str, Any]) -> dict[str, str]:
    """``selectable_fields`` for a ``spec.versions[]`` entry already in hand."""
    out: dict[str, str] = {}
    for field in entry.get("selectableFields") or []:
        json_path = field.get("jsonPath") or ""
        if json_path:
            out[json_path.lstrip(".")] = json_path
    return out


def custom_resource_schema(crd: dict[str, Any], version: str) -> CustomResourceSchema:
    """The schema that prunes, defaults and validates this version's objects.

    A version without a schema (impossible for a valid v1 CRD) keeps every field.
    """
    entry = version_entry(crd, version) or {}
    schema = (entry.get("schema") or {}).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        schema = {"type": "object", PRESERVE: True}
    return CustomResourceSchema(schema)
