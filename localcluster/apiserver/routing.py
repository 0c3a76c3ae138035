"""URL parsing: which resource, namespace, name and subresource a request path names.

Follows upstream's RequestInfoFactory: ``/api/v1/...`` and ``/apis/<g>/<v>/...``,
``namespaces/<ns>/<plural>/...`` with ``status`` and ``finalize`` being
subresources of a namespace rather than resources inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class ResourcePath:
    group: str
    version: str
    plural: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    rest: str = ""  # remaining path after the subresource (proxy)
    namespaced_url: bool = False


@dataclass(frozen=True)
class DiscoveryPath:
    kind: str  # "api" | "api-version" | "apis" | "group" | "group-version"
    group: str = ""
    version: str = ""


def parse(path: str) -> ResourcePath | DiscoveryPath | None:
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None
    if parts[0] == "api":
        if len(parts) == 1:
            return DiscoveryPath("api")
        group, version, rest = "", parts[1], parts[2:]
        if not rest:
            return DiscoveryPath("api-version", "", version)
    elif parts[0] == "apis":
        if len(parts) == 1:
            return DiscoveryPath("apis")
        if len(parts) == 2:
            return DiscoveryPath("group", parts[1])
        group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            return DiscoveryPath("group-version", group, version)
    else:
        return None
    namespace = ""
    namespaced_url = False
    if rest[0] == "namespaces" and len(rest) > 1:
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            namespace = rest[1]
            namespaced_url = True
            rest = rest[2:]
        else:
            # The namespace object itself, or its status / finalize subresource.
            namespace = rest[1]
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    tail = "/".join(rest[3:])
    return ResourcePath(group, version, plural, namespace, name, sub, tail, namespaced_url)
