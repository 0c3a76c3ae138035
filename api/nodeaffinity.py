"""Node selectors as the scheduler and the DaemonSet controller match them (upstream
``component-helpers/scheduling/corev1/nodeaffinity``).

A pod's required node affinity is its ``spec.nodeSelector`` AND its
``requiredDuringSchedulingIgnoredDuringExecution`` terms, ORed; a term ANDs its
``matchExpressions`` (on labels: In, NotIn, Exists, DoesNotExist, Gt, Lt) and its
``matchFields`` (only ``metadata.name``, In/NotIn with exactly one value).  A term with no
requirement, or with an invalid one, matches nothing, as upstream's lazy-error selector.
Preferred terms score a node with the sum of the weights of the terms it matches.

The same module owns what the API server refuses in a pod's node affinity
(``pkg/apis/core/validation``: ``ValidateNodeSelector``, ``ValidateNodeSelectorTerm``,
``ValidateNodeSelectorRequirement``, ``ValidateNodeFieldSelectorRequirement`` and
``ValidatePreferredSchedulingTerms``), as :class:`~nrop.api.fielderrors.FieldError` values:
:func:`node_affinity_errors`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from . import fielderrors
from .fielderrors import FieldError
from .selectors import dns1123_subdomain_errors, label_value_errors, qualified_name_errors

__all__ = [
    "NO_TERMS",
    "OBJECT_NAME_FIELD",
    "Matcher",
    "NodeSelector",
    "PreferredTerms",
    "RequiredNodeAffinity",
    "compile_term",
    "node_affinity_errors",
    "node_selector_errors",
    "requirement_error",
]

OBJECT_NAME_FIELD = "metadata.name"
_INT64 = re.compile(r"[+-]?[0-9]+")
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

Matcher = Callable[[Mapping[str, str], str], bool]
"""``matcher(node_labels, node_name)``."""


def _parse_int64(text: str) -> int | None:
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def requirement_error(req: Mapping[str, Any], *, field: bool) -> tuple[str, str] | None:
    """Why a node selector requirement is invalid as ``(subfield, message)``, or None.

    The checks are upstream's when it builds label and field selectors from the terms.
    """
    op = req.get("operator")
    values = req.get("values") or []
    if field:
        if op not in ("In", "NotIn"):
            return "operator", fielderrors.not_supported("operator", str(op), ("In", "NotIn")).body()
        return None if len(values) == 1 else ("values", "must have one element")
    if op not in _LABEL_OPERATORS:
        return "operator", fielderrors.not_supported("operator", str(op), ()).body()
    if op in ("In", "NotIn") and not values:
        return "values", "for 'in', 'notin' operators, values set can't be empty"
    if op in ("Exists", "DoesNotExist") and values:
        return "values", "values set must be empty for exists and does not exist"
    if op in ("Gt", "Lt") and (len(values) != 1 or _parse_int64(str(values[0])) is None):
        return "values", "for 'Gt', 'Lt' operators, exactly one integer value is required"
    return None


def _label_matcher(req: Mapping[str, Any]) -> Matcher:
    key = req.get("key", "")
    op = req["operator"]
    values = frozenset(str(v) for v in req.get("values") or [])
    if op == "In":
        return lambda labels, _name: key in labels and labels[key] in values
    if op == "NotIn":
        return lambda labels, _name: key not in labels or labels[key] not in values
    if op == "Exists":
        return lambda labels, _name: key in labels
    if op == "DoesNotExist":
        return lambda labels, _name: key not in labels
    bound = _parse_int64(next(iter(values)))
    assert bound is not None  # requirement_error() vetted it

    def compare(labels: Mapping[str, str], _name: str) -> bool:
        if key not in labels:
            return False
        value = _parse_int64(labels[key])
        if value is None:
            return False
        return value > bound if op == "Gt" else value < bound

    return compare


def _field_matcher(req: Mapping[str, Any]) -> Matcher:
    key = req.get("key", "")
    wanted = str((req.get("values") or [""])[0])
    equal = req["operator"] == "In"

    def match(_labels: Mapping[str, str], name: str) -> bool:
        actual = name if key == OBJECT_NAME_FIELD else ""
        return (actual == wanted) == equal

    return match


def compile_term(term: Mapping[str, Any]) -> Matcher | None:
    """A node selector term as one matcher, or None when it can match no node."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return None
    matchers: list[Matcher] = []
    for req in expressions:
        if requirement_error(req, field=False):
            return None
        matchers.append(_label_matcher(req))
    for req in fields:
        if requirement_error(req, field=True):
            return None
        matchers.append(_field_matcher(req))
    return lambda labels, name: all(m(labels, name) for m in matchers)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Required node selector terms, ORed; None stands for "no terms given" (matches all)."""

    terms: tuple[Matcher, ...] | None

    @classmethod
    def of(cls, selector: Mapping[str, Any] | None) -> NodeSelector:
        if selector is None:
            return cls(None)
        compiled = (compile_term(t) for t in selector.get("nodeSelectorTerms") or [])
        return cls(tuple(m for m in compiled if m is not None))

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.terms is None:
            return True
        return any(term(labels, name) for term in self.terms)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``spec.nodeSelector`` AND the required affinity (upstream ``GetRequiredNodeAffinity``)."""

    node_selector: Mapping[str, str]
    affinity: NodeSelector

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> RequiredNodeAffinity:
        return cls.of_spec(pod.get("spec") or {})

    @classmethod
    def of_spec(cls, spec: Mapping[str, Any]) -> RequiredNodeAffinity:
        """The required affinity of a pod spec (a DaemonSet's template has no pod around it)."""
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        return cls(spec.get("nodeSelector") or {}, NodeSelector.of(required))

    def matches(self, node: Mapping[str, Any]) -> bool:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return False
        return self.affinity.matches(labels, meta.get("name", ""))


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """Weighted preferred terms (upstream ``PreferredSchedulingTerms``)."""

    terms: tuple[tuple[int, Matcher], ...]

    @classmethod
    def of(cls, preferred: Sequence[Mapping[str, Any]] | None) -> PreferredTerms:
        terms = []
        for item in preferred or []:
            weight = int(item.get("weight") or 0)
            matcher = compile_term(item.get("preference") or {})
            if weight and matcher is not None:
                terms.append((weight, matcher))
        return cls(tuple(terms))

    def score(self, node: Mapping[str, Any]) -> int:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        name = meta.get("name", "")
        return sum(weight for weight, matcher in self.terms if matcher(labels, name))


