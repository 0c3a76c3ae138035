"""Table tests of the topology manager's pure decisions (and e2e_node topology_manager_test.go scenarios)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from nrop.api.deviceplugin import Device
from nrop.localcluster.kubelet.cm import bitmask
from nrop.localcluster.kubelet.cm.devicemanager import DeviceContainer, DeviceManager, DevicePod
from nrop.localcluster.kubelet.cm.hints import TopologyHint
from nrop.localcluster.kubelet.cm.topologymanager import (
    TOPOLOGY_AFFINITY_MESSAGE,
    AdmitResult,
    PolicyOptions,
    ProviderHints,
    TopologyManager,
    TopologyManagerConfigError,
    admit_result_for_error,
    filter_providers_hints,
    merge_permutation,
)


def h(nodes: Sequence[int] | None, preferred: bool) -> TopologyHint:
    return TopologyHint(None if nodes is None else frozenset(nodes), preferred)


ANY_T = h(None, True)
ANY_F = h(None, False)
TAE = "TopologyAffinityError"
UAE = "UnexpectedAdmissionError"


# --- bitmask -----------------------------------------------------------------------------


def test_iterate_bitmasks_order() -> None:
    assert [sorted(m) for m in bitmask.iterate_bitmasks([0, 1, 2])] == [
        [0],
        [1],
        [2],
        [0, 1],
        [0, 2],
        [1, 2],
        [0, 1, 2],
    ]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param({0}, {1}, True, id="same-size-lower-value"),
        pytest.param({1}, {0}, False, id="same-size-higher-value"),
        pytest.param({3}, {0, 1}, True, id="fewer-bits"),
        pytest.param({0, 1}, {0, 1}, False, id="equal"),
    ],
)
def test_is_narrower(first: set[int], second: set[int], expected: bool) -> None:
    assert bitmask.is_narrower(frozenset(first), frozenset(second)) is expected


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        pytest.param({0}, "01", id="node0"),
        pytest.param({1}, "10", id="node1"),
        pytest.param({0, 1}, "11", id="nodes01"),
        pytest.param({2}, "100", id="node2-exact-power"),
        pytest.param({0, 2}, "0101", id="nodes02"),
        pytest.param({3}, "1000", id="node3"),
    ],
)
def test_mask_string_like_go(mask: set[int], expected: str) -> None:
    assert bitmask.mask_string(mask) == expected


# --- filtering and permutation -----------------------------------------------------------


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        pytest.param([None], [[ANY_T]], id="provider-returns-nil"),
        pytest.param([{}], [[ANY_T]], id="provider-returns-empty-map"),
        pytest.param([{"cpu": None}], [[ANY_T]], id="resource-nil-list-no-preference"),
        pytest.param([{"cpu": []}], [[ANY_F]], id="resource-empty-list-cannot-satisfy"),
        pytest.param(
            [{"cpu": [h([0], True)]}, {"a": [h([1], True)], "b": None}],
            [[h([0], True)], [h([1], True)], [ANY_T]],
            id="one-list-per-provider-resource",
        ),
    ],
)
def test_filter_providers_hints(providers: list[ProviderHints], expected: list[list[TopologyHint]]) -> None:
    assert filter_providers_hints(providers) == expected


@pytest.mark.parametrize(
    ("permutation", "expected"),
    [
        pytest.param([h([0], True), h([0], True)], h([0], True), id="same-preferred"),
        pytest.param([h([0], True), h([0, 1], True)], h([0], False), id="different-masks-not-preferred"),
        pytest.param([h([0], True), ANY_T], h([0], True), id="any-does-not-spoil-preference"),
        pytest.param([h([0], True), ANY_F], h([0], False), id="non-preferred-any"),
        pytest.param([h([0], True), h([1], True)], h([], False), id="disjoint-empty"),
        pytest.param([], h([0, 1], True), id="no-hints-default-preferred"),
    ],
)
def test_merge_permutation(permutation: list[TopologyHint], expected: TopologyHint) -> None:
    assert merge_permutation(frozenset({0, 1}), permutation) == expected


# --- worked merges and policies ---------------------------------------------------------

CPU_2_FREE_BOTH = {"cpu": [h([0], True), h([1], True), h([0, 1], False)]}
CPU_ONLY_NUMA1 = {"cpu": [h([1], True), h([0, 1], False)]}
DEV_ONLY_NUMA0 = {"dev": [h([0], True), h([0, 1], False)]}
CPU_10_OF_2X8 = {"cpu": [h([0, 1], True)]}
MEM_BOTH = {"memory": [h([0], True), h([1], True), h([0, 1], False)]}


@pytest.mark.parametrize(
    ("policy", "providers", "expected", "admit"),
    [
        pytest.param("best-effort", [CPU_2_FREE_BOTH], h([0], True), True, id="3.7a-best-effort-tie-lower"),
        pytest.param("restricted", [CPU_2_FREE_BOTH], h([0], True), True, id="3.7a-restricted"),
        pytest.param("single-numa-node", [CPU_2_FREE_BOTH], h([0], True), True, id="3.7a-single"),
        pytest.param(
            "best-effort", [DEV_ONLY_NUMA0, CPU_ONLY_NUMA1], h([0], False), True, id="3.7b-best-effort-admits"
        ),
        pytest.param(
            "restricted", [DEV_ONLY_NUMA0, CPU_ONLY_NUMA1], h([0], False), False, id="3.7b-restricted-rejects"
        ),
        pytest.param(
            "single-numa-node", [DEV_ONLY_NUMA0, CPU_ONLY_NUMA1], ANY_F, False, id="3.7b-single-rejects"
        ),
        pytest.param("best-effort", [None, None, {}], h([0, 1], True), True, id="3.7c-nobody-cares"),
        pytest.param(
            "restricted",
            [CPU_2_FREE_BOTH, {}],
            h([0], True),
            True,
            id="3.7c-memory-empty-map-is-no-preference",
        ),
        pytest.param(
            "single-numa-node", [CPU_10_OF_2X8], ANY_F, False, id="3.7d-10-cpus-single-filter-empties-list"
        ),
        pytest.param("restricted", [CPU_10_OF_2X8], h([0, 1], True), True, id="3.7d-10-cpus-restricted"),
        pytest.param("best-effort", [CPU_10_OF_2X8], h([0, 1], True), True, id="3.7d-10-cpus-best-effort"),
        pytest.param("restricted", [CPU_2_FREE_BOTH, MEM_BOTH], h([0], True), True, id="3.7e-cpu-and-memory"),
        pytest.param("restricted", [{"cpu": []}], h([0, 1], False), False, id="unsatisfiable-restricted"),
        pytest.param("best-effort", [{"cpu": []}], h([0, 1], False), True, id="unsatisfiable-best-effort"),
        pytest.param("single-numa-node", [{"cpu": None}], ANY_T, True, id="single-default-becomes-any"),
        pytest.param("none", [{"cpu": []}], ANY_F, True, id="none-admits-everything"),
    ],
)
def test_policy_merge(
    policy: str, providers: list[ProviderHints], expected: TopologyHint, admit: bool
) -> None:
    assert TopologyManager([0, 1], policy).merge(providers) == (expected, admit)


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        # B = max(min counts) = 2: prefer a 2-node mask over the narrower 1-node ones.
        pytest.param(
            [{"a": [h([0], False), h([0, 1], False)]}, {"b": [h([0, 1], False), h([1, 2], False)]}],
            h([0, 1], False),
            id="non-preferred-climbs-to-best-count",
        ),
        pytest.param(
            [{"a": [h([0, 1, 2], False), h([0, 1], False)]}, {"b": [h([0, 1, 2], False)]}],
            h([0, 1, 2], False),
            id="non-preferred-stays-at-best-count",
        ),
        pytest.param(
            [{"a": [h([0, 1, 2], False), h([0], False)]}, {"b": [h([0, 1, 2], False), h([1], False)]}],
            h([0], False),
            id="non-preferred-above-best-count-narrows",
        ),
        pytest.param(
            [{"a": [h([2], False), h([1], False)]}],
            h([1], False),
            id="non-preferred-equal-counts-narrowest",
        ),
        pytest.param(
            [{"a": [h([0, 1], False), h([2], True)]}],
            h([2], True),
            id="preferred-beats-narrower-non-preferred-order",
        ),
    ],
)
def test_non_preferred_selection(providers: list[ProviderHints], expected: TopologyHint) -> None:
    best, _ = TopologyManager([0, 1, 2, 3], "best-effort").merge(providers)
    assert best == expected


# --- prefer-closest-numa-nodes on 4 NUMA nodes -----------------------------------------

# 0-2 and 1-3 are close (12), every other pair is remote (21).
DISTANCES = {
    0: [10, 21, 12, 21],
    1: [21, 10, 21, 12],
    2: [12, 21, 10, 21],
    3: [21, 12, 21, 10],
}
PAIRS_PREFERRED = {"cpu": [h(list(m), True) for m in bitmask.iterate_bitmasks([0, 1, 2, 3]) if len(m) == 2]}


@pytest.mark.parametrize(
    ("policy", "options", "providers", "expected"),
    [
        pytest.param("best-effort", {}, [PAIRS_PREFERRED], h([0, 1], True), id="narrowest-without-option"),
        pytest.param(
            "best-effort",
            {"prefer-closest-numa-nodes": "true"},
            [PAIRS_PREFERRED],
            h([0, 2], True),
            id="closest-pair",
        ),
        pytest.param(
            "restricted",
            {"prefer-closest-numa-nodes": "True"},
            [{"cpu": [h([1, 3], True), h([0, 2], True)]}],
            h([0, 2], True),
            id="closest-equal-distance-lower-value",
        ),
        pytest.param(
            "best-effort",
            {"prefer-closest-numa-nodes": "1"},
            [{"cpu": [h([0, 1, 2], True), h([1, 3], True)]}],
            h([1, 3], True),
            id="closest-counts-differ-narrowest",
        ),
        # e2e "sub-optimal": {0,2} and {1,3} are used up, only remote pairs remain.
        pytest.param(
            "best-effort",
            {"prefer-closest-numa-nodes": "true"},
            [{"cpu": [h([0, 1], True), h([2, 3], True), h([1, 2], True)]}],
            h([0, 1], True),
            id="suboptimal-remote-pair",
        ),
        pytest.param(
            "single-numa-node",
            {"prefer-closest-numa-nodes": "true"},
            [{"cpu": [h([1], True), h([0], True)]}],
            h([0], True),
            id="single-numa-ignores-closest",
        ),
    ],
)
def test_prefer_closest_numa_nodes(
    policy: str, options: dict[str, str], providers: list[ProviderHints], expected: TopologyHint
) -> None:
    tm = TopologyManager([0, 1, 2, 3], policy, options=options, distances=DISTANCES)
    assert tm.merge(providers)[0] == expected


def test_average_distance_includes_self() -> None:
    tm = TopologyManager(
        [0, 1, 2, 3], "best-effort", options={"prefer-closest-numa-nodes": "true"}, distances=DISTANCES
    )
    assert tm.numa_info.average_distance(frozenset({0, 2})) == 11.0


# --- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "policy", "scope", "options", "message"),
    [
        pytest.param(2, "foo", "container", {}, 'unknown policy: "foo"', id="unknown-policy"),
        pytest.param(2, "restricted", "node", {}, 'unknown scope: "node"', id="unknown-scope"),
        pytest.param(
            2,
            "restricted",
            "pod",
            {"foo": "x"},
            'unknown Topology Manager Policy option: "foo"',
            id="unknown-option",
        ),
        pytest.param(
            2,
            "best-effort",
            "container",
            {"prefer-closest-numa-nodes": "yes"},
            'bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "yes": invalid syntax',
            id="bad-bool",
        ),
        pytest.param(
            2,
            "best-effort",
            "container",
            {"max-allowable-numa-nodes": "ten"},
            'unable to convert policy option to integer "max-allowable-numa-nodes": '
            'strconv.Atoi: parsing "ten": invalid syntax',
            id="bad-int",
        ),
        pytest.param(
            2,
            "best-effort",
            "container",
            {"max-allowable-numa-nodes": "4"},
            'the minimum value of "max-allowable-numa-nodes" should not be less than 8',
            id="max-below-default",
        ),
        pytest.param(
            9,
            "single-numa-node",
            "container",
            {},
            "unsupported on machines with more than 8 NUMA Nodes",
            id="9-nodes",
        ),
        pytest.param(
            17,
            "restricted",
            "container",
            {"max-allowable-numa-nodes": "16"},
            "unsupported on machines with more than 16 NUMA Nodes",
            id="17-nodes-max-16",
        ),
        pytest.param(
            9,
            "bogus",
            "container",
            {},
            "unsupported on machines with more than 8 NUMA Nodes",
            id="limit-before-name",
        ),
    ],
)
def test_config_errors(nodes: int, policy: str, scope: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(TopologyManagerConfigError) as excinfo:
        TopologyManager(range(nodes), policy, scope, options)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("nodes", "policy", "options"),
    [
        pytest.param(9, "none", {}, id="none-any-node-count"),
        pytest.param(12, "best-effort", {"max-allowable-numa-nodes": "16"}, id="max-allowable-16"),
        pytest.param(8, "restricted", {}, id="exactly-8"),
    ],
)
def test_config_accepted(nodes: int, policy: str, options: dict[str, str]) -> None:
    TopologyManager(range(nodes), policy, options=options)


def test_prefer_closest_needs_distances() -> None:
    with pytest.raises(TopologyManagerConfigError, match="cannot discover NUMA topology"):
        TopologyManager([0, 1], "best-effort", options={"prefer-closest-numa-nodes": "true"})


def test_policy_options_defaults() -> None:
    assert PolicyOptions.parse(None) == PolicyOptions(False, 8)
    assert PolicyOptions.parse({"max-allowable-numa-nodes": "+16", "prefer-closest-numa-nodes": "F"}) == (
        PolicyOptions(False, 16)
    )


# --- admission results -------------------------------------------------------------------


class _SMTError(Exception):
    reason = "SMTAlignmentError"


@pytest.mark.parametrize(
    ("error", "reason", "message"),
    [
        pytest.param(None, "", "", id="admitted"),
        pytest.param(
            RuntimeError("not enough cpus available to satisfy request: requested=4, available=2"),
            UAE,
            "Allocate failed due to not enough cpus available to satisfy request: requested=4, available=2, "
            "which is unexpected",
            id="untyped-error-is-unexpected",
        ),
        pytest.param(
            _SMTError("SMT Alignment Error: x"), "SMTAlignmentError", "SMT Alignment Error: x", id="typed"
        ),
    ],
)
def test_admit_result_for_error(error: Exception | None, reason: str, message: str) -> None:
    result = admit_result_for_error(error, {})
    assert (result.admit, result.reason, result.message) == (error is None, reason, message)


# Every policy × scope on the same pod: two app containers whose CPU hints only fit on
# NUMA 1 while the device only sits on NUMA 0 (worked merge 3.7b, per container and per pod).
POLICIES_SCOPES = [
    ("none", "container", True, ""),
    ("none", "pod", True, ""),
    ("best-effort", "container", True, ""),
    ("best-effort", "pod", True, ""),
    ("restricted", "container", False, TAE),
    ("restricted", "pod", False, TAE),
    ("single-numa-node", "container", False, TAE),
    ("single-numa-node", "pod", False, TAE),
]


@pytest.mark.parametrize(
    ("policy", "scope", "admit", "reason"),
    [pytest.param(*row, id=f"{row[0]}-{row[1]}") for row in POLICIES_SCOPES],
)
def test_every_policy_and_scope(policy: str, scope: str, admit: bool, reason: str) -> None:
    tm = TopologyManager([0, 1], policy, scope)
    allocated: list[tuple[str, TopologyHint]] = []
    result = tm.admit(
        ["a", "b"],
        container_hints={"a": [DEV_ONLY_NUMA0, CPU_ONLY_NUMA1], "b": [DEV_ONLY_NUMA0, CPU_ONLY_NUMA1]},
        pod_hints=[DEV_ONLY_NUMA0, CPU_ONLY_NUMA1],
        allocate=lambda name, hint: allocated.append((name, hint)),
    )
    assert (result.admit, result.reason) == (admit, reason)
    if admit:
        assert [name for name, _ in allocated] == ["a", "b"]
        expected = ANY_F if policy == "none" else h([0], False)
        assert dict(result.affinities) == {"a": expected, "b": expected}
    else:
        assert result.message == TOPOLOGY_AFFINITY_MESSAGE
        assert allocated == []


@pytest.mark.parametrize(
    ("policy", "scope", "admit", "allocated"),
    [
        pytest.param(
            "restricted", "container", False, ["init"], id="container-scope-rejects-second-keeps-first"
        ),
        pytest.param("restricted", "pod", True, ["init", "app"], id="pod-scope-merges-once"),
    ],
)
def test_scope_order(policy: str, scope: str, admit: bool, allocated: list[str]) -> None:
    calls: list[str] = []
    hints = {"init": [{"cpu": [h([0], True)]}], "app": [{"cpu": []}]}
    result = TopologyManager([0, 1], policy, scope).admit(
        ["init", "app"],
        container_hints=lambda name: hints[name],
        pod_hints=lambda: [{"cpu": [h([1], True)]}],
        allocate=lambda name, hint: calls.append(name),
    )
    assert result.admit is admit
    assert calls == allocated


def test_allocate_failure_is_unexpected_admission_error() -> None:
    def allocate(name: str, hint: TopologyHint) -> None:
        raise RuntimeError("[memorymanager] failed to get the default NUMA affinity")

    result = TopologyManager([0, 1], "best-effort").admit(
        ["c"], container_hints={"c": [{}]}, allocate=allocate
    )
    assert result == AdmitResult(
        False,
        UAE,
        "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, which is unexpected",
        {"c": h([0, 1], True)},
    )


# --- e2e topology_manager_test.go scenarios as pure decisions ---------------------------
# A 2-NUMA machine, 8 CPUs per NUMA node with one reserved CPU (the last of NUMA 1, like
# reservedSystemCPUs), 4 SR-IOV-like devices per NUMA node.  The CPU provider below gives
# the CPU manager's hints from per-NUMA counts (enough for these scenarios; the real one is the
# CPU manager's), the device provider is the real DeviceManager.

CPUS_PER_NUMA = 8


@dataclass
class _CPUs:
    free: dict[int, int] = field(default_factory=lambda: {0: CPUS_PER_NUMA, 1: CPUS_PER_NUMA - 1})
    held: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    reusable: dict[int, int] = field(default_factory=dict)

    def hints(self, request: int, reusable: dict[int, int] | None = None) -> ProviderHints:
        if request == 0:
            return None
        reuse = reusable or {}
        masks = []
        min_size = 2
        for mask in bitmask.iterate_bitmasks([0, 1]):
            if CPUS_PER_NUMA * len(mask) >= request:
                min_size = min(min_size, len(mask))
            if any(n not in mask and count for n, count in reuse.items()):
                continue
            if sum(self.free[n] + reuse.get(n, 0) for n in mask) >= request:
                masks.append(mask)
        return {"cpu": [TopologyHint(m, len(m) == min_size) for m in masks]}

    def allocate(self, key: tuple[str, str], request: int, hint: TopologyHint, reuse_init: bool) -> None:
        nodes = sorted(hint.numa_nodes) if hint.numa_nodes is not None else [0, 1]
        taken: dict[int, int] = {}
        left = request
        for n in nodes:  # reused init CPUs first, then free ones, lowest NUMA first
            use = min(self.reusable.get(n, 0), left)
            self.reusable[n] = self.reusable.get(n, 0) - use
            taken[n] = taken.get(n, 0) + use
            left -= use
        for n in [*nodes, *[m for m in (0, 1) if m not in nodes]]:
            use = min(self.free[n], left)
            self.free[n] -= use
            taken[n] = taken.get(n, 0) + use
            left -= use
        if left:
            raise RuntimeError(f"not enough cpus available to satisfy request: requested={request}")
        self.held[key] = taken
        if reuse_init:
            for n, count in taken.items():
                self.reusable[n] = self.reusable.get(n, 0) + count


@dataclass(frozen=True)
class _Ctr:
    name: str
    cpus: int
    devices: int = 0
    kind: str = "app"  # "init", "sidecar" or "app"


def _node() -> tuple[_CPUs, DeviceManager]:
    devices = DeviceManager([0, 1])
    devices.set_devices("intel.com/sriov", [Device(f"vf{i}", True, (i // 4,)) for i in range(8)])
    return _CPUs(), devices


def _admit_pod(
    tm: TopologyManager, cpus: _CPUs, devices: DeviceManager, uid: str, ctrs: Sequence[_Ctr]
) -> tuple[AdmitResult, dict[str, dict[int, int]], dict[str, set[str]]]:
    dev_pod = DevicePod(
        uid,
        tuple(
            DeviceContainer(c.name, {"intel.com/sriov": c.devices} if c.devices else {}, c.kind == "sidecar")
            for c in ctrs
            if c.kind != "app"
        ),
        tuple(
            DeviceContainer(c.name, {"intel.com/sriov": c.devices} if c.devices else {})
            for c in ctrs
            if c.kind == "app"
        ),
    )
    by_name = {c.name: c for c in ctrs}
    cpus.reusable = {}

    def container_hints(name: str) -> list[ProviderHints]:
        ctr = dev_pod.container(name)
        assert ctr is not None
        return [devices.get_topology_hints(dev_pod, ctr), cpus.hints(by_name[name].cpus, cpus.reusable)]

    def pod_hints() -> list[ProviderHints]:
        init_max, sidecars, apps = 0, 0, 0
        for c in ctrs:
            if c.kind == "sidecar":
                sidecars += c.cpus
            elif c.kind == "init":
                init_max = max(init_max, sidecars + c.cpus)
            else:
                apps += c.cpus
        return [devices.get_pod_topology_hints(dev_pod), cpus.hints(max(init_max, apps + sidecars))]

    chosen: dict[str, set[str]] = {}

    def allocate(name: str, hint: TopologyHint) -> None:
        ctr = dev_pod.container(name)
        assert ctr is not None
        chosen[name] = set().union(*devices.allocate(dev_pod, ctr, hint).values())
        cpus.allocate((uid, name), by_name[name].cpus, hint, by_name[name].kind == "init")

    result = tm.admit(
        [c.name for c in ctrs], container_hints=container_hints, pod_hints=pod_hints, allocate=allocate
    )
    per_ctr_cpus = {name: taken for (pod, name), taken in cpus.held.items() if pod == uid}
    return result, per_ctr_cpus, chosen


def _numa_of(devices: set[str]) -> set[int]:
    return {int(d[2:]) // 4 for d in devices}


@pytest.mark.parametrize(
    ("scope", "pods", "admitted"),
    [
        pytest.param("container", [[_Ctr("c", 1, 1)]], [True], id="1-core-1-device"),
        pytest.param("container", [[_Ctr("c", 2, 1)]], [True], id="2-cores-1-device"),
        pytest.param("container", [[_Ctr("c", 8, 1)]], [True], id="whole-numa-node-1-device"),
        pytest.param(
            "container", [[_Ctr("c", 2, 1)], [_Ctr("c", 2, 1)]], [True, True], id="2-pods-2-cores-1-device"
        ),
        pytest.param(
            "container",
            [[_Ctr("s", 1, 1, "sidecar"), _Ctr("c", 1, 1)]],
            [True],
            id="sidecar-and-app-1-core-1-device",
        ),
        pytest.param(
            "container", [[_Ctr("a", 2, 1), _Ctr("b", 2, 1)]], [True], id="2-containers-2-cores-1-device"
        ),
        pytest.param(
            "container",
            [[_Ctr("a", 2, 1), _Ctr("b", 2)], [_Ctr("a", 2, 1), _Ctr("b", 2)]],
            [True, True],
            id="2-pods-ctr-with-and-without-device",
        ),
        pytest.param(
            "container",
            [[_Ctr("s1", 1, 1, "sidecar"), _Ctr("s2", 1, 1, "sidecar"), _Ctr("c", 1, 1)]],
            [True],
            id="2-sidecars-and-app",
        ),
        pytest.param("container", [[_Ctr("c", 9, 1)]], [False], id="negative-1-plus-numa-cores"),
        pytest.param(
            "container",
            [[_Ctr("s", 9, 0, "sidecar"), _Ctr("c", 1)]],
            [False],
            id="negative-oversized-sidecar",
        ),
        pytest.param(
            "container",
            [[_Ctr("s1", 1, 0, "sidecar"), _Ctr("s2", 9, 0, "sidecar"), _Ctr("c", 1)]],
            [False],
            id="negative-second-sidecar-oversized",
        ),
        pytest.param(
            "pod",
            [[_Ctr("a", 1, 1), _Ctr("b", 1, 1)], [_Ctr("a", 1, 1), _Ctr("b", 1, 1)]],
            [True, True],
            id="pod-2x2",
        ),
        pytest.param("pod", [[_Ctr("a", 8), _Ctr("b", 1)]], [False], id="pod-total-exceeds-numa"),
        pytest.param(
            "pod",
            [
                [_Ctr("i1", 5, 0, "init"), _Ctr("i2", 1, 0, "init"), _Ctr("a", 1), _Ctr("b", 1)],
                [_Ctr("i1", 5, 0, "init"), _Ctr("i2", 1, 0, "init"), _Ctr("a", 1), _Ctr("b", 1)],
            ],
            [True, True],
            id="pod-init-max-vs-app-sum",
        ),
        pytest.param(
            "pod",
            [[_Ctr("s1", 5, 0, "sidecar"), _Ctr("s2", 5, 0, "sidecar"), _Ctr("c", 1)]],
            [False],
            id="pod-2-sidecars",
        ),
    ],
)
def test_e2e_single_numa_node_alignment(scope: str, pods: list[list[_Ctr]], admitted: list[bool]) -> None:
    tm = TopologyManager([0, 1], "single-numa-node", scope)
    cpus, devices = _node()
    pod_numa: list[set[int]] = []
    for index, ctrs in enumerate(pods):
        result, held, chosen = _admit_pod(tm, cpus, devices, f"pod{index}", ctrs)
        assert result.admit is admitted[index], result
        if not result.admit:
            assert result.reason == TAE
            assert result.message == TOPOLOGY_AFFINITY_MESSAGE
            continue
        nodes: set[int] = set()
        for ctr in ctrs:
            cpu_nodes = {n for n, count in held[ctr.name].items() if count}
            dev_nodes = _numa_of(chosen.get(ctr.name, set()))
            aligned = cpu_nodes | dev_nodes
            assert len(aligned) <= 1, (ctr, held, chosen)
            nodes |= aligned
        if scope == "pod":
            assert len(nodes) == 1
        pod_numa.append(nodes)
    if scope == "pod" and len(pod_numa) == 2 and pods[0][0].kind == "init":
        assert pod_numa[0] != pod_numa[1], "init max demands land the pods on different NUMA nodes"


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted", "single-numa-node"])
@pytest.mark.parametrize(
    "ctrs",
    [
        pytest.param([_Ctr("c", 0)], id="non-guaranteed"),
        pytest.param([_Ctr("c", 1)], id="gu-1-cpu"),
        pytest.param([_Ctr("c", 2)], id="gu-2-cpus"),
        pytest.param([_Ctr("a", 1), _Ctr("b", 1)], id="gu-2-containers"),
    ],
)
def test_e2e_policy_suite_admits(policy: str, ctrs: list[_Ctr]) -> None:
    tm = TopologyManager([0, 1], policy)
    cpus, devices = _node()
    result, held, _ = _admit_pod(tm, cpus, devices, "pod", ctrs)
    assert result.admit
    assert {name: sum(taken.values()) for name, taken in held.items()} == {c.name: c.cpus for c in ctrs}
