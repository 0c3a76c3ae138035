"""RBAC authorization: who may do what, decided the way kube-apiserver's RBAC authorizer decides it.

This module owns the pure part of authorization:

* the request attributes (:func:`request_attributes`, upstream ``RequestInfoFactory``),
* the identities of service accounts (:func:`service_account_user`),
* the rule evaluation over Roles, ClusterRoles and their bindings (:func:`authorize`,
  upstream ``plugin/pkg/auth/authorizer/rbac`` and ``pkg/registry/rbac/validation``),
  including aggregated ClusterRoles, which upstream fills in with a controller and we
  resolve when the :class:`Policy` is built,
* the 403 text clients print (:func:`forbidden_message`, upstream
  ``responsewriters.Forbidden``),
* the bootstrap ClusterRoles and ClusterRoleBindings the server creates at start-up.

Roles and bindings are plain ``rbac.authorization.k8s.io/v1`` dicts as the API server
stores them; nothing here does I/O, so every decision is table-tested.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.api import selectors as label_selectors
from nrop.localcluster.apiserver.errors import Forbidden

RBAC_GROUP = "rbac.authorization.k8s.io"

# Well-known identities (k8s.io/apiserver/pkg/authentication/user and .../serviceaccount).
SYSTEM_MASTERS = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
SERVICE_ACCOUNT_GROUP_PREFIX = "system:serviceaccounts:"

BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE_ANNOTATION = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"

Obj = Mapping[str, Any]


# --------------------------------------------------------------------------- identities


@dataclass(frozen=True)
class UserInfo:
    """An authenticated (or anonymous) identity: what bindings' subjects are matched against."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""


