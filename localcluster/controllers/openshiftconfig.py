"""The cluster-wide OpenShift configuration the NUMA specs read: ``config.openshift.io/v1``
``Infrastructure/cluster`` and ``Scheduler/cluster``, stating the cluster type of the profile, and
``APIServer/cluster``, whose ``spec.tlsSecurityProfile`` (unset: Intermediate) the operator and
the embedded MachineConfig operator follow.

Upstream's suite tells its cluster types apart from these two objects (``getClusterType``):
``mno-masters-schedulable`` and ``compact`` (three nodes) are a highly available control plane
whose masters are schedulable; anything else is ``mno``. On OpenShift the installer writes them
and ``Scheduler.spec.mastersSchedulable`` is what labels the masters as workers and lifts their
``NoSchedule`` taint; here the profile's nodes are the truth and the objects describe them:

* :func:`control_plane_topology`: ``SingleReplica`` with one control-plane node, else
  ``HighlyAvailable`` (the installer's rule on the control-plane replica count);
* :func:`infrastructure_topology`: ``SingleReplica`` when fewer than two nodes carry the worker
  role (the installer's rule on compute replicas, schedulable masters counting), else
  ``HighlyAvailable``;
* :func:`masters_schedulable`: every control-plane node carries the worker role and no
  ``NoSchedule``/``NoExecute`` taint.

:func:`install` serves both kinds (cluster scoped, status subresource, loose schemas as
upstream's CRDs are for the fields the specs do not read), and ``apiservers``, and creates the
three objects. That alone leaves the platform Kubernetes: upstream's detection
(``detect.PlatformFromEnv``) lists ClusterVersions and finds none served.

Profiles of the OpenShift flavour (an ``openshift`` section naming a version) also get
:func:`install_platform`: ``ClusterVersion/version`` (any item makes the platform OpenShift)
and ``ClusterOperator/openshift-apiserver``, whose first operand version is where upstream reads
the platform version (``OpenshiftVersionFromEnv``), both as an installed cluster reports them
at that version.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nrop.api.metatime import rfc3339
from nrop.api.platform import CLUSTER_OPERATOR
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.controllers.decisions.crds import cluster_crd
from nrop.localcluster.controllers.reconciling import kind_of
from nrop.localcluster.kubelet.decisions.nodestatus import node_labels
from nrop.localcluster.kubelet.machine import NodeSpec

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = [
    "GROUP",
    "apiserver",
    "cluster_operator",
    "cluster_version",
    "control_plane_topology",
    "infrastructure",
    "infrastructure_topology",
    "install",
    "install_platform",
    "masters_schedulable",
    "scheduler",
]

Obj = dict[str, Any]
GROUP = "config.openshift.io"
API_VERSION = f"{GROUP}/v1"
#: The name of every cluster-wide configuration object.
CLUSTER = "cluster"
HIGHLY_AVAILABLE = "HighlyAvailable"
SINGLE_REPLICA = "SingleReplica"
#: The name of the ClusterVersion object.
CLUSTER_VERSION = "version"
_WORKER_ROLE = "node-role.kubernetes.io/worker"
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_FIELD_MANAGER = "cluster-config-operator"


def control_plane_topology(specs: Iterable[NodeSpec]) -> str:
    """``Infrastructure.status.controlPlaneTopology`` of a cluster of these nodes."""
    return SINGLE_REPLICA if sum(1 for s in specs if s.control_plane) == 1 else HIGHLY_AVAILABLE


def infrastructure_topology(specs: Iterable[NodeSpec]) -> str:
    """``Infrastructure.status.infrastructureTopology``: where infrastructure workloads may run."""
    workers = sum(1 for s in specs if _WORKER_ROLE in node_labels(s))
    return SINGLE_REPLICA if workers < 2 else HIGHLY_AVAILABLE


def masters_schedulable(specs: Iterable[NodeSpec]) -> bool:
    """``Scheduler.spec.mastersSchedulable``: the control-plane nodes also take ordinary workloads."""
    masters = [s for s in specs if s.control_plane]
    return bool(masters) and all(
        _WORKER_ROLE in node_labels(s) and not any(t.effect in _BLOCKING_EFFECTS for t in s.taints)
        for s in masters
    )


def infrastructure(specs: Iterable[NodeSpec], api_url: str) -> Obj:
    """``Infrastructure/cluster`` as the installer writes it for a platform ``None`` cluster."""
    nodes = list(specs)
    return {
        "apiVersion": API_VERSION,
        "kind": "Infrastructure",
        "metadata": {"name": CLUSTER},
        "spec": {"cloudConfig": {"name": ""}, "platformSpec": {"type": "None"}},
        "status": {
            "apiServerInternalURI": api_url,
            "apiServerURL": api_url,
            "controlPlaneTopology": control_plane_topology(nodes),
            "cpuPartitioning": "None",
            "etcdDiscoveryDomain": "",
            "infrastructureName": "nrop-embedded",
            "infrastructureTopology": infrastructure_topology(nodes),
            "platform": "None",
            "platformStatus": {"type": "None"},
        },
    }


def scheduler(specs: Iterable[NodeSpec]) -> Obj:
    """``Scheduler/cluster``: the cluster scheduler's configuration, as the installer writes it."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Scheduler",
        "metadata": {"name": CLUSTER},
        "spec": {"mastersSchedulable": masters_schedulable(specs), "policy": {"name": ""}},
        "status": {},
    }


