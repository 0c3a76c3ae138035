"""The plugin registry: configuration names -> plugin classes, and upstream's default profile.

:data:`IN_TREE` holds the upstream in-tree plugins this scheduler implements;
:data:`REGISTRY` adds NodeResourceTopologyMatch (scheduler-plugins, out of tree upstream),
which this scheduler ships.

The configuration parser resolves ``KubeSchedulerConfiguration`` plugin names here: each
class says which extension points it takes part in (``framework.implements``) and, when
it has args, parses them (``cls.parse_args``).  Upstream in-tree plugins this project
does not implement are listed in :data:`NOT_IMPLEMENTED`, so that a configuration naming
them (upstream's own default profile does) is accepted with a warning and the plugin is
left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nrop.sched.framework.plugins.balancedallocation import NodeResourcesBalancedAllocation
from nrop.sched.framework.plugins.defaultbinder import DefaultBinder
from nrop.sched.framework.plugins.defaultpreemption import DefaultPreemption
from nrop.sched.framework.plugins.interpodaffinity import InterPodAffinity
from nrop.sched.framework.plugins.nodeaffinity import NodeAffinity
from nrop.sched.framework.plugins.nodename import NodeName
from nrop.sched.framework.plugins.nodeports import NodePorts
from nrop.sched.framework.plugins.noderesourcesfit import NodeResourcesFit
from nrop.sched.framework.plugins.noderesourcetopology import NodeResourceTopologyMatch
from nrop.sched.framework.plugins.nodeunschedulable import NodeUnschedulable
from nrop.sched.framework.plugins.prioritysort import PrioritySort
from nrop.sched.framework.plugins.schedulinggates import SchedulingGates
from nrop.sched.framework.plugins.tainttoleration import TaintToleration

IN_TREE: Mapping[str, type] = {
    cls.name: cls
    for cls in (
        SchedulingGates,
        PrioritySort,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        NodeResourcesFit,
        InterPodAffinity,
        DefaultPreemption,
        NodeResourcesBalancedAllocation,
        DefaultBinder,
    )
}

#: Every plugin a configuration may name.
REGISTRY: Mapping[str, type] = {**IN_TREE, NodeResourceTopologyMatch.name: NodeResourceTopologyMatch}

#: Upstream in-tree plugins (v1.33 registry) this scheduler does not implement.
NOT_IMPLEMENTED: frozenset[str] = frozenset(
    {
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "CinderLimits",
        "EBSLimits",
        "GCEPDLimits",
        "PodTopologySpread",
        "ImageLocality",
        "DynamicResources",
    }
)


@dataclass(frozen=True, slots=True)
class DefaultPlugin:
    """One entry of the default ``multiPoint.enabled`` list; weight 0 means "not set"."""

    name: str
    weight: int = 0


#: Upstream ``getDefaultPlugins()`` (v1 ``KubeSchedulerConfiguration``, v1.33, default feature gates).
DEFAULT_MULTI_POINT: tuple[DefaultPlugin, ...] = (
    DefaultPlugin("SchedulingGates"),
    DefaultPlugin("PrioritySort"),
    DefaultPlugin("NodeUnschedulable"),
    DefaultPlugin("NodeName"),
    DefaultPlugin("TaintToleration", 3),
    DefaultPlugin("NodeAffinity", 2),
    DefaultPlugin("NodePorts"),
    DefaultPlugin("NodeResourcesFit", 1),
    DefaultPlugin("VolumeRestrictions"),
    DefaultPlugin("NodeVolumeLimits"),
    DefaultPlugin("VolumeBinding"),
    DefaultPlugin("VolumeZone"),
    DefaultPlugin("PodTopologySpread", 2),
    DefaultPlugin("InterPodAffinity", 2),
    DefaultPlugin("DefaultPreemption"),
    DefaultPlugin("NodeResourcesBalancedAllocation", 1),
    DefaultPlugin("ImageLocality", 1),
    DefaultPlugin("DefaultBinder"),
)


def lookup(name: str) -> type | None:
    """The class of a plugin this scheduler has, or None (unknown or in :data:`NOT_IMPLEMENTED`)."""
    return REGISTRY.get(name)
