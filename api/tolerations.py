"""Taints and tolerations, the one copy of Kubernetes' rules for them.

This module owns what ``v1.Toleration.ToleratesTaint`` and ``MatchToleration``,
``v1helper.FindMatchingUntoleratedTaint``, the API server's ``ValidateTolerations``
(with its exact messages, as :class:`~nrop.api.fielderrors.FieldError`) and the
``pkg/util/taints`` helpers (``ParseTaints`` of one spec, ``AddOrUpdateTaint``,
``RemoveTaint``) decide, plus the operator API's ``SortedTolerations``.  The scheduler's
taint plugins, the DaemonSet controller, the API server's pod validation, the operator's
node-group validation and the suite all share it.  It is pure: dicts in, booleans, lists
and field errors out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from . import fielderrors
from .fielderrors import ErrorType, FieldError, go_quote, go_struct
from .selectors import label_value_errors, qualified_name_errors

__all__ = [
    "EFFECTS",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "OPERATORS",
    "PREFER_NO_SCHEDULE",
    "add_or_update_taint",
    "find_untolerated_taint",
    "parse_taint",
    "remove_taint",
    "same_toleration",
    "sorted_tolerations",
    "tolerates",
    "toleration_errors",
    "tolerations_errors",
    "tolerations_tolerate",
]

NO_SCHEDULE: Final = "NoSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
NO_EXECUTE: Final = "NoExecute"
#: The taint effects a toleration may name, in the order upstream lists them as supported values
#: (``validateTaintEffect``; ``field.NotSupported`` keeps the order it is given).
EFFECTS: Final = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
#: The toleration operators, in the order upstream lists them as supported values.
OPERATORS: Final = ("Equal", "Exists")


# -- matching ----------------------------------------------------------------------------------


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one toleration tolerates one taint (``Toleration.ToleratesTaint``).

    An empty effect or key matches any; the empty operator means ``Equal``; an unknown
    operator tolerates nothing.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerations_tolerate(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint`` (``TolerationsTolerateTaint``)."""
    return any(tolerates(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Iterable[Mapping[str, Any]],
    tolerations: Sequence[Mapping[str, Any]],
    effects: Iterable[str] = (NO_SCHEDULE, NO_EXECUTE),
) -> Mapping[str, Any] | None:
    """The first taint (in node order) with one of ``effects`` that no toleration tolerates, or None.

    ``FindMatchingUntoleratedTaint`` with an effect filter; the default filter is the
    scheduler's and the DaemonSet controller's "may a new pod land here".
    """
    wanted = frozenset(effects)
    for taint in taints:
        if taint.get("effect") in wanted and not tolerations_tolerate(tolerations, taint):
            return taint
    return None


def same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``Toleration.MatchToleration``: the same key, operator, value and effect."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "effect", "value")) and (
        a.get("operator") or "Equal"
    ) == (b.get("operator") or "Equal")


def sorted_tolerations(tolerations: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """``nropv1.SortedTolerations``: by key, operator, value, effect; empty fields dropped."""
    cleaned = [{k: v for k, v in tol.items() if v not in (None, "")} for tol in tolerations or ()]
    return sorted(
        cleaned,
        key=lambda tol: (
            tol.get("key", ""),
            tol.get("operator", ""),
            tol.get("value", ""),
            tol.get("effect", ""),
        ),
    )


# -- validation --------------------------------------------------------------------------------

#: The bad value of an ``Exists`` toleration with a value: the internal ``core.Toleration``
#: printed with Go's ``%#v``. A set ``tolerationSeconds`` is a pointer there, whose address
#: upstream prints and no one can reproduce; this one stands for it.
_SECONDS_POINTER: Final = "(*int64)(0xc000000000)"


def _go_toleration(tol: Mapping[str, Any]) -> str:
    seconds = _SECONDS_POINTER if tol.get("tolerationSeconds") is not None else "(*int64)(nil)"
    return go_struct(
        "core.Toleration",
        [
            *(
                (name.capitalize(), go_quote(str(tol.get(name) or "")))
                for name in ("key", "operator", "value", "effect")
            ),
            ("TolerationSeconds", seconds),
        ],
    )


def toleration_errors(tolerations: Sequence[Mapping[str, Any]], path: str) -> list[FieldError]:
    """The API server's refusals of these tolerations (``ValidateTolerations``), ``path`` naming the list.

    In upstream's order for each toleration: the key, an empty key without ``Exists``,
    ``tolerationSeconds`` without ``NoExecute``, the operator and its value, the effect.
    """
    errors: list[FieldError] = []
    for i, entry in enumerate(tolerations):
        where = f"{path}[{i}]"
        tol = entry or {}  # a null entry decodes as the zero toleration
        key, operator = str(tol.get("key") or ""), str(tol.get("operator") or "")
        value, effect = str(tol.get("value") or ""), str(tol.get("effect") or "")
        if key:
            errors += [fielderrors.invalid(f"{where}.key", key, m) for m in qualified_name_errors(key)]
        if not key and operator != "Exists":
            errors.append(
                fielderrors.invalid(
                    f"{where}.operator",
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values and all keys"',
                )
            )
        if tol.get("tolerationSeconds") is not None and effect != NO_EXECUTE:
            errors.append(
                fielderrors.invalid(
                    f"{where}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
                )
            )
        if operator in ("Equal", ""):
            value_errors = label_value_errors(value)
            if value_errors:
                errors.append(fielderrors.invalid(f"{where}.operator", value, ";".join(value_errors)))
        elif operator == "Exists":
            if value:
                errors.append(
                    FieldError(
                        ErrorType.INVALID,
                        f"{where}.operator",
                        "value must be empty when `operator` is 'Exists'",
                        _go_toleration(tol),
                    )
                )
        else:
            errors.append(fielderrors.not_supported(f"{where}.operator", operator, OPERATORS))
        if effect and effect not in EFFECTS:
            errors.append(fielderrors.not_supported(f"{where}.effect", effect, EFFECTS))
    return errors


def tolerations_errors(tolerations: Sequence[Mapping[str, Any]], path: str) -> list[str]:
    """:func:`toleration_errors` as text (``field.Error.Error()``), one line per error."""
    return [str(error) for error in toleration_errors(tolerations, path)]


# -- taints on a node --------------------------------------------------------------------------


def parse_taint(text: str) -> dict[str, str]:
    """``taints.ParseTaints`` for one spec ``key[=value]:Effect``."""
    key_value, sep, effect = text.rpartition(":")
    if not sep or effect not in (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE):
        raise ValueError(f"invalid taint spec: {text}")
    key, _, value = key_value.partition("=")
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


def _same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``Taint.MatchTaint``: the same key and effect."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def add_or_update_taint(
    taints: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], bool]:
    """``taints.AddOrUpdateTaint``: replace a taint with the same key and effect, or append; and whether it changed."""
    result: list[dict[str, Any]] = []
    updated = False
    found = False
    for existing in taints:
        if _same_taint(existing, taint):
            found = True
            if existing.get("value", "") == taint.get("value", ""):
                result.append(dict(existing))
                continue
            updated = True
            result.append(dict(taint))
        else:
            result.append(dict(existing))
    if not found:
        result.append(dict(taint))
        updated = True
    return result, updated


def remove_taint(
    taints: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], bool]:
    """``taints.RemoveTaint``: drop taints with the same key and effect; and whether any was dropped."""
    kept = [dict(existing) for existing in taints if not _same_taint(existing, taint)]
    return kept, len(kept) != len(taints)
