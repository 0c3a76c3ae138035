"""One PolicyRule at a time: whether it grants a request, and whether rules cover other rules.

This module owns rule matching (upstream ``RuleAllows`` and its ``*Matches`` helpers in
``pkg/apis/rbac/v1/evaluation_helpers.go``) and rule coverage (upstream
``component-helpers/auth/rbac/validation``: ``Covers``, ``BreakdownRule``), which RBAC's
escalation check uses to decide whether a requester holds every permission it grants.
Rules are plain ``PolicyRule`` dicts (``verbs``, ``apiGroups``, ``resources``,
``resourceNames``, ``nonResourceURLs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nrop.localcluster.apiserver.rbac.attributes import Attributes

Obj = Mapping[str, Any]
ALL = "*"


def verb_matches(rule: Obj, verb: str) -> bool:
    return any(v in (ALL, verb) for v in rule.get("verbs") or ())


def api_group_matches(rule: Obj, group: str) -> bool:
    return any(g in (ALL, group) for g in rule.get("apiGroups") or ())


def resource_matches(rule: Obj, combined: str, subresource: str) -> bool:
    """``*``, the exact ``resource[/subresource]``, or ``*/subresource``.

    As upstream, ``pods`` does not cover ``pods/status`` and ``pods/*`` is not a wildcard.
    """
    for wanted in rule.get("resources") or ():
        if wanted in (ALL, combined):
            return True
        if subresource and wanted == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Obj, name: str) -> bool:
    # A rule with resourceNames never matches a request without a name (list, create, ...).
    names = rule.get("resourceNames") or ()
    return not names or name in names


def non_resource_url_matches(rule: Obj, path: str) -> bool:
    return any(_url_covers(url, path) for url in rule.get("nonResourceURLs") or ())


def _url_covers(owner: str, path: str) -> bool:
    return owner in (ALL, path) or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_allows(attrs: Attributes, rule: Obj) -> bool:
    """Whether one PolicyRule grants the request (upstream ``RuleAllows``)."""
    if not verb_matches(rule, attrs.verb):
        return False
    if not attrs.resource_request:
        return non_resource_url_matches(rule, attrs.path)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    return (
        api_group_matches(rule, attrs.api_group)
        and resource_matches(rule, combined, attrs.subresource)
        and resource_name_matches(rule, attrs.name)
    )


# --------------------------------------------------------------------------- coverage


def breakdown_rule(rule: Obj) -> list[dict[str, list[str]]]:
    """The rule as rules of one group, resource, verb and at most one name (upstream ``BreakdownRule``).

    Non-resource URLs combine with verbs only. A rule without groups or without resources
    breaks down to no resource rules at all, as upstream's nested loops do.
    """
    verbs = list(rule.get("verbs") or ())
    names = list(rule.get("resourceNames") or ())
    out: list[dict[str, list[str]]] = []
    for group in rule.get("apiGroups") or ():
        for resource in rule.get("resources") or ():
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if names:
                    out.extend({**base, "resourceNames": [n]} for n in names)
                else:
                    out.append(base)
    for url in rule.get("nonResourceURLs") or ():
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _has_all(owned: Iterable[str], wanted: Iterable[str]) -> bool:
    return set(wanted) <= set(owned)


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _urls_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(_url_covers(o, path) for o in owned) for path in wanted)


def rule_covers(owner: Obj, sub: Obj) -> bool:
    """Whether ``owner`` covers ``sub``, a rule of :func:`breakdown_rule` (upstream ``ruleCovers``)."""
    owner_verbs = owner.get("verbs") or ()
    owner_groups = owner.get("apiGroups") or ()
    owner_names = owner.get("resourceNames") or ()
    sub_names = sub.get("resourceNames") or ()
    verbs = ALL in owner_verbs or _has_all(owner_verbs, sub.get("verbs") or ())
    groups = ALL in owner_groups or _has_all(owner_groups, sub.get("apiGroups") or ())
    resources = _resources_cover(owner.get("resources") or (), sub.get("resources") or ())
    urls = _urls_cover(owner.get("nonResourceURLs") or (), sub.get("nonResourceURLs") or ())
    names = not owner_names if not sub_names else (not owner_names or _has_all(owner_names, sub_names))
    return verbs and groups and resources and names and urls


def covers(owner_rules: Sequence[Obj], servant_rules: Iterable[Obj]) -> list[dict[str, list[str]]]:
    """The broken-down servant rules no owner rule covers; empty when the owner holds them all.

    Upstream ``Covers``: each servant rule is broken down to single verbs, resources and
    names, so every piece is either wholly covered by one owner rule or not at all.
    """
    missing: list[dict[str, list[str]]] = []
    for rule in servant_rules:
        for sub in breakdown_rule(rule):
            if not any(rule_covers(owner, sub) for owner in owner_rules):
                missing.append(sub)
    return missing
