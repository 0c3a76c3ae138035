"""Label selectors (``metav1.LabelSelector``): validation and matching, as apimachinery does.

Pure. Used for ``machineConfigPoolSelector`` of node groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SelectorError", "matches", "validate_selector"]

_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """A selector apimachinery's ``LabelSelectorAsSelector`` refuses."""


def validate_selector(selector: Mapping[str, Any], path: str) -> None:
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        op = expr.get("operator")
        values = expr.get("values") or []
        where = f"{path}.matchExpressions[{i}]"
        if op not in _OPERATORS:
            raise SelectorError(f'{where}.operator: "{op}" is not a valid label selector operator')
        if op in ("In", "NotIn") and not values:
            raise SelectorError(f"{where}.values: for 'in', 'notin' operators, values set can't be empty")
        if op in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"{where}.values: values set must be empty for exists and does not exist")
        if not expr.get("key"):
            raise SelectorError(f"{where}.key: key must not be empty")


def matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """True when ``labels`` satisfy ``selector`` (an empty selector matches everything)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
