"""The exporter's numaplacement attributes (upstream RTE v0.25 ``ComputeNUMAPlacementPayload``)."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from nrop.api import fingerprint
from nrop.api import numaplacement as np
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.rte.decisions.scan import ScanOptions, container_numa_node, node_resources, scan
from nrop.rte.sysinfo import MachineInfo, NUMANodeInfo

MiB = 1024**2
CPU_TO_NUMA = {cpu: cpu % 2 for cpu in range(8)}  # even CPUs on node 0, odd on node 1
SNN = ScanOptions(node_name="w0", topology_manager_policy="single-numa-node")


def machine() -> MachineInfo:
    return MachineInfo(
        nodes=(
            NUMANodeInfo(0, (0, 2, 4, 6), (10, 20), 0, MappingProxyType({})),
            NUMANodeInfo(1, (1, 3, 5, 7), (20, 10), 0, MappingProxyType({})),
        )
    )


def run(pods: list[PodResources], options: ScanOptions = SNN):  # type: ignore[no-untyped-def]
    m = machine()
    return scan(m, node_resources(m, AllocatableResources(cpu_ids=tuple(range(8)))), pods, options)


@pytest.mark.parametrize(
    "container,expected",
    [
        pytest.param(ContainerResources("c", cpu_ids=(3, 5)), 1, id="first exclusive CPU"),
        pytest.param(
            ContainerResources(
                "c",
                devices=(ContainerDevices("x.io/d", ("d0",), (1,)),),
                memory=(ContainerMemory("memory", MiB, (0,)),),
            ),
            1,
            id="a device before memory",
        ),
        pytest.param(
            ContainerResources(
                "c", devices=(ContainerDevices("x.io/d", (), (1,)), ContainerDevices("x.io/e", ("e0",), None))
            ),
            -1,
            id="no ids or no topology: not placed",
        ),
        pytest.param(
            ContainerResources(
                "c",
                devices=(ContainerDevices("x.io/d", ("d0",), (-1,)),),
                memory=(ContainerMemory("memory", MiB, (0,)),),
            ),
            0,
            id="device without NUMA then memory",
        ),
        pytest.param(ContainerResources("c"), -1, id="shared pool only"),
    ],
)
def test_container_numa_node(container: ContainerResources, expected: int) -> None:
    assert container_numa_node(container, CPU_TO_NUMA) == expected


@pytest.mark.parametrize(
    "container",
    [
        pytest.param(ContainerResources("c", cpu_ids=(99,)), id="unknown CPU"),
        pytest.param(
            ContainerResources("c", memory=(ContainerMemory("memory", MiB, (0, 1)),)),
            id="memory on two nodes",
        ),
        pytest.param(
            ContainerResources("c", devices=(ContainerDevices("x.io/d", ("d0",), (0, 1)),)),
            id="device on two nodes",
        ),
    ],
)
def test_container_numa_node_errors(container: ContainerResources) -> None:
    with pytest.raises(ValueError):
        container_numa_node(container, CPU_TO_NUMA)


PODS = [
    PodResources(
        namespace="ns",
        name="a",
        containers=(ContainerResources("app", cpu_ids=(0, 2)), ContainerResources("helper")),
    ),
    PodResources(namespace="ns", name="b", containers=(ContainerResources("app", cpu_ids=(1,)),)),
    PodResources(
        namespace="ns",
        name="c",
        containers=(
            ContainerResources("app", cpu_ids=(4,)),
            ContainerResources("dev", devices=(ContainerDevices("x.io/d", ("d",), (0,)),)),
        ),
    ),
    PodResources(namespace="other", name="shared", containers=(ContainerResources("app"),)),
]
PLACED = {("ns", "a", "app"): 0, ("ns", "b", "app"): 1, ("ns", "c", "app"): 0, ("ns", "c", "dev"): 0}


def test_scan_publishes_metadata_and_vectors_that_decode_back() -> None:
    result = run(PODS)
    names = [a.name for a in result.attributes]
    assert names == [fingerprint.ATTRIBUTE, fingerprint.ATTRIBUTE_METHOD, np.ATTRIBUTE_METADATA]
    metadata = result.attributes[2].value
    assert metadata == "npv0v001::ve=leb89::cc=4::nn=2::bn=0"
    zone_vectors = {z.numa_id: z.attribute(np.ATTRIBUTE_VECTOR) for z in result.zones}
    assert zone_vectors[0] is None  # the busiest node is implied
    assert zone_vectors[1] is not None
    payload = np.unpack_metadata(metadata)
    payload.vectors = {numa: vec for numa, vec in zone_vectors.items() if vec is not None}
    info = np.decode(payload, [np.ContainerID(*key) for key in PLACED])
    assert {key: info.numa_affinity(np.ContainerID(*key)) for key in PLACED} == PLACED


def test_scan_encodes_the_same_as_the_codec() -> None:
    result = run(PODS)
    expected = np.encode(
        2, [np.ContainerAffinity(np.ContainerID(*key), numa) for key, numa in PLACED.items()]
    )
    assert result.attributes[2].value == expected.pack_metadata()
    assert {
        z.numa_id: z.attribute(np.ATTRIBUTE_VECTOR) for z in result.zones if z.attributes
    } == expected.vectors


def test_empty_node_publishes_zero_containers() -> None:
    result = run([])
    assert result.attributes[2].value == "npv0v001::ve=leb89::cc=0::nn=2::bn=0"
    assert all(not z.attributes for z in result.zones)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(ScanOptions(topology_manager_policy="best-effort"), id="other policy"),
        pytest.param(ScanOptions(topology_manager_policy=""), id="policy unknown"),
        pytest.param(
            ScanOptions(pods_fingerprint=False, topology_manager_policy="single-numa-node"),
            id="fingerprint off",
        ),
    ],
)
def test_not_published(options: ScanOptions) -> None:
    result = run(PODS, options)
    assert np.ATTRIBUTE_METADATA not in [a.name for a in result.attributes]
    assert all(not z.attributes for z in result.zones)


def test_a_container_on_two_nodes_voids_the_encoding() -> None:
    bad = PodResources(
        namespace="ns",
        name="bad",
        containers=(ContainerResources("app", memory=(ContainerMemory("memory", MiB, (0, 1)),)),),
    )
    result = run([*PODS, bad])
    assert np.ATTRIBUTE_METADATA not in [a.name for a in result.attributes]
    assert all(not z.attributes for z in result.zones)
    assert any("ns/bad/app" in w for w in result.warnings)
