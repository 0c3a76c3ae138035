"""RBAC's privilege-escalation prevention on writes of roles and bindings, against upstream's rules.

Tables of owner rules and granted rules (upstream ``Covers``), the compact form of missing
rules in the refusal (``CompactRules``, ``CompactString``), and the write check of each of
the four RBAC resources (``pkg/registry/rbac/*/policybased``), with upstream's 403 texts.
"""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.apiserver.errors import Forbidden, InternalError, NotFound
from nrop.localcluster.apiserver.rbac import Attributes, Policy, UserInfo, service_account_user, write_guard
from nrop.localcluster.apiserver.rbac.escalation import (
    check_write,
    compact_rules,
    compact_string,
    confirm_no_escalation,
    only_gc_fields_changed,
)
from nrop.localcluster.apiserver.rbac.rules import breakdown_rule, covers
from nrop.operator.decisions import naming, nropspec, nrsspec, rtemanifests, schedmanifests
from nrop.operator.decisions.manifests import install_manifests

RBAC = "rbac.authorization.k8s.io"
RBAC_V1 = f"{RBAC}/v1"
SA = service_account_user("ns", "sa")
SA_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:ns" "system:authenticated"]'
HEAD = f'user "system:serviceaccount:ns:sa" (groups={SA_GROUPS}) is attempting to grant RBAC permissions not currently held:\n'
ADMIN = UserInfo("admin", ("system:masters", "system:authenticated"))


def rule(verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None, **kw: Any):
    out: dict[str, Any] = {"verbs": verbs}
    if groups is not None:
        out["apiGroups"] = groups
    if resources is not None:
        out["resources"] = resources
    if "names" in kw:
        out["resourceNames"] = kw["names"]
    if "urls" in kw:
        out["nonResourceURLs"] = kw["urls"]
    return out


# --------------------------------------------------------------------------- coverage

COVER_CASES = [
    pytest.param([rule(["get", "list"], [""], ["pods"])], [rule(["get"], [""], ["pods"])], [], id="subset"),
    pytest.param(
        [rule(["get"], [""], ["pods"])],
        [rule(["get", "delete"], [""], ["pods"])],
        [rule(["delete"], [""], ["pods"])],
        id="one-verb-missing",
    ),
    pytest.param([rule(["*"], ["*"], ["*"])], [rule(["escalate"], [RBAC], ["roles"])], [], id="star-all"),
    pytest.param(
        [rule(["get"], [""], ["pods"]), rule(["list"], [""], ["pods"])],
        [rule(["get", "list"], [""], ["pods"])],
        [],
        id="covered-by-two-rules",
    ),
    pytest.param(
        [rule(["get"], [""], ["pods"])],
        [rule(["get"], [""], ["pods/status"])],
        [rule(["get"], [""], ["pods/status"])],
        id="resource-does-not-cover-subresource",
    ),
    pytest.param(
        [rule(["get"], [""], ["*/status"])], [rule(["get"], [""], ["pods/status"])], [], id="star-subresource"
    ),
    pytest.param(
        [rule(["get"], [""], ["pods/*"])],
        [rule(["get"], [""], ["pods/log"])],
        [rule(["get"], [""], ["pods/log"])],
        id="resource-star-is-no-wildcard",
    ),
    pytest.param(
        [rule(["get"], [""], ["pods"], names=["a"])],
        [rule(["get"], [""], ["pods"])],
        [rule(["get"], [""], ["pods"])],
        id="named-does-not-cover-unnamed",
    ),
    pytest.param(
        [rule(["get"], [""], ["pods"])],
        [rule(["get"], [""], ["pods"], names=["a", "b"])],
        [],
        id="unnamed-covers",
    ),
    pytest.param(
        [rule(["get"], [""], ["pods"], names=["a"])],
        [rule(["get"], [""], ["pods"], names=["a", "b"])],
        [rule(["get"], [""], ["pods"], names=["b"])],
        id="names-broken-down",
    ),
    pytest.param(
        [rule(["get"], ["apps"], ["pods"])],
        [rule(["get"], ["", "apps"], ["pods"])],
        [rule(["get"], [""], ["pods"])],
        id="group-missing",
    ),
    pytest.param(
        [rule(["get"], urls=["/metrics*"])], [rule(["get"], urls=["/metrics/x"])], [], id="url-prefix"
    ),
    pytest.param([rule(["*"], urls=["*"])], [rule(["get", "post"], urls=["/a", "/b"])], [], id="url-star"),
    pytest.param(
        [rule(["get"], [""], ["*"])],
        [rule(["get"], urls=["/healthz"])],
        [rule(["get"], urls=["/healthz"])],
        id="resources-do-not-cover-urls",
    ),
    pytest.param(
        [rule(["get"], urls=["*"])],
        [rule(["get"], [""], ["pods"])],
        [rule(["get"], [""], ["pods"])],
        id="urls-do-not-cover-resources",
    ),
    pytest.param([], [rule(["get"], [], ["pods"])], [], id="no-groups-grants-nothing"),
]


