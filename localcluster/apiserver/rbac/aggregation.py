"""Aggregated ClusterRoles: the rules upstream's clusterrole-aggregation controller fills in.

This module owns :func:`aggregated_rules` and :func:`aggregate_cluster_roles`; the API server has no such controller,
so the :class:`~nrop.localcluster.apiserver.rbac.policy.Policy` resolves aggregation
when it is built, and the bootstrap roles are stored as the controller would leave them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from nrop.api import selectors as label_selectors

Obj = Mapping[str, Any]


def name_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def namespace_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def has_aggregation_rule(cluster_role: Obj) -> bool:
    """An ``aggregationRule`` with at least one selector (upstream ``hasAggregationRule``)."""
    return bool((cluster_role.get("aggregationRule") or {}).get("clusterRoleSelectors"))


def aggregated_rules(cluster_roles: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Each ClusterRole's rules by name, aggregated ones' filled in; nothing is copied.

    Upstream's clusterrole-aggregation controller replaces an aggregated role's rules with
    the de-duplicated union of the rules of every other ClusterRole one of its selectors
    matches, taken in name order. Aggregated roles may select aggregated roles (``admin``
    selects ``edit``, which selects ``view``), so the union is resolved transitively. The
    lists are new; the rules in them are the roles' own objects, for reading only (the API
    server's policy builds from the live store at every RBAC write).
    """
    by_name = {name_of(r): r for r in cluster_roles}
    selected: dict[str, list[str]] = {}
    for name, role in by_name.items():
        aggregation = role.get("aggregationRule")
        if aggregation:
            selectors = aggregation.get("clusterRoleSelectors") or []
            selected[name] = sorted(
                other
                for other, obj in by_name.items()
                if other != name and any(label_selectors.matches(s, _labels(obj)) for s in selectors)
            )
    # Iterate to a fixed point, as the controller converges: an aggregated role's stored
    # rules are derived, never a source, so they start empty and only ever grow.
    current: dict[str, list[Obj]] = {name: [] for name in selected}

    def rules_of(name: str) -> list[Obj]:
        return current[name] if name in current else list(by_name[name].get("rules") or [])

    for _ in range(len(selected) + 1):
        changed = False
        for name, others in selected.items():
            rules: list[Obj] = []
            for other in others:
                rules.extend(r for r in rules_of(other) if r not in rules)
            if rules != current[name]:
                current[name], changed = rules, True
        if not changed:
            break
    return {name: rules_of(name) for name in by_name}


def aggregate_cluster_roles(cluster_roles: Iterable[Obj]) -> list[dict[str, Any]]:
    """Copies of the ClusterRoles with aggregated ones' ``rules`` filled in (:func:`aggregated_rules`)."""
    roles = [copy.deepcopy(dict(r)) for r in cluster_roles]
    rules = aggregated_rules(roles)
    for role in roles:
        if role.get("aggregationRule"):
            role["rules"] = copy.deepcopy(rules[name_of(role)])
    return roles
