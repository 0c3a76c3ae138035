"""The failure diagnostics' cross-check of the kubelet and the NRTs (nrop.suite.plugin.crosscheck), as tables."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.nrt import NodeResourceTopology
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.rte import sysinfo
from nrop.rte.decisions import scan
from nrop.suite.plugin import crosscheck

CPU_TO_NUMA = {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
GIB = 2**30


def nrt(
    policy: str | None, scope: str | None, zones: dict[int, dict[str, tuple[int, int]]] | None = None
) -> Any:
    attributes = []
    if policy is not None:
        attributes.append({"name": "topologyManagerPolicy", "value": policy})
    if scope is not None:
        attributes.append({"name": "topologyManagerScope", "value": scope})
    return NodeResourceTopology.from_dict(
        {
            "metadata": {"name": "worker-0"},
            "attributes": attributes,
            "zones": [
                {
                    "name": f"node-{numa}",
                    "type": "Node",
                    "resources": [
                        {"name": name, "capacity": str(c), "allocatable": str(a), "available": str(a)}
                        for name, (c, a) in resources.items()
                    ],
                }
                for numa, resources in (zones or {}).items()
            ],
        }
    )


def container(
    name: str, cpus: tuple[int, ...] = (), memory_numa: tuple[int, ...] = (), dev: Any = None
) -> Any:
    memory = (ContainerMemory("memory", GIB, memory_numa),) if memory_numa else ()
    devices = (dev,) if dev is not None else ()
    return ContainerResources(name, cpus, devices, memory)


def pod(*containers: ContainerResources) -> PodResources:
    return PodResources("p", "ns", tuple(containers))


NOTHING = AllocatableResources()


@pytest.mark.parametrize(
    ("policy", "scope", "pods", "expected"),
    [
        ("single-numa-node", "container", [pod(container("c", (0, 1)))], []),
        (
            "single-numa-node",
            "container",
            [pod(container("c", (3, 4)))],
            ["kubelet: worker-0: pod ns/p container c has its exclusive resources on NUMA nodes cpu on 0,1"],
        ),
        (
            "single-numa-node",
            "container",
            [pod(container("c", (0, 1), memory_numa=(1,)))],
            [
                "kubelet: worker-0: pod ns/p container c has its exclusive resources on NUMA nodes cpu on 0; memory on 1"
            ],
        ),
        (
            "single-numa-node",
            "container",
            [pod(container("c", (0,), dev=ContainerDevices("example.com/dev", ("d1",), (1,))))],
            [
                "kubelet: worker-0: pod ns/p container c has its exclusive resources on NUMA nodes cpu on 0; example.com/dev on 1"
            ],
        ),
        # scope container: two containers each aligned, on different nodes, is allowed
        ("single-numa-node", "container", [pod(container("a", (0,)), container("b", (4,)))], []),
        (
            "single-numa-node",
            "pod",
            [pod(container("a", (0,)), container("b", (4,)))],
            [
                "kubelet: worker-0: pod ns/p has its exclusive resources on NUMA nodes cpu on 0,1, under topology"
            ],
        ),
        ("single-numa-node", "pod", [pod(container("a", (0,)), container("b", (1,), memory_numa=(0,)))], []),
        # shared-pool containers have no exclusive resources: nothing to align
        ("single-numa-node", "pod", [pod(container("a"), container("b", (4,)))], []),
        # other policies allow spanning
        ("best-effort", "container", [pod(container("c", (3, 4)))], []),
        ("restricted", "pod", [pod(container("a", (0,)), container("b", (4,)))], []),
        # no attributes: the scheduler's defaults (policy none)
        (None, None, [pod(container("c", (3, 4)))], []),
    ],
)
def test_kubelet_alignment(
    policy: str | None, scope: str | None, pods: list[PodResources], expected: list[str]
) -> None:
    found = crosscheck.kubelet_findings("worker-0", nrt(policy, scope), pods, NOTHING, CPU_TO_NUMA)
    assert len(found) == len(expected), found
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start), line


@pytest.mark.parametrize(
    ("allocatable_numa", "advertised", "expected"),
    [
        ((0,), {"d1": (0,), "d2": (0,)}, None),
        # the plugin gives none either: a device without topology, as some are
        (None, {}, None),
        (None, {"d9": (1,)}, None),
        (
            None,
            {"d1": (0,), "d2": (0,)},
            "kubelet: worker-0: its podresources answer puts 2 device(s) of example.com/dev (allocatable) on "
            "no NUMA node, while their device plugin advertises NUMA node(s) 0: the kubelet's device manager lost",
        ),
    ],
)
def test_device_topology_lost_by_the_kubelet(
    allocatable_numa: tuple[int, ...] | None, advertised: dict[str, tuple[int, ...]], expected: str | None
) -> None:
    allocatable = AllocatableResources(
        devices=(ContainerDevices("example.com/dev", ("d1", "d2"), allocatable_numa),)
    )
    found = crosscheck.kubelet_findings("worker-0", nrt(None, None), [], allocatable, CPU_TO_NUMA, advertised)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expected), found


EXPECTED = scan.NodeResources(
    capacity={0: {"cpu": 4, "memory": 8 * GIB, "hugepages-2Mi": 4 * 2**21}, 1: {"cpu": 4, "memory": 8 * GIB}},
    allocatable={
        0: {"cpu": 3, "memory": 6 * GIB, "hugepages-2Mi": 4 * 2**21},
        1: {"cpu": 4, "memory": 7 * GIB},
    },
)
ZONES = {
    0: {"cpu": (4, 3), "memory": (8 * GIB, 6 * GIB), "hugepages-2Mi": (4 * 2**21, 4 * 2**21)},
    1: {"cpu": (4, 4), "memory": (8 * GIB, 7 * GIB)},
}


@pytest.mark.parametrize(
    ("zones", "expected"),
    [
        (ZONES, []),
        (
            {**ZONES, 0: {**ZONES[0], "hugepages-2Mi": (4, 4)}},
            [
                "resource-topology-exporter: NRT worker-0 zone node-0 hugepages-2Mi: capacity 4, allocatable 4; "
                "the node's sysfs and the kubelet's allocatable resources give capacity 8388608, allocatable 8388608"
            ],
        ),
        (
            {**ZONES, 1: {"cpu": (4, 4)}},
            ["resource-topology-exporter: NRT worker-0 zone node-1 memory: capacity 0, allocatable 0;"],
        ),
        ({0: ZONES[0]}, ["resource-topology-exporter: NRT worker-0 has no zone node-1"]),
    ],
)
def test_exporter_against_the_kubelet(
    zones: dict[int, dict[str, tuple[int, int]]], expected: list[str]
) -> None:
    found = crosscheck.exporter_findings("worker-0", nrt("single-numa-node", "pod", zones), EXPECTED)
    assert len(found) == len(expected), found
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start), line


def test_assigned_devices_without_topology() -> None:
    lost = ContainerDevices("example.com/dev", ("d1",), None)
    found = crosscheck.kubelet_findings(
        "worker-0", nrt(None, None), [pod(container("c", dev=lost))], NOTHING, CPU_TO_NUMA, {"d1": (1,)}
    )
    assert found == [
        "kubelet: worker-0: its podresources answer puts 1 device(s) of example.com/dev (assigned to pod ns/p "
        "container c) on no NUMA node, while their device plugin advertises NUMA node(s) 1: the kubelet's "
        "device manager lost their topology"
    ]


def _pod(phase: str, reason: str | None = None, node: str | None = "worker-0") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status |= {"reason": reason, "message": "Resources cannot be allocated with Topology locality"}
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": node}, "status": status}


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([_pod("Running"), _pod("Pending", node=None), _pod("Succeeded")], []),
        # failed while running (its containers exited): not an admission
        ([_pod("Failed")], []),
        (
            [_pod("Failed", "TopologyAffinityError")],
            [
                "kubelet: worker-0 rejected pod ns/p at admission, after the scheduler had placed it there: "
                "TopologyAffinityError: Resources cannot be allocated with Topology locality"
            ],
        ),
    ],
)
def test_admission_rejections(pods: list[dict[str, Any]], expected: list[str]) -> None:
    assert crosscheck.admission_findings(pods) == expected


MACHINE = sysinfo.MachineInfo(
    (
        sysinfo.NUMANodeInfo(0, (0, 1, 2, 3), (10, 20), 8 * GIB),
        sysinfo.NUMANodeInfo(1, (4, 5, 6, 7), (20, 10), 8 * GIB),
    )
)
RESOURCES = scan.NodeResources(
    capacity={0: {"cpu": 4, "memory": 8 * GIB}, 1: {"cpu": 4, "memory": 8 * GIB}},
    allocatable={0: {"cpu": 4, "memory": 8 * GIB}, 1: {"cpu": 4, "memory": 8 * GIB}},
)
RUNNING = PodResources("run", "ns", (container("c", (4, 5), memory_numa=(1,)),))
ENDED = PodResources("done", "ns", (container("c", (0,)),))


def published(pods: list[PodResources], *, cpu_on_1: int | None = None, fp: str | None = None) -> Any:
    """The NRT an exporter following its rule would write for ``pods``, with one figure changed."""
    result = scan.scan(MACHINE, RESOURCES, pods, scan.ScanOptions(node_name="worker-0"))
    zones = []
    for zone in result.zones:
        resources = [r.to_dict() for r in zone.resources]
        for r in resources:
            if zone.name == "node-1" and r["name"] == "cpu" and cpu_on_1 is not None:
                r["available"] = str(cpu_on_1)
        zones.append({"name": zone.name, "type": "Node", "resources": resources})
    attributes = [a.to_dict() for a in result.attributes]
    if fp is not None:
        attributes = [
            a if a["name"] != "nodeTopologyPodsFingerprint" else {**a, "value": fp} for a in attributes
        ]
    return NodeResourceTopology.from_dict(
        {"metadata": {"name": "worker-0"}, "zones": zones, "attributes": attributes}
    )


@pytest.mark.parametrize(
    ("nrt_obj", "listed", "expected"),
    [
        (published([RUNNING]), [RUNNING], []),
        (
            published([RUNNING], cpu_on_1=4),
            [RUNNING],
            [
                "resource-topology-exporter: NRT worker-0 zone node-1 cpu: available 4; the exclusive "
                "allocations the kubelet lists leave 2"
            ],
        ),
        (
            published([RUNNING], fp="pfp0v001deadbeef"),
            [RUNNING],
            [
                "resource-topology-exporter: NRT worker-0 pods fingerprint pfp0v001deadbeef "
                "(with-exclusive-resources); the 1 pods the kubelet lists give"
            ],
        ),
        # every pod the kubelet lists counts, ended or not: the operator does not turn the
        # exporter's terminal-pods filter on
        (published([RUNNING, ENDED]), [RUNNING, ENDED], []),
        (
            published([RUNNING]),
            [RUNNING, ENDED],
            [
                "resource-topology-exporter: NRT worker-0 zone node-0 cpu: available 4; the exclusive "
                "allocations the kubelet lists leave 3",
                "resource-topology-exporter: NRT worker-0 pods fingerprint",
            ],
        ),
    ],
)
def test_exporter_accounting(nrt_obj: Any, listed: list[PodResources], expected: list[str]) -> None:
    found = crosscheck.accounting_findings("worker-0", nrt_obj, MACHINE, RESOURCES, listed)
    assert len(found) == len(expected), found
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start), line
