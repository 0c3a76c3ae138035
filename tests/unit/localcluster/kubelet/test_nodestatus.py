"""Node capacity/allocatable, node labels and the kubelet's startup validation."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from nrop.localcluster.kubelet.cm import CPUTopology
from nrop.localcluster.kubelet.decisions.nodestatus import (
    KubeletConfigError,
    node_allocatable_reservation,
    node_labels,
    node_resources,
    validate_kubelet_config,
)
from nrop.localcluster.kubelet.machine import (
    DeviceGroup,
    KubeletConfig,
    Machine,
    MemoryReservation,
    NodeSpec,
    NUMANode,
)

GiB = 1024**3
MiB = 1024**2

# Section 6's worked example: 2 NUMA x 32 GiB, 16 CPUs, 4 x 1Gi hugepages on NUMA 0.
MACHINE = Machine(
    topology=CPUTopology.from_scheme("linux-interleaved", sockets=2, cores_per_numa_node=4),
    numa_nodes=(
        NUMANode(0, 32 * GiB, {GiB: 4}, (10, 21)),
        NUMANode(1, 32 * GiB, {}, (21, 10)),
    ),
)
WORKED = KubeletConfig(
    system_reserved={"cpu": "1", "memory": "500Mi"},
    kube_reserved={"memory": "500Mi"},
    eviction_hard={"memory.available": "100Mi"},
)


def node(kubelet: KubeletConfig = WORKED, machine: Machine = MACHINE, **kw: Any) -> NodeSpec:
    return NodeSpec(name="worker-0", machine=machine, kubelet=kubelet, **kw)


def kcfg(**changes: Any) -> KubeletConfig:
    return dataclasses.replace(WORKED, **changes)


BASE_CAPACITY = {
    "cpu": "16",
    "ephemeral-storage": "100Gi",
    "hugepages-1Gi": "4Gi",
    "hugepages-2Mi": "0",
    "memory": "64Gi",
    "pods": "110",
}


@pytest.mark.parametrize(
    ("spec", "capacity", "allocatable"),
    [
        pytest.param(
            node(),
            {},
            {"cpu": "15", "memory": "60340Mi"},  # 64Gi - 1100Mi - 4Gi
            id="worked-example",
        ),
        pytest.param(
            node(kcfg(system_reserved={}, kube_reserved={"cpu": "500m"})),
            {},
            {"cpu": "15500m", "memory": "61340Mi"},  # not rounded; memory 64Gi - 100Mi - 4Gi
            id="fractional-cpu-reservation",
        ),
        pytest.param(
            node(kcfg(reserved_system_cpus="0,8", kube_reserved={"cpu": "500m", "memory": "500Mi"})),
            {},
            {"cpu": "14", "memory": "60340Mi"},  # kubeReserved.cpu dropped, systemReserved.cpu = 2
            id="reserved-system-cpus",
        ),
        pytest.param(
            node(kcfg(system_reserved={}, kube_reserved={}, eviction_hard={"memory.available": "5%"})),
            {},
            # int64(float64(64Gi) * float32(5)/100) = 3435973888 bytes (float32 rounding kept)
            {"cpu": "16", "memory": str(64 * GiB - 3435973888 - 4 * GiB)},
            id="eviction-percentage-float32",
        ),
        pytest.param(
            node(kcfg(eviction_hard={"memory.available": "100Mi", "nodefs.available": "10%"})),
            {},
            {"cpu": "15", "memory": "60340Mi", "ephemeral-storage": "96636764000"},
            id="nodefs-eviction",
        ),
        pytest.param(
            node(kcfg(eviction_hard={"memory.available": "0%", "nodefs.available": "100%"})),
            {},
            {"cpu": "15", "memory": "60440Mi"},
            id="zero-and-hundred-percent-ignored",
        ),
        pytest.param(
            node(
                kcfg(system_reserved={"cpu": "1", "memory": "61Gi", "ephemeral-storage": "1Gi"}, max_pods=250)
            ),
            {"pods": "250"},
            {"cpu": "15", "memory": "0", "ephemeral-storage": "99Gi", "pods": "250"},  # clamped at 0
            id="memory-clamped-pods-storage",
        ),
        pytest.param(
            node(
                machine=dataclasses.replace(
                    MACHINE,
                    devices=(
                        DeviceGroup("example.com/deviceA", {0: 2, 1: 2}, unhealthy=1),
                        DeviceGroup("example.com/deviceC", {None: 2}),
                    ),
                )
            ),
            {"example.com/deviceA": "4", "example.com/deviceC": "2"},
            {"cpu": "15", "memory": "60340Mi", "example.com/deviceA": "3", "example.com/deviceC": "2"},
            id="devices-healthy-only",
        ),
        pytest.param(
            node(
                machine=dataclasses.replace(
                    MACHINE,
                    numa_nodes=(
                        NUMANode(0, 32 * GiB - 7 * 1024, {2 * MiB: 512}, (10, 21)),
                        NUMANode(1, 32 * GiB, {GiB: 1}, (21, 10)),
                    ),
                )
            ),
            {"memory": "67108857Ki", "hugepages-2Mi": "1Gi", "hugepages-1Gi": "1Gi"},
            {"cpu": "15", "memory": "63885305Ki"},  # 67108857Ki - 1100Mi - 2Gi
            id="memory-not-whole-mebibytes",
        ),
    ],
)
def test_node_resources(spec: NodeSpec, capacity: dict[str, str], allocatable: dict[str, str]) -> None:
    result = node_resources(spec)
    expected_capacity = {**BASE_CAPACITY, **capacity}
    assert result.capacity == dict(sorted(expected_capacity.items()))
    expected_allocatable = {**expected_capacity, **allocatable}
    assert result.allocatable == dict(sorted(expected_allocatable.items()))


def test_devices_can_be_left_out() -> None:
    machine = dataclasses.replace(MACHINE, devices=(DeviceGroup("example.com/deviceA", {0: 2}),))
    assert "example.com/deviceA" not in node_resources(node(machine=machine), include_devices=False).capacity


def test_reservation_feeds_the_memory_manager() -> None:
    reservation = node_allocatable_reservation(node())
    assert {k: str(v) for k, v in reservation.items()} == {"cpu": "1", "memory": "1100Mi"}


@pytest.mark.parametrize(
    ("control_plane", "labels", "expected"),
    [
        pytest.param(False, {}, {"node-role.kubernetes.io/worker": ""}, id="worker"),
        pytest.param(
            True,
            {},
            {
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            },
            id="control-plane",
        ),
        pytest.param(
            False,
            {"kubernetes.io/arch": "arm64", "zone": "a"},
            {"node-role.kubernetes.io/worker": "", "kubernetes.io/arch": "arm64", "zone": "a"},
            id="profile-labels-win",
        ),
    ],
)
def test_node_labels(control_plane: bool, labels: dict[str, str], expected: dict[str, str]) -> None:
    base = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": "worker-0",
        "kubernetes.io/os": "linux",
    }
    assert node_labels(node(labels=labels, control_plane=control_plane)) == {**base, **expected}


STATIC = {
    "cpu_manager_policy": "static",
    "memory_manager_policy": "Static",
    "reserved_memory": (MemoryReservation(0, {"memory": 1100 * MiB}),),
    "topology_manager_policy": "single-numa-node",
    "topology_manager_scope": "pod",
}


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        pytest.param(
            {"system_reserved": {"hugepages-1Gi": "1Gi"}},
            "systemReserved",
            'cannot reserve "hugepages-1Gi" resource',
            id="reserve-hugepages",
        ),
        pytest.param(
            {"eviction_hard": {"memory.free": "1Gi"}},
            "evictionHard",
            "unsupported eviction signal memory.free",
            id="eviction-signal",
        ),
        pytest.param(
            {"eviction_hard": {"memory.available": "0"}},
            "evictionHard",
            "eviction threshold memory.available must be positive: 0",
            id="eviction-zero",
        ),
        pytest.param(
            {"eviction_hard": {"nodefs.available": "150%"}},
            "evictionHard",
            "eviction percentage threshold nodefs.available must be <= 100%: 150%",
            id="eviction-over-100",
        ),
        pytest.param(
            {"reserved_system_cpus": "0,16"},
            "reservedSystemCPUs",
            "reserved-cpus: 0,16 is not a subset of online-cpus: 0-15",
            id="reserved-cpus-offline",
        ),
        pytest.param(
            {"reserved_system_cpus": "x"},
            "reservedSystemCPUs",
            "unable to parse reserved-cpus list:",
            id="reserved-cpus-garbage",
        ),
        pytest.param(
            {"system_reserved": {"memory": "100Gi"}},
            "",
            'invalid Node Allocatable configuration. Resource "memory" has a reservation of 103000Mi '
            "but capacity of 64Gi. Expected capacity >= reservation.",
            id="reservation-over-capacity",
        ),
        pytest.param(
            {"cpu_manager_policy": "dynamic"},
            "cpuManagerPolicy",
            'unknown policy: "dynamic"',
            id="cpu-policy",
        ),
        pytest.param(
            {**STATIC, "system_reserved": {"memory": "500Mi"}},
            "kubeReserved",
            "[cpumanager] unable to determine reserved CPU resources for static policy",
            id="static-without-cpu-reservation",
        ),
        pytest.param(
            {**STATIC, "system_reserved": {"cpu": "0", "memory": "500Mi"}},
            "kubeReserved",
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero",
            id="static-zero-cpu-reservation",
        ),
        pytest.param(
            {**STATIC, "cpu_manager_policy_options": {"align-by-socket": "true"}},
            "cpuManagerPolicyOptions",
            'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided',
            id="alpha-option-without-gate",
        ),
        pytest.param(
            {
                **STATIC,
                "cpu_manager_policy_options": {"align-by-socket": "true"},
                "feature_gates": {"CPUManagerPolicyAlphaOptions": True},
            },
            "cpuManagerPolicyOptions",
            "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option",
            id="align-by-socket-single-numa",
        ),
        pytest.param(
            {**STATIC, "cpu_manager_policy_options": {"full-pcpus-only": "yes"}},
            "cpuManagerPolicyOptions",
            'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax',
            id="option-bad-bool",
        ),
        pytest.param(
            {**STATIC, "reserved_memory": (MemoryReservation(0, {"memory": 1000 * MiB}),)},
            "reservedMemory",
            'the total amount "1000Mi" of type "memory" is not equal to the value "1100Mi" determined by '
            "Node Allocatable feature",
            id="reserved-memory-sum",
        ),
        pytest.param(
            {**STATIC, "reserved_memory": (MemoryReservation(2, {"memory": 1100 * MiB}),)},
            "reservedMemory",
            "the reserved memory configuration references a NUMA node 2 that does not exist on this machine",
            id="reserved-memory-numa",
        ),
        pytest.param(
            {
                **STATIC,
                "reserved_memory": (
                    MemoryReservation(0, {"memory": 1100 * MiB}),
                    MemoryReservation(1, {"hugepages-1Gi": GiB}),
                ),
            },
            "reservedMemory",
            'the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0"',
            id="reserved-hugepages",
        ),
        pytest.param(
            {
                **STATIC,
                "reserved_memory": (
                    MemoryReservation(0, {"memory": 1000 * MiB}),
                    MemoryReservation(0, {"memory": 100 * MiB}),
                ),
            },
            "reservedMemory",
            'invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"',
            id="reserved-memory-duplicate",
        ),
        pytest.param(
            {
                **STATIC,
                "system_reserved": {"cpu": "1"},
                "kube_reserved": {},
                "eviction_hard": {},
                "reserved_memory": (),
            },
            "reservedMemory",
            "[memorymanager] you should specify the system reserved memory",
            id="static-memory-without-reservation",
        ),
        pytest.param(
            {"memory_manager_policy": "static"},
            "memoryManagerPolicy",
            'unknown policy: "static"',
            id="memory-policy-case",
        ),
        pytest.param(
            {"topology_manager_policy": "strict"},
            "topologyManagerPolicy",
            'unknown policy: "strict"',
            id="tm-policy",
        ),
        pytest.param(
            {"topology_manager_scope": "node"},
            "topologyManagerScope",
            'unknown scope: "node"',
            id="tm-scope",
        ),
        pytest.param(
            {"topology_manager_policy_options": {"prefer-closest": "true"}},
            "topologyManagerPolicyOptions",
            'unknown Topology Manager Policy option: "prefer-closest"',
            id="tm-option",
        ),
    ],
)
def test_startup_validation_errors(changes: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(KubeletConfigError) as info:
        validate_kubelet_config(node(kcfg(**changes)))
    assert info.value.field == field
    assert info.value.message.startswith(message)


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({}, id="defaults"),
        pytest.param(STATIC, id="static-managers"),
        pytest.param(
            {
                **STATIC,
                "reserved_system_cpus": "0,8",
                "cpu_manager_policy_options": {"full-pcpus-only": "true"},
            },
            id="reserved-system-cpus",
        ),
        pytest.param(
            {
                "topology_manager_policy": "best-effort",
                "topology_manager_policy_options": {"prefer-closest-numa-nodes": "true"},
            },
            id="prefer-closest",
        ),
    ],
)
def test_startup_validation_accepts(changes: dict[str, Any]) -> None:
    validate_kubelet_config(node(kcfg(**changes)))