@pytest.mark.parametrize(("owner", "servant", "missing"), COVER_CASES)
def test_covers(
    owner: list[dict[str, Any]], servant: list[dict[str, Any]], missing: list[dict[str, Any]]
) -> None:
    assert covers(owner, servant) == [dict(sorted(m.items())) for m in missing]


def test_breakdown_rule_splits_to_single_verb_resource_and_name() -> None:
    assert breakdown_rule(rule(["get", "list"], ["", "apps"], ["x"], names=["n"])) == [
        {"apiGroups": [""], "resources": ["x"], "verbs": ["get"], "resourceNames": ["n"]},
        {"apiGroups": [""], "resources": ["x"], "verbs": ["list"], "resourceNames": ["n"]},
        {"apiGroups": ["apps"], "resources": ["x"], "verbs": ["get"], "resourceNames": ["n"]},
        {"apiGroups": ["apps"], "resources": ["x"], "verbs": ["list"], "resourceNames": ["n"]},
    ]


# --------------------------------------------------------------------------- the refusal text

COMPACT_STRING_CASES = [
    pytest.param(
        rule(["get", "list"], [""], ["secrets"]),
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    ),
    pytest.param(rule(["get"], urls=["/metrics"]), '{NonResourceURLs:["/metrics"], Verbs:["get"]}'),
    pytest.param(
        rule(["get"], ["apps"], ["deployments"], names=["d"]),
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["d"], Verbs:["get"]}',
    ),
    pytest.param(
        rule(["get"], [], ["pods"]), '{Resources:["pods"], Verbs:["get"]}', id="empty-fields-left-out"
    ),
]


@pytest.mark.parametrize(("policy_rule", "text"), COMPACT_STRING_CASES)
def test_compact_string(policy_rule: dict[str, Any], text: str) -> None:
    assert compact_string(policy_rule) == text


def test_compact_rules_merges_verbs_of_one_group_resource_and_name() -> None:
    pieces = [
        *breakdown_rule(rule(["get", "list"], [""], ["secrets"])),
        *breakdown_rule(rule(["get"], [""], ["secrets"], names=["s"])),
        *breakdown_rule(rule(["get"], urls=["/a"])),
    ]
    assert compact_rules(pieces) == [
        {"nonResourceURLs": ["/a"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["s"]},
    ]


def cluster_role(name: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": RBAC_V1, "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules, **extra}


def role(ns: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_V1,
        "kind": "Role",
        "metadata": {"name": name, "namespace": ns},
        "rules": rules,
    }


def binding(
    kind: str, name: str, ref_kind: str, ref: str, ns: str = "", subject: str = "sa"
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_V1,
        "kind": kind,
        "metadata": {"name": name, **({"namespace": ns} if ns else {})},
        "roleRef": {"apiGroup": RBAC, "kind": ref_kind, "name": ref},
        "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": "ns"}],
    }


