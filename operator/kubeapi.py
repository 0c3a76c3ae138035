"""The operator's Kubernetes client: plain dicts through the blocking :class:`~nrop.api.restclient.RestClient`.

Owns the kinds the operator touches (paths by apiVersion and kind), get/list/create/
replace/delete, status merge patches, and :meth:`Api.apply`, the "make it so" of every
rendered object: create it when missing; replace it when the live object no longer holds
every field the operator renders (a manual edit) or was rendered from another desired
state (the hash annotation differs). Errors are :mod:`nrop.api.restapi`'s ``ApiError``
(``ApiException`` here, as the operator's modules name it).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from nrop.api.clientconfig import resolve_config
from nrop.api.distribution import package_version
from nrop.api.restapi import JSON, ApiError, query
from nrop.api.restclient import RestClient

__all__ = [
    "DESIRED_HASH_ANNOTATION",
    "Api",
    "ApiException",
    "Kind",
    "error_message",
    "is_subset",
    "kind",
    "load_client",
]

log = logging.getLogger(__name__)
ApiException = ApiError
#: The operator's name on the wire, as controller-runtime's manager sets it from the binary.
USER_AGENT: Final = "numaresources-operator"
Obj = dict[str, Any]
DESIRED_HASH_ANNOTATION: Final = "nodetopology.openshift.io/desired-hash"


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


KINDS: Final = {
    (k.api_version, k.kind): k
    for k in (
        Kind("v1", "Namespace", "namespaces", False),
        Kind("v1", "Node", "nodes", False),
        Kind("v1", "Pod", "pods", True),
        Kind("v1", "ServiceAccount", "serviceaccounts", True),
        Kind("v1", "ConfigMap", "configmaps", True),
        Kind("v1", "Secret", "secrets", True),
        Kind("apps/v1", "DaemonSet", "daemonsets", True),
        Kind("apps/v1", "Deployment", "deployments", True),
        Kind("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
        Kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
        Kind("rbac.authorization.k8s.io/v1", "Role", "roles", True),
        Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
        Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False),
        Kind("nodetopology.openshift.io/v1", "NUMAResourcesOperator", "numaresourcesoperators", False),
        Kind("nodetopology.openshift.io/v1", "NUMAResourcesScheduler", "numaresourcesschedulers", False),
        Kind("machineconfiguration.openshift.io/v1", "MachineConfigPool", "machineconfigpools", False),
        Kind("machineconfiguration.openshift.io/v1", "KubeletConfig", "kubeletconfigs", False),
        Kind("machineconfiguration.openshift.io/v1", "MachineConfig", "machineconfigs", False),
        Kind("config.openshift.io/v1", "APIServer", "apiservers", False),
        Kind("config.openshift.io/v1", "ClusterVersion", "clusterversions", False),
        Kind("config.openshift.io/v1", "Infrastructure", "infrastructures", False),
    )
}


def kind_of(obj: Mapping[str, Any]) -> Kind:
    return KINDS[(obj["apiVersion"], obj["kind"])]


def kind(api_version: str, kind_name: str) -> Kind:
    return KINDS[(api_version, kind_name)]


def is_subset(desired: Any, live: Any) -> bool:
    """True when every field of ``desired`` is in ``live`` with the same value (lists: same length)."""
    if isinstance(desired, Mapping):
        return isinstance(live, Mapping) and all(
            k in live and is_subset(v, live[k]) for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(desired) == len(live)
            and all(is_subset(d, x) for d, x in zip(desired, live, strict=True))
        )
    return desired == live


def desired_hash(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:20]


def load_client(kubeconfig: str | None) -> RestClient:
    """``--kubeconfig``, else ``KUBECONFIG``, else the pod's service account (``ClientConfigError`` if none)."""
    return RestClient(resolve_config(kubeconfig), user_agent=f"{USER_AGENT}/{package_version()}")


