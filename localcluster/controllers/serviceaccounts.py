"""Service-account housekeeping: the ``default`` ServiceAccount, ``kube-root-ca.crt``, legacy token Secrets.

Plays three kube-controller-manager controllers, per namespace that is not terminating:

* ``serviceaccount``: a ``default`` ServiceAccount exists (recreated if deleted);
* ``root-ca-cert-publisher``: a ``kube-root-ca.crt`` ConfigMap holds the cluster CA as ``ca.crt``;
* ``serviceaccount-token``: a Secret of type ``kubernetes.io/service-account-token`` naming a
  ServiceAccount in ``kubernetes.io/service-account.name`` gets ``token`` (a token of that
  account without expiry in practice: 10 years), ``ca.crt``, ``namespace`` and the
  ``kubernetes.io/service-account.uid`` annotation; one whose account is gone (or was
  recreated with another uid) is deleted.
"""

from __future__ import annotations

import base64
import copy
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.reconciling import Controller, kind_of

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["ROOT_CA_CONFIGMAP", "TOKEN_SECRET_TYPE", "ServiceAccountsController"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token"
_SA_NAME = "kubernetes.io/service-account.name"
_SA_UID = "kubernetes.io/service-account.uid"
_ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters."
)
_LEGACY_TOKEN_SECONDS = 10 * 365 * 24 * 3600
_NAMESPACES = ("", "namespaces")
_SERVICEACCOUNTS = ("", "serviceaccounts")
_CONFIGMAPS = ("", "configmaps")
_SECRETS = ("", "secrets")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class ServiceAccountsController(Controller):
    name = "serviceaccount-controller"

    def __init__(self, server: InProcessAPI, clock: Clock, *, ca_pem: bytes = b"") -> None:
        super().__init__(server, clock)
        self.ca_pem = ca_pem
        self.sa_kind = kind_of(server, "", "serviceaccounts")
        self.cm_kind = kind_of(server, "", "configmaps")
        self.secret_kind = kind_of(server, "", "secrets")

    # Keys: "ns:<namespace>" or "secret:<namespace>/<name>".

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return (
            (_NAMESPACES, lambda e: [f"ns:{e.obj['metadata']['name']}"] if e.type != "DELETED" else []),
            (_SERVICEACCOUNTS, self._sa_keys),
            (_CONFIGMAPS, self._configmap_keys),
            (_SECRETS, self._secret_keys),
        )

    def initial_keys(self) -> Iterable[str]:
        keys = [f"ns:{ns['metadata']['name']}" for ns in self.store.list(_NAMESPACES)]
        keys += [
            f"secret:{s['metadata']['namespace']}/{s['metadata']['name']}"
            for s in self.store.list(_SECRETS)
            if s.get("type") == TOKEN_SECRET_TYPE
        ]
        return keys

    def _sa_keys(self, event: WatchEvent) -> list[str]:
        namespace = event.obj["metadata"]["namespace"]
        keys = [f"ns:{namespace}"]
        keys += [
            f"secret:{namespace}/{s['metadata']['name']}"
            for s in self.store.list(_SECRETS, namespace)
            if s.get("type") == TOKEN_SECRET_TYPE
            and (s["metadata"].get("annotations") or {}).get(_SA_NAME) == event.obj["metadata"]["name"]
        ]
        return keys

    @staticmethod
    def _configmap_keys(event: WatchEvent) -> list[str]:
        meta = event.obj["metadata"]
        return [f"ns:{meta['namespace']}"] if meta["name"] == ROOT_CA_CONFIGMAP else []

    @staticmethod
    def _secret_keys(event: WatchEvent) -> list[str]:
        if event.type == "DELETED" or event.obj.get("type") != TOKEN_SECRET_TYPE:
            return []
        meta = event.obj["metadata"]
        return [f"secret:{meta['namespace']}/{meta['name']}"]

    def sync(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "ns":
            self._sync_namespace(rest)
        else:
            namespace, _, name = rest.partition("/")
            self._sync_token(namespace, name)

    def _active(self, namespace: str) -> bool:
        ns = self.store.get(_NAMESPACES, "", namespace)
        return ns is not None and not ns["metadata"].get("deletionTimestamp")

    def _sync_namespace(self, namespace: str) -> None:
        if not self._active(namespace):
            return
        if self.store.get(_SERVICEACCOUNTS, namespace, "default") is None:
            body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
            self._create(self.sa_kind, namespace, body)
        if not self.ca_pem:
            return
        data = {"ca.crt": self.ca_pem.decode()}
        current = self.store.get(_CONFIGMAPS, namespace, ROOT_CA_CONFIGMAP)
        if current is None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": ROOT_CA_CONFIGMAP,
                    "annotations": {"kubernetes.io/description": _ROOT_CA_DESCRIPTION},
                },
                "data": data,
            }
            self._create(self.cm_kind, namespace, body)
        elif current.get("data") != data:
            updated = copy.deepcopy(current)
            updated["data"] = data
            self.update(self.cm_kind, updated)

    def _create(self, kind: Any, namespace: str, body: Obj) -> None:
        try:
            self.rest.create(kind, namespace, body, self.opts)
        except errors.AlreadyExists:
            pass
        except errors.Forbidden:  # the namespace started terminating meanwhile
            pass

    def _sync_token(self, namespace: str, name: str) -> None:
        secret = self.store.get(_SECRETS, namespace, name)
        if secret is None or secret.get("type") != TOKEN_SECRET_TYPE:
            return
        annotations = secret["metadata"].get("annotations") or {}
        sa = self.store.get(_SERVICEACCOUNTS, namespace, annotations.get(_SA_NAME, ""))
        if sa is None or (annotations.get(_SA_UID) and annotations[_SA_UID] != sa["metadata"]["uid"]):
            log.info("deleting token secret %s/%s: its service account is gone", namespace, name)
            self.delete(self.secret_kind, secret)
            return
        data = dict(secret.get("data") or {})
        wanted = {"namespace": _b64(namespace.encode())}
        if self.ca_pem:
            wanted["ca.crt"] = _b64(self.ca_pem)
        if (
            all(data.get(k) == v for k, v in wanted.items())
            and data.get("token")
            and annotations.get(_SA_UID)
        ):
            return
        if not data.get("token"):
            issued = self.server.authn.issue(
                namespace,
                sa["metadata"]["name"],
                sa["metadata"]["uid"],
                expiration_seconds=_LEGACY_TOKEN_SECONDS,
                now=self.clock.now().timestamp(),
            )
            data["token"] = _b64(issued.token.encode())
        data.update(wanted)
        updated = copy.deepcopy(secret)
        updated["data"] = data
        updated["metadata"]["annotations"] = {**annotations, _SA_UID: sa["metadata"]["uid"]}
        self.update(self.secret_kind, updated)
