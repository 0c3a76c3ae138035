"""Discovery documents: ``/version``, legacy ``/api`` and ``/apis``, and aggregated discovery v2.

Everything is derived from the registry, so a CRD's group appears the moment
the CRD is stored.  kubectl asks for aggregated discovery and reads the format
from the response Content-Type; Python clients ask for plain JSON and get the
legacy shapes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from nrop.localcluster.apiserver.registry import SUBRESOURCE_VERBS, Kind, Registry

KUBE_MAJOR = "1"
KUBE_MINOR = "33"
GIT_VERSION = "v1.33.0-nrop"
AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

# Groups listed first, in the order kube-apiserver lists them; the rest follow alphabetically.
_GROUP_ORDER = [
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
]


def version_info() -> dict[str, str]:
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def _sorted_groups(registry: Registry) -> list[tuple[str, list[str]]]:
    groups = [(g, v) for g, v in registry.groups().items() if g]
    rank = {g: i for i, g in enumerate(_GROUP_ORDER)}
    groups.sort(key=lambda gv: (rank.get(gv[0], len(rank)), gv[0]))
    return groups


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": dict(entries[0])}


def api_group_list(registry: Registry) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(g, v) for g, v in _sorted_groups(registry)],
    }


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.groups().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _storage_hash(kind: Kind) -> str:
    digest = hashlib.sha256(f"{kind.group}/{kind.version}/{kind.kind}".encode()).digest()
    import base64

    return base64.b64encode(digest[:8]).decode()


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    kinds = sorted(registry.in_group_version(group, version), key=lambda k: k.plural)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    for kind in kinds:
        entry: dict[str, Any] = {
            "name": kind.plural,
            "singularName": kind.singular_name,
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": sorted(kind.verbs),
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        if "list" in kind.verbs:
            entry["storageVersionHash"] = _storage_hash(kind)
        resources.append(entry)
        for sub in kind.subresources:
            sub_entry: dict[str, Any] = {
                "name": f"{kind.plural}/{sub}",
                "singularName": "",
                "namespaced": kind.namespaced,
                "kind": _subresource_kind(kind, sub)[2],
                "verbs": list(SUBRESOURCE_VERBS[sub]),
            }
            sub_group, sub_version, _ = _subresource_kind(kind, sub)
            if (sub_group, sub_version) != (kind.group, kind.version):
                sub_entry["group"], sub_entry["version"] = sub_group, sub_version
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _subresource_kind(kind: Kind, sub: str) -> tuple[str, str, str]:
    """The (group, version, kind) a subresource accepts and returns."""
    return {
        "scale": ("autoscaling", "v1", "Scale"),
        "binding": ("", "v1", "Binding"),
        "eviction": ("policy", "v1", "Eviction"),
        "token": ("authentication.k8s.io", "v1", "TokenRequest"),
        "proxy": ("", "v1", f"{kind.kind}ProxyOptions"),
        "log": ("", "v1", "Pod"),
        "exec": ("", "v1", "PodExecOptions"),
    }.get(sub, (kind.group, kind.version, kind.kind))


def _aggregated_version(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources = []
    for kind in sorted(registry.in_group_version(group, version), key=lambda k: k.plural):
        entry: dict[str, Any] = {
            "resource": kind.plural,
            "responseKind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "singularResource": kind.singular_name,
            "verbs": sorted(kind.verbs),
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        subs = []
        for sub in kind.subresources:
            g, v, k = _subresource_kind(kind, sub)
            subs.append(
                {
                    "subresource": sub,
                    "responseKind": {"group": g, "version": v, "kind": k},
                    "verbs": list(SUBRESOURCE_VERBS[sub]),
                }
            )
        if subs:
            entry["subresources"] = subs
        resources.append(entry)
    return {"version": version, "resources": resources, "freshness": "Current"}


def aggregated(registry: Registry, *, core: bool) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (core) or ``/apis`` (all named groups)."""
    if core:
        items = [
            {
                "metadata": {"name": "", "creationTimestamp": None},
                "versions": [_aggregated_version(registry, "", "v1")],
            }
        ]
    else:
        items = [
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [_aggregated_version(registry, group, v) for v in versions],
            }
            for group, versions in _sorted_groups(registry)
        ]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept: str) -> bool:
    """Whether the Accept header asks for aggregated discovery v2 (any order of parameters)."""
    for media in accept.split(","):
        params = {
            p.split("=", 1)[0].strip(): p.split("=", 1)[-1].strip() for p in media.split(";")[1:] if "=" in p
        }
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("v") == "v2"
            and params.get("as") == "APIGroupDiscoveryList"
        ):
            return True
    return False