def apiserver() -> Obj:
    """``APIServer/cluster`` as a fresh cluster has it: no TLS security profile (Intermediate)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "APIServer",
        "metadata": {"name": CLUSTER},
        "spec": {"audit": {"profile": "Default"}},
        "status": {},
    }


def _conditions(now: str, available_message: str) -> list[Obj]:
    return [
        {"type": "Available", "status": "True", "lastTransitionTime": now, "message": available_message},
        {"type": "Failing", "status": "False", "lastTransitionTime": now},
        {"type": "Progressing", "status": "False", "lastTransitionTime": now, "message": available_message},
    ]


def cluster_version(version: str, cluster_id: str, now: str) -> Obj:
    """``ClusterVersion/version`` of a cluster installed at ``version`` and done installing."""
    image = f"quay.io/openshift-release-dev/ocp-release:{version}-x86_64"
    minor = ".".join(version.split(".")[:2])
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterVersion",
        "metadata": {"name": CLUSTER_VERSION},
        "spec": {"channel": f"stable-{minor}", "clusterID": cluster_id},
        "status": {
            "availableUpdates": None,
            "conditions": _conditions(now, f"Done applying {version}"),
            "desired": {"image": image, "version": version},
            "history": [
                {
                    "completionTime": now,
                    "image": image,
                    "startedTime": now,
                    "state": "Completed",
                    "verified": False,
                    "version": version,
                }
            ],
            "observedGeneration": 1,
            "versionHash": "",
        },
    }


def cluster_operator(version: str, now: str) -> Obj:
    """``ClusterOperator/openshift-apiserver`` at ``version``: its ``operator`` operand first."""
    conditions = [
        {"type": "Available", "status": "True", "lastTransitionTime": now, "reason": "AsExpected"},
        {"type": "Degraded", "status": "False", "lastTransitionTime": now, "reason": "AsExpected"},
        {"type": "Progressing", "status": "False", "lastTransitionTime": now, "reason": "AsExpected"},
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterOperator",
        "metadata": {"name": CLUSTER_OPERATOR},
        "spec": {},
        "status": {
            "conditions": conditions,
            "versions": [
                {"name": "operator", "version": version},
                {"name": CLUSTER_OPERATOR, "version": version},
            ],
        },
    }


CRDS: tuple[Obj, ...] = (
    cluster_crd(GROUP, "Infrastructure", "infrastructures"),
    cluster_crd(GROUP, "Scheduler", "schedulers"),
    cluster_crd(GROUP, "APIServer", "apiservers"),
)
PLATFORM_CRDS: tuple[Obj, ...] = (
    cluster_crd(GROUP, "ClusterVersion", "clusterversions"),
    cluster_crd(GROUP, "ClusterOperator", "clusteroperators"),
)


def install(server: InProcessAPI, specs: Iterable[NodeSpec], api_url: str) -> None:
    """Serve ``infrastructures``, ``schedulers`` and ``apiservers`` and create their ``cluster`` objects."""
    nodes = list(specs)
    _create_all(
        server,
        CRDS,
        {
            "infrastructures": infrastructure(nodes, api_url),
            "schedulers": scheduler(nodes),
            "apiservers": apiserver(),
        },
    )


def install_platform(server: InProcessAPI, version: str) -> None:
    """Make the cluster an OpenShift one at ``version``: ``clusterversions`` and ``clusteroperators``."""
    now = rfc3339(server.clock.now())
    _create_all(
        server,
        PLATFORM_CRDS,
        {
            "clusterversions": cluster_version(version, str(uuid.uuid4()), now),
            "clusteroperators": cluster_operator(version, now),
        },
    )


def _create_all(server: InProcessAPI, crds: Iterable[Obj], objects: Mapping[str, Obj]) -> None:
    """Serve ``crds``, then create each object (by plural) and write its status."""
    opts = WriteOptions(field_manager=_FIELD_MANAGER)
    crd_kind = kind_of(server, "apiextensions.k8s.io", "customresourcedefinitions")
    for crd in crds:
        server.rest.create(crd_kind, "", copy.deepcopy(crd), opts)
    for plural, given in objects.items():
        kind = kind_of(server, GROUP, plural)
        obj = copy.deepcopy(given)
        status = obj.pop("status")
        created = server.rest.create(kind, "", obj, opts)
        if status:
            created["status"] = status
            server.rest.update(kind, "", obj["metadata"]["name"], created, opts, subresource="status")
