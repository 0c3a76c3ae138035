"""The suite's one client: the official Kubernetes client's DynamicClient, plain dicts in and out.

Every test, fixture and helper of the suite talks to the cluster through :class:`Kube`, so
the same code runs against the embedded cluster and any real cluster (architecture rule 1:
the Kubernetes API only). Objects are plain ``dict`` manifests both ways: they are what a
test writes, what a failure dump prints, and what YAML diffs compare.

Kinds are named by :class:`Kind` constants (``POD``, ``NRT``…) so a typo is an
``AttributeError`` at import, not a 404 at run time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config, dynamic
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError

__all__ = [
    "CONFIGMAP",
    "CRD",
    "DAEMONSET",
    "DEPLOYMENT",
    "EVENT",
    "JOB",
    "LEASE",
    "MCP",
    "NAMESPACE",
    "NODE",
    "NROP",
    "NROSCHED",
    "NRT",
    "POD",
    "PRIORITYCLASS",
    "REPLICASET",
    "RUNTIMECLASS",
    "SERVICEACCOUNT",
    "ApiError",
    "Kind",
    "Kube",
    "Manifest",
    "UnknownKindError",
    "is_not_found",
    "kind_of",
    "name_of",
]

log = logging.getLogger(__name__)

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """An API kind: what the dynamic client needs to find its resource."""

    api_version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


NAMESPACE = Kind("v1", "Namespace")
NODE = Kind("v1", "Node")
POD = Kind("v1", "Pod")
EVENT = Kind("v1", "Event")
CONFIGMAP = Kind("v1", "ConfigMap")
SERVICEACCOUNT = Kind("v1", "ServiceAccount")
DEPLOYMENT = Kind("apps/v1", "Deployment")
REPLICASET = Kind("apps/v1", "ReplicaSet")
DAEMONSET = Kind("apps/v1", "DaemonSet")
JOB = Kind("batch/v1", "Job")
LEASE = Kind("coordination.k8s.io/v1", "Lease")
PRIORITYCLASS = Kind("scheduling.k8s.io/v1", "PriorityClass")
RUNTIMECLASS = Kind("node.k8s.io/v1", "RuntimeClass")
CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
NRT = Kind("topology.node.k8s.io/v1alpha2", "NodeResourceTopology")
NROP = Kind("nodetopology.openshift.io/v1", "NUMAResourcesOperator")
NROSCHED = Kind("nodetopology.openshift.io/v1", "NUMAResourcesScheduler")
MCP = Kind("machineconfiguration.openshift.io/v1", "MachineConfigPool")

#: What ``CoreV1Api.read_namespaced_pod_log`` sends (its client picks the JSON entry of its list).
_LOG_ACCEPT = "application/json"

ApiError = DynamicApiError
#: The cluster does not serve the kind at all (its CRD is not installed); :meth:`Kube.list` also
#: raises it where a stale discovery cache still knew the kind.
UnknownKindError = ResourceNotFoundError


def is_not_found(exc: BaseException) -> bool:
    """Whether ``exc`` is the API server's 404 (or the dynamic client's unknown-kind error)."""
    return isinstance(exc, NotFoundError) or getattr(exc, "status", None) == 404


def kind_of(manifest: Mapping[str, Any]) -> Kind:
    return Kind(str(manifest["apiVersion"]), str(manifest["kind"]))


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` of an object ("" when it has none)."""
    return str((obj.get("metadata") or {}).get("name", ""))


