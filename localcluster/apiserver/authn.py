"""Authentication: bearer tokens for the admin and for service accounts, and impersonation.

Service-account tokens are minted through the TokenRequest subresource as
HS256-signed JWTs carrying the upstream claims (``sub``
``system:serviceaccount:<ns>:<name>``, ``kubernetes.io`` namespace/serviceaccount
uid).  A token is valid while it has not expired and its service account still
exists with the same uid, like upstream's bound tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.rbac import UserInfo, service_account_user

ADMIN_USER = UserInfo(name="admin", groups=("system:masters", "system:authenticated"))
ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_AUDIENCES = (ISSUER,)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_at: int


class Authenticator:
    """Maps a bearer token to a user; ``sa_uid`` looks up the current uid of a service account."""

    def __init__(self, sa_uid: Callable[[str, str], str | None], admin_token: str | None = None) -> None:
        self.admin_token = admin_token or secrets.token_urlsafe(32)
        self._key = secrets.token_bytes(32)
        self._sa_uid = sa_uid

    def issue(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        audiences: list[str] | None = None,
        expiration_seconds: int = 3600,
        bound: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> IssuedToken:
        issued = int(time.time() if now is None else now)
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": list(audiences or DEFAULT_AUDIENCES),
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "iat": issued,
            "nbf": issued,
            "exp": issued + expiration_seconds,
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        if bound:
            claims["kubernetes.io"][bound["kind"].lower()] = {
                "name": bound["name"],
                "uid": bound.get("uid", ""),
            }
        header = _b64(orjson.dumps({"alg": "HS256", "kid": "nrop", "typ": "JWT"}))
        payload = _b64(orjson.dumps(claims))
        signature = _b64(hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        return IssuedToken(token=f"{header}.{payload}.{signature}", expires_at=claims["exp"])

    def authenticate(self, authorization: str | None) -> UserInfo:
        """The user of a request; 401 when the token is missing or not valid."""
        scheme, _, token = (authorization or "").partition(" ")
        # The scheme is case-insensitive (RFC 7235); the official client's in-cluster config sends "bearer".
        if scheme.lower() != "bearer" or not token.strip():
            raise errors.Unauthorized("Unauthorized")
        token = token.strip()
        if hmac.compare_digest(token, self.admin_token):
            return ADMIN_USER
        user = self._service_account(token)
        if user is None:
            raise errors.Unauthorized("Unauthorized")
        return user

    def _service_account(self, token: str) -> UserInfo | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = _b64(hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(expected, parts[2]):
            return None
        try:
            claims = orjson.loads(_unb64(parts[1]))
            info = claims["kubernetes.io"]
            namespace, sa = info["namespace"], info["serviceaccount"]
        except (ValueError, KeyError, TypeError):
            return None
        if claims.get("exp", 0) < time.time():
            return None
        if self._sa_uid(namespace, sa["name"]) != sa["uid"]:
            return None
        user = service_account_user(namespace, sa["name"])
        return UserInfo(name=user.name, groups=user.groups, uid=sa["uid"])


def impersonated(user: UserInfo, as_user: str, as_groups: list[str], as_uid: str) -> UserInfo:
    """The identity a request acts as under ``Impersonate-*`` headers."""
    if as_user.startswith("system:serviceaccount:"):
        parts = as_user.split(":")
        if len(parts) != 4:
            raise errors.BadRequest(f"invalid service account username {as_user!r}")
        base = service_account_user(parts[2], parts[3])
        groups = tuple(dict.fromkeys((*base.groups, *as_groups)))
        return UserInfo(name=base.name, groups=groups, uid=as_uid)
    groups = list(as_groups)
    if as_user != "system:anonymous" and "system:authenticated" not in groups:
        groups.append("system:authenticated")
    return UserInfo(name=as_user, groups=tuple(groups), uid=as_uid)
