"""Node profiles: the shipped ones load and say what they are; invalid ones are refused with file, path and problem."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from nrop.localcluster import cli
from nrop.localcluster.kubelet.cm import CPUInfo, CPUTopology
from nrop.localcluster.kubelet.machine import DeviceGroup, Taint
from nrop.localcluster.profiles import ProfileError, load_profile, parse_profile, shipped

GiB = 1024**3
MiB = 1024**2
SHIPPED = [
    "best-effort",
    "compact",
    "container-scope",
    "default",
    "devices",
    "empty",
    "fifty",
    "four-numa",
    "mno",
    "mno-masters-schedulable",
    "none",
    "openshift",
    "restricted",
    "smt-aligned",
    "wide-zones",
]
NODE_COUNTS = {"empty": 0, "fifty": 51, "mno": 5, "mno-masters-schedulable": 5}


def test_shipped_profiles_are_listed_with_a_summary() -> None:
    listed = shipped()
    assert sorted(listed) == SHIPPED
    assert all(summary for summary in listed.values())


def test_cli_lists_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["profiles"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_profile_loads(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name
    assert profile.source == f"{name}.yaml"
    nodes = profile.nodes()
    assert len({n.name for n in nodes}) == len(nodes)
    assert len(nodes) == NODE_COUNTS.get(name, 3)


def test_default_profile_shape() -> None:
    control, *workers = load_profile("default").nodes()
    assert control.name == "control-plane" and control.control_plane
    assert control.taints == (Taint("node-role.kubernetes.io/control-plane", "NoSchedule"),)
    assert [w.name for w in workers] == ["worker-0", "worker-1"]
    for worker in workers:
        topo = worker.machine.topology
        assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (44, 22, 2, 2)
        assert topo.details.cpus_in_numa_nodes(0).to_list() == [*range(11), *range(22, 33)]
        assert topo.details.cpus_in_numa_nodes(1).to_list() == [*range(11, 22), *range(33, 44)]
        assert [n.memory_bytes for n in worker.machine.numa_nodes] == [40 * GiB, 40 * GiB]
        assert all(n.hugepages == {2 * MiB: 512, GiB: 2} for n in worker.machine.numa_nodes)
        assert [n.distances for n in worker.machine.numa_nodes] == [(10, 21), (21, 10)]
        k = worker.kubelet
        assert (k.cpu_manager_policy, k.memory_manager_policy) == ("static", "Static")
        assert (k.topology_manager_policy, k.topology_manager_scope) == ("single-numa-node", "pod")
        assert k.reserved_system_cpus == "0,22"
        assert k.cpu_manager_policy_options == {}  # full-pcpus-only lives in smt-aligned
        assert worker.machine.devices == (
            DeviceGroup("example.com/deviceA", {0: 6, 1: 6}),
            DeviceGroup("example.com/deviceB", {0: 4, 1: 4}),
            DeviceGroup("example.com/deviceC", {0: 4}),
        )
        assert not worker.taints and not worker.control_plane


@pytest.mark.parametrize(
    "name", ["container-scope", "restricted", "best-effort", "none", "smt-aligned", "openshift"]
)
def test_variants_keep_the_default_machine(name: str) -> None:
    default, variant = load_profile("default").nodes(), load_profile(name).nodes()
    assert [n.name for n in variant] == [n.name for n in default]
    assert variant[1].machine == default[1].machine
    options = variant[1].kubelet.cpu_manager_policy_options
    assert options == ({"full-pcpus-only": "true"} if name == "smt-aligned" else {})


def test_wide_zones_profile_shape() -> None:
    workers = [n for n in load_profile("wide-zones").nodes() if n.name.startswith("worker")]
    assert len(workers) == 2
    for worker in workers:
        topo = worker.machine.topology
        assert (topo.num_cpus, topo.num_numa_nodes) == (96, 2)
        assert topo.details.cpus_in_numa_nodes(0).to_list() == [*range(24), *range(48, 72)]
        assert worker.kubelet.reserved_system_cpus == "0,48"
        assert worker.kubelet.topology_manager_policy == "single-numa-node"


def test_fifty_profile_shape() -> None:
    control, *workers = load_profile("fifty").nodes()
    assert control.name == "control-plane" and control.control_plane and control.taints
    assert [w.name for w in workers] == [f"worker-{i}" for i in range(50)]
    worker = workers[-1]
    topo = worker.machine.topology
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (8, 4, 2, 2)
    assert topo.details.cpus_in_numa_nodes(1).to_list() == [2, 3, 6, 7]
    assert [n.memory_bytes for n in worker.machine.numa_nodes] == [4 * GiB, 4 * GiB]
    assert all(not n.hugepages for n in worker.machine.numa_nodes)
    k = worker.kubelet
    assert (k.cpu_manager_policy, k.memory_manager_policy) == ("static", "Static")
    assert (k.topology_manager_policy, k.topology_manager_scope) == ("single-numa-node", "pod")
    assert k.reserved_system_cpus == "0,4"


@pytest.mark.parametrize(
    ("name", "policy", "scope", "numa"),
    [
        ("container-scope", "single-numa-node", "container", 2),
        ("four-numa", "single-numa-node", "pod", 4),
        ("restricted", "restricted", "pod", 2),
        ("best-effort", "best-effort", "pod", 2),
        ("none", "none", "pod", 2),
        ("smt-aligned", "single-numa-node", "pod", 2),
        ("devices", "single-numa-node", "pod", 2),
        ("fifty", "single-numa-node", "pod", 2),
    ],
)
def test_variants(name: str, policy: str, scope: str, numa: int) -> None:
    worker = load_profile(name).nodes()[1]
    assert (worker.kubelet.topology_manager_policy, worker.kubelet.topology_manager_scope) == (policy, scope)
    assert worker.machine.topology.num_numa_nodes == numa


def test_devices_profile() -> None:
    worker = load_profile("devices").nodes()[1]
    assert worker.machine.devices == (
        DeviceGroup("example.com/deviceA", {0: 2, 1: 2}),
        DeviceGroup("example.com/deviceC", {None: 2}),
    )


def test_profile_by_path_and_unknown_name(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "summary: x\npools:\n  - {name: n1, machine: {cpus: {coresPerNumaNode: 1}, numaNodes: [{memory: 1Gi}]}}\n"
    )
    profile = load_profile(str(path))
    assert (profile.name, [n.name for n in profile.nodes()]) == ("mine", ["n1"])
    with pytest.raises(ProfileError, match=r"unknown profile 'nope' \(shipped profiles: best-effort, "):
        load_profile("nope")
    path.write_text("pools: [{name: n1}]\n")
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert str(info.value) == f"{path}: pools[0].machine: required"


# Upstream cpumanager policy_test.go ``topoDualSocketHT``, verbatim.
UPSTREAM_DUAL_SOCKET_HT = CPUTopology.from_details(
    {
        0: CPUInfo(numa_node=0, socket=0, core=0),
        1: CPUInfo(numa_node=1, socket=1, core=1),
        2: CPUInfo(numa_node=0, socket=0, core=2),
        3: CPUInfo(numa_node=1, socket=1, core=3),
        4: CPUInfo(numa_node=0, socket=0, core=4),
        5: CPUInfo(numa_node=1, socket=1, core=5),
        6: CPUInfo(numa_node=0, socket=0, core=0),
        7: CPUInfo(numa_node=1, socket=1, core=1),
        8: CPUInfo(numa_node=0, socket=0, core=2),
        9: CPUInfo(numa_node=1, socket=1, core=3),
        10: CPUInfo(numa_node=0, socket=0, core=4),
        11: CPUInfo(numa_node=1, socket=1, core=5),
    }
)

TABLE_PROFILE = """
summary: upstream topoDualSocketHT
pools:
  - name: dual-socket-ht
    machine:
      cpus:
        table:   # cpu: [core, socket, numaNode]
          0: [0, 0, 0]
          1: [1, 1, 1]
          2: [2, 0, 0]
          3: [3, 1, 1]
          4: [4, 0, 0]
          5: [5, 1, 1]
          6: {core: 0, socket: 0, numaNode: 0}
          7: {core: 1, socket: 1, numaNode: 1}
          8: [2, 0, 0]
          9: [3, 1, 1]
          10: [4, 0, 0]
          11: [5, 1, 1]
      numaNodes: [{memory: 8Gi}, {memory: 8Gi}]
