"""Small helpers the in-tree plugins share: score normalisation, a pod's tolerations and args checks.

These mirror upstream's ``plugins/helper`` functions so that every plugin normalises
scores in the one upstream way; whether a toleration tolerates a taint is
:mod:`nrop.api.tolerations`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from nrop.sched.errors import ConfigError
from nrop.sched.framework import Obj, Status


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

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_error(value: str) -> str | None:
    """Why ``value`` is not a valid label name (upstream ``ValidateLabelName``), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character"
        )
    return None


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