def test_the_refusal_lists_the_missing_rules_sorted_and_compacted() -> None:
    policy = Policy(
        roles=[role("ns", "pods", [rule(["get"], [""], ["pods"])])],
        role_bindings=[binding("RoleBinding", "pods", "Role", "pods", "ns")],
    )
    wanted = [rule(["get", "list", "watch"], ["", "apps"], ["pods"]), rule(["get"], urls=["/metrics"])]
    assert confirm_no_escalation(SA, "ns", wanted, policy) == HEAD + "\n".join(
        [
            '{APIGroups:[""], Resources:["pods"], Verbs:["list" "watch"]}',
            '{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list" "watch"]}',
            '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
        ]
    )
    assert confirm_no_escalation(SA, "ns", [rule(["get"], [""], ["pods"])], policy) == ""
    # The Role grants in its namespace only.
    assert confirm_no_escalation(SA, "other", [rule(["get"], [""], ["pods"])], policy) != ""


def test_the_refusal_names_roles_the_requesters_bindings_miss() -> None:
    policy = Policy(
        role_bindings=[binding("RoleBinding", "a", "Role", "gone", "ns")],
        cluster_role_bindings=[binding("ClusterRoleBinding", "b", "ClusterRole", "gone-too")],
    )
    assert confirm_no_escalation(SA, "ns", [rule(["get"], [""], ["pods"])], policy) == (
        HEAD + '{APIGroups:[""], Resources:["pods"], Verbs:["get"]}; resolution errors: '
        '[[clusterroles.rbac.authorization.k8s.io "gone-too" not found, '
        'roles.rbac.authorization.k8s.io "gone" not found]]'
    )


# --------------------------------------------------------------------------- the write check

ROLE_WRITER = [
    rule(
        ["create", "update", "patch"],
        [RBAC],
        ["roles", "clusterroles", "rolebindings", "clusterrolebindings"],
    )
]
SECRETS = [rule(["get", "list"], [""], ["secrets"])]
PODS = [rule(["get", "list"], [""], ["pods"])]
POLICY = Policy(
    roles=[role("ns", "pods", PODS)],
    cluster_roles=[
        cluster_role("writer", ROLE_WRITER),
        cluster_role("secrets", SECRETS),
        cluster_role("pods", PODS),
        cluster_role("escalator", [rule(["escalate"], [RBAC], ["roles"])]),
        cluster_role("secrets-binder", [rule(["bind"], [RBAC], ["clusterroles"], names=["secrets"])]),
        cluster_role("everything", [rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])]),
    ],
    role_bindings=[
        binding("RoleBinding", "pods", "Role", "pods", "ns"),
        binding("RoleBinding", "escalator", "ClusterRole", "escalator", "esc"),
        binding("RoleBinding", "binder", "ClusterRole", "secrets-binder", "bind"),
    ],
    cluster_role_bindings=[
        binding("ClusterRoleBinding", "writer", "ClusterRole", "writer"),
        binding("ClusterRoleBinding", "root", "ClusterRole", "everything", subject="root"),
    ],
)
ROOT = service_account_user("ns", "root")


def write(verb: str, resource: str, ns: str = "", name: str = "") -> Attributes:
    return Attributes(verb=verb, namespace=ns, api_group=RBAC, resource=resource, name=name, api_version="v1")


def refusal(resource: str, name: str, missing: str) -> str:
    return f'{resource}.{RBAC} "{name}" is forbidden: {HEAD}{missing}'


SECRETS_MISSING = '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}'

