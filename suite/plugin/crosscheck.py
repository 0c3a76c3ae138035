"""What the kubelet says against what the NRTs say: evidence that points a failed spec at a component.

A failed spec shows a symptom (a pod Pending, a pod on another node, NRTs that do not add up)
that the scheduler, the exporter or the kubelet could each have caused. Where the suite can
reach the nodes themselves (the embedded cluster: each node's podresources socket and sysfs
are files under its state directory), the failure report adds what the kubelet reports,
checked against the topology manager configuration the node's NRT declares and against the
NRT itself. Each finding names the component it points at:

* ``kubelet``: a pod of the spec's namespace that a kubelet rejected at admission (phase
  ``Failed`` with the kubelet's reason: the scheduler had placed it there, the kubelet could
  not give it what it asked; read from the API, so on any cluster); under ``single-numa-node``, a container (scope ``container``) or a pod (scope
  ``pod``) whose exclusive CPUs, memory blocks and devices are on more than one NUMA node;
  devices (allocatable or assigned) that the kubelet's podresources answer puts on no NUMA node while their
  device plugin advertises one (each plugin's ``ListAndWatch``, on its socket beside the
  kubelet's);
* ``resource-topology-exporter``: an NRT zone whose capacity or allocatable differ from what
  the exporter's own rule (:func:`nrop.rte.decisions.scan.node_resources`) gives for the kubelet's
  allocatable resources and the node's sysfs; and an NRT whose zones' ``available`` or pods
  fingerprint differ from what the exporter's rule (:func:`nrop.rte.decisions.scan.scan`) gives for the
  pods the kubelet lists, in two reads one exporter refresh apart (the NRT trails the kubelet by up to one refresh: only a difference that outlives it
  is reported).

:func:`admission_findings`, :func:`kubelet_findings`, :func:`exporter_findings` and
:func:`accounting_findings` are pure; :func:`embedded_findings`
reads the nodes of an embedded cluster and never raises (a diagnostic must not replace the
failure it documents).
"""

from __future__ import annotations

import logging
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import grpc

from nrop.api import fingerprint
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nrop.api.nrt import NodeResourceTopology, numa_id_from_zone_name, topology_manager_config
from nrop.api.podresources import AllocatableResources, ContainerResources, PodResources
from nrop.rte import podres, sysinfo
from nrop.rte.decisions import scan

__all__ = [
    "EXPORTER",
    "KUBELET",
    "NodeReading",
    "accounting_findings",
    "admission_findings",
    "advertised_topology",
    "embedded_findings",
    "exporter_findings",
    "kubelet_findings",
    "node_root",
]

log = logging.getLogger(__name__)

#: How findings name the component they point at (the first word of each).
KUBELET = "kubelet"
EXPORTER = "resource-topology-exporter"
#: Seconds for one podresources call of the diagnostics.
CALL_TIMEOUT = 5.0


def _numa_of(container: ContainerResources, cpu_to_numa: Mapping[int, int]) -> dict[str, set[int]]:
    """The NUMA nodes of a container's exclusive resources, per kind (``cpu``, memory types, device names)."""
    kinds: dict[str, set[int]] = {}
    for cpu in container.cpu_ids:
        if cpu in cpu_to_numa:
            kinds.setdefault("cpu", set()).add(cpu_to_numa[cpu])
    for block in container.memory:
        if block.size and block.numa_nodes:
            kinds.setdefault(block.type, set()).update(block.numa_nodes)
    for devices in container.devices:
        if devices.numa_nodes:
            kinds.setdefault(devices.resource, set()).update(devices.numa_nodes)
    return kinds


def _describe(kinds: Mapping[str, set[int]]) -> str:
    return "; ".join(
        f"{kind} on {','.join(map(str, sorted(nodes)))}" for kind, nodes in sorted(kinds.items())
    )