class Api:
    """Plain-dict access to the API server."""

    def __init__(self, rest: RestClient) -> None:
        self._rest = rest

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, str] | None = None,
        content_type: str = JSON,
    ) -> Obj:
        return self._rest.request(method, path, params=params, body=body, content_type=content_type) or {}

    def get(self, k: Kind, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return self._call("GET", k.path(namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list(
        self, k: Kind, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> list[Obj]:
        params = query(labelSelector=",".join(f"{a}={b}" for a, b in labels.items())) if labels else None
        try:
            return list(self._call("GET", k.path(namespace), params=params).get("items") or [])
        except ApiException as exc:
            if exc.status == 404 and k.kind == "MachineConfigPool":
                return []
            raise

    def has_api(self, group_version: str) -> bool:
        try:
            self._call("GET", f"/apis/{group_version}")
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def serves(self, k: Kind) -> bool:
        """Whether the API server serves the kind (its group/version lists its plural)."""
        try:
            group_version = f"/apis/{k.api_version}" if "/" in k.api_version else f"/api/{k.api_version}"
            found = self._call("GET", group_version)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return any(r.get("name") == k.plural for r in found.get("resources") or ())

    def create(self, obj: Obj) -> Obj:
        k = kind_of(obj)
        return self._call("POST", k.path(obj["metadata"].get("namespace")), body=obj)

    def replace(self, obj: Obj) -> Obj:
        k = kind_of(obj)
        meta = obj["metadata"]
        return self._call("PUT", k.path(meta.get("namespace"), meta["name"]), body=obj)

    def delete(self, k: Kind, name: str, namespace: str | None = None) -> bool:
        """Delete (background propagation); False when it was already gone."""
        try:
            self._call("DELETE", k.path(namespace, name), body={"propagationPolicy": "Background"})
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def patch_status(self, k: Kind, name: str, status: Mapping[str, Any]) -> Obj:
        return self._call(
            "PATCH",
            k.path(None, name) + "/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )

    def patch(self, k: Kind, name: str, patch: Mapping[str, Any], namespace: str | None = None) -> Obj:
        return self._call(
            "PATCH", k.path(namespace, name), body=patch, content_type="application/merge-patch+json"
        )

    def raw_get(self, path: str) -> Obj:
        return self._call("GET", path)

    def raw_post(self, path: str, body: Obj) -> Obj:
        return self._call("POST", path, body=body)

    def raw_put(self, path: str, body: Obj) -> Obj:
        return self._call("PUT", path, body=body)

    def apply(self, desired: Obj) -> tuple[Obj, str]:
        """Make the live object hold ``desired``; returns it and what was done (created/updated/unchanged)."""
        desired = copy.deepcopy(desired)
        meta = desired["metadata"]
        meta.setdefault("annotations", {})[DESIRED_HASH_ANNOTATION] = desired_hash(desired)
        k = kind_of(desired)
        live = self.get(k, meta["name"], meta.get("namespace"))
        if live is None:
            log.info("creating %s %s", desired["kind"], _key(desired))
            return self.create(desired), "created"
        live_meta = live["metadata"]
        if is_subset(desired, live):
            return live, "unchanged"
        merged = {**live, **{key: v for key, v in desired.items() if key not in ("metadata", "status")}}
        merged["metadata"] = {
            **live_meta,
            "labels": {**(live_meta.get("labels") or {}), **(meta.get("labels") or {})},
            "annotations": {**(live_meta.get("annotations") or {}), **meta["annotations"]},
            "ownerReferences": meta.get("ownerReferences") or live_meta.get("ownerReferences") or [],
        }
        log.info("updating %s %s (drifted from the desired state)", desired["kind"], _key(desired))
        return self.replace(merged), "updated"


def error_message(exc: ApiException) -> str:
    """``<code> <reason>: <the Status message>`` of an API error (the message alone without a response)."""
    return str(exc) if exc.status else exc.message


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