WRITE_CASES = [
    pytest.param(SA, write("create", "roles", "ns"), role("ns", "r", PODS), None, None, id="role-held-in-ns"),
    pytest.param(
        SA,
        write("create", "roles", "other"),
        role("other", "r", PODS),
        None,
        refusal("roles", "r", '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'),
        id="role-held-in-another-ns-only",
    ),
    pytest.param(
        SA,
        write("create", "roles", "ns"),
        role("ns", "r", SECRETS),
        None,
        refusal("roles", "r", SECRETS_MISSING),
        id="role-not-held",
    ),
    pytest.param(
        SA,
        write("create", "clusterroles"),
        cluster_role("c", PODS),
        None,
        refusal("clusterroles", "c", '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'),
        id="clusterrole-held-in-a-namespace-only",
    ),
    pytest.param(
        ADMIN, write("create", "clusterroles"), cluster_role("c", SECRETS), None, None, id="system-masters"
    ),
    pytest.param(
        SA, write("create", "roles", "esc"), role("esc", "r", SECRETS), None, None, id="escalate-verb"
    ),
    pytest.param(
        SA,
        write("create", "clusterroles"),
        cluster_role("c", SECRETS),
        None,
        refusal("clusterroles", "c", SECRETS_MISSING),
        id="escalate-on-roles-in-a-namespace-is-not-on-clusterroles",
    ),
    pytest.param(
        SA,
        write("update", "roles", "ns", "r"),
        {**role("ns", "r", SECRETS), "metadata": {"name": "r", "namespace": "ns", "finalizers": ["x"]}},
        role("ns", "r", SECRETS),
        None,
        id="gc-fields-only-update",
    ),
    pytest.param(
        SA,
        write("patch", "roles", "ns", "r"),
        role("ns", "r", SECRETS),
        role("ns", "r", PODS),
        refusal("roles", "r", SECRETS_MISSING),
        id="update-adding-rules",
    ),
    pytest.param(
        ROOT,
        write("create", "clusterroles"),
        cluster_role("agg", [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}),
        None,
        None,
        id="aggregation-with-full-authority",
    ),
    pytest.param(
        SA,
        write("create", "clusterroles"),
        cluster_role("agg", [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}),
        None,
        f'clusterroles.{RBAC} "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule',
        id="aggregation-without-full-authority",
    ),
    pytest.param(
        SA,
        write("update", "clusterroles", name="agg"),
        cluster_role("agg", []),
        cluster_role("agg", [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}),
        f'clusterroles.{RBAC} "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule',
        id="dropping-an-aggregation-rule",
    ),
    pytest.param(
        SA,
        write("create", "rolebindings", "ns"),
        binding("RoleBinding", "b", "Role", "pods", "ns"),
        None,
        None,
        id="binding-held",
    ),
    pytest.param(
        SA,
        write("create", "rolebindings", "ns"),
        binding("RoleBinding", "b", "ClusterRole", "secrets", "ns"),
        None,
        refusal("rolebindings", "b", SECRETS_MISSING),
        id="binding-not-held",
    ),
    pytest.param(
        SA,
        write("create", "rolebindings", "bind"),
        binding("RoleBinding", "b", "ClusterRole", "secrets", "bind"),
        None,
        None,
        id="bind-verb-in-its-namespace",
    ),
    pytest.param(
        SA,
        write("create", "clusterrolebindings"),
        binding("ClusterRoleBinding", "b", "ClusterRole", "secrets"),
        None,
        refusal("clusterrolebindings", "b", SECRETS_MISSING),
        id="bind-verb-in-a-namespace-is-not-cluster-wide",
    ),
    pytest.param(
        SA,
        write("create", "rolebindings", "bind"),
        binding("RoleBinding", "b", "ClusterRole", "pods", "bind"),
        None,
        refusal("rolebindings", "b", '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'),
        id="bind-verb-names-one-role",
    ),
    pytest.param(
        SA,
        write("create", "rolebindings", "ns"),
        binding("RoleBinding", "b", "Role", "gone", "ns"),
        None,
        f'roles.{RBAC} "gone" not found',
        id="binding-to-a-missing-role",
    ),
]


