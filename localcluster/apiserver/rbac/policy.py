"""The RBAC authorizer: a snapshot of Roles, ClusterRoles and bindings, and the decisions made over it.

This module owns :class:`Policy` (upstream's listers and ``DefaultRuleResolver``: role
references, the rules bound to a user in a namespace) and :func:`authorize` (upstream
``plugin/pkg/auth/authorizer/rbac``), with upstream's reasons for allowing and denying.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from nrop.api.fielderrors import go_quote
from nrop.localcluster.apiserver.rbac.aggregation import Obj, aggregated_rules, name_of, namespace_of
from nrop.localcluster.apiserver.rbac.attributes import Attributes
from nrop.localcluster.apiserver.rbac.bootstrap import (
    BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    BOOTSTRAP_CLUSTER_ROLES,
)
from nrop.localcluster.apiserver.rbac.identity import (
    RBAC_GROUP,
    SERVICE_ACCOUNT_USERNAME_PREFIX,
    SYSTEM_MASTERS,
    UserInfo,
)
from nrop.localcluster.apiserver.rbac.rules import rule_allows


class MissingRole(LookupError):
    """A binding's ``roleRef`` names a role that does not exist; the text is the authorizer's."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource.removesuffix("s")}.{RBAC_GROUP} "{name}" not found')
        self.resource = resource
        self.name = name


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Policy:
    """A snapshot of the cluster's RBAC objects, indexed for per-request evaluation.

    Build a new one when any Role, ClusterRole or binding changes; aggregated ClusterRoles
    are resolved here once, so a role labelled ``aggregate-to-view`` extends ``view``,
    ``edit`` and ``admin`` as soon as it is part of the snapshot.
    """

    roles: Sequence[Obj] = ()
    cluster_roles: Sequence[Obj] = ()
    role_bindings: Sequence[Obj] = ()
    cluster_role_bindings: Sequence[Obj] = ()
    _roles: dict[tuple[str, str], list[Obj]] = field(init=False, repr=False, compare=False)
    _cluster_roles: dict[str, list[Obj]] = field(init=False, repr=False, compare=False)
    _bindings_by_ns: dict[str, list[Obj]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        roles = {(namespace_of(r), name_of(r)): list(r.get("rules") or []) for r in self.roles}
        cluster_roles = aggregated_rules(self.cluster_roles)
        by_ns: dict[str, list[Obj]] = {}
        for binding in self.role_bindings:
            by_ns.setdefault(namespace_of(binding), []).append(binding)
        object.__setattr__(self, "_roles", roles)
        object.__setattr__(self, "_cluster_roles", cluster_roles)
        object.__setattr__(self, "_bindings_by_ns", by_ns)

    @classmethod
    def bootstrap(
        cls,
        roles: Iterable[Obj] = (),
        cluster_roles: Iterable[Obj] = (),
        role_bindings: Iterable[Obj] = (),
        cluster_role_bindings: Iterable[Obj] = (),
    ) -> Policy:
        """The given objects plus the bootstrap ClusterRoles and ClusterRoleBindings."""
        return cls(
            roles=tuple(roles),
            cluster_roles=(*BOOTSTRAP_CLUSTER_ROLES, *cluster_roles),
            role_bindings=tuple(role_bindings),
            cluster_role_bindings=(*BOOTSTRAP_CLUSTER_ROLE_BINDINGS, *cluster_role_bindings),
        )

    def role_ref_rules(self, role_ref: Obj, binding_namespace: str) -> list[Obj]:
        """The rules a binding's ``roleRef`` points at; ``LookupError`` with upstream's text.

        A missing role raises :class:`MissingRole`, an unknown kind a plain ``LookupError``.
        """
        kind, name = role_ref.get("kind", ""), role_ref.get("name", "")
        if kind == "Role":
            rules = self._roles.get((binding_namespace, name))
            if rules is None:
                raise MissingRole("roles", name)
            return rules
        if kind == "ClusterRole":
            rules = self._cluster_roles.get(name)
            if rules is None:
                raise MissingRole("clusterroles", name)
            return rules
        raise LookupError(f"unsupported role reference kind: {go_quote(kind)}")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[LookupError]]:
        """Every rule bound to ``user`` cluster-wide and in ``namespace``, and the lookup errors met.

        Upstream ``RulesFor``: the rules may be incomplete when a binding refers to a role
        that does not exist; the errors say which.
        """
        rules: list[Obj] = []
        errors: list[LookupError] = []
        for grant in _grants(user, self, namespace):
            if grant.error is not None:
                errors.append(grant.error)
            else:
                rules.extend(grant.rules)
        return rules, errors


