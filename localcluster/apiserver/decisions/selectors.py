"""Field selectors and the selectable fields of each kind; label selectors as the API server answers them.

This module owns the query-string grammar of ``fieldSelector=`` as apimachinery's
``fields.ParseSelector`` defines it and the table of fields each built-in resource
lets clients select on.  Label selectors are :mod:`nrop.api.selectors`; here their
errors become :class:`BadRequest`, so lists, watches and controllers share one
definition of "matches".  It is pure: strings and dicts in, booleans and
:class:`BadRequest` out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nrop.api import selectors
from nrop.api.selectors import LabelSelector
from nrop.localcluster.apiserver.errors import BadRequest

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "check_field_selector",
    "label_selector_from_dict",
    "object_fields",
    "parse_field_selector",
    "parse_label_selector",
    "supported_fields",
]


# --- label selectors (the rules live in nrop.api.selectors; here they answer with a Status) ---


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector=`` query string; a bad one is a 400 ``BadRequest``."""
    try:
        return selectors.parse_label_selector(text)
    except selectors.SelectorError as exc:
        raise BadRequest(str(exc)) from None


def label_selector_from_dict(sel: Mapping[str, Any] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` body as a matcher; a bad one is a 400 ``BadRequest``."""
    try:
        return selectors.label_selector_from_dict(sel)
    except selectors.SelectorError as exc:
        raise BadRequest(str(exc)) from None


# --- field selectors ------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRequirement:
    """``field=value`` (``negate=False``) or ``field!=value``; comparison is exact."""

    field: str
    value: str
    negate: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) != self.negate

    def __str__(self) -> str:
        return f"{self.field}{'!=' if self.negate else '='}{_escape_field_value(self.value)}"


@dataclass(frozen=True)
class FieldSelector:
    """ANDed field requirements; no requirements matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    def value_for(self, field: str) -> str | None:
        """The value an ``=`` requirement pins ``field`` to (e.g. single-object watches)."""
        for r in self.requirements:
            if r.field == field and not r.negate:
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _escape_field_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _split_terms(text: str) -> list[str]:
    # Commas escaped with a backslash are data, not separators; the backslash is kept here.
    terms, start, escaped = [], 0, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _unescape_field_value(value: str) -> str:
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            raise BadRequest(f"invalid field selector: unescaped character in value: {c}")
        else:
            out.append(c)
    if escaped:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str) -> FieldSelector:
    """Parse a ``fieldSelector=`` string (``=``, ``==``, ``!=``; backslash escapes in values)."""
    requirements: list[FieldRequirement] = []
    for term in sorted(_split_terms(text)) if text else []:
        if not term:
            continue
        # The first operator occurrence splits the term; keys cannot be escaped.
        match = re.search(r"!=|==|=", term)
        if match is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        field, value = term[: match.start()], _unescape_field_value(term[match.end() :])
        requirements.append(FieldRequirement(field, value, negate=match.group() == "!="))
    return FieldSelector(tuple(requirements))


# --- selectable fields per kind -------------------------------------------------------------

_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})

# (group, resource) -> field -> dotted path into the object.  Fields whose value is
# computed rather than read (pods' hostNetwork and podIP, events' source) are added
# in ``object_fields``; they are listed here with an empty path.
_KIND_FIELDS: dict[tuple[str, str], dict[str, str]] = {
    ("", "pods"): {
        "spec.nodeName": "spec.nodeName",
        "spec.restartPolicy": "spec.restartPolicy",
        "spec.schedulerName": "spec.schedulerName",
        "spec.serviceAccountName": "spec.serviceAccountName",
        "spec.hostNetwork": "",
        "status.phase": "status.phase",
        "status.podIP": "",
        "status.nominatedNodeName": "status.nominatedNodeName",
    },
    ("", "events"): {
        "involvedObject.kind": "involvedObject.kind",
        "involvedObject.namespace": "involvedObject.namespace",
        "involvedObject.name": "involvedObject.name",
        "involvedObject.uid": "involvedObject.uid",
        "involvedObject.apiVersion": "involvedObject.apiVersion",
        "involvedObject.resourceVersion": "involvedObject.resourceVersion",
        "involvedObject.fieldPath": "involvedObject.fieldPath",
        "reason": "reason",
        "reportingComponent": "reportingComponent",
        "source": "",
        "type": "type",
    },
    ("", "secrets"): {"type": "type"},
    ("", "namespaces"): {"status.phase": "status.phase"},
    ("", "nodes"): {"spec.unschedulable": "spec.unschedulable"},
    ("", "replicationcontrollers"): {"status.replicas": "status.replicas"},
    ("", "services"): {"spec.clusterIP": "spec.clusterIP", "spec.type": "spec.type"},
    ("apps", "replicasets"): {"status.replicas": "status.replicas"},
    ("batch", "jobs"): {"status.successful": "status.succeeded"},
    ("certificates.k8s.io", "certificatesigningrequests"): {"spec.signerName": "spec.signerName"},
}

# Upstream registers field label conversions for these kinds without metadata.namespace.
_NO_NAMESPACE_FIELD = frozenset({("", "nodes"), ("", "namespaces")})

# The numeric fields upstream formats with strconv (absent means zero, not empty).
_DEFAULT_ZERO = frozenset({"status.replicas", "status.successful"})
_DEFAULT_FALSE = frozenset({"spec.unschedulable"})


def supported_fields(group: str, resource: str) -> frozenset[str]:
    """Field selector labels a built-in resource accepts (CRs: ``metadata.*`` only)."""
    base = {"metadata.name"} if (group, resource) in _NO_NAMESPACE_FIELD else set(_META_FIELDS)
    return frozenset(base | set(_KIND_FIELDS.get((group, resource), {})))


def check_field_selector(sel: FieldSelector, supported: Iterable[str], resource: str) -> None:
    """Reject selectors on fields the resource does not support, as the upstream conversion does."""
    allowed = frozenset(supported)
    for r in sel.requirements:
        if r.field not in allowed:
            raise BadRequest(f"field label not supported: {r.field}")


def _lookup(obj: Mapping[str, Any], path: str) -> Any:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _as_field_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def object_fields(
    group: str,
    resource: str,
    obj: Mapping[str, Any],
    extra_paths: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every selectable field of ``obj`` as a string (missing values are ``""``).

    ``extra_paths`` maps a field name to a dotted path, for a CRD's
    ``selectableFields`` (``{".spec.color": ...}`` style leading dots are accepted).
    """
    meta = obj.get("metadata") or {}
    fields = {
        "metadata.name": _as_field_string(meta.get("name")),
        "metadata.namespace": _as_field_string(meta.get("namespace")),
    }
    for name, path in _KIND_FIELDS.get((group, resource), {}).items():
        if path:
            value = _lookup(obj, path)
            if value is None and name in _DEFAULT_ZERO:
                value = 0
            if value is None and name in _DEFAULT_FALSE:
                value = False
            fields[name] = _as_field_string(value)
    if (group, resource) == ("", "pods"):
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        fields["spec.hostNetwork"] = _as_field_string(bool(spec.get("hostNetwork")))
        pod_ips = status.get("podIPs") or []
        first = pod_ips[0].get("ip") if pod_ips and isinstance(pod_ips[0], Mapping) else None
        fields["status.podIP"] = _as_field_string(first or status.get("podIP"))
    elif (group, resource) == ("", "events"):
        source = _lookup(obj, "source.component") or obj.get("reportingComponent")
        fields["source"] = _as_field_string(source)
    for name, path in (extra_paths or {}).items():
        fields[name] = _as_field_string(_lookup(obj, path.lstrip(".")))
    return fields