@pytest.mark.parametrize(("user", "attrs", "obj", "old", "error"), WRITE_CASES)
def test_check_write(
    user: UserInfo, attrs: Attributes, obj: dict[str, Any], old: dict[str, Any] | None, error: str | None
) -> None:
    if error is None:
        check_write(user, attrs, obj, old, POLICY)
        return
    with pytest.raises((Forbidden, NotFound)) as raised:
        check_write(user, attrs, obj, old, POLICY)
    assert raised.value.message == error
    status = raised.value.status()
    if isinstance(raised.value, NotFound):
        # The referenced role is what is missing (upstream returns the registry's NotFound as is).
        ref = obj["roleRef"]
        assert status["details"] == {"name": ref["name"], "group": RBAC, "kind": f"{ref['kind'].lower()}s"}
        assert status["code"] == 404
    else:
        assert status["details"] == {"name": obj["metadata"]["name"], "group": RBAC, "kind": attrs.resource}
        assert status["code"] == 403


def test_a_binding_to_an_unknown_kind_is_an_internal_error_as_upstream() -> None:
    obj = binding("RoleBinding", "b", "Widget", "w", "ns")
    with pytest.raises(InternalError) as raised:
        check_write(SA, write("create", "rolebindings", "ns"), obj, None, POLICY)
    assert raised.value.message == 'Internal error occurred: unsupported role reference kind: "Widget"'


def test_generated_names_are_not_known_yet() -> None:
    obj = {**role("ns", "", SECRETS), "metadata": {"generateName": "r-", "namespace": "ns"}}
    with pytest.raises(Forbidden) as raised:
        check_write(SA, write("create", "roles", "ns"), obj, None, POLICY)
    assert raised.value.message.startswith(f"roles.{RBAC} is forbidden: user ")


GC_CASES = [
    pytest.param({"ownerReferences": [{"uid": "u"}]}, {}, True, id="owner-references"),
    pytest.param({"finalizers": ["f"]}, {"finalizers": ["g"]}, True, id="finalizers"),
    pytest.param({"resourceVersion": "2"}, {"resourceVersion": "1"}, True, id="server-fields"),
    pytest.param({"labels": {"a": "b"}}, {}, False, id="labels"),
]


@pytest.mark.parametrize(("new_meta", "old_meta", "expected"), GC_CASES)
def test_only_gc_fields_changed(new_meta: dict[str, Any], old_meta: dict[str, Any], expected: bool) -> None:
    new = {**role("ns", "r", PODS), "metadata": {"name": "r", **new_meta}}
    old = {**role("ns", "r", PODS), "metadata": {"name": "r", **old_meta}}
    assert only_gc_fields_changed(new, old) is expected
    assert only_gc_fields_changed(new, None) is False


GUARD_CASES = [
    pytest.param(SA, write("create", "roles", "ns"), True, id="create-role"),
    pytest.param(SA, write("update", "clusterrolebindings", name="b"), True, id="update-binding"),
    pytest.param(SA, write("patch", "rolebindings", "ns", "b"), True, id="patch-binding"),
    pytest.param(SA, write("delete", "roles", "ns", "r"), False, id="delete"),
    pytest.param(SA, write("get", "roles", "ns", "r"), False, id="read"),
    pytest.param(ADMIN, write("create", "roles", "ns"), False, id="system-masters"),
    pytest.param(
        SA, Attributes(verb="create", namespace="ns", resource="configmaps"), False, id="other-resource"
    ),
    pytest.param(
        SA, Attributes(verb="create", api_group="example.com", resource="roles"), False, id="other-group"
    ),
    pytest.param(
        SA,
        Attributes(verb="update", api_group=RBAC, resource="roles", subresource="status"),
        False,
        id="subresource",
    ),
]


