"""Who a request is: the identities RBAC bindings name (upstream ``k8s.io/apiserver/pkg/authentication``).

This module owns the well-known user and group names, :class:`UserInfo`, and the
identities of service accounts (their user name and the groups upstream adds).
"""

from __future__ import annotations

from dataclasses import dataclass

RBAC_GROUP = "rbac.authorization.k8s.io"

# Well-known identities (k8s.io/apiserver/pkg/authentication/user and .../serviceaccount).
SYSTEM_MASTERS = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
SERVICE_ACCOUNT_GROUP_PREFIX = "system:serviceaccounts:"


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
