"""Small helpers the in-tree plugins share: score normalisation, a pod's tolerations and args checks.

These mirror upstream's ``plugins/helper`` functions so that every plugin normalises
scores in the one upstream way; whether a toleration tolerates a taint is
:mod:`nrop.api.tolerations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from nrop.api.selectors import qualified_name_errors
from nrop.sched.errors import ConfigError
from nrop.sched.framework.interface import Obj, Status


def default_normalize_score(max_priority: int, reverse: bool, scores: MutableMapping[str, int]) -> Status:
    """Scale scores to ``[0, max_priority]`` by the highest one (upstream ``DefaultNormalizeScore``).

    With ``reverse`` the scale is flipped, so the node with the highest raw score gets 0;
    when every raw score is 0 a reversed normalisation gives everyone ``max_priority``.
    """
    highest = max(scores.values(), default=0)
    if highest == 0:
        if reverse:
            for name in scores:
                scores[name] = max_priority
        return Status.success()
    for name, score in scores.items():
        scaled = max_priority * score // highest
        scores[name] = max_priority - scaled if reverse else scaled
    return Status.success()


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on ints."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# ------------------------------------------------------------------------------ taints


def pod_tolerations(pod: Obj) -> Sequence[Mapping[str, Any]]:
    return (pod.get("spec") or {}).get("tolerations") or ()


def node_taints(node: Obj) -> Sequence[Mapping[str, Any]]:
    return (node.get("spec") or {}).get("taints") or ()


# ------------------------------------------------------------------------------ args

_NAME_PART_ERRORS = ("name part must be non-empty", "name part must be no more than 63 characters")


def qualified_name_error(value: str) -> str | None:
    """Why ``value`` is not a valid label name (upstream ``ValidateLabelName``), or None.

    The rule is :func:`nrop.api.selectors.qualified_name_errors`; this says the first problem
    in the scheduler's words: the prefix, then an empty or too long name, then its characters.
    """
    errors = qualified_name_errors(value)
    if not errors:
        return None
    if any(not error.startswith("name part") for error in errors):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    for known in _NAME_PART_ERRORS:
        if known in errors:
            return known
    return (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character"
    )


def args_mapping(args: Any, path: str, known: Iterable[str]) -> Mapping[str, Any]:
    """The args as a mapping (None is empty), refusing fields the args type does not have."""
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise ConfigError(path, f"must be an object, got {type(args).__name__}")
    allowed = set(known) | {"apiVersion", "kind"}
    for key in args:
        if key not in allowed:
            raise ConfigError(f"{path}.{key}", "unknown field")
    return args


def string_list(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(path, "must be a list of strings")
    return tuple(value)


def integer(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {value!r}")
    return value


def invalid(value: Any, detail: str) -> str:
    """An upstream ``field.Invalid`` message: strings quoted, numbers bare."""
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return f"Invalid value: {shown}: {detail}"