@pytest.mark.parametrize(("user", "attrs", "guarded"), GUARD_CASES)
def test_write_guard(user: UserInfo, attrs: Attributes, guarded: bool) -> None:
    assert (write_guard(user, attrs, lambda: POLICY) is not None) is guarded


def test_the_guard_sees_the_policy_of_the_moment_it_runs() -> None:
    policies = [Policy(), POLICY]
    guard = write_guard(SA, write("create", "roles", "ns"), lambda: policies[-1])
    assert guard is not None
    guard(role("ns", "r", PODS), None)
    policies.append(Policy())
    with pytest.raises(Forbidden):
        guard(role("ns", "r", PODS), None)


# --------------------------------------------------------------------------- the operator's own role

_PLURALS = {
    "Role": "roles",
    "ClusterRole": "clusterroles",
    "RoleBinding": "rolebindings",
    "ClusterRoleBinding": "clusterrolebindings",
}


def _operands(namespace: str) -> list[dict[str, Any]]:
    nrop = {
        "metadata": {"name": "numaresourcesoperator", "uid": "u1"},
        "spec": {"nodeGroups": [{"poolName": "w"}]},
    }
    nrs = {"metadata": {"name": "numaresourcesscheduler", "uid": "u2"}, "spec": {"imageSpec": "img"}}
    group = nropspec.NodeGroup("w", {"node-role.kubernetes.io/worker": ""}, nropspec.effective_config({}))
    objects = [
        *rtemanifests.render(nrop, [group], {}, namespace, "img"),
        *schedmanifests.render(nrs, nrsspec.normalize({"imageSpec": "img"}), namespace, 1),
    ]
    return [o for o in objects if o["kind"] in _PLURALS]


def test_the_operator_holds_every_permission_it_grants_its_operands() -> None:
    """The roles and bindings the operator renders pass the escalation check as the operator's SA.

    The operator has neither ``escalate`` nor ``bind``: its own ClusterRole and Role (as
    ``numaresources-operator render`` installs them) must cover each operand role it writes.
    """
    namespace = naming.NAMESPACE
    installed = [o for o in install_manifests(namespace, "img") if o["kind"] in _PLURALS]
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in _PLURALS}
    for obj in installed:
        by_kind[obj["kind"]].append(obj)
    operator = service_account_user(namespace, naming.OPERATOR_NAME)
    operands = _operands(namespace)
    assert {o["kind"] for o in operands} == set(_PLURALS)
    for obj in operands:
        policy = Policy.bootstrap(
            by_kind["Role"], by_kind["ClusterRole"], by_kind["RoleBinding"], by_kind["ClusterRoleBinding"]
        )
        ns = obj["metadata"].get("namespace", "")
        check_write(operator, write("create", _PLURALS[obj["kind"]], ns), obj, None, policy)
        by_kind[obj["kind"]].append(obj)


def test_an_operator_role_lacking_a_granted_permission_is_refused() -> None:
    """The control: without ``replicationcontrollers`` the scheduler's ClusterRole escalates."""
    namespace = naming.NAMESPACE
    installed = [o for o in install_manifests(namespace, "img") if o["kind"] in _PLURALS]
    for obj in installed:
        if obj["kind"] == "ClusterRole":
            obj["rules"] = [r for r in obj["rules"] if "replicationcontrollers" not in r.get("resources", ())]
    policy = Policy.bootstrap(*([o for o in installed if o["kind"] == k] for k in _PLURALS))
    scheduler_role = next(
        o
        for o in _operands(namespace)
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == naming.SCHEDULER_ROLE_NAME
    )
    operator = service_account_user(namespace, naming.OPERATOR_NAME)
    with pytest.raises(Forbidden) as raised:
        check_write(operator, write("create", "clusterroles"), scheduler_role, None, policy)
    assert raised.value.message.endswith(
        '\n{APIGroups:[""], Resources:["replicationcontrollers"], Verbs:["get" "list" "watch"]}'
    )
