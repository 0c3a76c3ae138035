"""RBAC authorization: who may do what, decided the way kube-apiserver's RBAC authorizer decides it.

The package owns the pure part of authorization; nothing in it does I/O (the bootstrap
policy is package data read once), so every decision is table-tested. Roles and bindings
are plain ``rbac.authorization.k8s.io/v1`` dicts as the API server stores them.

* :mod:`.identity`: users, groups, service-account identities;
* :mod:`.attributes`: request attributes (upstream ``RequestInfoFactory``);
* :mod:`.rules`: one PolicyRule: matching a request, covering other rules;
* :mod:`.aggregation`: aggregated ClusterRoles, resolved when a policy is built;
* :mod:`.policy`: the snapshot of RBAC objects and the authorizer (upstream
  ``plugin/pkg/auth/authorizer/rbac`` and ``pkg/registry/rbac/validation``);
* :mod:`.escalation`: privilege-escalation prevention on writes of roles and bindings
  (upstream ``pkg/registry/rbac/*/policybased``);
* :mod:`.messages`: the 403 texts clients print (upstream ``responsewriters.Forbidden``);
* :mod:`.bootstrap` and ``bootstrap.yaml``: the ClusterRoles and ClusterRoleBindings the
  server creates at start-up.

This module re-exports what the rest of the API server uses. Code outside this package imports only
what ``__all__`` lists; every other module here is internal.
"""

from __future__ import annotations

from nrop.localcluster.apiserver.rbac.aggregation import aggregate_cluster_roles, aggregated_rules
from nrop.localcluster.apiserver.rbac.attributes import Attributes, request_attributes
from nrop.localcluster.apiserver.rbac.bootstrap import (
    BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    BOOTSTRAP_CLUSTER_ROLES,
)
from nrop.localcluster.apiserver.rbac.escalation import WriteGuard, check_write, write_guard
from nrop.localcluster.apiserver.rbac.identity import (
    ANONYMOUS,
    RBAC_GROUP,
    SYSTEM_MASTERS,
    UserInfo,
    parse_service_account_username,
    service_account_user,
)
from nrop.localcluster.apiserver.rbac.messages import forbidden_error, forbidden_message
from nrop.localcluster.apiserver.rbac.policy import Decision, Policy, authorize
from nrop.localcluster.apiserver.rbac.rules import rule_allows

__all__ = [
    "ANONYMOUS",
    "BOOTSTRAP_CLUSTER_ROLES",
    "BOOTSTRAP_CLUSTER_ROLE_BINDINGS",
    "RBAC_GROUP",
    "SYSTEM_MASTERS",
    "Attributes",
    "Decision",
    "Policy",
    "UserInfo",
    "WriteGuard",
    "aggregate_cluster_roles",
    "aggregated_rules",
    "audit",
    "authorize",
    "check_write",
    "forbidden_error",
    "forbidden_message",
    "parse_service_account_username",
    "request_attributes",
    "rule_allows",
    "service_account_user",
    "write_guard",
]
