"""Which platform a cluster is, and its version, as upstream decides it (the deployer's
``detect.PlatformFromEnv`` and ``VersionFromEnv``): one rule for the operator and the suite.

* any ``ClusterVersion`` makes the cluster OpenShift-like (a cluster that does not serve the
  kind is Kubernetes); of those, one whose ``Infrastructure/cluster`` reports an ``External``
  control plane is HyperShift;
* an OpenShift-like cluster's version is the first operand version of
  ``ClusterOperator/openshift-apiserver`` (not ClusterVersion's); a Kubernetes cluster's is the
  API server's.

Pure: callers read the objects and pass them in.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CLUSTER_OPERATOR",
    "Platform",
    "parse_version",
    "platform_of",
    "version_of",
]

#: The ClusterOperator whose first operand version is the platform's.
CLUSTER_OPERATOR = "openshift-apiserver"


class Platform(enum.StrEnum):
    KUBERNETES = "Kubernetes"
    OPENSHIFT = "OpenShift"
    HYPERSHIFT = "HyperShift"


def platform_of(cluster_versions: int, infrastructure: Mapping[str, Any] | None) -> Platform:
    """The platform of a cluster listing ``cluster_versions`` ClusterVersions, whose
    ``Infrastructure/cluster`` is ``infrastructure`` (read only when there is one)."""
    if cluster_versions == 0:
        return Platform.KUBERNETES
    topology = ((infrastructure or {}).get("status") or {}).get("controlPlaneTopology")
    return Platform.HYPERSHIFT if topology == "External" else Platform.OPENSHIFT


def version_of(cluster_operator: Mapping[str, Any] | None) -> str | None:
    """The platform version ``ClusterOperator/openshift-apiserver`` reports (None: it reports none)."""
    versions = ((cluster_operator or {}).get("status") or {}).get("versions") or []
    return str(versions[0].get("version")) if versions and versions[0].get("version") else None


def parse_version(text: str) -> tuple[int, ...]:
    """``4.18.3`` / ``v1.30.0+k3s`` -> ``(4, 18, 3)``: the leading numeric dotted part."""
    match = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    if not match:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(part) for part in match.group(1).split("."))
