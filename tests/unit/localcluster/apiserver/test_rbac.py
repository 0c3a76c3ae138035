"""RBAC decisions, request attributes and 403 texts, checked against upstream semantics."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.apiserver import rbac
from nrop.localcluster.apiserver.errors import Forbidden
from nrop.localcluster.apiserver.rbac import (
    ANONYMOUS,
    BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    BOOTSTRAP_CLUSTER_ROLES,
    Attributes,
    Policy,
    UserInfo,
    authorize,
    forbidden_error,
    forbidden_message,
    parse_service_account_username,
    request_attributes,
    rule_allows,
    service_account_user,
)

SA = service_account_user("ns", "sa")
ALICE = UserInfo("alice", ("devs", "system:authenticated"))
RBAC_V1 = "rbac.authorization.k8s.io/v1"


def res(verb: str, resource: str, **kw: Any) -> Attributes:
    return Attributes(verb=verb, resource=resource, **kw)


def url(verb: str, path: str) -> Attributes:
    return Attributes(verb=verb, path=path, resource_request=False)


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


# --------------------------------------------------------------------------- single rules

RULE_CASES = [
    pytest.param(rule(["get"], [""], ["pods"]), res("get", "pods"), True, id="verb-exact"),
    pytest.param(rule(["*"], [""], ["pods"]), res("deletecollection", "pods"), True, id="verb-star"),
    pytest.param(rule(["get", "list"], [""], ["pods"]), res("watch", "pods"), False, id="verb-missing"),
    pytest.param(
        rule(["get"], ["apps"], ["deployments"]),
        res("get", "deployments", api_group="apps"),
        True,
        id="group-exact",
    ),
    pytest.param(
        rule(["get"], [""], ["deployments"]),
        res("get", "deployments", api_group="apps"),
        False,
        id="group-core-not-apps",
    ),
    pytest.param(
        rule(["get"], ["*"], ["deployments"]),
        res("get", "deployments", api_group="apps"),
        True,
        id="group-star",
    ),
    pytest.param(
        rule(["get"], [], ["pods"]), res("get", "pods"), False, id="group-empty-list-matches-nothing"
    ),
    pytest.param(rule(["get"], [""], ["*"]), res("get", "secrets"), True, id="resource-star"),
    pytest.param(
        rule(["get"], [""], ["*"]),
        res("get", "pods", subresource="log"),
        True,
        id="resource-star-covers-subresources",
    ),
    pytest.param(
        rule(["get"], [""], ["pods"]),
        res("get", "pods", subresource="status"),
        False,
        id="resource-does-not-cover-subresource",
    ),
    pytest.param(
        rule(["get"], [""], ["pods/status"]),
        res("get", "pods"),
        False,
        id="subresource-does-not-cover-resource",
    ),
    pytest.param(
        rule(["get"], [""], ["pods/status"]),
        res("get", "pods", subresource="status"),
        True,
        id="subresource-exact",
    ),
    pytest.param(
        rule(["get"], [""], ["*/status"]),
        res("get", "nodes", subresource="status"),
        True,
        id="star-slash-subresource",
    ),
    pytest.param(
        rule(["get"], [""], ["*/status"]), res("get", "nodes"), False, id="star-slash-subresource-not-parent"
    ),
    pytest.param(
        rule(["get"], [""], ["*/status"]),
        res("get", "pods", subresource="log"),
        False,
        id="star-slash-other-subresource",
    ),
    pytest.param(
        rule(["get"], [""], ["pods/*"]),
        res("get", "pods", subresource="log"),
        False,
        id="resource-slash-star-is-no-wildcard",
    ),
    pytest.param(
        rule(["get"], [""], ["*/*"]),
        res("get", "pods", subresource="log"),
        False,
        id="star-slash-star-is-no-wildcard",
    ),
    pytest.param(
        rule(["get"], [""], ["configmaps"], names=["a"]),
        res("get", "configmaps", name="a"),
        True,
        id="resourcenames-hit",
    ),
    pytest.param(
        rule(["get"], [""], ["configmaps"], names=["a"]),
        res("get", "configmaps", name="b"),
        False,
        id="resourcenames-miss",
    ),
    pytest.param(
        rule(["list"], [""], ["configmaps"], names=["a"]),
        res("list", "configmaps"),
        False,
        id="resourcenames-never-match-unnamed-list",
    ),
    pytest.param(
        rule(["create"], [""], ["configmaps"], names=["a"]),
        res("create", "configmaps"),
        False,
        id="resourcenames-never-match-create",
    ),
    pytest.param(
        rule(["watch"], [""], ["configmaps"], names=["a"]),
        res("watch", "configmaps", name="a"),
        True,
        id="resourcenames-match-watch-by-field-selector-name",
    ),
    pytest.param(rule(["get"], urls=["/healthz"]), url("get", "/healthz"), True, id="url-exact"),
    pytest.param(
        rule(["get"], urls=["/healthz"]), url("get", "/healthz/etcd"), False, id="url-exact-no-prefix"
    ),
    pytest.param(rule(["get"], urls=["/apis/*"]), url("get", "/apis/apps/v1"), True, id="url-trailing-star"),
    pytest.param(
        rule(["get"], urls=["/apis/*"]), url("get", "/apis"), False, id="url-trailing-star-needs-slash"
    ),
    pytest.param(rule(["get"], urls=["/api*"]), url("get", "/apis"), True, id="url-star-is-plain-prefix"),
    pytest.param(rule(["get"], urls=["*"]), url("get", "/metrics"), True, id="url-star"),
    pytest.param(rule(["get"], urls=["/metrics"]), url("post", "/metrics"), False, id="url-verb-miss"),
    pytest.param(
        rule(["get"], [""], ["pods"]), url("get", "/api/v1/pods"), False, id="resource-rule-not-for-urls"
    ),
    pytest.param(rule(["get"], urls=["*"]), res("get", "pods"), False, id="url-rule-not-for-resources"),
]


@pytest.mark.parametrize(("policy_rule", "attrs", "expected"), RULE_CASES)
def test_rule_allows(policy_rule: dict[str, Any], attrs: Attributes, expected: bool) -> None:
    assert rule_allows(attrs, policy_rule) is expected


# --------------------------------------------------------------------------- bindings


def cluster_role(name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None, **extra: Any):
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": RBAC_V1, "kind": "ClusterRole", "metadata": meta, "rules": rules, **extra}


def role(ns: str, name: str, rules: list[dict[str, Any]]):
    return {
        "apiVersion": RBAC_V1,
        "kind": "Role",
        "metadata": {"name": name, "namespace": ns},
        "rules": rules,
    }


def binding(kind: str, name: str, ref_kind: str, ref: str, subjects: list[dict[str, str]], ns: str = ""):
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "apiVersion": RBAC_V1,
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref},
        "subjects": subjects,
    }


def user_subj(name: str) -> dict[str, str]:
    return {"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}


def group_subj(name: str) -> dict[str, str]:
    return {"kind": "Group", "name": name, "apiGroup": "rbac.authorization.k8s.io"}


def sa_subj(name: str, ns: str = "") -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, **({"namespace": ns} if ns else {})}


POD_READER = [rule(["get", "list", "watch"], [""], ["pods"])]
POLICY = Policy(
    roles=[role("ns", "pod-reader", POD_READER), role("other", "pod-reader", POD_READER)],
    cluster_roles=[
        cluster_role("node-reader", [rule(["get", "list"], [""], ["nodes"])]),
        cluster_role("cm-writer", [rule(["create", "update"], [""], ["configmaps"])]),
        cluster_role("metrics", [rule(["get"], urls=["/metrics"])]),
    ],
    role_bindings=[
        binding("RoleBinding", "sa-reads", "Role", "pod-reader", [sa_subj("sa")], ns="ns"),
        binding("RoleBinding", "alice-reads", "Role", "pod-reader", [user_subj("alice")], ns="other"),
        binding("RoleBinding", "devs-write", "ClusterRole", "cm-writer", [group_subj("devs")], ns="ns"),
        binding("RoleBinding", "wrong-ns-sa", "Role", "pod-reader", [sa_subj("sa", "elsewhere")], ns="other"),
    ],
    cluster_role_bindings=[
        binding("ClusterRoleBinding", "sa-nodes", "ClusterRole", "node-reader", [sa_subj("sa", "ns")]),
        binding("ClusterRoleBinding", "alice-metrics", "ClusterRole", "metrics", [user_subj("alice")]),
        binding("ClusterRoleBinding", "unqualified-sa", "ClusterRole", "cm-writer", [sa_subj("sa")]),
    ],
)

AUTHORIZE_CASES = [
    pytest.param(
        SA, res("list", "pods", namespace="ns"), True, id="sa-subject-defaults-to-binding-namespace"
    ),
    pytest.param(SA, res("list", "pods", namespace="default"), False, id="rolebinding-only-in-its-namespace"),
    pytest.param(SA, res("list", "pods"), False, id="rolebinding-not-at-cluster-scope"),
    pytest.param(
        service_account_user("other", "sa"),
        res("list", "pods", namespace="other"),
        False,
        id="sa-subject-other-namespace-not-bound",
    ),
    pytest.param(
        service_account_user("elsewhere", "sa"),
        res("list", "pods", namespace="other"),
        True,
        id="sa-subject-explicit-namespace",
    ),
    pytest.param(SA, res("list", "nodes"), True, id="clusterrolebinding-cluster-scope"),
    pytest.param(SA, res("get", "nodes", name="n1"), True, id="clusterrolebinding-named"),
    pytest.param(SA, res("watch", "nodes"), False, id="clusterrolebinding-verb-not-granted"),
    pytest.param(
        SA,
        res("create", "configmaps", namespace="ns"),
        False,
        id="sa-without-namespace-in-crb-matches-nobody",
    ),
    pytest.param(ALICE, res("get", "pods", namespace="other", name="p"), True, id="user-subject"),
    pytest.param(
        UserInfo("bob"), res("get", "pods", namespace="other", name="p"), False, id="user-subject-miss"
    ),
    pytest.param(
        ALICE, res("create", "configmaps", namespace="ns"), True, id="group-subject-rb-to-clusterrole"
    ),
    pytest.param(
        ALICE,
        res("create", "configmaps", namespace="other"),
        False,
        id="rb-to-clusterrole-grants-only-its-namespace",
    ),
    pytest.param(ALICE, res("create", "configmaps"), False, id="rb-to-clusterrole-not-cluster-scope"),
    pytest.param(ALICE, url("get", "/metrics"), True, id="non-resource-via-crb"),
    pytest.param(SA, url("get", "/metrics"), False, id="non-resource-denied"),
    pytest.param(
        UserInfo("root", ("system:masters",)),
        res("delete", "nodes", name="n"),
        True,
        id="system-masters-always",
    ),
    pytest.param(
        UserInfo("root", ("system:masters",)),
        url("post", "/anything"),
        True,
        id="system-masters-non-resource",
    ),
]


@pytest.mark.parametrize(("user", "attrs", "allowed"), AUTHORIZE_CASES)
def test_authorize(user: UserInfo, attrs: Attributes, allowed: bool) -> None:
    assert authorize(user, attrs, POLICY).allowed is allowed


@pytest.mark.parametrize(
    ("user", "attrs", "reason"),
    [
        pytest.param(
            SA,
            res("list", "pods", namespace="ns"),
            'RBAC: allowed by RoleBinding "sa-reads/ns" of Role "pod-reader" to ServiceAccount "sa/ns"',
            id="rolebinding",
        ),
        pytest.param(
            SA,
            res("list", "nodes"),
            'RBAC: allowed by ClusterRoleBinding "sa-nodes" of ClusterRole "node-reader" to ServiceAccount "sa/ns"',
            id="clusterrolebinding",
        ),
        pytest.param(
            ALICE,
            res("create", "configmaps", namespace="ns"),
            'RBAC: allowed by RoleBinding "devs-write/ns" of ClusterRole "cm-writer" to Group "devs"',
            id="group",
        ),
        pytest.param(SA, res("delete", "pods", namespace="ns", name="p"), "", id="plain-denial"),
    ],
)
def test_authorize_reason(user: UserInfo, attrs: Attributes, reason: str) -> None:
    assert authorize(user, attrs, POLICY).reason == reason


def test_missing_roles_are_reported_in_the_denial() -> None:
    policy = Policy(
        role_bindings=[binding("RoleBinding", "rb", "Role", "gone", [sa_subj("sa")], ns="ns")],
        cluster_role_bindings=[
            binding(
                "ClusterRoleBinding", "crb", "ClusterRole", "gone-too", [group_subj("system:authenticated")]
            ),
            binding("ClusterRoleBinding", "other", "ClusterRole", "not-for-sa", [user_subj("bob")]),
        ],
    )
    decision = authorize(SA, res("get", "pods", namespace="ns", name="p"), policy)
    assert decision == rbac.Decision(
        False,
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone-too" not found, '
        'role.rbac.authorization.k8s.io "gone" not found]',
    )
    assert authorize(SA, res("list", "nodes"), policy).reason == (
        'RBAC: clusterrole.rbac.authorization.k8s.io "gone-too" not found'
    )


def test_a_missing_role_does_not_hide_a_grant() -> None:
    policy = Policy(
        cluster_roles=[cluster_role("reader", POD_READER)],
        cluster_role_bindings=[
            binding("ClusterRoleBinding", "a", "ClusterRole", "gone", [sa_subj("sa", "ns")]),
            binding("ClusterRoleBinding", "b", "ClusterRole", "reader", [sa_subj("sa", "ns")]),
        ],
    )
    assert authorize(SA, res("list", "pods"), policy).allowed


NODES = [rule(["get", "list"], [""], ["nodes"])]
METRICS = [rule(["get"], urls=["/metrics"])]
CM_WRITER = [rule(["create", "update"], [""], ["configmaps"])]
RULES_FOR_CASES = [
    # ClusterRoleBindings first (the unqualified SA subject of one names no one), then the namespace's.
    pytest.param(SA, "ns", [*NODES, *POD_READER], id="sa-cluster-then-its-namespace"),
    pytest.param(SA, "other", NODES, id="sa-elsewhere"),
    pytest.param(SA, "", NODES, id="sa-cluster-wide"),
    pytest.param(ALICE, "ns", [*METRICS, *CM_WRITER], id="group-binding-to-cluster-role"),
    pytest.param(ALICE, "other", [*METRICS, *POD_READER], id="user-binding"),
]


@pytest.mark.parametrize(("user", "namespace", "rules"), RULES_FOR_CASES)
def test_rules_for(user: UserInfo, namespace: str, rules: list[dict[str, Any]]) -> None:
    assert POLICY.rules_for(user, namespace) == (rules, [])


def test_rules_for_reports_missing_roles_and_keeps_the_rest() -> None:
    policy = Policy(
        cluster_roles=[cluster_role("reader", POD_READER)],
        role_bindings=[binding("RoleBinding", "a", "Role", "gone", [sa_subj("sa")], ns="ns")],
        cluster_role_bindings=[
            binding("ClusterRoleBinding", "b", "ClusterRole", "reader", [sa_subj("sa", "ns")])
        ],
    )
    rules, errors = policy.rules_for(SA, "ns")
    assert rules == POD_READER
    assert [str(e) for e in errors] == ['role.rbac.authorization.k8s.io "gone" not found']


# --------------------------------------------------------------------------- aggregation


NRT_READER = cluster_role(
    "nrt-reader",
    [rule(["get", "list", "watch"], ["topology.node.k8s.io"], ["noderesourcetopologies"])],
    labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"},
)
WIDGET_ADMIN = cluster_role(
    "widget-admin",
    [rule(["*"], ["example.com"], ["widgets"])],
    labels={"tier": "gold"},
)
SELECTIVE = cluster_role(
    "selective",
    [],
    aggregationRule={
        "clusterRoleSelectors": [
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}
        ]
    },
)


@pytest.mark.parametrize(
    ("role_name", "attrs", "allowed"),
    [
        pytest.param(
            "view",
            res("list", "noderesourcetopologies", api_group="topology.node.k8s.io", namespace="ns"),
            True,
            id="custom-role-extends-view",
        ),
        pytest.param(
            "edit",
            res("list", "noderesourcetopologies", api_group="topology.node.k8s.io", namespace="ns"),
            True,
            id="view-extension-reaches-edit",
        ),
        pytest.param(
            "admin",
            res("list", "noderesourcetopologies", api_group="topology.node.k8s.io", namespace="ns"),
            True,
            id="view-extension-reaches-admin",
        ),
        pytest.param(
            "view",
            res("get", "pods", namespace="ns", name="p", subresource="log"),
            True,
            id="view-reads-pod-logs",
        ),
        pytest.param("view", res("get", "secrets", namespace="ns", name="s"), False, id="view-no-secrets"),
        pytest.param(
            "edit",
            res("create", "deployments", api_group="apps", namespace="ns"),
            True,
            id="edit-writes-deployments",
        ),
        pytest.param(
            "edit",
            res("create", "rolebindings", api_group="rbac.authorization.k8s.io", namespace="ns"),
            False,
            id="edit-cannot-bind",
        ),
        pytest.param(
            "admin",
            res("create", "rolebindings", api_group="rbac.authorization.k8s.io", namespace="ns"),
            True,
            id="admin-can-bind",
        ),
        pytest.param(
            "selective",
            res("delete", "widgets", api_group="example.com", namespace="ns", name="w"),
            True,
            id="match-expressions-aggregation",
        ),
        pytest.param("selective", res("list", "pods", namespace="ns"), False, id="aggregation-selects-only"),
    ],
)
def test_aggregated_cluster_roles(role_name: str, attrs: Attributes, allowed: bool) -> None:
    policy = Policy.bootstrap(
        cluster_roles=[NRT_READER, WIDGET_ADMIN, SELECTIVE],
        role_bindings=[binding("RoleBinding", "rb", "ClusterRole", role_name, [sa_subj("sa")], ns="ns")],
    )
    assert authorize(SA, attrs, policy).allowed is allowed


def test_aggregation_replaces_the_aggregated_roles_own_rules() -> None:
    plain = cluster_role("plain", [rule(["get"], [""], ["fresh"])], labels={"x": "p"})
    agg = cluster_role(
        "agg",
        [rule(["get"], [""], ["stale"])],
        aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "p"}}]},
    )
    resolved = {r["metadata"]["name"]: r["rules"] for r in rbac.aggregate_cluster_roles([plain, agg])}
    assert resolved["agg"] == [rule(["get"], [""], ["fresh"])]
    assert agg["rules"] == [rule(["get"], [""], ["stale"])], "inputs are not modified"


def test_the_policy_reads_the_roles_where_they_are_and_the_bootstrap_gets_copies() -> None:
    plain = cluster_role("plain", [rule(["get"], [""], ["fresh"])], labels={"x": "p"})
    agg = cluster_role("agg", [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "p"}}]})
    empty = cluster_role(
        "empty", [rule(["get"], [""], ["own"])], aggregationRule={"clusterRoleSelectors": []}
    )
    rules = rbac.aggregated_rules([plain, agg, empty])
    assert rules == {"plain": plain["rules"], "agg": plain["rules"], "empty": []}
    assert rules["agg"][0] is plain["rules"][0], "the policy's rules are the stored ones, not copies"
    assert agg["rules"] == [] and empty["rules"] == [rule(["get"], [""], ["own"])], "inputs are not modified"
    stored = {r["metadata"]["name"]: r for r in rbac.aggregate_cluster_roles([plain, agg, empty])}
    assert stored["agg"]["rules"] == plain["rules"] and stored["agg"]["rules"][0] is not plain["rules"][0]
    assert stored["empty"]["rules"] == [] and stored["plain"] is not plain


def test_aggregation_cycles_terminate() -> None:
    a = cluster_role(
        "a", [], labels={"x": "a"}, aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "b"}}]}
    )
    b = cluster_role(
        "b",
        [],
        labels={"x": "b"},
        aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "a"}}, {"matchLabels": {"x": "c"}}]},
    )
    c = cluster_role("c", [rule(["get"], [""], ["pods"])], labels={"x": "c"})
    for order in ([a, b, c], [b, a, c], [c, b, a]):
        resolved = {r["metadata"]["name"]: r["rules"] for r in rbac.aggregate_cluster_roles(order)}
        assert resolved["a"] == resolved["b"] == [rule(["get"], [""], ["pods"])]


# --------------------------------------------------------------------------- bootstrap policy


def test_bootstrap_objects_are_marked_as_defaults() -> None:
    for obj in [*BOOTSTRAP_CLUSTER_ROLES, *BOOTSTRAP_CLUSTER_ROLE_BINDINGS]:
        meta = obj["metadata"]
        assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults", meta["name"]
        assert meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true", meta["name"]
        assert obj["apiVersion"] == RBAC_V1
    names = {r["metadata"]["name"] for r in BOOTSTRAP_CLUSTER_ROLES}
    assert {
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:service-account-issuer-discovery",
    } <= names
    bindings = {b["metadata"]["name"]: b for b in BOOTSTRAP_CLUSTER_ROLE_BINDINGS}
    assert bindings["cluster-admin"]["subjects"][0]["name"] == "system:masters"
    assert {s["name"] for s in bindings["system:public-info-viewer"]["subjects"]} == {
        "system:authenticated",
        "system:unauthenticated",
    }


def test_bootstrap_aggregated_roles_carry_resolved_rules() -> None:
    roles = {r["metadata"]["name"]: r for r in BOOTSTRAP_CLUSTER_ROLES}
    assert roles["view"]["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}
    ]
    assert roles["view"]["rules"] == roles["system:aggregate-to-view"]["rules"]
    assert len(roles["admin"]["rules"]) > len(roles["edit"]["rules"]) > len(roles["view"]["rules"])


BOOTSTRAP = Policy.bootstrap()


@pytest.mark.parametrize(
    ("user", "attrs", "allowed"),
    [
        pytest.param(SA, url("get", "/version"), True, id="sa-version"),
        pytest.param(SA, url("get", "/apis/apps/v1"), True, id="sa-discovery"),
        pytest.param(SA, url("get", "/openapi/v3"), True, id="sa-openapi"),
        pytest.param(SA, url("get", "/healthz"), True, id="sa-healthz"),
        pytest.param(SA, url("get", "/metrics"), False, id="sa-no-metrics"),
        pytest.param(SA, url("get", "/openid/v1/jwks"), True, id="sa-issuer-discovery"),
        pytest.param(ALICE, url("get", "/openid/v1/jwks"), False, id="user-no-issuer-discovery"),
        pytest.param(
            SA,
            res("create", "selfsubjectaccessreviews", api_group="authorization.k8s.io"),
            True,
            id="sa-selfsubjectaccessreview",
        ),
        pytest.param(SA, res("list", "pods", namespace="ns"), False, id="sa-no-pods"),
        pytest.param(ANONYMOUS, url("get", "/healthz"), True, id="anonymous-healthz"),
        pytest.param(ANONYMOUS, url("get", "/version"), True, id="anonymous-version"),
        pytest.param(ANONYMOUS, url("get", "/api"), False, id="anonymous-no-discovery"),
        pytest.param(
            UserInfo("admin", ("system:masters", "system:authenticated")),
            res("list", "secrets"),
            True,
            id="masters",
        ),
    ],
)
def test_bootstrap_policy(user: UserInfo, attrs: Attributes, allowed: bool) -> None:
    assert authorize(user, attrs, BOOTSTRAP).allowed is allowed


def test_cluster_admin_binding_grants_through_rbac_too() -> None:
    policy = Policy.bootstrap(
        cluster_role_bindings=[
            binding("ClusterRoleBinding", "sa-admin", "ClusterRole", "cluster-admin", [sa_subj("sa", "ns")])
        ]
    )
    assert authorize(
        SA, res("escalate", "clusterroles", api_group="rbac.authorization.k8s.io"), policy
    ).allowed
    assert authorize(SA, url("get", "/metrics"), policy).allowed


# --------------------------------------------------------------------------- forbidden texts

FORBIDDEN_CASES = [
    pytest.param(
        res("list", "pods", namespace="default"),
        'pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" '
        'in the namespace "default"',
        id="namespaced-list",
    ),
    pytest.param(
        res("get", "pods", namespace="default", name="p1"),
        'pods "p1" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "pods" in API group "" '
        'in the namespace "default"',
        id="namespaced-get",
    ),
    pytest.param(
        res("get", "pods", namespace="default", name="p1", subresource="log"),
        'pods "p1" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "pods/log" '
        'in API group "" in the namespace "default"',
        id="subresource",
    ),
    pytest.param(
        res("list", "nodes"),
        'nodes is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "nodes" in API group "" '
        "at the cluster scope",
        id="cluster-scope",
    ),
    pytest.param(
        res("patch", "deployments", api_group="apps", namespace="ns", name="d", subresource="scale"),
        'deployments.apps "d" is forbidden: User "system:serviceaccount:ns:sa" cannot patch resource '
        '"deployments/scale" in API group "apps" in the namespace "ns"',
        id="grouped-subresource",
    ),
    pytest.param(
        res("list", "numaresourcesoperators", api_group="nodetopology.openshift.io"),
        'numaresourcesoperators.nodetopology.openshift.io is forbidden: User "system:serviceaccount:ns:sa" '
        'cannot list resource "numaresourcesoperators" in API group "nodetopology.openshift.io" '
        "at the cluster scope",
        id="custom-resource-cluster-scope",
    ),
    pytest.param(
        url("get", "/metrics"),
        'forbidden: User "system:serviceaccount:ns:sa" cannot get path "/metrics"',
        id="non-resource",
    ),
]


@pytest.mark.parametrize(("attrs", "message"), FORBIDDEN_CASES)
def test_forbidden_message(attrs: Attributes, message: str) -> None:
    assert forbidden_message(SA, attrs) == message


def test_forbidden_message_appends_the_reason() -> None:
    message = forbidden_message(
        SA, res("list", "pods", namespace="ns"), 'RBAC: role.rbac.authorization.k8s.io "gone" not found'
    )
    assert message.endswith('in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "gone" not found')


def test_forbidden_message_quotes_like_go() -> None:
    assert forbidden_message(UserInfo('we"ird\\'), url("get", "/x")) == (
        'forbidden: User "we\\"ird\\\\" cannot get path "/x"'
    )


@pytest.mark.parametrize(
    ("attrs", "details"),
    [
        pytest.param(
            res("get", "pods", namespace="ns", name="p", subresource="log"),
            {"name": "p", "kind": "pods"},
            id="core-named",
        ),
        pytest.param(
            res("list", "deployments", api_group="apps", namespace="ns"),
            {"group": "apps", "kind": "deployments"},
            id="group-collection",
        ),
        pytest.param(url("get", "/metrics"), None, id="non-resource"),
    ],
)
def test_forbidden_error(attrs: Attributes, details: dict[str, str] | None) -> None:
    err = forbidden_error(SA, attrs)
    assert isinstance(err, Forbidden)
    status = err.status()
    assert status["code"] == 403
    assert status["reason"] == "Forbidden"
    assert status["message"] == forbidden_message(SA, attrs)
    assert status.get("details") == details


# --------------------------------------------------------------------------- identities


def test_service_account_user() -> None:
    user = service_account_user("ns", "sa", uid="u-1")
    assert user == UserInfo(
        "system:serviceaccount:ns:sa",
        ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"),
        "u-1",
    )


@pytest.mark.parametrize(
    ("username", "expected"),
    [
        pytest.param("system:serviceaccount:ns:sa", ("ns", "sa"), id="valid"),
        pytest.param("system:serviceaccount:ns", None, id="no-name"),
        pytest.param("system:serviceaccount:ns:sa:x", None, id="too-many-parts"),
        pytest.param("system:serviceaccount::sa", None, id="empty-namespace"),
        pytest.param("alice", None, id="not-a-service-account"),
        pytest.param("system:serviceaccounts:ns", None, id="group-name"),
    ],
)
def test_parse_service_account_username(username: str, expected: tuple[str, str] | None) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="system:serviceaccount:namespace:name"):
            parse_service_account_username(username)
    else:
        assert parse_service_account_username(username) == expected


# --------------------------------------------------------------------------- request attributes


def ra(
    verb: str,
    resource: str = "",
    ns: str = "",
    name: str = "",
    sub: str = "",
    group: str = "",
    version: str = "v1",
) -> dict[str, Any]:
    return {
        "verb": verb,
        "resource": resource,
        "namespace": ns,
        "name": name,
        "subresource": sub,
        "api_group": group,
        "api_version": version,
        "resource_request": True,
    }


def nr(verb: str) -> dict[str, Any]:
    return {"verb": verb, "resource_request": False, "resource": "", "namespace": "", "name": ""}


REQUEST_CASES = [
    pytest.param("GET", "/api/v1/namespaces/ns/pods", {}, ra("list", "pods", "ns"), id="list"),
    pytest.param(
        "GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, ra("watch", "pods", "ns"), id="watch"
    ),
    pytest.param(
        "GET", "/api/v1/namespaces/ns/pods", {"watch": "1"}, ra("watch", "pods", "ns"), id="watch-1"
    ),
    pytest.param(
        "GET", "/api/v1/namespaces/ns/pods", {"watch": "false"}, ra("list", "pods", "ns"), id="watch-false"
    ),
    pytest.param("GET", "/api/v1/namespaces/ns/pods", {"watch": "0"}, ra("list", "pods", "ns"), id="watch-0"),
    pytest.param("GET", "/api/v1/namespaces/ns/pods/p", {}, ra("get", "pods", "ns", "p"), id="get"),
    pytest.param("HEAD", "/api/v1/namespaces/ns/pods/p", {}, ra("get", "pods", "ns", "p"), id="head-get"),
    pytest.param(
        "GET",
        "/api/v1/namespaces/ns/pods",
        {"watch": "true", "fieldSelector": "metadata.name=p"},
        ra("watch", "pods", "ns", "p"),
        id="watch-one-by-field-selector",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/ns/pods",
        {"fieldSelector": "spec.nodeName=n1,metadata.name==p"},
        ra("list", "pods", "ns", "p"),
        id="list-field-selector-double-equals",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/ns/pods",
        {"fieldSelector": "metadata.name!=p"},
        ra("list", "pods", "ns"),
        id="field-selector-not-equal-names-nothing",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/ns/pods",
        {"fieldSelector": "metadata.name=a/b"},
        ra("list", "pods", "ns"),
        id="field-selector-invalid-name-ignored",
    ),
    pytest.param(
        "GET", "/api/v1/namespaces/ns/pods/p/log", {}, ra("get", "pods", "ns", "p", "log"), id="log"
    ),
    pytest.param(
        "PUT",
        "/api/v1/namespaces/ns/pods/p/status",
        {},
        ra("update", "pods", "ns", "p", "status"),
        id="update-status",
    ),
    pytest.param(
        "PATCH",
        "/api/v1/nodes/n1/status",
        {},
        ra("patch", "nodes", "", "n1", "status"),
        id="patch-cluster-status",
    ),
    pytest.param(
        "POST",
        "/api/v1/namespaces/ns/pods/p/binding",
        {},
        ra("create", "pods", "ns", "p", "binding"),
        id="binding",
    ),
    pytest.param(
        "POST",
        "/api/v1/namespaces/ns/pods/p/eviction",
        {},
        ra("create", "pods", "ns", "p", "eviction"),
        id="eviction",
    ),
    pytest.param("POST", "/api/v1/namespaces/ns/pods", {}, ra("create", "pods", "ns"), id="create"),
    pytest.param(
        "PUT", "/api/v1/namespaces/ns/configmaps/c", {}, ra("update", "configmaps", "ns", "c"), id="update"
    ),
    pytest.param(
        "PATCH", "/api/v1/namespaces/ns/configmaps/c", {}, ra("patch", "configmaps", "ns", "c"), id="patch"
    ),
    pytest.param(
        "DELETE", "/api/v1/namespaces/ns/configmaps/c", {}, ra("delete", "configmaps", "ns", "c"), id="delete"
    ),
    pytest.param(
        "DELETE",
        "/api/v1/namespaces/ns/configmaps",
        {},
        ra("deletecollection", "configmaps", "ns"),
        id="deletecollection",
    ),
    pytest.param("GET", "/api/v1/pods", {}, ra("list", "pods"), id="list-all-namespaces"),
    pytest.param("GET", "/api/v1/nodes/n1", {}, ra("get", "nodes", "", "n1"), id="cluster-get"),
    pytest.param("GET", "/api/v1/namespaces", {}, ra("list", "namespaces"), id="namespaces-list"),
    pytest.param("GET", "/api/v1/namespaces/x", {}, ra("get", "namespaces", "x", "x"), id="namespace-get"),
    pytest.param(
        "DELETE", "/api/v1/namespaces/x", {}, ra("delete", "namespaces", "x", "x"), id="namespace-delete"
    ),
    pytest.param(
        "PUT",
        "/api/v1/namespaces/x/finalize",
        {},
        ra("update", "namespaces", "x", "x", "finalize"),
        id="namespace-finalize",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/x/status",
        {},
        ra("get", "namespaces", "x", "x", "status"),
        id="namespace-status",
    ),
    pytest.param("POST", "/api/v1/namespaces", {}, ra("create", "namespaces"), id="namespace-create"),
    pytest.param(
        "GET",
        "/apis/apps/v1/namespaces/ns/deployments/d",
        {},
        ra("get", "deployments", "ns", "d", group="apps"),
        id="group-get",
    ),
    pytest.param(
        "PUT",
        "/apis/apps/v1/namespaces/ns/deployments/d/scale",
        {},
        ra("update", "deployments", "ns", "d", "scale", group="apps"),
        id="group-scale",
    ),
    pytest.param(
        "GET",
        "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies",
        {"watch": "true"},
        ra("watch", "noderesourcetopologies", group="topology.node.k8s.io", version="v1alpha2"),
        id="crd-cluster-watch",
    ),
    pytest.param(
        "PATCH",
        "/apis/nodetopology.openshift.io/v1/numaresourcesoperators/nrop/status",
        {},
        ra("patch", "numaresourcesoperators", "", "nrop", "status", group="nodetopology.openshift.io"),
        id="crd-status",
    ),
    pytest.param(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {},
        ra("create", "selfsubjectaccessreviews", group="authorization.k8s.io"),
        id="ssar",
    ),
    pytest.param("GET", "/api/v1/watch/namespaces/ns/pods", {}, ra("watch", "pods", "ns"), id="legacy-watch"),
    pytest.param(
        "GET",
        "/api/v1/watch/namespaces/ns/pods/p",
        {},
        ra("watch", "pods", "ns", "p"),
        id="legacy-watch-named",
    ),
    pytest.param(
        "GET",
        "/api/v1/proxy/namespaces/ns/pods/p/a/b",
        {},
        ra("proxy", "pods", "ns", "p"),
        id="legacy-proxy-no-subresource",
    ),
    pytest.param(
        "GET", "/api/v1/namespaces/ns/pods/p/", {}, ra("get", "pods", "ns", "p"), id="trailing-slash"
    ),
    pytest.param("GET", "/version", {}, nr("get"), id="version"),
    pytest.param("GET", "/api", {}, nr("get"), id="api"),
    pytest.param("GET", "/api/v1", {}, nr("get"), id="api-v1"),
    pytest.param("GET", "/apis", {}, nr("get"), id="apis"),
    pytest.param("GET", "/apis/apps", {}, nr("get"), id="apis-group"),
    pytest.param("GET", "/apis/apps/v1", {}, nr("get"), id="apis-group-version"),
    pytest.param("GET", "/openapi/v3", {}, nr("get"), id="openapi"),
    pytest.param("GET", "/openapi/v3/apis/apps/v1", {}, nr("get"), id="openapi-group"),
    pytest.param("GET", "/healthz", {}, nr("get"), id="healthz"),
    pytest.param("POST", "/metrics", {}, nr("post"), id="non-resource-post"),
    pytest.param("GET", "/", {}, nr("get"), id="root"),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), REQUEST_CASES)
def test_request_attributes(method: str, path: str, query: dict[str, str], expected: dict[str, Any]) -> None:
    attrs = request_attributes(method, path, query)
    assert {k: getattr(attrs, k) for k in expected} == expected
    assert attrs.path == path


def test_request_attributes_end_to_end_message() -> None:
    attrs = request_attributes("GET", "/api/v1/namespaces/default/pods/p1/log", {"follow": "true"})
    assert not authorize(SA, attrs, BOOTSTRAP).allowed
    assert forbidden_message(SA, attrs) == (
        'pods "p1" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "pods/log" '
        'in API group "" in the namespace "default"'
    )
