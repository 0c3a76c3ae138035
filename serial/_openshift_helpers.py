"""What the operator-configuration specs know of OpenShift: the OpenShift kinds, whether the
cluster is Kubernetes, OpenShift or HyperShift (upstream ``detect.Platform`` and its version),
and the custom SELinux policy setting, so OpenShift-only specs skip with a reason read from the
cluster, never unconditionally.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from nrop.api.annotations import any_custom_policy
from nrop.api.platform import CLUSTER_OPERATOR, Platform, parse_version, platform_of, version_of
from nrop.suite import Kube
from nrop.suite.e2e.kube import Kind

MCP = Kind("machineconfiguration.openshift.io/v1", "MachineConfigPool")
KUBELETCONFIG = Kind("machineconfiguration.openshift.io/v1", "KubeletConfig")
CLUSTERVERSION = Kind("config.openshift.io/v1", "ClusterVersion")
CLUSTEROPERATOR = Kind("config.openshift.io/v1", "ClusterOperator")
INFRASTRUCTURE = Kind("config.openshift.io/v1", "Infrastructure")
SCHEDULER_CONFIG = Kind("config.openshift.io/v1", "Scheduler")
APISERVER_CONFIG = Kind("config.openshift.io/v1", "APIServer")


# -- platform -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterPlatform:
    """What the cluster is, read from its API (upstream ``detect.Platform`` + version)."""

    platform: Platform
    version: tuple[int, ...] | None

    @property
    def is_openshift_like(self) -> bool:
        return self.platform in (Platform.OPENSHIFT, Platform.HYPERSHIFT)

    def at_least(self, version: str) -> bool:
        """``PlatVersion.AtLeast`` for OpenShift versions; False when the version is unknown."""
        if self.version is None:
            return False
        return self.version >= parse_version(version)

    def describe(self) -> str:
        if self.version is None:
            return self.platform.value
        return f"{self.platform.value} {'.'.join(str(part) for part in self.version)}"


def serves(kube: Kube, kind: Kind) -> bool:
    """Whether the API server serves ``kind`` (discovery knows it)."""
    try:
        kube._resource(kind)
    except ResourceNotFoundError:
        return False
    return True


def detect_platform(kube: Kube) -> ClusterPlatform:
    """The cluster's platform and version as upstream detects them (:mod:`nrop.api.platform`);
    on Kubernetes upstream takes the server version, the port none (both compare lower than 4.x)."""
    if not serves(kube, CLUSTERVERSION):
        return ClusterPlatform(Platform.KUBERNETES, None)
    cluster_versions = len(kube.list(CLUSTERVERSION))
    infra = kube.get(INFRASTRUCTURE, "cluster") if cluster_versions else None
    platform = platform_of(cluster_versions, infra)
    if platform is Platform.KUBERNETES:
        return ClusterPlatform(platform, None)
    operator = kube.get_or_none(CLUSTEROPERATOR, CLUSTER_OPERATOR) if serves(kube, CLUSTEROPERATOR) else None
    version = version_of(operator)
    return ClusterPlatform(platform, parse_version(version) if version else None)


def openshift_kinds_missing(kube: Kube, *kinds: Kind) -> str | None:
    """The skip reason when one of the OpenShift ``kinds`` is not served, else None."""
    missing = [str(kind) for kind in kinds if not serves(kube, kind)]
    if not missing:
        return None
    return f"requires OpenShift: {', '.join(missing)} not served by this cluster"


def custom_policy_support_enabled(platform: ClusterPlatform, nrop: Mapping[str, Any]) -> bool:
    """``isCustomPolicySupportEnabled``: the custom SELinux policy (a MachineConfig, MCP roll-out)
    is in effect: always before OpenShift 4.18, else when a node group asks for it.

    Kubernetes adaptation (listed in docs/faithfulness.md): upstream's suite targets OpenShift and
    compares whatever platform version it finds with 4.18, so on Kubernetes (version 1.x) it would
    wait for MachineConfigPool roll-outs that never come; without MachineConfigs there is no
    custom policy, so here it is off on every platform but OpenShift.
    """
    if platform.platform is not Platform.OPENSHIFT:
        return False
    if not platform.at_least("4.18"):
        return True
    return any_custom_policy(nrop)