@dataclass(frozen=True)
class _Grant:
    """One binding that applies to the user: the rules of its role, or why they are unknown."""

    binding: Obj
    subject: Obj
    namespaced: bool
    rules: Sequence[Obj] = ()
    error: LookupError | None = None

    def describe(self) -> str:
        ref = self.binding.get("roleRef") or {}
        if self.namespaced:
            ns = namespace_of(self.binding)
            head = f"RoleBinding {go_quote(name_of(self.binding) + '/' + ns)}"
        else:
            ns = ""
            head = f"ClusterRoleBinding {go_quote(name_of(self.binding))}"
        return (
            f"{head} of {ref.get('kind', '')} {go_quote(ref.get('name', ''))} "
            f"to {_describe_subject(self.subject, ns)}"
        )


def _grants(user: UserInfo, policy: Policy, namespace: str) -> Iterator[_Grant]:
    """ClusterRoleBindings first, then the RoleBindings of ``namespace`` (upstream ``VisitRulesFor``)."""
    scopes: list[tuple[Iterable[Obj], str, bool]] = [(policy.cluster_role_bindings, "", False)]
    if namespace:
        scopes.append((policy._bindings_by_ns.get(namespace, ()), namespace, True))
    for bindings, ns, namespaced in scopes:
        for binding in bindings:
            subject = next((s for s in binding.get("subjects") or () if _subject_applies(user, s, ns)), None)
            if subject is None:
                continue
            try:
                rules = policy.role_ref_rules(binding.get("roleRef") or {}, ns)
            except LookupError as exc:
                yield _Grant(binding, subject, namespaced, error=exc)
                continue
            yield _Grant(binding, subject, namespaced, rules)


def _subject_applies(user: UserInfo, subject: Obj, namespace: str) -> bool:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        # A RoleBinding may leave the SA namespace out: it then means the binding's namespace.
        sa_namespace = subject.get("namespace") or namespace
        if not sa_namespace:
            return False
        return user.name == f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{sa_namespace}:{name}"
    return False


def _describe_subject(subject: Obj, binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f"{kind} {go_quote(name + '/' + (subject.get('namespace') or binding_namespace))}"
    return f"{kind} {go_quote(name)}"


def authorize(user: UserInfo, attrs: Attributes, policy: Policy) -> Decision:
    """Allow when ``system:masters`` or any rule bound to the user grants the request.

    ClusterRoleBindings are consulted first, then the RoleBindings of the request's
    namespace (a RoleBinding to a ClusterRole grants only in its own namespace). A denial
    carries upstream's reason: empty, or ``RBAC: ...`` listing the roles bindings refer to
    that do not exist.
    """
    if SYSTEM_MASTERS in user.groups:
        return Decision(True, "")
    errors: list[str] = []
    for grant in _grants(user, policy, attrs.namespace):
        if grant.error is not None:
            errors.append(str(grant.error))
        elif any(rule_allows(attrs, rule) for rule in grant.rules):
            return Decision(True, "RBAC: allowed by " + grant.describe())
    return Decision(False, "RBAC: " + aggregate_errors(errors) if errors else "")


def aggregate_errors(messages: list[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message alone, several as ``[a, b]``, de-duplicated."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