# -- API validation ------------------------------------------------------------------------------

#: ``ValidateNodeSelector``'s detail for a selector without terms.
NO_TERMS: Final = "must have at least one node selector term"
_NOT_AN_OPERATOR: Final = "not a valid selector operator"


def _values(req: Mapping[str, Any]) -> list[str]:
    return [str(v) for v in req.get("values") or ()]


def _requirement_errors(req: Mapping[str, Any], path: str, *, check_values: bool) -> list[FieldError]:
    """``ValidateNodeSelectorRequirement``: arity for the operator, the key, each value."""
    op, key, values = str(req.get("operator") or ""), str(req.get("key") or ""), _values(req)
    errors: list[FieldError] = []
    if op in ("In", "NotIn"):
        if not values:
            errors.append(
                fielderrors.required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                fielderrors.forbidden(
                    f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
            )
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(
                fielderrors.required(
                    f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
    else:
        errors.append(fielderrors.invalid(f"{path}.operator", op, _NOT_AN_OPERATOR))
    errors += [fielderrors.invalid(f"{path}.key", key, m) for m in qualified_name_errors(key)]
    if check_values:
        for i, value in enumerate(values):
            errors += [
                fielderrors.invalid(f"{path}.values[{i}]", value, m) for m in label_value_errors(value)
            ]
    return errors


def _field_requirement_errors(req: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateNodeFieldSelectorRequirement``: In/NotIn with one value, on ``metadata.name`` only."""
    op, key, values = str(req.get("operator") or ""), str(req.get("key") or ""), _values(req)
    errors: list[FieldError] = []
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errors.append(
                fielderrors.required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        errors.append(fielderrors.invalid(f"{path}.operator", op, _NOT_AN_OPERATOR))
    if key != OBJECT_NAME_FIELD:
        errors.append(fielderrors.invalid(f"{path}.key", key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errors += [
                fielderrors.invalid(f"{path}.values[{i}]", value, m) for m in dns1123_subdomain_errors(value)
            ]
    return errors


def _term_errors(term: Mapping[str, Any], path: str, *, check_values: bool) -> list[FieldError]:
    """``ValidateNodeSelectorTerm``: every label requirement, then every field requirement."""
    errors: list[FieldError] = []
    for i, req in enumerate(term.get("matchExpressions") or ()):
        errors += _requirement_errors(req or {}, f"{path}.matchExpressions[{i}]", check_values=check_values)
    for i, req in enumerate(term.get("matchFields") or ()):
        errors += _field_requirement_errors(req or {}, f"{path}.matchFields[{i}]")
    return errors


def node_selector_errors(
    selector: Mapping[str, Any], path: str, *, check_values: bool = True
) -> list[FieldError]:
    """``ValidateNodeSelector`` of a required node selector at ``path``.

    ``check_values`` is false where upstream allows invalid label values (an update of a pod
    that already had them); a create checks them.
    """
    terms = selector.get("nodeSelectorTerms") or ()
    if not terms:
        return [fielderrors.required(f"{path}.nodeSelectorTerms", NO_TERMS)]
    errors: list[FieldError] = []
    for i, term in enumerate(terms):
        errors += _term_errors(term or {}, f"{path}.nodeSelectorTerms[{i}]", check_values=check_values)
    return errors


def _preferred_errors(preferred: Sequence[Mapping[str, Any]], path: str) -> list[FieldError]:
    """``ValidatePreferredSchedulingTerms``: weights in 1-100; values are never checked there."""
    errors: list[FieldError] = []
    for i, entry in enumerate(preferred):
        term = entry or {}  # a null entry decodes as the zero term
        weight = term.get("weight")
        weight = weight if isinstance(weight, int) and not isinstance(weight, bool) else 0
        if not 1 <= weight <= 100:
            errors.append(fielderrors.invalid(f"{path}[{i}].weight", weight, "must be in the range 1-100"))
        errors += _term_errors(term.get("preference") or {}, f"{path}[{i}].preference", check_values=False)
    return errors


def node_affinity_errors(node_affinity: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateNodeAffinity`` of a pod's ``affinity.nodeAffinity`` at ``path``: required, then preferred."""
    errors: list[FieldError] = []
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        errors += node_selector_errors(required, f"{path}.requiredDuringSchedulingIgnoredDuringExecution")
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    if preferred:
        errors += _preferred_errors(preferred, f"{path}.preferredDuringSchedulingIgnoredDuringExecution")
    return errors
