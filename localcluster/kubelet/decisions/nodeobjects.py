"""The API objects an emulated kubelet writes, built as plain dicts from its node's description.

Owns the shapes, so the loop in :mod:`.kubelet` only sends them:

* the ``Node`` it registers (labels, taints, addresses, capacity/allocatable, conditions,
  ``nodeInfo``) and the status it refreshes when device plugins change the capacity;
* its ``coordination.k8s.io/v1`` ``Lease`` in ``kube-node-lease`` (the heartbeat);
* the core/v1 ``Event`` of a rejected pod;
* the ``/configz`` document (``{"kubeletconfig": {...}}`` with upstream field names);
* the per-NUMA-zone summary served at ``nodes/<name>/proxy/numa`` for ``nrop-cluster nodes``.

Pure: times and identities are passed in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from nrop.api.metatime import rfc3339, rfc3339_micro
from nrop.api.quantity import Format, Quantity
from nrop.localcluster.kubelet.decisions import nodestatus
from nrop.localcluster.kubelet.decisions.admission import ZoneSummary
from nrop.localcluster.kubelet.machine import NodeSpec

__all__ = [
    "KUBELET_PORT",
    "KUBELET_VERSION",
    "LEASE_DURATION_SECONDS",
    "NODE_LEASE_NAMESPACE",
    "RUNTIME_HANDLERS",
    "configz",
    "lease_object",
    "node_conditions",
    "node_event",
    "node_object",
    "numa_report",
    "rejection_event",
]

KUBELET_VERSION = "v1.33.0"
KUBELET_PORT = 10250
NODE_LEASE_NAMESPACE = "kube-node-lease"
#: ``nodeLeaseDurationSeconds``; the kubelet renews every quarter of it.
LEASE_DURATION_SECONDS = 40
CONTAINER_RUNTIME = "containerd://1.7.24"
#: The runtime handlers the node's container runtime offers (``status.runtimeHandlers``, the
#: names a RuntimeClass ``handler`` may use); the default one (``""``) is ``runc``.
RUNTIME_HANDLERS = ("runc", "crun")

_PRESSURE = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def node_conditions(ready_since: datetime, heartbeat: datetime) -> list[dict[str, Any]]:
    """The four conditions of a healthy node."""
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": rfc3339(heartbeat),
            "lastTransitionTime": rfc3339(ready_since),
        }
        for kind, reason, message in _PRESSURE
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": rfc3339(heartbeat),
            "lastTransitionTime": rfc3339(ready_since),
        }
    )
    return conditions


def node_object(
    spec: NodeSpec,
    *,
    address: str,
    pod_cidr: str,
    capacity: Mapping[str, str],
    allocatable: Mapping[str, str],
    now: datetime,
) -> dict[str, Any]:
    """The Node as the kubelet registers it."""
    machine_id = _digest("machine", spec.name)[:32]
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": nodestatus.node_labels(spec),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        "status": {
            "capacity": dict(capacity),
            "allocatable": dict(allocatable),
            "conditions": node_conditions(now, now),
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": spec.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
            "runtimeHandlers": [
                {"name": name, "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}}
                for name in RUNTIME_HANDLERS
            ],
            "nodeInfo": {
                "machineID": machine_id,
                "systemUUID": f"{machine_id[:8]}-{machine_id[8:12]}-{machine_id[12:16]}-{machine_id[16:20]}-{machine_id[20:32]}",
                "bootID": _digest("boot", spec.name, rfc3339_micro(now))[:32],
                "kernelVersion": "6.1.0-nrop",
                "osImage": "nrop emulated node",
                "containerRuntimeVersion": CONTAINER_RUNTIME,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": nodestatus.OS,
                "architecture": nodestatus.ARCH,
            },
        },
    }
    if spec.taints:
        node["spec"]["taints"] = [
            {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})} for t in spec.taints
        ]
    return node


def lease_object(node_name: str, node_uid: str, now: datetime) -> dict[str, Any]:
    """The node's heartbeat Lease, owned by its Node (so it goes with it)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node_name,
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}],
        },
        "spec": {
            "holderIdentity": node_name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": rfc3339_micro(now),
        },
    }


def rejection_event(
    pod: Mapping[str, Any], reason: str, message: str, node_name: str, now: datetime, *, unique: str
) -> dict[str, Any]:
    """``kl.rejectPod``'s Warning event; ``unique`` makes the name (``<pod>.<hex>``) unique."""
    meta = pod.get("metadata") or {}
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name')}.{unique}", "namespace": meta.get("namespace")},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": "kubelet", "host": node_name},
        "reportingComponent": "kubelet",
        "reportingInstance": node_name,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def node_event(
    node_name: str, kind: str, reason: str, message: str, now: datetime, *, unique: str
) -> dict[str, Any]:
    """An event a kubelet records on its Node (upstream refers to the node with its name as uid)."""
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{node_name}.{unique}", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": node_name, "uid": node_name},
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": "kubelet", "host": node_name},
        "reportingComponent": "kubelet",
        "reportingInstance": node_name,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def _bytes(value: int) -> str:
    return str(Quantity.from_int(value, Format.BINARY_SI))


def configz(spec: NodeSpec, *, static_pod_path: str = "") -> dict[str, Any]:
    """The kubelet's ``/configz``: its KubeletConfiguration under ``kubeletconfig``."""
    config = spec.kubelet
    kubeletconfig: dict[str, Any] = {
        "enableServer": True,
        "staticPodPath": static_pod_path,
        "port": KUBELET_PORT,
        "cgroupDriver": "systemd",
        "cpuManagerPolicy": config.cpu_manager_policy,
        "cpuManagerPolicyOptions": dict(config.cpu_manager_policy_options),
        "cpuManagerReconcilePeriod": "10s",
        "memoryManagerPolicy": config.memory_manager_policy,
        "reservedMemory": [
            {"numaNode": r.numa_node, "limits": {name: _bytes(v) for name, v in sorted(r.limits.items())}}
            for r in config.reserved_memory
        ],
        "topologyManagerPolicy": config.topology_manager_policy,
        "topologyManagerScope": config.topology_manager_scope,
        "topologyManagerPolicyOptions": dict(config.topology_manager_policy_options),
        "systemReserved": dict(config.system_reserved),
        "kubeReserved": dict(config.kube_reserved),
        "evictionHard": dict(config.eviction_hard),
        "enforceNodeAllocatable": ["pods"],
        "maxPods": config.max_pods,
        "featureGates": dict(config.feature_gates),
        "nodeLeaseDurationSeconds": LEASE_DURATION_SECONDS,
        "nodeStatusUpdateFrequency": "10s",
        "nodeStatusReportFrequency": "5m0s",
        "podResourcesEndpointRequestsLimit": 10,
    }
    if config.reserved_system_cpus:
        kubeletconfig["reservedSystemCPUs"] = config.reserved_system_cpus
    if config.tls_min_version:
        kubeletconfig["tlsMinVersion"] = config.tls_min_version
    if config.tls_cipher_suites:
        kubeletconfig["tlsCipherSuites"] = list(config.tls_cipher_suites)
    return {"kubeletconfig": kubeletconfig}


def numa_report(node_name: str, zones: Iterable[ZoneSummary]) -> dict[str, Any]:
    """``nodes/<name>/proxy/numa``: per NUMA zone, allocatable vs. exclusively allocated."""
    return {"node": node_name, "zones": [asdict(zone) for zone in zones]}
