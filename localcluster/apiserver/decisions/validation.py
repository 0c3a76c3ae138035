"""Validation of built-in kinds' bodies against their definitions, and of object names and metadata.

Upstream decodes a built-in body into its Go struct: unknown fields are dropped
(and reported according to ``fieldValidation``), mistyped fields fail the
decode, and the kind's validation then reports missing required fields.  Here
one walk over the body and its kubernetes-validate definition does all three:
:func:`validate_builtin` returns the type/required/enum errors, the unknown
field paths and the body with unknown fields pruned (for a Pod stored by the API
server, its quantities re-serialized as upstream's ``Quantity.String()``).
:func:`validate_name` and :func:`validate_object_meta` reproduce apimachinery's
``ValidateObjectMeta`` messages, which clients and tests match on.
:func:`pod_spec_causes` is the pod strategy's validation of a pod spec (a Pod's or a
workload's template) with the rules of ``nrop.api``: container resources, node
selector labels, node affinity and tolerations.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nrop.api import nodeaffinity, resourcerequirements, tolerations
from nrop.api.fielderrors import FieldError
from nrop.api.metatime import parse_time, rfc3339, rfc3339_micro
from nrop.api.quantity import QuantityError, canonical
from nrop.api.selectors import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from nrop.localcluster.apiserver.errors import (
    BadRequest,
    Cause,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    type_invalid,
)
from nrop.localcluster.apiserver.openapi.definitions import Definitions, schema_types
from nrop.localcluster.apiserver.tables.cells import get_field

__all__ = [
    "FIELD_VALIDATION_DIRECTIVES",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "NameRule",
    "ValidationResult",
    "pod_spec_causes",
    "split_path",
    "strict_decoding_error",
    "validate_builtin",
    "validate_name",
    "validate_object_meta",
    "warning_headers",
]

NameRule = Literal["subdomain", "label", "path-segment"]
FIELD_VALIDATION_DIRECTIVES = ("Ignore", "Warn", "Strict")
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
#: Kinds whose stored quantities are re-serialized (upstream re-serializes every Quantity it
#: decodes; here only Pods, whose resources clients read back, the rest keep the text sent).
_RESERIALIZED_QUANTITIES = frozenset({"io.k8s.api.core.v1.Pod"})
#: The detail upstream's validation gives a required field the definitions also mark required.
_REQUIRED_DETAILS = {("io.k8s.api.core.v1.NodeSelector", "nodeSelectorTerms"): nodeaffinity.NO_TERMS}
_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
# Go decodes these into time.Time and encodes them back: any RFC 3339 input (kopf sends
# isoformat() with an offset) is stored as UTC "Z", whole seconds for Time.
_TIME_FORMATS = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": rfc3339,
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": rfc3339_micro,
}


# --------------------------------------------------------------------------- body validation


@dataclass
class ValidationResult:
    """What one walk over a body found.

    ``errors`` are field causes for a 422 (or a 400 decode error, the caller's choice);
    ``unknown_fields`` are paths such as ``spec.containers[0].imagee`` (empty under
    ``fieldValidation=Ignore``); ``pruned`` is the body without its unknown fields,
    which is what upstream stores whatever the directive.
    """

    errors: list[Cause] = field(default_factory=list)
    unknown_fields: list[str] = field(default_factory=list)
    pruned: Any = None

    @property
    def ok(self) -> bool:
        return not self.errors


def validate_builtin(
    defs: Definitions,
    def_name: str,
    obj: Any,
    *,
    field_validation: str = "Strict",
    path: str = "",
    stored: bool = False,
) -> ValidationResult:
    """Check ``obj`` against definition ``def_name`` (e.g. ``io.k8s.api.core.v1.Pod``).

    ``path`` prefixes every reported path (``metadata`` when checking a custom
    resource's metadata against ``ObjectMeta``).  Missing required fields under a
    top-level ``status`` are not reported: upstream status writes are not held to
    the definitions' ``required`` lists (those only mirror Go's ``omitempty``).
    ``stored``: the API server decodes ``obj`` to store it, so ``pruned`` holds a Pod's
    quantities as upstream serves them (``1000m`` is stored as ``1``).
    """
    walker = _Walker(
        defs,
        report_unknown=field_validation != "Ignore",
        reserialize=stored and def_name in _RESERIALIZED_QUANTITIES,
    )
    result = ValidationResult()
    result.pruned = walker.walk({"$ref": "#/$defs/" + def_name}, obj, path, top=not path)
    result.errors = walker.errors
    result.unknown_fields = walker.unknown
    return result


_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE_NAMES.get(type(value), "object")


def _admits(types: set[str], value: Any) -> bool:
    actual = _json_type(value)
    if actual in types:
        return True
    if actual == "integer" and "number" in types:
        return True
    # YAML-to-JSON converters may render 3 as 3.0; the Go decoder accepts integral floats for ints.
    return actual == "number" and "integer" in types and float(value).is_integer()


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _is_empty(value: Any) -> bool:
    # Go's zero values that upstream validation reports as "Required value"; {} is a present struct.
    return value is None or (isinstance(value, str | list) and not value)


class _Walker:
    def __init__(self, defs: Definitions, *, report_unknown: bool, reserialize: bool = False) -> None:
        self.defs = defs
        self.report_unknown = report_unknown
        self.reserialize = reserialize
        self.errors: list[Cause] = []
        self.unknown: list[str] = []

    def _resolve(self, schema: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The resolved schema and the definition name it came from ('' if inline)."""
        name = ""
        seen = 0
        while True:
            ref = schema.get("$ref")
            if ref is None and len(schema.get("allOf", ())) == 1:
                ref = schema["allOf"][0].get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#/"):
                return schema, name
            name = ref.rsplit("/", 1)[-1]
            target = self.defs.defs.get(name)
            if target is None:
                return {}, name
            schema = target
            seen += 1
            if seen > 64:
                raise ValueError(f"reference cycle at {ref}")

    def walk(
        self, schema: dict[str, Any], value: Any, path: str, *, top: bool = False, in_status: bool = False
    ) -> Any:
        schema, def_name = self._resolve(schema)
        if value is None:
            return None  # Go decodes null as the zero value; `required` is checked by the parent
        if def_name == _QUANTITY_DEF and isinstance(value, int | float) and not isinstance(value, bool):
            return self._numeric_quantity(value, path)
        if def_name == _QUANTITY_DEF and isinstance(value, str) and self.reserialize:
            return self._stored_quantity(value, path)
        if "oneOf" in schema or "anyOf" in schema:
            return self._alternatives(schema, value, path, def_name)
        types = schema_types(schema) - {"null"}
        if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
            types = {"integer", "string"}
        if types and not _admits(types, value):
            expected = " or ".join(sorted(types))
            self.errors.append(type_invalid(path, _json_type(value), expected))
            return value
        if "enum" in schema and value not in schema["enum"]:
            self.errors.append(not_supported(path, value, list(schema["enum"])))
        if isinstance(value, float) and "integer" in types and "number" not in types:
            return int(value)  # admitted above, so integral: stored as the Go integer it decodes into
        if isinstance(value, dict):
            return self._object(schema, value, path, def_name, top=top, in_status=in_status)
        if isinstance(value, list):
            items = schema.get("items")
            if not isinstance(items, dict):
                return value
            return [self.walk(items, v, f"{path}[{i}]", in_status=in_status) for i, v in enumerate(value)]
        if isinstance(value, str):
            self._string_format(schema, value, path, def_name)
            if def_name in _TIME_FORMATS and value:
                return self._time(value, path, def_name)
        return value

    def _stored_quantity(self, value: str, path: str) -> str:
        """A quantity string as upstream stores it: ``UnmarshalJSON`` (trimmed, parsed), then
        ``String()`` (the text as sent where the parser keeps it, else the canonical form)."""
        if not _QUANTITY_RE.fullmatch(value.strip()):
            self._string_format({}, value, path, _QUANTITY_DEF)
            return value
        try:
            return canonical(value.strip())
        except QuantityError as err:
            self.errors.append(invalid(path, value, err.reason))
            return value

    def _numeric_quantity(self, value: float, path: str) -> str:
        """A quantity sent as a JSON number (``cpu: 2``): Go's ``Quantity.UnmarshalJSON`` parses
        the number's text, and the object is stored and served with the string form."""
        text = json.dumps(value)
        try:
            return canonical(text)
        except ValueError:
            self.errors.append(
                invalid(
                    path, text, "quantities must match the regular expression " + f"'{_QUANTITY_RE.pattern}'"
                )
            )
            return text

    def _time(self, value: str, path: str, def_name: str) -> str:
        try:
            return _TIME_FORMATS[def_name](parse_time(value))
        except ValueError:
            self.errors.append(invalid(path, value, "must be an RFC 3339 timestamp"))
            return value

    def _alternatives(self, schema: dict[str, Any], value: Any, path: str, def_name: str) -> Any:
        branches = [self._resolve(b)[0] for b in schema.get("oneOf", schema.get("anyOf", []))]
        admitted: set[str] = set()
        for branch in branches:
            admitted |= schema_types(branch) - {"null"}
        if admitted and not _admits(admitted, value):
            self.errors.append(type_invalid(path, _json_type(value), " or ".join(sorted(admitted))))
        elif isinstance(value, str):
            self._string_format(schema, value, path, def_name)
        return value

    def _string_format(self, schema: dict[str, Any], value: str, path: str, def_name: str) -> None:
        if def_name == _QUANTITY_DEF:
            if not _QUANTITY_RE.fullmatch(value.strip()):
                self.errors.append(
                    invalid(
                        path,
                        value,
                        "quantities must match the regular expression " + f"'{_QUANTITY_RE.pattern}'",
                    )
                )
        elif schema.get("format") == "byte":
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                self.errors.append(invalid(path, value, "illegal base64 data"))

    def _object(
        self,
        schema: dict[str, Any],
        value: dict[str, Any],
        path: str,
        def_name: str,
        *,
        top: bool,
        in_status: bool,
    ) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        map_values = extra if isinstance(extra, dict) else None
        preserve = bool(schema.get(_PRESERVE)) or extra is True
        if not props and map_values is None:
            return value  # free-form (RawExtension, FieldsV1, JSON, preserved): anything goes
        out: dict[str, Any] = {}
        for key, sub in value.items():
            if key in props:
                sub_path, sub_schema = _child(path, key), props[key]
            elif map_values is not None:
                sub_path, sub_schema = f"{path}[{key}]", map_values
            else:
                if preserve:
                    out[key] = sub
                elif self.report_unknown:
                    self.unknown.append(_child(path, key))
                continue
            out[key] = self.walk(sub_schema, sub, sub_path, in_status=in_status or (top and key == "status"))
        if not in_status:
            for name in schema.get("required", ()):
                if _is_empty(value.get(name)):
                    detail = _REQUIRED_DETAILS.get((def_name, name), "")
                    self.errors.append(required(_child(path, name), detail))
        return out


def split_path(path: str) -> list[str | int]:
    """The parts of a reported path: ``spec.containers[0].resources.limits[a.b/c]`` →
    ``["spec", "containers", 0, "resources", "limits", "a.b/c"]`` (bracketed digits are list indices)."""
    parts: list[str | int] = []
    for match in _PATH_PART_RE.finditer(path):
        name, bracketed = match.group(1), match.group(2)
        if name is not None:
            parts.append(name)
        elif bracketed.isdigit():
            parts.append(int(bracketed))
        else:
            parts.append(bracketed)
    return parts


_PATH_PART_RE = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def strict_decoding_error(paths: list[str]) -> BadRequest:
    """The 400 a ``fieldValidation=Strict`` request with unknown fields gets."""
    listed = ", ".join(f'unknown field "{p}"' for p in paths)
    return BadRequest(f"strict decoding error: {listed}")


def warning_headers(paths: list[str]) -> list[str]:
    """``Warning`` header values (one per field) for ``fieldValidation=Warn``."""
    return ["299 - " + _quote(f'unknown field "{p}"') for p in paths]


def _quote(text: str) -> str:
    """apimachinery's makeQuotedString (a Warning header's quoted-string): only ``"`` and ``\\`` escaped, not Go's ``%q``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --------------------------------------------------------------------------- names


def validate_name(name: str, kind_rule: NameRule = "subdomain", *, prefix: bool = False) -> list[str]:
    """Messages for an invalid object name (empty list: valid).

    ``prefix`` validates a ``generateName``: a trailing ``-`` is allowed there.
    """
    if kind_rule == "path-segment":
        if not prefix and name in (".", ".."):
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
    if prefix and name.endswith("-"):
        name = name[:-1] + "a"  # upstream's maskTrailingDash
    if kind_rule == "label":
        return dns1123_label_errors(name)
    if kind_rule == "subdomain":
        return dns1123_subdomain_errors(name)
    raise ValueError(f"unknown name rule {kind_rule!r}")


# --------------------------------------------------------------------------- metadata


def validate_object_meta(
    meta: dict[str, Any] | None, namespaced: bool, name_rule: NameRule = "subdomain"
) -> list[Cause]:
    """apimachinery's ``ValidateObjectMeta`` for a create: name, namespace, labels, annotations, finalizers."""
    meta = meta or {}
    causes: list[Cause] = []
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if generate_name:
        causes.extend(
            invalid("metadata.generateName", generate_name, m)
            for m in validate_name(generate_name, name_rule, prefix=True)
        )
    if name:
        causes.extend(invalid("metadata.name", name, m) for m in validate_name(name, name_rule))
    elif not generate_name:
        causes.append(required("metadata.name", "name or generateName is required"))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        else:
            causes.extend(
                invalid("metadata.namespace", namespace, m) for m in dns1123_label_errors(namespace)
            )
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    causes.extend(validate_labels(meta.get("labels") or {}, "metadata.labels"))
    causes.extend(validate_annotations(meta.get("annotations") or {}, "metadata.annotations"))
    for finalizer in meta.get("finalizers") or ():
        causes.extend(
            invalid("metadata.finalizers", finalizer, m) for m in qualified_name_errors(str(finalizer))
        )
    return causes


def validate_labels(labels: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key, value in labels.items():
        causes.extend(invalid(path, key, m) for m in qualified_name_errors(key))
        if isinstance(value, str):
            causes.extend(invalid(path, value, m) for m in label_value_errors(value))
    return causes


def validate_annotations(annotations: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    total = 0
    for key, value in annotations.items():
        # Annotation keys are qualified names, case-insensitively.
        causes.extend(invalid(path, key, m) for m in qualified_name_errors(key.lower()))
        total += len(key.encode()) + len(str(value or "").encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


# --------------------------------------------------------------------------- pod specs

#: Where each kind holds a pod spec (a Pod's own, a workload's template).
_POD_SPEC_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("", "PodTemplate"): ("template", "spec"),
    ("", "ReplicationController"): ("spec", "template", "spec"),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _cause(error: FieldError) -> Cause:
    return Cause(error.reason, error.body(), error.field)


def pod_spec_causes(group: str, kind: str, obj: Mapping[str, Any]) -> list[Cause]:
    """The ``ValidatePodSpec`` causes of the pod spec a ``group``/``kind`` object holds ([] for
    other kinds), in upstream's order: container resources, ``nodeSelector`` labels, node
    affinity, tolerations. Paths are upstream's (``spec.template.spec.tolerations[0]...``)."""
    parts = _POD_SPEC_PATHS.get((group, kind))
    spec = get_field(obj, *parts) if parts is not None else None
    if parts is None or not isinstance(spec, dict):
        return []
    path = ".".join(parts)
    causes = [_cause(p) for p in resourcerequirements.validate_pod_spec_resources(spec, path)]
    node_selector = spec.get("nodeSelector")
    if isinstance(node_selector, Mapping):
        causes += validate_labels(dict(node_selector), f"{path}.nodeSelector")
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity")
    if isinstance(node_affinity, Mapping):
        errors = nodeaffinity.node_affinity_errors(node_affinity, f"{path}.affinity.nodeAffinity")
        causes += [_cause(e) for e in errors]
    pod_tolerations = spec.get("tolerations")
    if isinstance(pod_tolerations, list) and pod_tolerations:
        causes += [_cause(e) for e in tolerations.toleration_errors(pod_tolerations, f"{path}.tolerations")]
    return causes
