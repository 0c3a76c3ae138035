"""RBAC's privilege-escalation prevention on writes of Roles, ClusterRoles and their bindings.

Upstream wraps the storage of the four RBAC resources (``pkg/registry/rbac/*/policybased``):
a requester may create or update

* a Role or ClusterRole only if it already holds every permission the role grants, in the
  role's namespace or cluster-wide (``ConfirmNoEscalation``), or may ``escalate`` roles;
  a ClusterRole with an ``aggregationRule`` also needs full authority (``*`` on everything);
* a RoleBinding or ClusterRoleBinding only if it may ``bind`` the referenced role, or holds
  every permission of that role in the binding's namespace (cluster-wide for a
  ClusterRoleBinding).

Members of ``system:masters`` skip the check (``EscalationAllowed``), and so do the API
server's own controllers, which write through the REST layer without a request. An
update that only changes the fields the garbage collector changes (owner references,
finalizers) is not checked. This module owns those decisions, the 403 text
(``... is attempting to grant RBAC permissions not currently held:``) and
:func:`write_guard`, the check the HTTP layer hands the REST layer for one request.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nrop.api.fielderrors import go_quote
from nrop.localcluster.apiserver.errors import Forbidden, InternalError, NotFound
from nrop.localcluster.apiserver.rbac.aggregation import has_aggregation_rule, name_of
from nrop.localcluster.apiserver.rbac.attributes import Attributes
from nrop.localcluster.apiserver.rbac.identity import RBAC_GROUP, SYSTEM_MASTERS, UserInfo
from nrop.localcluster.apiserver.rbac.messages import go_quote_list
from nrop.localcluster.apiserver.rbac.policy import MissingRole, Policy, aggregate_errors, authorize
from nrop.localcluster.apiserver.rbac.rules import covers

Obj = Mapping[str, Any]
#: Called with the object about to be written and the stored one (``None`` on create).
WriteGuard = Callable[[Obj, Obj | None], None]

ROLE_RESOURCES = frozenset({"roles", "clusterroles"})
BINDING_RESOURCES = frozenset({"rolebindings", "clusterrolebindings"})
_WRITE_VERBS = frozenset({"create", "update", "patch"})
_ROLE_REF_RESOURCES = {"Role": "roles", "ClusterRole": "clusterroles"}

#: What a ClusterRole with an aggregationRule requires of its writer (upstream ``fullAuthority``).
FULL_AUTHORITY: tuple[dict[str, list[str]], ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
AGGREGATION_REFUSAL = "must have cluster-admin privileges to use the aggregationRule"

# Metadata the garbage collector changes (upstream IsOnlyMutatingGCFields), and metadata the
# API server itself fills in on every write, which a client's copy may carry stale or not at all.
_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink")
_SERVER_FIELDS = ("resourceVersion", "managedFields", "generation")


def escalation_allowed(user: UserInfo) -> bool:
    """``system:masters`` may grant anything (upstream ``EscalationAllowed``)."""
    return SYSTEM_MASTERS in user.groups


def role_escalation_authorized(user: UserInfo, attrs: Attributes, policy: Policy) -> bool:
    """Whether the user may ``escalate`` the role the request writes (upstream ``RoleEscalationAuthorized``)."""
    if not attrs.resource_request or attrs.api_group != RBAC_GROUP or attrs.resource not in ROLE_RESOURCES:
        return False
    escalate = Attributes(
        verb="escalate",
        namespace=attrs.namespace,
        api_group=attrs.api_group,
        resource=attrs.resource,
        name=attrs.name,
        api_version="*",
    )
    return authorize(user, escalate, policy).allowed


def binding_authorized(user: UserInfo, role_ref: Obj, namespace: str, policy: Policy) -> bool:
    """Whether the user may ``bind`` the referenced role in ``namespace`` (upstream ``BindingAuthorized``).

    ``namespace`` is the binding's (empty for a ClusterRoleBinding), so a RoleBinding may be
    authorized to bind a ClusterRole in one namespace only.
    """
    resource = _ROLE_REF_RESOURCES.get(role_ref.get("kind", ""))
    if resource is None:
        return False
    bind = Attributes(
        verb="bind",
        namespace=namespace,
        api_group=role_ref.get("apiGroup", ""),
        resource=resource,
        name=role_ref.get("name", ""),
    )
    return authorize(user, bind, policy).allowed


def compact_rules(rules: Iterable[Obj]) -> list[Obj]:
    """Rules of one group and resource (and at most one name) merged into one (upstream ``CompactRules``).

    Other rules are kept as they are; the merged ones follow them.
    """
    compacted: list[Obj] = []
    simple: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
    for rule in rules:
        key = _simple_key(rule)
        if key is None:
            compacted.append(rule)
        elif key in simple:
            simple[key]["verbs"].extend(rule.get("verbs") or ())
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
            simple[key].setdefault("verbs", [])
    return [*compacted, *simple.values()]


def _simple_key(rule: Obj) -> tuple[str, str, tuple[str, ...]] | None:
    groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
    names = rule.get("resourceNames") or []
    if len(names) > 1 or rule.get("nonResourceURLs") or len(groups) != 1 or len(resources) != 1:
        return None
    if set(rule) - {"apiGroups", "resources", "verbs", "resourceNames"}:
        return None
    return groups[0], resources[0], tuple(names)


def compact_string(rule: Obj) -> str:
    """A rule as the escalation message shows it (upstream ``CompactString``).

    ``{APIGroups:["" "apps"], Resources:["pods"], Verbs:["get" "list"]}``: only the fields
    that are set, in this order, each a Go ``%q`` string list.
    """
    parts = [
        f"{label}:{go_quote_list(rule[key])}"
        for key, label in (
            ("apiGroups", "APIGroups"),
            ("resources", "Resources"),
            ("nonResourceURLs", "NonResourceURLs"),
            ("resourceNames", "ResourceNames"),
            ("verbs", "Verbs"),
        )
        if rule.get(key)
    ]
    return "{" + ", ".join(parts) + "}"


def confirm_no_escalation(user: UserInfo, namespace: str, rules: Sequence[Obj], policy: Policy) -> str:
    """``""`` when the user holds every rule in ``namespace`` (and cluster-wide), else upstream's refusal.

    Upstream ``ConfirmNoEscalation``: the user's own rules come from every binding that
    names it; roles those bindings refer to that do not exist are listed as resolution
    errors (the user's rules may be incomplete then).
    """
    owned, errors = policy.rules_for(user, namespace)
    missing = covers(owned, rules)
    if not missing:
        return ""
    described = sorted({compact_string(r) for r in compact_rules(missing)})
    text = (
        f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant "
        "RBAC permissions not currently held:\n" + "\n".join(described)
    )
    if errors:
        text += f"; resolution errors: [{aggregate_errors([_registry_text(e) for e in errors])}]"
    return text


def _registry_text(error: LookupError) -> str:
    # Upstream's write path resolves roles through the registry, whose NotFound names the
    # plural resource (the authorizer's informers name the singular kind).
    if isinstance(error, MissingRole):
        return f'{error.resource}.{RBAC_GROUP} "{error.name}" not found'
    return str(error)


def only_gc_fields_changed(obj: Obj, old: Obj | None) -> bool:
    """Whether an update changes nothing but owner references and finalizers (upstream ``IsOnlyMutatingGCFields``)."""
    if old is None:
        return False

    def comparable(o: Obj, meta_from: Obj) -> dict[str, Any]:
        out = copy.deepcopy(dict(o))
        meta = dict(out.get("metadata") or {})
        source = meta_from.get("metadata") or {}
        for key in (*_GC_FIELDS, *_SERVER_FIELDS):
            meta.pop(key, None)
            if key in _GC_FIELDS and key in source:
                meta[key] = copy.deepcopy(source[key])
        out["metadata"] = meta
        return out

    return comparable(obj, old) == comparable(old, old)


def check_write(user: UserInfo, attrs: Attributes, obj: Obj, old: Obj | None, policy: Policy) -> None:
    """Raise upstream's 403 when the write escalates (404 for a binding to a missing role, 500 to an unknown kind).

    ``attrs`` are the request's (create, update or patch of an RBAC resource); ``obj`` the
    object about to be written, ``old`` the stored one (``None`` on create).
    """
    if escalation_allowed(user) or attrs.api_group != RBAC_GROUP:
        return
    resource, name = attrs.resource, name_of(obj)
    if resource in ROLE_RESOURCES:
        if role_escalation_authorized(user, attrs, policy) or only_gc_fields_changed(obj, old):
            return
        refusal = confirm_no_escalation(user, attrs.namespace, obj.get("rules") or [], policy)
        if not refusal and resource == "clusterroles":
            aggregating = has_aggregation_rule(obj) or (old is not None and has_aggregation_rule(old))
            if aggregating and confirm_no_escalation(user, "", FULL_AUTHORITY, policy):
                refusal = AGGREGATION_REFUSAL
    elif resource in BINDING_RESOURCES:
        role_ref = obj.get("roleRef") or {}
        if only_gc_fields_changed(obj, old) or binding_authorized(user, role_ref, attrs.namespace, policy):
            return
        try:
            rules = policy.role_ref_rules(role_ref, attrs.namespace)
        except MissingRole as exc:
            raise NotFound.for_object(exc.resource, RBAC_GROUP, exc.name) from None
        except LookupError as exc:
            # An unknown roleRef kind: upstream returns the resolver's plain error, a 500.
            raise InternalError(f"Internal error occurred: {exc}") from None
        refusal = confirm_no_escalation(user, attrs.namespace, rules, policy)
    else:
        return
    if refusal:
        raise Forbidden.for_object(resource, RBAC_GROUP, name, refusal)


def write_guard(user: UserInfo, attrs: Attributes, policy: Callable[[], Policy]) -> WriteGuard | None:
    """The escalation check of one request, for the REST layer to run on the object it writes.

    ``None`` when the request needs none: not a create, update or patch of a Role,
    ClusterRole or binding (subresources included), or the requester is ``system:masters``.
    ``policy`` is called when the check runs, so it sees the RBAC objects of that moment.
    """
    if (
        not attrs.resource_request
        or attrs.api_group != RBAC_GROUP
        or attrs.resource not in ROLE_RESOURCES | BINDING_RESOURCES
        or attrs.subresource
        or attrs.verb not in _WRITE_VERBS
        or escalation_allowed(user)
    ):
        return None

    def guard(obj: Obj, old: Obj | None) -> None:
        check_write(user, attrs, obj, old, policy())

    return guard