"""


def test_cpu_table_reproduces_an_upstream_topology() -> None:
    (spec,) = parse_profile(TABLE_PROFILE, "table.yaml").nodes()
    topo = spec.machine.topology
    assert topo == UPSTREAM_DUAL_SOCKET_HT
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (12, 6, 2, 2)


# -- invalid profiles ----------------------------------------------------------------------------


def _default() -> dict[str, Any]:
    return json.loads(json.dumps(load_profile("default").raw))  # no shared anchors: every edit is local


def _worker(data: dict[str, Any]) -> dict[str, Any]:
    return data["pools"][1]


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return edit


W = ["pools", 1]
WM = [*W, "machine"]
WK = [*W, "kubelet"]
KUBELET = "the kubelet of pool 'worker' would not start: "


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(
            _set([*WM, "numaNodes", 0, "hugepages", "1Gi"], -1),
            "pools[1].machine.numaNodes[0].hugepages.1Gi: must be a non-negative integer",
            id="negative-hugepages",
        ),
        pytest.param(
            _set([*WM, "numaNodes", 0, "hugepages", "4Mi"], 2),
            "pools[1].machine.numaNodes[0].hugepages.4Mi: unsupported hugepage size (supported: 2Mi, 1Gi)",
            id="hugepage-size",
        ),
        pytest.param(
            _set([*WM, "numaNodes", 1, "memory"], "2Gi"),
            "pools[1].machine.numaNodes[1].memory: 2Gi is less than the 3Gi of hugepages on this NUMA node",
            id="hugepages-exceed-memory",
        ),
        pytest.param(
            _set([*WM, "numaNodes", 1, "memory"], "16GB"),
            "pools[1].machine.numaNodes[1].memory: not a quantity: quantities must match the regular expression",
            id="memory-not-a-quantity",
        ),
        pytest.param(
            _set([*WM, "numaNodes", 1, "memory"], "1000"),
            "pools[1].machine.numaNodes[1].memory: must be a multiple of 1Ki (meminfo counts kB)",
            id="memory-not-kib",
        ),
        pytest.param(
            _drop([*WM, "numaNodes", 1]),
            "pools[1].machine.numaNodes: 1 entries, but the CPUs are on NUMA nodes [0, 1]: "
            "list one entry per NUMA node, in id order from 0",
            id="numa-count",
        ),
        pytest.param(
            _set([*WM, "numaNodes", 0, "distances"], [10, 21, 21]),
            "pools[1].machine.numaNodes[0].distances: must list 2 distances, one per NUMA node",
            id="distances-length",
        ),
        pytest.param(
            _set([*WM, "numaNodes", 1, "distances"], [21, 12]),
            "pools[1].machine.numaNodes[1].distances[1]: the distance of a NUMA node to itself must be 10",
            id="distances-self",
        ),
        pytest.param(
            _set([*WM, "cpus", "cores"], 8),
            "pools[1].machine.cpus.cores: unknown field (known: numbering, sockets, numaNodesPerSocket, "
            "coresPerNumaNode, threadsPerCore, table)",
            id="unknown-cpu-field",
        ),
        pytest.param(
            _set([*WM, "cpus", "numbering"], "linux-random"),
            "pools[1].machine.cpus.numbering: must be one of linux-interleaved, linux-contiguous, not 'linux-random'",
            id="numbering",
        ),
        pytest.param(
            _set([*WM, "cpus", "threadsPerCore"], 0),
            "pools[1].machine.cpus.threadsPerCore: must be a positive integer",
            id="zero-threads",
        ),
        pytest.param(
            _set([*WM, "cpus", "table"], {0: [0, 0, 0]}),
            "pools[1].machine.cpus: table excludes the scheme fields (coresPerNumaNode, numaNodesPerSocket, "
            "numbering, sockets, threadsPerCore given)",
            id="table-and-scheme",
        ),
        pytest.param(
            _set([*WM, "cpus"], {"table": {0: [0, 0, 0], 1: [0, 1, 0]}}),
            "pools[1].machine.cpus.table: NUMA node 0 spans sockets [0, 1]; a NUMA node lies in one socket",
            id="table-numa-across-sockets",
        ),
        pytest.param(
            _set([*WM, "cpus"], {"table": {0: [0, 0]}}),
            "pools[1].machine.cpus.table.0: must be [core, socket, numaNode] or {core, socket, numaNode}",
            id="table-row",
        ),
        pytest.param(
            _set([*WM, "devices"], [{"resource": "example.com/deviceA", "perNumaNode": {2: 1}}]),
            "pools[1].machine.devices[0].perNumaNode.2: no such NUMA node (the machine has 2)",
            id="device-numa",
        ),
        pytest.param(
            _set([*WM, "devices"], [{"resource": "deviceA", "perNumaNode": 1}]),
            "pools[1].machine.devices[0].resource: 'deviceA' is not an extended resource name (domain/name)",
            id="device-name",
        ),
        pytest.param(
            _set([*WM, "devices"], [{"resource": "example.com/d", "perNumaNode": 1, "unhealthy": 3}]),
            "pools[1].machine.devices[0].unhealthy: 3 unhealthy of only 2 devices",
            id="device-unhealthy",
        ),
        pytest.param(
            _set([*W, "name"], "worker"),
            "pools[1]: give exactly one of name (a single node) or namePrefix (nodes <prefix>-0, -1, ...)",
            id="name-and-prefix",
        ),
        pytest.param(
            _set([*W, "namePrefix"], "Worker"),
            "pools[1].namePrefix: 'Worker-0' is not a valid node name (a lowercase DNS-1123 subdomain)",
            id="node-name",
        ),
        pytest.param(
            _set(["pools", 0, "name"], "worker-1"),
            "pools[1]: node name 'worker-1' is already used by pools[0]",
            id="duplicate-node",
        ),
        pytest.param(
            _set(["pools", 0, "taints", 0, "effect"], "NoWay"),
            "pools[0].taints[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute, not 'NoWay'",
            id="taint-effect",
        ),
        pytest.param(
            _set([*W, "labels"], {"zone": "a b"}),
            "pools[1].labels.zone: 'a b' is not a valid label value",
            id="label-value",
        ),
        pytest.param(
            _set([*W, "count"], -1),
            "pools[1].count: must be a non-negative integer",
            id="negative-count",
        ),
        pytest.param(
            _set(["pool"], []),
            "pool: unknown field (known: summary, pools, openshift, machineConfig)",
            id="unknown-top-field",
        ),
        pytest.param(
            _set(["pools"], {"worker": {}}),
            "pools: must be a list",
            id="pools-not-a-list",
        ),
        pytest.param(
            _set([*WK, "cpuManagerPolicyOption"], {}),
            "pools[1].kubelet.cpuManagerPolicyOption: unknown field (known: cpuManagerPolicy, ",
            id="unknown-kubelet-field",
        ),
        pytest.param(
            _set([*WK, "reservedMemory", 0, "limits", "memory"], "1000Mi"),
            "pools[1].kubelet.reservedMemory: "
            + KUBELET
            + 'the total amount "1000Mi" of type "memory" is not '
            'equal to the value "1100Mi" determined by Node Allocatable feature',
            id="reserved-memory-sum",
        ),
        pytest.param(
            _set([*WK, "reservedMemory", 0, "limits", "hugepages-1Gi"], "1Gi"),
            "pools[1].kubelet.reservedMemory: "
            + KUBELET
            + 'the total amount "1Gi" of type "hugepages-1Gi" is not '
            'equal to the value "0" determined by Node Allocatable feature',
            id="reserved-hugepages",
        ),
        pytest.param(
            _set([*WK, "reservedSystemCPUs"], "0,64"),
            "pools[1].kubelet.reservedSystemCPUs: "
            + KUBELET
            + "reserved-cpus: 0,64 is not a subset of online-cpus: 0-43",
            id="reserved-cpus-outside-machine",
        ),
        pytest.param(
            _set([*WK, "systemReserved", "hugepages-2Mi"], "1Gi"),
            "pools[1].kubelet.systemReserved: " + KUBELET + 'cannot reserve "hugepages-2Mi" resource',
            id="reserve-hugepages",
        ),
        pytest.param(
            _set([*WK, "cpuManagerPolicyOptions"], {"distribute-cpus-across-cores": True}),
            "pools[1].kubelet.cpuManagerPolicyOptions: "
            + KUBELET
            + "CPU Manager Policy Alpha-level Options not "
            'enabled, but option "distribute-cpus-across-cores" provided',
            id="alpha-option",
        ),
        pytest.param(
            _set([*WK, "featureGates"], {"CPUManagerPolicyAlphaOptions": True}),
            None,
            id="gate-alone-is-fine",
        ),
        pytest.param(
            _set([*WK, "topologyManagerScope"], "node"),
            "pools[1].kubelet.topologyManagerScope: " + KUBELET + 'unknown scope: "node"',
            id="tm-scope",
        ),
        pytest.param(
            _set([*WK, "topologyManagerPolicyOptions"], {"max-allowable-numa-nodes": "4"}),
            "pools[1].kubelet.topologyManagerPolicyOptions: "
            + KUBELET
            + 'the minimum value of "max-allowable-numa-nodes" '
            "should not be less than 8",
            id="tm-option",
        ),
        pytest.param(
            _set(["pools", 0, "kubelet"], {"systemReserved": {"memory": "40Gi"}}),
            "pools[0].kubelet: the kubelet of pool 'control-plane' would not start: invalid Node Allocatable "
            'configuration. Resource "memory" has a reservation of 41060Mi but capacity of 8Gi. '
            "Expected capacity >= reservation.",
            id="reservation-over-capacity",
        ),
    ],
)
def test_invalid_profiles(edit: Callable[[dict[str, Any]], None], message: str | None) -> None:
    data = _default()
    edit(data)
    text = yaml.safe_dump(data)
    if message is None:
        parse_profile(text, "bad.yaml")
        return
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "bad.yaml")
    assert str(info.value).startswith(f"bad.yaml: {message}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("pools: [", "bad.yaml: not valid YAML: ", id="yaml"),
        pytest.param("- a\n- b\n", "bad.yaml: a profile must be a mapping", id="not-a-mapping"),
        pytest.param(
            "pools: [{namePrefix: w, count: 0}]",
            "bad.yaml: pools[0].machine: required",
            id="machine-required",
        ),
    ],
)
def test_unparsable_profiles(text: str, message: str) -> None:
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "bad.yaml")
    assert str(info.value).startswith(message)


def test_extension_fields_are_ignored() -> None:
    profile = parse_profile("x-anything: {a: 1}\nsummary: s\npools: []\n", "ok.yaml")
    assert (profile.summary, profile.nodes()) == ("s", [])


def test_readme_example_is_a_valid_profile() -> None:
    readme = (Path(__file__).parents[4] / "localcluster/profiles/README.md").read_text()
    example = readme.split("## Example", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    nodes = parse_profile(example, "example.yaml").nodes()
    assert [n.name for n in nodes] == ["control-plane", "worker-0"]
    assert nodes[1].labels == {"example.com/pool": "numa"}


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        pytest.param(None, None, id="kubernetes"),
        pytest.param({"version": "4.22.0"}, "4.22.0", id="openshift"),
        pytest.param({}, "bad.yaml: openshift.version: is required", id="no-version"),
        pytest.param({"version": 4.22}, "bad.yaml: openshift.version: must be an OpenShift version such as 4.22.0, not '4.22'", id="float"),
        pytest.param({"version": "1.33.0"}, "bad.yaml: openshift.version: must be an OpenShift version", id="kubernetes-version"),
        pytest.param({"version": "4.22.0", "channel": "x"}, "bad.yaml: openshift.channel: unknown field (known: version)", id="unknown-field"),
        pytest.param("4.22.0", "bad.yaml: openshift: must be a mapping", id="not-a-mapping"),
    ],
)  # fmt: skip
def test_openshift_flavour(section: Any, expected: str | None) -> None:
    data = _default()
    if section is not None:
        data["openshift"] = section
    text = yaml.safe_dump(data)
    if expected is None or not expected.startswith("bad.yaml"):
        assert parse_profile(text, "bad.yaml").openshift_version == expected
        return
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "bad.yaml")
    assert str(info.value).startswith(expected)


def test_only_the_openshift_profile_is_of_the_openshift_flavour() -> None:
    assert [name for name in SHIPPED if load_profile(name).openshift_version] == ["openshift"]
    assert load_profile("openshift").openshift_version == "4.22.0"


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        pytest.param(None, None, id="absent"),
        pytest.param({}, None, id="empty"),
        pytest.param({"rebootSeconds": 15}, 15.0, id="int"),
        pytest.param({"rebootSeconds": 0.5}, 0.5, id="float"),
        pytest.param({"rebootSeconds": 0}, "bad.yaml: machineConfig.rebootSeconds: must be a number of seconds above zero, not 0", id="zero"),
        pytest.param({"rebootSeconds": "15s"}, "bad.yaml: machineConfig.rebootSeconds: must be a number of seconds above zero, not '15s'", id="string"),
        pytest.param({"rebootSeconds": True}, "bad.yaml: machineConfig.rebootSeconds: must be a number", id="bool"),
        pytest.param({"maxUnavailable": 2}, "bad.yaml: machineConfig.maxUnavailable: unknown field (known: rebootSeconds)", id="unknown-field"),
    ],
)  # fmt: skip
def test_machine_config_reboot_seconds(section: Any, expected: float | str | None) -> None:
    data = _default()
    if section is not None:
        data["machineConfig"] = section
    text = yaml.safe_dump(data)
    if not isinstance(expected, str):
        assert parse_profile(text, "bad.yaml").reboot_seconds == expected
        return
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "bad.yaml")
    assert str(info.value).startswith(expected)


def test_the_mno_profile_reboots_nodes_for_longer_than_upstreams_pool_poll() -> None:
    # 88383 polls the pools every 20 s, first after 20 s: each pool of two or more nodes stays
    # Updating longer than that.
    assert [name for name in SHIPPED if load_profile(name).reboot_seconds] == ["mno"]
    assert (load_profile("mno").reboot_seconds or 0) * 2 > 20