ANONYMOUS = UserInfo(ANONYMOUS_USER, (ALL_UNAUTHENTICATED,))


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The identity a service account token authenticates as, with the groups upstream adds."""
    return UserInfo(
        name=f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}",
        groups=(
            ALL_SERVICE_ACCOUNTS_GROUP,
            f"{SERVICE_ACCOUNT_GROUP_PREFIX}{namespace}",
            ALL_AUTHENTICATED,
        ),
        uid=uid,
    )


def parse_service_account_username(username: str) -> tuple[str, str]:
    """``system:serviceaccount:ns:name`` → ``(ns, name)``; ``ValueError`` for anything else."""
    problem = "Username must be in the form system:serviceaccount:namespace:name"
    if not username.startswith(SERVICE_ACCOUNT_USERNAME_PREFIX):
        raise ValueError(problem)
    parts = username[len(SERVICE_ACCOUNT_USERNAME_PREFIX) :].split(":")
    if len(parts) != 2 or not all(parts):
        raise ValueError(problem)
    return parts[0], parts[1]


# --------------------------------------------------------------------------- attributes


@dataclass(frozen=True)
class Attributes:
    """What a request does, in authorizer terms (upstream ``authorizer.AttributesRecord``)."""

    verb: str
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    resource_request: bool = True
    api_version: str = ""


_API_PREFIXES = frozenset({"api", "apis"})
_GROUPLESS_PREFIXES = frozenset({"api"})
# /api/v1/namespaces/{ns}/{x}: these x are subresources of the namespace, not resources in it.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
# Legacy verb-in-path forms: /api/v1/watch/..., /api/v1/proxy/...
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """Map an HTTP request to authorizer attributes, as upstream's ``RequestInfoFactory`` does.

    Paths outside ``/api/v1/...`` and ``/apis/<group>/<version>/...`` (``/version``,
    ``/apis``, ``/openapi/v3``, ``/healthz``) are non-resource requests whose verb is the
    lower-cased HTTP method.
    """
    method = method.upper()
    non_resource = Attributes(verb=method.lower(), path=path, resource_request=False)
    trimmed = path.strip("/")
    parts = trimmed.split("/") if trimmed else []
    if len(parts) < 3 or parts[0] not in _API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in _GROUPLESS_PREFIXES:
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]

    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:
            # Upstream errors out here; the request cannot name a resource, so treat it as
            # a non-resource request that no rule for resources can grant.
            return non_resource
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")

    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]

    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES else ""

    if not name and verb == "get":
        verb = "watch" if _is_true(query.get("watch")) else "list"
        selected = _field_selector_name(query.get("fieldSelector", ""))
        if selected and _is_valid_path_segment(selected):
            name = selected
    if not name and verb == "delete":
        verb = "deletecollection"

    return Attributes(
        verb=verb,
        namespace=namespace,
        api_group=group,
        resource=resource,
        subresource=subresource,
        name=name,
        path=path,
        resource_request=True,
        api_version=version,
    )


def _is_true(value: str | None) -> bool:
    # Query booleans: present and not "0"/"false" means true (apimachinery Convert_Slice_string_To_bool).
    if value is None:
        return False
    return not (value == "0" or value.lower() == "false")


def _field_selector_name(selector: str) -> str:
    """The value of a ``metadata.name=`` (or ``==``) term of a field selector, else ``""``."""
    for term in _split_unescaped(selector, ","):
        if "!=" in term:
            continue
        key, sep, value = term.partition("==")
        if not sep:
            key, sep, value = term.partition("=")
        if sep and key.strip() == "metadata.name":
            return _unescape(value.strip())
    return ""


def _split_unescaped(text: str, sep: str) -> list[str]:
    out, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            out.append("".join(current))
            current = []
        else:
            current.append(ch)
    out.append("".join(current))
    return [t for t in out if t]


def _unescape(value: str) -> str:
    out, escaped = [], False
    for ch in value:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out)


def _is_valid_path_segment(name: str) -> bool:
    return name not in (".", "..") and "/" not in name and "%" not in name


# --------------------------------------------------------------------------- rules


def verb_matches(rule: Obj, verb: str) -> bool:
    return any(v in ("*", verb) for v in rule.get("verbs") or ())


def api_group_matches(rule: Obj, group: str) -> bool:
    return any(g in ("*", group) for g in rule.get("apiGroups") or ())


def resource_matches(rule: Obj, combined: str, subresource: str) -> bool:
    """``*``, the exact ``resource[/subresource]``, or ``*/subresource``.

    As upstream, ``pods`` does not cover ``pods/status`` and ``pods/*`` is not a wildcard.
    """
    for wanted in rule.get("resources") or ():
        if wanted in ("*", combined):
            return True
        if subresource and wanted == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Obj, name: str) -> bool:
    # A rule with resourceNames never matches a request without a name (list, create, ...).
    names = rule.get("resourceNames") or ()
    return not names or name in names


def non_resource_url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


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


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def _namespace(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


def aggregate_cluster_roles(cluster_roles: Iterable[Obj]) -> list[dict[str, Any]]:
    """Copies of the ClusterRoles with aggregated ones' ``rules`` filled in.

    Upstream's clusterrole-aggregation controller replaces an aggregated role's rules with
    the de-duplicated union of the rules of every other ClusterRole one of its selectors
    matches, taken in name order. Aggregated roles may select aggregated roles (``admin``
    selects ``edit``, which selects ``view``), so the union is resolved transitively.
    """
    roles = [copy.deepcopy(dict(r)) for r in cluster_roles]
    by_name = {_name(r): r for r in roles}
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
    current: dict[str, list[dict[str, Any]]] = {name: [] for name in selected}

    def rules_of(name: str) -> list[dict[str, Any]]:
        return current[name] if name in current else list(by_name[name].get("rules") or [])

    for _ in range(len(selected) + 1):
        changed = False
        for name, others in selected.items():
            rules: list[dict[str, Any]] = []
            for other in others:
                rules.extend(r for r in rules_of(other) if r not in rules)
            if rules != current[name]:
                current[name], changed = rules, True
        if not changed:
            break
    for name, rules in current.items():
        by_name[name]["rules"] = copy.deepcopy(rules)
    return roles


# --------------------------------------------------------------------------- policy


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
        roles = {(_namespace(r), _name(r)): list(r.get("rules") or []) for r in self.roles}
        cluster_roles = {
            _name(r): list(r.get("rules") or []) for r in aggregate_cluster_roles(self.cluster_roles)
        }
        by_ns: dict[str, list[Obj]] = {}
        for binding in self.role_bindings:
            by_ns.setdefault(_namespace(binding), []).append(binding)
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
        """The rules a binding's ``roleRef`` points at; ``LookupError`` with upstream's text."""
        kind, name = role_ref.get("kind", ""), role_ref.get("name", "")
        if kind == "Role":
            rules = self._roles.get((binding_namespace, name))
            if rules is None:
                raise LookupError(f'role.{RBAC_GROUP} "{name}" not found')
            return rules
        if kind == "ClusterRole":
            rules = self._cluster_roles.get(name)
            if rules is None:
                raise LookupError(f'clusterrole.{RBAC_GROUP} "{name}" not found')
            return rules
        raise LookupError(f"unsupported role reference kind: {_go_quote(kind)}")


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
        return f"{kind} {_go_quote(name + '/' + (subject.get('namespace') or binding_namespace))}"
    return f"{kind} {_go_quote(name)}"


def _describe_source(binding: Obj, subject: Obj, namespaced: bool) -> str:
    ref = binding.get("roleRef") or {}
    if namespaced:
        ns = _namespace(binding)
        head = f"RoleBinding {_go_quote(_name(binding) + '/' + ns)}"
    else:
        ns = ""
        head = f"ClusterRoleBinding {_go_quote(_name(binding))}"
    return (
        f"{head} of {ref.get('kind', '')} {_go_quote(ref.get('name', ''))} "
        f"to {_describe_subject(subject, ns)}"
    )


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

    def visit(bindings: Iterable[Obj], namespace: str, namespaced: bool) -> str | None:
        for binding in bindings:
            subject = next(
                (s for s in binding.get("subjects") or () if _subject_applies(user, s, namespace)), None
            )
            if subject is None:
                continue
            try:
                rules = policy.role_ref_rules(binding.get("roleRef") or {}, namespace)
            except LookupError as exc:
                errors.append(str(exc))
                continue
            if any(rule_allows(attrs, rule) for rule in rules):
                return "RBAC: allowed by " + _describe_source(binding, subject, namespaced)
        return None

    reason = visit(policy.cluster_role_bindings, "", namespaced=False)
    if reason is None and attrs.namespace:
        reason = visit(policy._bindings_by_ns.get(attrs.namespace, ()), attrs.namespace, namespaced=True)
    if reason is not None:
        return Decision(True, reason)
    return Decision(False, "RBAC: " + _aggregate(errors) if errors else "")


def _aggregate(messages: list[str]) -> str:
    # utilerrors.NewAggregate(...).Error(): one message alone, several as "[a, b]", de-duplicated.
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --------------------------------------------------------------------------- 403 text


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings that reach messages (names, paths, groups)."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _denial_text(user: UserInfo, attrs: Attributes) -> str:
    who = f"User {_go_quote(user.name)}"
    if not attrs.resource_request:
        return f"{who} cannot {attrs.verb} path {_go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    what = (
        f"{who} cannot {attrs.verb} resource {_go_quote(resource)} in API group {_go_quote(attrs.api_group)}"
    )
    if attrs.namespace:
        return f"{what} in the namespace {_go_quote(attrs.namespace)}"
    return f"{what} at the cluster scope"


def forbidden_message(user: UserInfo, attrs: Attributes, reason: str = "") -> str:
    """The ``message`` of the 403 Status, word for word as kube-apiserver writes it.

    ``pods "p" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the
    namespace "ns"``; non-resource requests read ``forbidden: User "u" cannot get path "/x"``.
    A non-empty authorizer ``reason`` is appended after ``": "``.
    """
    text = _denial_text(user, attrs)
    if reason:
        text = f"{text}: {reason}"
    group, resource = (attrs.api_group, attrs.resource) if attrs.resource_request else ("", "")
    if not group and not resource:
        return f"forbidden: {text}"
    qualified = f"{resource}.{group}" if group else resource
    if attrs.name:
        return f"{qualified} {_go_quote(attrs.name)} is forbidden: {text}"
    return f"{qualified} is forbidden: {text}"


def forbidden_error(user: UserInfo, attrs: Attributes, reason: str = "") -> Forbidden:
    """The 403 error with upstream's details: ``name``, ``group``, ``kind`` = the plural resource."""
    if not attrs.resource_request:
        return Forbidden(forbidden_message(user, attrs, reason))
    return Forbidden(
        forbidden_message(user, attrs, reason),
        name=attrs.name,
        group=attrs.api_group,
        kind=attrs.resource,
    )


# --------------------------------------------------------------------------- bootstrap policy

_READ = ["get", "list", "watch"]
_WRITE = ["create", "update", "patch", "delete", "deletecollection"]
_READ_WRITE = _READ + _WRITE


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}


def _url_rule(verbs: list[str], urls: list[str]) -> dict[str, Any]:
    return {"verbs": list(verbs), "nonResourceURLs": list(urls)}


def _cluster_role(
    name: str,
    rules: list[dict[str, Any]] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    aggregate: str = "",
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {**BOOTSTRAP_LABEL, **(labels or {})},
            "annotations": dict(AUTOUPDATE_ANNOTATION),
        },
    }
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate: "true"}}]}
    role["rules"] = rules or []
    return role


def _cluster_binding(name: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": dict(BOOTSTRAP_LABEL),
            "annotations": dict(AUTOUPDATE_ANNOTATION),
        },
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    }


def _group(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC_GROUP, "kind": "Group", "name": name}


def _bootstrap_cluster_roles() -> list[dict[str, Any]]:
    roles = [
        _cluster_role(
            "cluster-admin",
            [_rule(["*"], ["*"], ["*"]), _url_rule(["*"], ["*"])],
        ),
        _cluster_role(
            "system:discovery",
            [
                _url_rule(
                    ["get"],
                    [
                        "/livez",
                        "/readyz",
                        "/healthz",
                        "/version",
                        "/version/",
                        "/openapi",
                        "/openapi/*",
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                    ],
                )
            ],
        ),
        _cluster_role(
            "system:basic-user",
            [
                _rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            ],
        ),
        _cluster_role(
            "system:public-info-viewer",
            [_url_rule(["get"], ["/livez", "/readyz", "/healthz", "/version", "/version/"])],
        ),
        _cluster_role("admin", aggregate=AGGREGATE_TO_ADMIN),
        _cluster_role("edit", labels={AGGREGATE_TO_ADMIN: "true"}, aggregate=AGGREGATE_TO_EDIT),
        _cluster_role("view", labels={AGGREGATE_TO_EDIT: "true"}, aggregate=AGGREGATE_TO_VIEW),
        _cluster_role(
            "system:aggregate-to-admin",
            [
                _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
                _rule(_READ_WRITE, [RBAC_GROUP], ["roles", "rolebindings"]),
            ],
            labels={AGGREGATE_TO_ADMIN: "true"},
        ),
        _cluster_role(
            "system:aggregate-to-edit",
            [
                _rule(
                    _READ,
                    [""],
                    [
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                _rule(["impersonate"], [""], ["serviceaccounts"]),
                _rule(_WRITE, [""], ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"]),
                _rule(["create"], [""], ["pods/eviction"]),
                _rule(
                    _WRITE,
                    [""],
                    [
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                        "events",
                    ],
                ),
                _rule(["create"], [""], ["serviceaccounts/token"]),
                _rule(
                    _WRITE,
                    ["apps"],
                    [
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ],
                ),
                _rule(_WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
                _rule(_WRITE, ["batch"], ["jobs", "cronjobs"]),
                _rule(_WRITE, ["policy"], ["poddisruptionbudgets"]),
                _rule(_WRITE, ["networking.k8s.io"], ["networkpolicies", "ingresses"]),
                _rule(_READ_WRITE, ["coordination.k8s.io"], ["leases"]),
            ],
            labels={AGGREGATE_TO_EDIT: "true"},
        ),
        _cluster_role(
            "system:aggregate-to-view",
            [
                _rule(
                    _READ,
                    [""],
                    [
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ],
                ),
                _rule(
                    _READ,
                    [""],
                    [
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ],
                ),
                # Read access to namespaces at namespace scope means reading *this* namespace.
                _rule(_READ, [""], ["namespaces"]),
                _rule(_READ, ["discovery.k8s.io"], ["endpointslices"]),
                _rule(
                    _READ,
                    ["apps"],
                    [
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ],
                ),
                _rule(
                    _READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]
                ),
                _rule(_READ, ["batch"], ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
                _rule(_READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
                _rule(_READ, ["networking.k8s.io"], ["networkpolicies", "ingresses", "ingresses/status"]),
            ],
            labels={AGGREGATE_TO_VIEW: "true"},
        ),
        _cluster_role(
            "system:service-account-issuer-discovery",
            [
                _url_rule(
                    ["get"],
                    [
                        "/.well-known/openid-configuration",
                        "/.well-known/openid-configuration/",
                        "/openid/v1/jwks",
                        "/openid/v1/jwks/",
                    ],
                )
            ],
        ),
    ]
    # Stored as the aggregation controller would leave them: admin/edit/view with rules.
    return aggregate_cluster_roles(roles)


BOOTSTRAP_CLUSTER_ROLES: list[dict[str, Any]] = _bootstrap_cluster_roles()

BOOTSTRAP_CLUSTER_ROLE_BINDINGS: list[dict[str, Any]] = [
    _cluster_binding("cluster-admin", [_group(SYSTEM_MASTERS)]),
    _cluster_binding("system:discovery", [_group(ALL_AUTHENTICATED)]),
    _cluster_binding("system:basic-user", [_group(ALL_AUTHENTICATED)]),
    _cluster_binding("system:public-info-viewer", [_group(ALL_AUTHENTICATED), _group(ALL_UNAUTHENTICATED)]),
    _cluster_binding("system:service-account-issuer-discovery", [_group(ALL_SERVICE_ACCOUNTS_GROUP)]),
]

__all__ = [
    "ANONYMOUS",
    "BOOTSTRAP_CLUSTER_ROLES",
    "BOOTSTRAP_CLUSTER_ROLE_BINDINGS",
    "Attributes",
    "Decision",
    "Policy",
    "UserInfo",
    "aggregate_cluster_roles",
    "authorize",
    "forbidden_error",
    "forbidden_message",
    "parse_service_account_username",
    "request_attributes",
    "rule_allows",
    "service_account_user",
]