class Kube:
    """Dict-in, dict-out access to one cluster through the official dynamic client."""

    def __init__(self, api_client: client.ApiClient, discovery_cache: str | Path | None = None) -> None:
        """``discovery_cache``: the file where the dynamic client keeps what the server serves (by
        default one per server in the temporary directory, kept across runs: right for a real
        cluster, litter for an embedded one, a new port each time)."""
        self.api_client = api_client
        cache = str(discovery_cache) if discovery_cache is not None else None
        self._dynamic = dynamic.DynamicClient(api_client, cache_file=cache)

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | Path | None = None,
        *,
        context: str | None = None,
        discovery_cache: str | Path | None = None,
    ) -> Kube:
        """A client for ``path`` (``None``: ``$KUBECONFIG``, then in-cluster, then ``~/.kube/config``)."""
        configuration = client.Configuration()
        if path is None:
            try:
                config.load_kube_config(context=context, client_configuration=configuration)
            except config.ConfigException:
                config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(
                config_file=str(path), context=context, client_configuration=configuration
            )
        return cls(client.ApiClient(configuration), discovery_cache)

    def close(self) -> None:
        self.api_client.close()

    # -- reads ---------------------------------------------------------------------------

    def _resource(self, kind: Kind):  # type: ignore[no-untyped-def]
        return self._dynamic.resources.get(api_version=kind.api_version, kind=kind.kind)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Manifest:
        return self._resource(kind).get(name=name, namespace=namespace).to_dict()

    def get_or_none(self, kind: Kind, name: str, namespace: str | None = None) -> Manifest | None:
        try:
            return self.get(kind, name, namespace)
        except DynamicApiError as exc:
            if is_not_found(exc):
                return None
            raise

    def get_if_served(self, kind: Kind, name: str, namespace: str | None = None) -> Manifest | None:
        """:meth:`get_or_none`, also ``None`` when the cluster does not serve the kind (no CRD)."""
        try:
            return self.get_or_none(kind, name, namespace)
        except UnknownKindError:
            return None

    def list(
        self,
        kind: Kind,
        namespace: str | None = None,
        *,
        label_selector: str | Mapping[str, str] | None = None,
        field_selector: str | None = None,
    ) -> list[Manifest]:
        if isinstance(label_selector, Mapping):
            label_selector = ",".join(
                f"{key}={value}" if value else key for key, value in sorted(label_selector.items())
            )
        try:
            result = self._resource(kind).get(
                namespace=namespace, label_selector=label_selector or None, field_selector=field_selector
            )
        except NotFoundError as exc:
            # A collection answers 404 only when its kind is not served (a missing namespace
            # lists empty): the discovery cache still knew a CRD that is gone.
            self._dynamic.resources.invalidate_cache()
            raise UnknownKindError(f"the cluster does not serve {kind.kind} ({kind.api_version})") from exc
        return list(result.to_dict().get("items") or [])

    def events_for(self, namespace: str, name: str, kind: str | None = None) -> list[Manifest]:
        """core/v1 Events whose involvedObject is ``namespace/name`` (oldest first)."""
        selector = f"involvedObject.name={name},involvedObject.namespace={namespace}"
        if kind:
            selector += f",involvedObject.kind={kind}"
        events = self.list(EVENT, namespace, field_selector=selector)
        return sorted(events, key=_event_time)

    def pod_logs(
        self,
        namespace: str,
        name: str,
        container: str | None = None,
        *,
        since_seconds: int | None = None,
        previous: bool = False,
    ) -> str:
        query: list[tuple[str, Any]] = [("previous", "true" if previous else "false")]
        if container:
            query.append(("container", container))
        if since_seconds is not None:
            query.append(("sinceSeconds", since_seconds))
        return self._get_text(f"/api/v1/namespaces/{namespace}/pods/{name}/log", query, _LOG_ACCEPT)

    def node_proxy(self, node: str, path: str) -> str:
        """``GET /api/v1/nodes/<node>/proxy/<path>``: what the node's kubelet answers there, as text."""
        return self._get_text(f"/api/v1/nodes/{node}/proxy/{path}", [], "*/*")

    def _get_text(self, path: str, query: list[tuple[str, Any]], accept: str) -> str:
        """A GET whose answer is no API object (logs, a kubelet endpoint); errors are :data:`ApiError`.

        The dynamic client's raw request, not ``CoreV1Api``: importing that costs each pytest
        process about half a CPU-second (pydantic wraps its 400 methods), for two paths.
        """
        response = self._dynamic.request(
            "GET", path, query_params=query, header_params={"Accept": accept}, serialize=False
        )
        return bytes(response.data).decode("utf-8", errors="replace")

    # -- writes --------------------------------------------------------------------------

    def create(self, manifest: Mapping[str, Any]) -> Manifest:
        kind = kind_of(manifest)
        namespace = manifest.get("metadata", {}).get("namespace")
        return self._resource(kind).create(body=dict(manifest), namespace=namespace).to_dict()

    def apply(self, manifest: Mapping[str, Any]) -> Manifest:
        """Create the object, or merge-patch it to ``manifest`` if it exists (client-side apply)."""
        try:
            return self.create(manifest)
        except DynamicApiError as exc:
            if getattr(exc, "status", None) != 409:
                raise
        metadata = manifest["metadata"]
        return self.patch(kind_of(manifest), metadata["name"], dict(manifest), metadata.get("namespace"))

    def apply_all(self, manifests: Iterable[Mapping[str, Any]]) -> list[Manifest]:
        return [self.apply(manifest) for manifest in manifests]

    def patch(
        self,
        kind: Kind,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Manifest:
        """Patch with ``patch_type`` ``merge`` (default), ``strategic`` or ``json``."""
        content_type = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }[patch_type]
        resource = self._resource(kind)
        if subresource:
            resource = getattr(resource, subresource)
        return resource.patch(body=body, name=name, namespace=namespace, content_type=content_type).to_dict()

    def replace(self, manifest: Mapping[str, Any]) -> Manifest:
        metadata = manifest["metadata"]
        return (
            self._resource(kind_of(manifest))
            .replace(body=dict(manifest), name=metadata["name"], namespace=metadata.get("namespace"))
            .to_dict()
        )

    def delete(
        self,
        kind: Kind,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        missing_ok: bool = True,
    ) -> bool:
        """Delete one object; ``False`` if it was already gone (and ``missing_ok``)."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            body["propagationPolicy"] = propagation_policy
        try:
            self._resource(kind).delete(name=name, namespace=namespace, body=body)
        except DynamicApiError as exc:
            if missing_ok and is_not_found(exc):
                return False
            raise
        return True

    def delete_collection(
        self, kind: Kind, namespace: str | None = None, *, label_selector: str | None = None
    ) -> int:
        """Delete every ``kind`` matching ``label_selector``; returns how many were asked to go."""
        items = self.list(kind, namespace, label_selector=label_selector)
        for item in items:
            metadata = item["metadata"]
            self.delete(kind, metadata["name"], metadata.get("namespace"))
        return len(items)


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or event.get("metadata", {}).get("creationTimestamp")
        or ""
    )