def admission_findings(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The pods a kubelet rejected at admission (``TopologyAffinityError``, ``UnexpectedAdmissionError``, ``OutOf<resource>``…)."""
    found = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") != "Failed" or not status.get("reason"):
            continue
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName") or "?"
        found.append(
            f"{KUBELET}: {node} rejected pod {meta.get('namespace')}/{meta.get('name')} at admission, after the "
            f"scheduler had placed it there: {status['reason']}: {status.get('message', '')}"
        )
    return found


def kubelet_findings(
    node: str,
    nrt: NodeResourceTopology,
    pods: Iterable[PodResources],
    allocatable: AllocatableResources,
    cpu_to_numa: Mapping[int, int],
    advertised: Mapping[str, tuple[int, ...]] = MappingProxyType({}),
) -> list[str]:
    """What the kubelet of ``node`` reports that its declared topology manager configuration, or its
    device plugins (``advertised``: device id -> the NUMA nodes its plugin gives it), contradict."""
    found = []
    config = topology_manager_config(nrt)
    if config.policy == "single-numa-node":
        for pod in pods:
            spans = [(c.name, _numa_of(c, cpu_to_numa)) for c in pod.containers]
            spans = [(name, kinds) for name, kinds in spans if kinds]
            where = f"pod {pod.namespace}/{pod.name}"
            if config.scope == "pod":
                union: dict[str, set[int]] = {}
                for _, kinds in spans:
                    for kind, nodes in kinds.items():
                        union.setdefault(kind, set()).update(nodes)
                if len(set().union(*union.values()) if union else set()) > 1:
                    found.append(
                        f"{KUBELET}: {node}: {where} has its exclusive resources on NUMA nodes "
                        f"{_describe(union)}, under topology manager policy single-numa-node, scope pod"
                    )
                continue
            for name, kinds in spans:
                if len(set().union(*kinds.values())) > 1:
                    found.append(
                        f"{KUBELET}: {node}: {where} container {name} has its exclusive resources on "
                        f"NUMA nodes {_describe(kinds)}, under topology manager policy single-numa-node, "
                        "scope container"
                    )
    reported = [("allocatable", allocatable.devices)] + [
        (f"assigned to pod {pod.namespace}/{pod.name} container {c.name}", c.devices)
        for pod in pods
        for c in pod.containers
    ]
    for what, entries in reported:
        lost: dict[str, list[str]] = {}
        for devices in entries:
            if not devices.numa_nodes:
                for device in devices.ids:
                    if advertised.get(device):
                        lost.setdefault(devices.resource, []).append(device)
        for resource, ids in sorted(lost.items()):
            nodes = sorted({n for device in ids for n in advertised[device]})
            found.append(
                f"{KUBELET}: {node}: its podresources answer puts {len(ids)} device(s) of {resource} "
                f"({what}) on no NUMA node, while their device plugin advertises NUMA node(s) "
                f"{','.join(map(str, nodes))}: the kubelet's device manager lost their topology"
            )
    return found


def exporter_findings(node: str, nrt: NodeResourceTopology, expected: scan.NodeResources) -> list[str]:
    """Where the NRT of ``node`` differs from what the exporter's rule gives for the kubelet's resources."""
    found = []
    published: dict[int, dict[str, tuple[int, int]]] = {}
    for zone in nrt.zones:
        try:
            numa = numa_id_from_zone_name(zone.name)
        except ValueError:
            continue
        published[numa] = {r.name: (r.capacity.value(), r.allocatable.value()) for r in zone.resources}
    for numa in sorted(set(expected.capacity) | set(expected.allocatable)):
        zone_name = f"node-{numa}"
        have = published.get(numa)
        if have is None:
            found.append(f"{EXPORTER}: NRT {node} has no zone {zone_name}")
            continue
        capacity = expected.capacity.get(numa, {})
        allocatable = expected.allocatable.get(numa, {})
        for resource in sorted(set(capacity) | set(allocatable)):
            want = (capacity.get(resource, 0), allocatable.get(resource, 0))
            got = have.get(resource, (0, 0))
            if got != want:
                found.append(
                    f"{EXPORTER}: NRT {node} zone {zone_name} {resource}: capacity {got[0]}, allocatable "
                    f"{got[1]}; the node's sysfs and the kubelet's allocatable resources give capacity "
                    f"{want[0]}, allocatable {want[1]}"
                )
    return found


def accounting_findings(
    node: str,
    nrt: NodeResourceTopology,
    machine: sysinfo.MachineInfo,
    resources: scan.NodeResources,
    pods: Sequence[PodResources],
) -> list[str]:
    """Where the NRT's ``available`` figures and pods fingerprint differ from the exporter's rule
    over every pod the kubelet lists (the operator does not turn the exporter's terminal-pods
    filter on, so the exporter counts them all)."""
    method_value = nrt.attribute(fingerprint.ATTRIBUTE_METHOD)
    try:
        method = fingerprint.Method(method_value) if method_value else fingerprint.DEFAULT_METHOD
    except ValueError:
        method = fingerprint.DEFAULT_METHOD
    expected = scan.scan(
        machine, resources, pods, scan.ScanOptions(node_name=node, fingerprint_method=method)
    )
    found = []
    published = {zone.name: {r.name: r.available.value() for r in zone.resources} for zone in nrt.zones}
    for zone in expected.zones:
        have = published.get(zone.name)
        if have is None:
            continue  # exporter_findings says so
        for resource in zone.resources:
            want = resource.available.value()
            if resource.name in have and have[resource.name] != want:
                found.append(
                    f"{EXPORTER}: NRT {node} zone {zone.name} {resource.name}: available {have[resource.name]}; "
                    f"the exclusive allocations the kubelet lists leave {want}"
                )
    published_fp = nrt.pods_fingerprint
    if published_fp is not None and published_fp != expected.fingerprint:
        found.append(
            f"{EXPORTER}: NRT {node} pods fingerprint {published_fp} ({method.value}); the "
            f"{len(pods)} pods the kubelet lists give {expected.fingerprint}"
        )
    return found


@dataclass(frozen=True)
class NodeReading:
    """What one node's sysfs and kubelet give, and the exporter's rule over its allocatable resources."""

    machine: sysinfo.MachineInfo
    pods: list[PodResources]
    allocatable: AllocatableResources
    resources: scan.NodeResources


def node_root(cluster_dir: Path, node: str) -> Path:
    """The root directory of an embedded node (its ``/sys``, ``/var/lib/kubelet``)."""
    return cluster_dir / "nodes" / node


def advertised_topology(plugins_dir: Path, timeout: float = CALL_TIMEOUT) -> dict[str, tuple[int, ...]]:
    """Device id -> NUMA nodes, from the first ``ListAndWatch`` answer of every device plugin socket
    in ``plugins_dir`` (the kubelet's own ``kubelet.sock`` aside); a plugin that does not answer is left out."""
    found: dict[str, tuple[int, ...]] = {}
    for sock in sorted(plugins_dir.iterdir()):
        if sock.name == "kubelet.sock" or not stat.S_ISSOCK(sock.lstat().st_mode):
            continue  # plugins name their sockets freely (numacell: kni.node_numacell00)
        with grpc.insecure_channel(f"unix://{sock}") as channel:
            stream = api_pb2_grpc.DevicePluginStub(channel).ListAndWatch(api_pb2.Empty(), timeout=timeout)
            try:
                first = next(iter(stream))
            except (grpc.RpcError, StopIteration) as exc:
                log.debug("device plugin %s: no ListAndWatch answer: %s", sock, exc)
                continue
            finally:
                stream.cancel()
        for device in first.devices:
            if device.HasField("topology"):
                found[device.ID] = tuple(n.ID for n in device.topology.nodes)
    return found


def _read_node(
    cluster_dir: Path, node: str
) -> tuple[sysinfo.MachineInfo, list[PodResources], AllocatableResources]:
    root = node_root(cluster_dir, node)
    machine = sysinfo.read_machine(root / "sys")
    with podres.PodResourcesClient(
        root / "var/lib/kubelet/pod-resources/kubelet.sock", timeout=CALL_TIMEOUT
    ) as client:
        return machine, client.list_pods(), client.allocatable()


def _nodes(
    cluster_dir: Path, nrts: Sequence[dict[str, Any]]
) -> Iterator[tuple[NodeResourceTopology, NodeReading | Exception]]:
    """Each NRT with what its node's kubelet and sysfs give (or why they could not be read)."""
    for obj in nrts:
        nrt = NodeResourceTopology.from_dict(obj)
        root = node_root(cluster_dir, nrt.name)
        try:
            machine = sysinfo.read_machine(root / "sys")
            with podres.PodResourcesClient(
                root / "var/lib/kubelet/pod-resources/kubelet.sock", timeout=CALL_TIMEOUT
            ) as client:
                pods, allocatable = client.list_pods(), client.allocatable()
        except (OSError, sysinfo.SysinfoError, podres.PodResourcesError) as exc:
            yield nrt, exc
            continue
        yield nrt, NodeReading(machine, pods, allocatable, scan.node_resources(machine, allocatable))


def _accounting(nrt: NodeResourceTopology, reading: NodeReading) -> list[str]:
    return accounting_findings(nrt.name, nrt, reading.machine, reading.resources, reading.pods)


def embedded_findings(
    cluster_dir: Path,
    nrts: Sequence[dict[str, Any]],
    *,
    list_nrts: Callable[[], Sequence[dict[str, Any]]] | None = None,
    refresh_period: float = 0.0,
) -> list[str]:
    """The findings of every node with an NRT of the embedded cluster in ``cluster_dir``.

    The accounting comparison (:func:`accounting_findings`) needs ``list_nrts``: the NRTs may
    trail the kubelet by one refresh, so a difference found with ``nrts`` is looked for again
    ``refresh_period`` plus one second later, in the NRTs ``list_nrts`` lists then, and only
    the differences found both times are reported.
    """
    found: list[str] = []
    first: set[str] = set()
    for nrt, reading in _nodes(cluster_dir, nrts):
        node = nrt.name
        if isinstance(reading, Exception):
            found.append(f"(node {node}: cannot read the kubelet or sysfs: {reading})")
            continue
        advertised = advertised_topology(node_root(cluster_dir, node) / "var/lib/kubelet/device-plugins")
        found += kubelet_findings(
            node, nrt, reading.pods, reading.allocatable, reading.machine.cpu_to_numa(), advertised
        )
        found += exporter_findings(node, nrt, reading.resources)
        if list_nrts is not None:
            first.update(_accounting(nrt, reading))
    if first and list_nrts is not None:
        time.sleep(refresh_period + 1.0)
        again = {
            line
            for nrt, reading in _nodes(cluster_dir, list_nrts())
            if not isinstance(reading, Exception)
            for line in _accounting(nrt, reading)
        }
        found += sorted(first & again)
    return found
