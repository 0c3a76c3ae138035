"""InterPodAffinity: upstream's filtering_test.go and scoring_test.go cases, args, term parsing, requeueing.

The tables port a representative set of kube-scheduler v1.33's cases (names kept close to
upstream's); the last tests run a pod through the profile, the queue and the scheduler's
event handlers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from nrop.api.clientconfig import ClientConfig
from nrop.sched.config import configuration as config
from nrop.sched.errors import ConfigError
from nrop.sched.framework import registry
from nrop.sched.framework.cycle import FRAMEWORK_KEY, CycleView
from nrop.sched.framework.interface import (
    ActionType,
    ClusterEvent,
    CycleState,
    NodeInfo,
    PodAffinityTerms,
    PodInfo,
    Status,
)
from nrop.sched.framework.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
    InterPodAffinityArgs,
    PreFilterState,
)
from nrop.sched.kubeclient import KubeClient
from nrop.sched.main import default_configuration
from nrop.sched.scheduler import Scheduler

Obj = dict[str, Any]

AFFINITY = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
OK = Status.success()
SKIP = Status.skip()
_ABSENT = object()

# ------------------------------------------------------------------------------ builders


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def term(
    key: str,
    op: str,
    *values: str,
    topology: str = "",
    namespaces: list[str] | None = None,
    ns_selector: Any = _ABSENT,
) -> Obj:
    """A ``PodAffinityTerm`` with one match expression (upstream's ``st.PodAffinityIn`` and friends)."""
    expr: Obj = {"key": key, "operator": op}
    if values:
        expr["values"] = list(values)
    body: Obj = {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology}
    if namespaces is not None:
        body["namespaces"] = namespaces
    if ns_selector is not _ABSENT:
        body["namespaceSelector"] = ns_selector
    return body


def weighted(weight: int, t: Obj) -> Obj:
    return {"weight": weight, "podAffinityTerm": t}


def pod(
    name: str = "p",
    *,
    ns: str = "",
    on: str = "",
    labels: dict[str, str] | None = None,
    affinity: list[Obj] | None = None,
    anti: list[Obj] | None = None,
    preferred: list[Obj] | None = None,
    preferred_anti: list[Obj] | None = None,
) -> Obj:
    spec: Obj = {"containers": [{"name": "c"}]}
    if on:
        spec["nodeName"] = on
    pod_affinity: Obj = {}
    pod_anti: Obj = {}
    if affinity is not None:
        pod_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = affinity
    if preferred is not None:
        pod_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if anti is not None:
        pod_anti["requiredDuringSchedulingIgnoredDuringExecution"] = anti
    if preferred_anti is not None:
        pod_anti["preferredDuringSchedulingIgnoredDuringExecution"] = preferred_anti
    if pod_affinity or pod_anti:
        spec["affinity"] = {
            **({"podAffinity": pod_affinity} if pod_affinity else {}),
            **({"podAntiAffinity": pod_anti} if pod_anti else {}),
        }
    meta: Obj = {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels or {}}
    return {"metadata": meta, "spec": spec}


def infos(nodes: list[Obj], pods: list[Obj] | None = None) -> list[NodeInfo]:
    """The snapshot: pods bound to a node that is not listed are left out, as upstream's NewSnapshot."""
    by_name = {n["metadata"]["name"]: NodeInfo.of(n) for n in nodes}
    for p in pods or []:
        target = by_name.get(p["spec"].get("nodeName", ""))
        if target is not None:
            target.add_pod(PodInfo.of(p))
    return list(by_name.values())


def cycle(nodes: list[NodeInfo]) -> CycleState:
    """A cycle state holding the snapshot, as the runtime writes it before PreFilter."""
    state = CycleState()
    view = CycleView(
        nodes,
        lambda *_: Status.success(),
        lambda *_: Status.success(),
        lambda *_: Status.success(),
        random.Random(0),
    )
    state.write(FRAMEWORK_KEY, view)
    return state


class Namespaces:
    """The handle's namespace lister, over fixed Namespace objects."""

    def __init__(self, labels: dict[str, dict[str, str]]) -> None:
        self._items = {name: {"metadata": {"name": name, "labels": lbl}} for name, lbl in labels.items()}

    def get_namespace(self, name: str) -> Obj | None:
        return self._items.get(name)

    def list_namespaces(self) -> list[Obj]:
        return list(self._items.values())


TEAM1, TEAM2 = {"team": "team1"}, {"team": "team2"}
#: Upstream's ``namespaces`` fixture of scoring_test.go.
NAMESPACES = Namespaces(
    {"subteam1.team1": TEAM1, "subteam2.team1": TEAM1, "subteam1.team2": TEAM2, "subteam2.team2": TEAM2}
)
TEAM1_SELECTOR = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}


def plugin(args: InterPodAffinityArgs | None = None, namespaces: Namespaces = NAMESPACES) -> InterPodAffinity:
    return InterPodAffinity(args, namespaces)  # type: ignore[arg-type]


def run_filters(
    incoming: Obj, nodes: list[Obj], pods: list[Obj], namespaces: Namespaces = NAMESPACES
) -> tuple[Status, list[Status]]:
    """PreFilter, then Filter on each node (none when PreFilter did not succeed)."""
    snapshot = infos(nodes, pods)
    state = cycle(snapshot)
    p = plugin(namespaces=namespaces)
    status = p.pre_filter(state, incoming)
    if not status.ok:
        return status, []
    return status, [p.filter(state, incoming, n) for n in snapshot]


# ------------------------------------------------------------------------------ filtering: one node

SECURITYSCAN = {"service": "securityscan"}
S1_SECURITY = {"security": "S1"}
NODE1 = node("node1", region="r1", zone="z11")
EXISTING_POD = pod("existing", on="node1", labels=SECURITYSCAN)
BAD_VALUE = (
    'values[0][service]: Invalid value: "{{.bad-value.}}": a valid label must be an empty string or consist '
    "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

SINGLE_NODE = {
    "no required pod affinity, no existing pod: PreFilter skips": (
        pod(), [], SKIP, None,
    ),
    "In operator matching the existing pod": (
        pod(labels=S1_SECURITY, affinity=[term("service", "In", "securityscan", "value2", topology="region")]),
        [EXISTING_POD], OK, OK,
    ),
    "NotIn operator matching the existing pod": (
        pod(labels=S1_SECURITY, affinity=[term("service", "NotIn", "securityscan3", "value3", topology="region")]),
        [EXISTING_POD], OK, OK,
    ),
    "the existing pod is in another namespace than the term names": (
        pod(labels=S1_SECURITY,
            affinity=[term("service", "In", "securityscan", "value2", namespaces=["DiffNameSpace"])]),
        [pod("existing", ns="ns", on="node1", labels=SECURITYSCAN)], OK, AFFINITY,
    ),
    "label selector not matching the existing pod": (
        pod(labels=SECURITYSCAN, affinity=[term("service", "In", "antivirusscan", "value2")]),
        [EXISTING_POD], OK, AFFINITY,
    ),
    "terms are ANDed: both match the existing pod": (
        pod(labels=S1_SECURITY, affinity=[
            {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"},
                                                    {"key": "wrongkey", "operator": "DoesNotExist"}]},
             "topologyKey": "region"},
            {"labelSelector": {"matchExpressions": [
                {"key": "service", "operator": "In", "values": ["securityscan"]},
                {"key": "service", "operator": "NotIn", "values": ["WrongValue"]}]},
             "topologyKey": "region"},
        ]),
        [EXISTING_POD], OK, OK,
    ),
    "terms are ANDed: one does not match": (
        pod(labels=S1_SECURITY, affinity=[
            term("service", "Exists", topology="region"),
            term("service", "In", "securityscan2", topology="region"),
        ]),
        [EXISTING_POD], OK, AFFINITY,
    ),
    "affinity and anti-affinity both satisfied": (
        pod(labels=S1_SECURITY,
            affinity=[term("service", "In", "securityscan", "value2", topology="region")],
            anti=[term("service", "In", "antivirusscan", "value2", topology="node")]),
        [EXISTING_POD], OK, OK,
    ),
    "affinity, anti-affinity and the existing pod's anti-affinity (symmetry) satisfied": (
        pod(labels=S1_SECURITY,
            affinity=[term("service", "In", "securityscan", "value2", topology="region")],
            anti=[term("service", "In", "antivirusscan", "value2", topology="node")]),
        [pod("existing", on="node1", labels=SECURITYSCAN,
             anti=[term("service", "In", "antivirusscan", "value2", topology="node")])],
        OK, OK,
    ),
    "affinity satisfied, anti-affinity not": (
        pod(labels=S1_SECURITY,
            affinity=[term("service", "In", "securityscan", "value2", topology="region")],
            anti=[term("service", "In", "securityscan", "value2", topology="zone")]),
        [EXISTING_POD], OK, ANTI,
    ),
    "the existing pod's anti-affinity (symmetry) not satisfied": (
        pod(labels=SECURITYSCAN,
            affinity=[term("service", "In", "securityscan", "value2", topology="region")],
            anti=[term("service", "In", "antivirusscan", "value2", topology="node")]),
        [pod("existing", on="node1", labels=SECURITYSCAN,
             anti=[term("service", "In", "securityscan", "value2", topology="zone")])],
        OK, EXISTING,
    ),
    "the pod does not match its own term and the matching pod is on another node": (
        pod(labels=SECURITYSCAN, affinity=[term("service", "NotIn", "securityscan", "value2", topology="region")]),
        [pod("elsewhere", on="node2", labels=SECURITYSCAN)], OK, AFFINITY,
    ),
    "an existing pod's anti-affinity is respected when the pod has none": (
        pod(labels=SECURITYSCAN),
        [pod("existing", on="node1", labels=SECURITYSCAN,
             anti=[term("service", "In", "securityscan", "value2", topology="zone")])],
        OK, EXISTING,
    ),
    "an existing pod's anti-affinity that does not match: PreFilter skips": (
        pod(labels=SECURITYSCAN),
        [pod("existing", on="node1", labels=SECURITYSCAN,
             anti=[term("service", "NotIn", "securityscan", "value2", topology="zone")])],
        SKIP, None,
    ),
    "anti-affinity satisfied by the existing pod, its own anti-affinity names the pod": (
        pod(labels=SECURITYSCAN,
            anti=[term("service", "Exists", topology="region"), term("security", "Exists", topology="region")]),
        [pod("existing", on="node1", labels=S1_SECURITY, anti=[term("security", "Exists", topology="zone")])],
        OK, ANTI,
    ),
    "symmetry a2: the existing pod's terms partially match the pod": (
        pod(labels=S1_SECURITY, anti=[term("security", "Exists", topology="zone")]),
        [pod("existing", on="node1", labels=SECURITYSCAN,
             anti=[term("service", "Exists", topology="zone"), term("security", "Exists", topology="zone")])],
        OK, EXISTING,
    ),
    "an invalid label value in the affinity fails PreFilter": (
        pod(labels=SECURITYSCAN, affinity=[term("service", "In", "{{.bad-value.}}", topology="region"),
                                           term("service", "In", "antivirusscan", "value2", topology="node")]),
        [], Status.unresolvable(f"parsing pod: requiredAffinityTerms: {BAD_VALUE}"), None,
    ),
    "affinity with a matching namespaceSelector": (
        pod(labels=S1_SECURITY, affinity=[term("service", "In", "securityscan", "value2", topology="region",
                                               ns_selector=TEAM1_SELECTOR)]),
        [pod("existing", ns="subteam1.team1", on="node1", labels=SECURITYSCAN)], OK, OK,
    ),
    "affinity with a namespaceSelector that does not match": (
        pod(labels=S1_SECURITY, affinity=[term("service", "In", "securityscan", "value2", topology="region",
                                               ns_selector=TEAM1_SELECTOR)]),
        [pod("existing", ns="subteam1.team2", on="node1", labels=SECURITYSCAN)], OK, AFFINITY,
    ),
    "anti-affinity with a matching namespaceSelector": (
        pod(ns="subteam1.team1", labels=S1_SECURITY,
            anti=[term("service", "In", "securityscan", "value2", topology="zone", ns_selector=TEAM1_SELECTOR)]),
        [pod("existing", ns="subteam2.team1", on="node1", labels=SECURITYSCAN)], OK, ANTI,
    ),
    "anti-affinity with a namespaceSelector matching all namespaces": (
        pod(ns="subteam1.team1", labels=S1_SECURITY,
            anti=[term("service", "In", "securityscan", "value2", topology="zone", ns_selector={})]),
        [pod("existing", ns="subteam2.team1", on="node1", labels=SECURITYSCAN)], OK, ANTI,
    ),
    "anti-affinity with a namespaceSelector that does not match": (
        pod(ns="subteam1.team1", labels=S1_SECURITY,
            anti=[term("service", "In", "securityscan", "value2", topology="zone", ns_selector=TEAM1_SELECTOR)]),
        [pod("existing", ns="subteam1.team2", on="node1", labels=SECURITYSCAN)], OK, OK,
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("incoming", "pods", "pre_filter", "want"), SINGLE_NODE.values(), ids=SINGLE_NODE.keys()
)
def test_required_affinity_single_node(
    incoming: Obj, pods: list[Obj], pre_filter: Status, want: Status | None
) -> None:
    status, filtered = run_filters(incoming, [NODE1], pods)
    assert status == pre_filter
    assert filtered == ([] if want is None else [want])


# ------------------------------------------------------------------------------ filtering: several nodes

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
ZONES_ABC = [
    node("nodeA", region="r1", zone="z1", hostname="nodeA"),
    node("nodeB", region="r1", zone="z2", hostname="nodeB"),
]

MULTIPLE_NODES = {
    "nodes sharing the topology value of a node with a matching pod all fit": (
        pod(affinity=[term("foo", "In", "bar", topology="region")]),
        [pod("p1", on="node1", labels={"foo": "bar"})],
        [node("node1", **CHINA), node("node2", **CHINA_AZ1), node("node3", **INDIA)],
        OK, [OK, OK, AFFINITY],
    ),
    "the first pod of a group with affinity to itself is not blocked": (
        pod(labels={"foo": "bar", "service": "securityscan"},
            affinity=[term("foo", "In", "bar", topology="zone"),
                      term("service", "In", "securityscan", topology="zone")]),
        [pod("p1", on="nodeA", labels={"foo": "bar"})],
        [node("nodeA", zone="az1", hostname="h1"), node("nodeB", zone="az2", hostname="h2")],
        OK, [OK, OK],
    ),
    "the first pod of a group still needs nodes with the topology keys": (
        pod(labels={"foo": "bar", "service": "securityscan"},
            affinity=[term("foo", "In", "bar", topology="zone"),
                      term("service", "In", "securityscan", topology="zone")]),
        [pod("p1", on="nodeA", labels={"foo": "bar"})],
        [node("nodeA", zoneLabel="az1", hostname="h1"), node("nodeB", zoneLabel="az2", hostname="h2")],
        OK, [AFFINITY, AFFINITY],
    ),
    "anti-affinity excludes every node of the matching pod's region": (
        pod(anti=[term("foo", "In", "abc", topology="region")]),
        [pod("p1", on="nodeA", labels={"foo": "abc"})],
        [node("nodeA", region="r1", hostname="nodeA"), node("nodeB", region="r1", hostname="nodeB")],
        OK, [ANTI, ANTI],
    ),
    "anti-affinity matches when any of its terms matches": (
        pod(anti=[term("foo", "In", "abc", topology="region"),
                  term("service", "In", "securityscan", topology="zone")]),
        [pod("p1", on="nodeA", labels={"foo": "abc", "service": "securityscan"})],
        [node("nodeA", region="r1", zone="z1", hostname="nodeA"),
         node("nodeB", region="r1", zone="z2", hostname="nodeB")],
        OK, [ANTI, ANTI],
    ),
    "a matching pod in another namespace does not count": (
        pod(ns="NS1", labels={"foo": "123"}, anti=[term("foo", "In", "bar", topology="region")]),
        [pod("p1", ns="NS1", on="nodeA", labels={"foo": "bar"}),
         pod("p2", ns="NS2", on="nodeC", anti=[term("foo", "In", "123", topology="region")])],
        [node("nodeA", **CHINA), node("nodeB", **CHINA_AZ1), node("nodeC", **INDIA)],
        OK, [ANTI, ANTI, OK],
    ),
    "an existing pod's term whose topology key no node has: PreFilter skips": (
        pod(labels={"foo": ""}),
        [pod("p1", on="nodeA", anti=[term("foo", "Exists", topology="invalid-node-label")])],
        ZONES_ABC, SKIP, [],
    ),
    "the pod's anti-affinity term needs the topology key too": (
        pod(anti=[term("foo", "Exists", topology="invalid-node-label")]),
        [pod("p1", on="nodeA", labels={"foo": ""})],
        ZONES_ABC, OK, [OK, OK],
    ),
    "existing pods' anti-affinity, each term of its own": (
        pod(labels={"foo": "", "bar": ""}),
        [pod("p1", on="nodeA", anti=[term("foo", "Exists", topology="zone")]),
         pod("p2", on="nodeA", anti=[term("bar", "Exists", topology="region")])],
        ZONES_ABC, OK, [EXISTING, EXISTING],
    ),
    "an existing pod's term counts only with both its selector and its topology key": (
        pod(labels={"foo": "", "bar": ""}),
        [pod("p1", on="nodeA", anti=[term("foo", "Exists", topology="invalid-node-label"),
                                     term("bar", "Exists", topology="zone")])],
        ZONES_ABC, OK, [EXISTING, OK],
    ),
    "existing pods on nodeA and nodeB each name the pod: only nodeC fits": (
        pod(labels={"foo": "", "bar": ""}),
        [pod("p1", on="nodeA", anti=[term("foo", "Exists", topology="zone"),
                                     term("labelA", "Exists", topology="zone")]),
         pod("p2", on="nodeB", anti=[term("bar", "Exists", topology="zone"),
                                     term("labelB", "Exists", topology="zone")])],
        [*ZONES_ABC, node("nodeC", region="r1", zone="z3", hostname="nodeC")],
        OK, [EXISTING, EXISTING, OK],
    ),
    "all affinity terms must match one and the same pod": (
        pod(affinity=[term("foo", "Exists", topology="region"), term("bar", "Exists", topology="zone")]),
        [pod("pod1", on="nodeA", labels={"foo": ""}), pod("pod2", on="nodeB", labels={"bar": ""})],
        ZONES_ABC, OK, [AFFINITY, AFFINITY],
    ),
    "all affinity terms matched by one pod, then every topology key checked": (
        pod(affinity=[term("foo", "Exists", topology="region"), term("bar", "Exists", topology="zone")]),
        [pod("pod1", on="nodeA", labels={"foo": "", "bar": ""})],
        [node("nodeA", region="r1", zone="z1"), node("nodeB", region="r1", zone="z1")],
        OK, [OK, OK],
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("incoming", "pods", "nodes", "pre_filter", "want"), MULTIPLE_NODES.values(), ids=MULTIPLE_NODES.keys()
)
def test_required_affinity_multiple_nodes(
    incoming: Obj, pods: list[Obj], nodes: list[Obj], pre_filter: Status, want: list[Status]
) -> None:
    status, filtered = run_filters(incoming, nodes, pods)
    assert status == pre_filter
    assert filtered == want


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = InterPodAffinity().filter(CycleState(), pod(), NodeInfo.of(node("n")))
    assert status == Status.error('error reading "PreFilterInterPodAffinity" from cycleState: not found')


def test_existing_pods_anti_affinity_uses_the_namespace_labels_of_the_incoming_pod() -> None:
    existing = pod(
        "e", ns="other", on="n1", anti=[term("app", "Exists", topology="region", ns_selector=TEAM1_SELECTOR)]
    )
    nodes = [node("n1", region="r1")]
    status, filtered = run_filters(pod(ns="subteam1.team1", labels={"app": "x"}), nodes, [existing])
    assert (status, filtered) == (OK, [EXISTING])
    status, _ = run_filters(pod(ns="subteam1.team2", labels={"app": "x"}), nodes, [existing])
    assert status == SKIP
    # No namespace lister (or an unknown namespace): empty namespace labels.
    status, _ = run_filters(pod(ns="subteam1.team1", labels={"app": "x"}), nodes, [existing], Namespaces({}))
    assert status == SKIP


# ------------------------------------------------------------------------------ AddPod / RemovePod

FOO_BAR = {"foo": "bar"}
ANTI_FOO_BAR = [term("foo", "In", "bar", topology="region")]
COMPLEX = [term("foo", "In", "bar", "buzz", topology="region"),
           term("service", "NotIn", "bar", "security", "test", topology="zone")]  # fmt: skip
ADD_REMOVE_NODES = [
    node("nodeA", region="r1", zone="z11"),
    node("nodeB", region="r1", zone="z12"),
    node("nodeC", region="r2", zone="z21"),
]

ADD_REMOVE = {
    "anti-affinity counts follow an added and a removed pod": (
        pod("pending", labels=FOO_BAR, anti=ANTI_FOO_BAR),
        [pod("p1", on="nodeA", labels=FOO_BAR), pod("p2", on="nodeC", anti=ANTI_FOO_BAR)],
        pod("added", on="nodeB", labels=FOO_BAR, anti=ANTI_FOO_BAR),
        {("region", "r1"): 2},
        {},
    ),
    "anti-affinity counts with several terms": (
        pod("pending", labels=FOO_BAR, anti=COMPLEX),
        [pod("p1", on="nodeA", labels=FOO_BAR), pod("p2", on="nodeC", anti=ANTI_FOO_BAR)],
        pod("added", on="nodeA", labels=FOO_BAR, anti=COMPLEX),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    "affinity counts follow an added and a removed pod": (
        pod("pending", labels=FOO_BAR, affinity=COMPLEX),
        [pod("p1", on="nodeA", labels=FOO_BAR), pod("p2", on="nodeC", anti=ANTI_FOO_BAR, affinity=COMPLEX)],
        pod("added", on="nodeA", labels=FOO_BAR, anti=COMPLEX),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
}


def pre_filtered(
    pending: Obj, pods: list[Obj]
) -> tuple[InterPodAffinity, CycleState, PreFilterState, list[NodeInfo]]:
    snapshot = infos(ADD_REMOVE_NODES, pods)
    state = cycle(snapshot)
    p = plugin()
    assert p.pre_filter(state, pending) == OK
    return p, state, state.read("PreFilterInterPodAffinity"), snapshot


@pytest.mark.parametrize(
    ("pending", "existing", "added", "anti", "affinity"), ADD_REMOVE.values(), ids=ADD_REMOVE.keys()
)
def test_pre_filter_state_add_remove_pod(
    pending: Obj, existing: list[Obj], added: Obj, anti: dict[Any, int], affinity: dict[Any, int]
) -> None:
    _, _, with_all, _ = pre_filtered(pending, [*existing, added])
    p, state, pre_filter, snapshot = pre_filtered(pending, existing)
    original = pre_filter.clone()
    target = next(n for n in snapshot if n.name == added["spec"]["nodeName"])

    assert p.add_pod(state, pending, PodInfo.of(added), target) == OK
    assert pre_filter.anti_affinity_counts == anti
    assert pre_filter.affinity_counts == affinity
    assert pre_filter == with_all

    assert p.remove_pod(state, pending, PodInfo.of(added), target) == OK
    assert pre_filter == original


def test_pre_filter_state_clone_is_deep() -> None:
    _, _, pre_filter, _ = pre_filtered(
        pod("pending", labels=FOO_BAR, anti=ANTI_FOO_BAR), [pod("p1", on="nodeA", labels=FOO_BAR)]
    )
    clone = pre_filter.clone()
    assert clone == pre_filter
    clone.anti_affinity_counts[("region", "r9")] = 1
    assert ("region", "r9") not in pre_filter.anti_affinity_counts


def test_removing_the_only_matching_pod_makes_the_node_fit() -> None:
    """What preemption sees: RemovePod on a copy of the state frees the domain."""
    incoming = pod(
        "web-1", labels={"app": "web"}, anti=[term("app", "In", "web", topology="kubernetes.io/hostname")]
    )
    victim = pod("web-0", on="n1", labels={"app": "web"})
    snapshot = infos([node("n1", **{"kubernetes.io/hostname": "n1"})], [victim])
    state = cycle(snapshot)
    p = plugin()
    assert p.pre_filter(state, incoming) == OK
    assert p.filter(state, incoming, snapshot[0]) == ANTI
    copy, node_info = state.clone(), snapshot[0].clone()
    removed = node_info.remove_pod("/web-0")
    assert removed is not None
    assert p.remove_pod(copy, incoming, removed, node_info) == OK
    assert p.filter(copy, incoming, node_info) == OK
    assert p.filter(state, incoming, snapshot[0]) == ANTI  # the original state is untouched


# ------------------------------------------------------------------------------ scoring

RG_CHINA, RG_INDIA = {"region": "China"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
SEC_S1, SEC_S2 = {"security": "S1"}, {"security": "S2"}

STAY_WITH_S1_IN_REGION = [weighted(5, term("security", "In", "S1", topology="region"))]
STAY_WITH_S2_IN_REGION = [weighted(6, term("security", "In", "S2", topology="region"))]
AFFINITY3 = [
    weighted(8, {"labelSelector": {"matchExpressions": [
        {"key": "security", "operator": "NotIn", "values": ["S1"]},
        {"key": "security", "operator": "In", "values": ["S2"]}]}, "topologyKey": "region"}),
    weighted(2, {"labelSelector": {"matchExpressions": [
        {"key": "security", "operator": "Exists"},
        {"key": "wrongkey", "operator": "DoesNotExist"}]}, "topologyKey": "region"}),
]  # fmt: skip
HARD_AFFINITY = [
    term("security", "In", "S1", "value2", topology="region"),
    {"labelSelector": {"matchExpressions": [{"key": "security", "operator": "Exists"},
                                            {"key": "wrongkey", "operator": "DoesNotExist"}]},
     "topologyKey": "region"},
]  # fmt: skip
AWAY_FROM_S1_IN_AZ = [weighted(5, term("security", "In", "S1", topology="az"))]
AWAY_FROM_S2_IN_AZ = [weighted(5, term("security", "In", "S2", topology="az"))]
STAY_S1_REGION_AWAY_S2_AZ: Obj = {
    "preferred": [weighted(8, term("security", "In", "S1", topology="region"))],
    "preferred_anti": [weighted(5, term("security", "In", "S2", topology="az"))],
}
NS_SELECTOR_TERM = term("security", "In", "S1", topology="region", namespaces=["subteam2.team2"],
                        ns_selector=TEAM1_SELECTOR)  # fmt: skip


def n(name: str, labels: dict[str, str]) -> Obj:
    return node(name, **labels)


PREFERRED = {
    "all nodes have the same priority as affinity is nil": (
        pod(labels=SEC_S1), [],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, SKIP, None,
    ),
    "affinity: matching topology key and pods scores high": (
        pod(labels=SEC_S1, preferred=STAY_WITH_S1_IN_REGION),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", labels=SEC_S2), pod("c", on="node3", labels=SEC_S1)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, OK, [100, 0, 0],
    ),
    "nodes sharing the topology value of a matching pod score the same": (
        pod(preferred=STAY_WITH_S1_IN_REGION),
        [pod("a", on="node1", labels=SEC_S1)],
        [n("node1", RG_CHINA), n("node2", RG_CHINA_AZ1), n("node3", RG_INDIA)],
        False, OK, [100, 100, 0],
    ),
    "the region with more matching pods scores high": (
        pod(labels=SEC_S1, preferred=STAY_WITH_S2_IN_REGION),
        [pod(f"p{i}", on=on, labels=SEC_S2) for i, on in enumerate(("node1", "node1", "node2", "node3", "node4", "node5"))],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", RG_CHINA), n("node4", RG_CHINA), n("node5", RG_INDIA)],
        False, OK, [100, 0, 100, 100, 0],
    ),
    "different label operators and values, some not matching": (
        pod(labels=SEC_S1, preferred=AFFINITY3),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", labels=SEC_S2), pod("c", on="node3", labels=SEC_S1)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, OK, [20, 100, 0],
    ),
    "symmetry: existing pods' preferred affinity": (
        pod(labels=SEC_S2),
        [pod("a", on="node1", labels=SEC_S1, preferred=STAY_WITH_S1_IN_REGION),
         pod("b", on="node2", labels=SEC_S2, preferred=STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, OK, [0, 100, 0],
    ),
    "symmetry: existing pod's preferred affinity with a namespaceSelector": (
        pod(ns="subteam1.team1", labels=SEC_S1),
        [pod("a", on="node1", labels=SEC_S1, preferred=[weighted(5, NS_SELECTOR_TERM)]),
         pod("b", on="node2", labels=SEC_S2, preferred=STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, OK, [100, 0, 0],
    ),
    "symmetry: existing pod's preferred anti-affinity with a namespaceSelector": (
        pod(ns="subteam1.team1", labels=SEC_S1),
        [pod("a", on="node1", labels=SEC_S1, preferred_anti=[weighted(5, NS_SELECTOR_TERM)]),
         pod("b", on="node2", labels=SEC_S2, preferred=STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, OK, [0, 100, 100],
    ),
    "symmetry: existing pods' required affinity, with hardPodAffinityWeight": (
        pod(labels=SEC_S1),
        [pod("a", on="node1", labels=SEC_S1, affinity=HARD_AFFINITY),
         pod("b", on="node2", labels=SEC_S2, affinity=HARD_AFFINITY)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        False, OK, [100, 100, 0],
    ),
    "anti-affinity: the node without matching pods scores high": (
        pod(labels=SEC_S1, preferred_anti=AWAY_FROM_S1_IN_AZ),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", labels=SEC_S2)],
        [n("node1", AZ1), n("node2", RG_CHINA)],
        False, OK, [0, 100],
    ),
    "anti-affinity: the node without the topology key scores high": (
        pod(labels=SEC_S1, preferred_anti=AWAY_FROM_S1_IN_AZ),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", labels=SEC_S1)],
        [n("node1", AZ1), n("node2", RG_CHINA)],
        False, OK, [0, 100],
    ),
    "anti-affinity symmetry": (
        pod(labels=SEC_S2),
        [pod("a", on="node1", labels=SEC_S1, preferred_anti=AWAY_FROM_S2_IN_AZ),
         pod("b", on="node2", labels=SEC_S2, preferred_anti=AWAY_FROM_S1_IN_AZ)],
        [n("node1", AZ1), n("node2", AZ2)],
        False, OK, [0, 100],
    ),
    "affinity and anti-affinity": (
        pod(labels=SEC_S1, **STAY_S1_REGION_AWAY_S2_AZ),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", labels=SEC_S1)],
        [n("node1", RG_CHINA), n("node2", AZ1)],
        False, OK, [100, 0],
    ),
    "affinity, anti-affinity and symmetry together": (
        pod(labels=SEC_S1, **STAY_S1_REGION_AWAY_S2_AZ),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", labels=SEC_S2),
         pod("c", on="node3", **STAY_S1_REGION_AWAY_S2_AZ), pod("d", on="node4", preferred_anti=AWAY_FROM_S1_IN_AZ)],
        [n("node1", RG_CHINA), n("node2", AZ1), n("node3", RG_INDIA), n("node4", AZ2)],
        False, OK, [100, 0, 100, 0],
    ),
    "nodes of one topology, only some with pods with affinity": (
        pod(labels=SEC_S1),
        [pod("a", on="node1", labels=SEC_S1), pod("b", on="node2", **STAY_S1_REGION_AWAY_S2_AZ)],
        [n("node1", RG_CHINA), n("node2", RG_CHINA)],
        False, OK, [0, 0],
    ),
    "an invalid label value fails PreScore": (
        pod(preferred=[weighted(8, term("security", "In", "{{.bad-value.}}", topology="region"))]),
        [], [n("node1", RG_CHINA), n("node2", RG_CHINA)],
        False, Status.error(f"failed to parse pod: preferredAffinityTerms: {BAD_VALUE.replace('service', 'security')}"),
        None,
    ),
    "affinity with pods matching the namespaceSelector": (
        pod(ns="subteam1.team1", labels=SEC_S1, preferred=[weighted(5, NS_SELECTOR_TERM)]),
        [pod("a", ns="subteam1.team1", on="node1", labels=SEC_S1),
         pod("b", ns="subteam1.team1", on="node1", labels=SEC_S1),
         pod("c", ns="subteam1.team2", on="node1", labels=SEC_S1),
         pod("d", ns="subteam2.team1", on="node2", labels=SEC_S1)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        False, OK, [100, 0],
    ),
    "anti-affinity with pods matching both the namespaceSelector and the namespaces": (
        pod(ns="subteam1.team1", labels=SEC_S1, preferred_anti=[weighted(5, NS_SELECTOR_TERM)]),
        [pod("a", ns="subteam1.team1", on="node1", labels=SEC_S1),
         pod("b", ns="subteam1.team1", on="node1", labels=SEC_S1),
         pod("c", ns="subteam2.team2", on="node1", labels=SEC_S1),
         pod("d", ns="subteam2.team1", on="node2", labels=SEC_S1)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        False, OK, [0, 100],
    ),
    "ignorePreferredTermsOfExistingPods skips scoring for a pod without preferred terms": (
        pod(labels=SEC_S2),
        [pod("a", on="node1", labels=SEC_S1, **STAY_S1_REGION_AWAY_S2_AZ),
         pod("b", on="node2", labels=SEC_S2, preferred=STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        True, SKIP, None,
    ),
    "without it, existing pods' preferred terms count": (
        pod(labels=SEC_S2),
        [pod("a", on="node1", labels=SEC_S1, **STAY_S1_REGION_AWAY_S2_AZ),
         pod("b", on="node2", labels=SEC_S2, preferred=STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        False, OK, [0, 100],
    ),
    "no nodes to score": (pod(labels=SEC_S2), [], [], False, SKIP, None),
}  # fmt: skip


def run_scoring(
    incoming: Obj, pods: list[Obj], nodes: list[Obj], args: InterPodAffinityArgs
) -> tuple[Status, list[int] | None]:
    snapshot = infos(nodes, pods)
    state = cycle(snapshot)
    p = plugin(args)
    status = p.pre_score(state, incoming, snapshot)
    if not status.ok:
        return status, None
    scores: dict[str, int] = {}
    for node_info in snapshot:
        scores[node_info.name], score_status = p.score(state, incoming, node_info)
        assert score_status.ok
    assert p.normalize_score(state, incoming, scores).ok
    return status, [scores[ni.name] for ni in snapshot]


@pytest.mark.parametrize(
    ("incoming", "pods", "nodes", "ignore", "want_status", "want"), PREFERRED.values(), ids=PREFERRED.keys()
)
def test_preferred_affinity(
    incoming: Obj,
    pods: list[Obj],
    nodes: list[Obj],
    ignore: bool,
    want_status: Status,
    want: list[int] | None,
) -> None:
    args = InterPodAffinityArgs(1, ignore)
    assert run_scoring(incoming, pods, nodes, args) == (want_status, want)


SERVICE_S1 = {"service": "S1"}
HARD_NS_AFFINITY = [term("service", "In", "S1", topology="region", namespaces=["", "subteam2.team2"],
                         ns_selector=TEAM1_SELECTOR)]  # fmt: skip
HARD_WEIGHT_NODES = [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)]
HARD_WEIGHT_PODS = [
    pod("a", on="node1", affinity=HARD_NS_AFFINITY),
    pod("b", on="node2", affinity=HARD_NS_AFFINITY),
]

HARD_WEIGHT = {
    "with the default weight": ("", 1, OK, [100, 100, 0]),
    "with zero weight": ("", 0, SKIP, None),
    "with no matching namespace": ("subteam1.team2", 1, SKIP, None),
    "with a matching namespaceSelector": ("subteam1.team1", 1, OK, [100, 100, 0]),
    "with matching namespaces": ("subteam2.team2", 1, OK, [100, 100, 0]),
}


@pytest.mark.parametrize(
    ("ns", "weight", "want_status", "want"), HARD_WEIGHT.values(), ids=HARD_WEIGHT.keys()
)
def test_preferred_affinity_with_hard_pod_affinity_weight(
    ns: str, weight: int, want_status: Status, want: list[int] | None
) -> None:
    incoming = pod(ns=ns, labels=SERVICE_S1)
    args = InterPodAffinityArgs(weight)
    assert run_scoring(incoming, HARD_WEIGHT_PODS, HARD_WEIGHT_NODES, args) == (want_status, want)


def test_normalisation_is_min_max_truncated() -> None:
    incoming = pod(labels=SEC_S1, preferred=[weighted(3, term("security", "In", "S1", topology="region"))],
                   preferred_anti=[weighted(1, term("security", "In", "S1", topology="az"))])  # fmt: skip
    nodes = [
        n("node1", {"region": "r1", "az": "a"}),
        n("node2", {"region": "r1"}),
        n("node3", {"region": "r2"}),
    ]
    pods = [pod("a", on="node1", labels=SEC_S1)]
    # Raw scores 2, 3 and 0: 100 * (2 - 0) / 3 = 66.67 is truncated.
    assert run_scoring(incoming, pods, nodes, InterPodAffinityArgs()) == (OK, [66, 100, 0])


# ------------------------------------------------------------------------------ args, terms, events

ARG_ERRORS = {
    "weight above 100": ({"hardPodAffinityWeight": 101}, "hardPodAffinityWeight",
                         "Invalid value: 101: not in valid range [0, 100]"),
    "negative weight": ({"hardPodAffinityWeight": -1}, "hardPodAffinityWeight",
                        "Invalid value: -1: not in valid range [0, 100]"),
    "weight as a string": ({"hardPodAffinityWeight": "1"}, "hardPodAffinityWeight", None),
    "ignore as a string": ({"ignorePreferredTermsOfExistingPods": "yes"}, "ignorePreferredTermsOfExistingPods", None),
    "unknown field": ({"hardPodAffinitySymmetricWeight": 1}, "hardPodAffinitySymmetricWeight", None),
}  # fmt: skip


@pytest.mark.parametrize(("args", "field", "detail"), ARG_ERRORS.values(), ids=ARG_ERRORS.keys())
def test_bad_args(args: Obj, field: str, detail: str | None) -> None:
    with pytest.raises(ConfigError) as err:
        InterPodAffinity.parse_args(args, "args")
    assert err.value.field == f"args.{field}"
    if detail is not None:
        assert err.value.detail == detail


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(None, InterPodAffinityArgs(1, False), id="defaults"),
        pytest.param({}, InterPodAffinityArgs(1, False), id="empty"),
        pytest.param({"hardPodAffinityWeight": 0}, InterPodAffinityArgs(0, False), id="zero-weight-kept"),
        pytest.param(
            {
                "kind": "InterPodAffinityArgs",
                "hardPodAffinityWeight": 100,
                "ignorePreferredTermsOfExistingPods": True,
            },
            InterPodAffinityArgs(100, True),
            id="typed",
        ),
    ],
)
def test_args(args: Obj | None, expected: InterPodAffinityArgs) -> None:
    assert InterPodAffinity.parse_args(args, "args") == expected


def test_affinity_terms_default_to_the_pods_namespace_only_without_namespace_selector() -> None:
    p = pod(ns="mine", affinity=[
        term("a", "Exists", topology="t"),
        term("a", "Exists", topology="t", namespaces=["x"]),
        term("a", "Exists", topology="t", ns_selector={}),
        term("a", "Exists", topology="t", ns_selector=None),
    ])  # fmt: skip
    own, listed, everywhere, absent = PodAffinityTerms.of(p).required_affinity
    assert own.namespaces == {"mine"}
    assert listed.namespaces == {"x"}
    assert everywhere.namespaces == frozenset() and everywhere.namespace_selector.empty
    assert absent.namespaces == {"mine"} and absent.namespace_selector.nothing
    other = pod(ns="other", labels={"a": "1"})
    assert not own.matches(other, None)
    assert everywhere.matches(other, None)


def test_parse_errors_are_aggregated_like_upstream() -> None:
    bad = {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}, "topologyKey": "t"}
    terms = PodAffinityTerms.of(pod(affinity=[bad], preferred_anti=[weighted(1, bad)]))
    assert terms.error == (
        '[requiredAffinityTerms: "Bad" is not a valid label selector operator, '
        'preferredAntiAffinityTerms: "Bad" is not a valid label selector operator]'
    )
    assert terms.required_affinity == () and terms.preferred_anti_affinity == ()


def test_node_info_keeps_the_pods_with_affinity_apart() -> None:
    plain = PodInfo.of(pod("plain", on="n"))
    preferred = PodInfo.of(pod("preferred", on="n", preferred=STAY_WITH_S1_IN_REGION))
    required_anti = PodInfo.of(pod("anti", on="n", anti=ANTI_FOO_BAR))
    info = NodeInfo.of(node("n"))
    for p in (plain, preferred, required_anti):
        info.add_pod(p)
    assert info.pods_with_affinity == [preferred, required_anti]
    assert info.pods_with_required_anti_affinity == [required_anti]
    clone = info.clone()
    info.remove_pod(required_anti.key)
    assert info.pods_with_affinity == [preferred]
    assert info.pods_with_required_anti_affinity == []
    assert clone.pods_with_required_anti_affinity == [required_anti]


def test_events_to_register() -> None:
    assert InterPodAffinity().events_to_register() == [
        ClusterEvent("Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]


# ------------------------------------------------------------------------------ through the scheduler


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def default_scheduler() -> Scheduler:
    """The embedded cluster's default scheduler, fed by hand instead of by its informers."""
    sched = Scheduler(
        default_configuration(),
        KubeClient(ClientConfig(server="http://127.0.0.1:1"), rate_limit=None),
        clock=FakeClock(),
        rng=random.Random(0),
    )
    sched.queue = sched._build_profiles()  # what start() does once the caches are synced
    return sched


def worker(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def attempt(sched: Scheduler, key: str) -> Any:
    """One scheduling cycle of the next pod, as ``schedule_one`` runs it but without binding."""
    item = sched.queue.pop()
    assert item is not None and item.key == key
    profile = sched.profiles["default-scheduler"]
    result = profile.schedule(CycleState(), item.pod, sched.cache.node_infos(), sched.queue.nominated())
    if result.node is None:
        assert result.error is not None
        sched.queue.add_unschedulable(item, result.error.unschedulable_plugins)
    else:
        sched.queue.done(item.pod)
    return result


def test_required_anti_affinity_on_hostname_waits_for_the_pod_on_the_only_node_to_go() -> None:
    sched = default_scheduler()
    assert sched.namespaces is not None  # InterPodAffinity is in the default profile
    sched._on_node("ADDED", worker("w1"), None)
    web0 = pod("web-0", ns="default", on="w1", labels={"app": "web"})
    sched._on_pod("ADDED", web0, None)
    web1 = pod("web-1", ns="default", labels={"app": "web"},
               anti=[term("app", "In", "web", topology="kubernetes.io/hostname")])  # fmt: skip
    sched._on_pod("ADDED", web1, None)

    result = attempt(sched, "default/web-1")
    assert result.error.message() == (
        "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
    )
    assert result.error.unschedulable_plugins == {"InterPodAffinity"}
    assert sched.queue.where("default/web-1") == "unschedulable"

    # A node event InterPodAffinity did not register leaves the pod where it is.
    sched._move(ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT))
    assert sched.queue.where("default/web-1") == "unschedulable"

    sched._on_pod("DELETED", web0, web0)
    assert sched.queue.where("default/web-1") in ("active", "backoff")
    result = attempt(sched, "default/web-1")
    assert result.node == "w1"


def test_required_affinity_waits_for_a_matching_pod_to_be_bound() -> None:
    sched = default_scheduler()
    sched._on_node("ADDED", worker("w1"), None)
    app = pod("app", ns="default", labels={"app": "front"},
              affinity=[term("app", "In", "db", topology="kubernetes.io/hostname")])  # fmt: skip
    sched._on_pod("ADDED", app, None)
    result = attempt(sched, "default/app")
    assert result.error.message().startswith(
        "0/1 nodes are available: 1 node(s) didn't match pod affinity rules. preemption: "
    )
    assert sched.queue.where("default/app") == "unschedulable"

    # A pending db pod changes nothing; once bound (AssignedPodAdd) the pod is retried.
    db = pod("db", ns="default", labels={"app": "db"})
    sched._on_pod("ADDED", db, None)
    assert sched.queue.where("default/app") == "unschedulable"
    sched.queue.delete(db)
    bound = {**db, "spec": {**db["spec"], "nodeName": "w1"}}
    sched._on_pod("MODIFIED", bound, db)
    assert sched.queue.where("default/app") in ("active", "backoff")
    assert attempt(sched, "default/app").node == "w1"


def test_namespace_selector_reads_namespaces_through_the_handle() -> None:
    sched = default_scheduler()
    assert sched.namespaces is not None
    sched.namespaces._store.update(
        {name: {"metadata": {"name": name, "labels": lbl}} for name, lbl in {"a": TEAM1, "b": TEAM2}.items()}
    )
    sched._on_node("ADDED", worker("w1"), None)
    sched._on_node("ADDED", worker("w2"), None)
    sched._on_pod("ADDED", pod("in-b", ns="b", on="w1", labels={"app": "web"}), None)
    sched._on_pod("ADDED", pod("in-a", ns="a", on="w2", labels={"app": "web"}), None)
    incoming = pod("new", ns="c", anti=[term("app", "In", "web", topology="kubernetes.io/hostname",
                                              ns_selector=TEAM1_SELECTOR)])  # fmt: skip
    sched._on_pod("ADDED", incoming, None)
    # Only the pod in a team1 namespace repels it.
    assert attempt(sched, "c/new").node == "w1"


def test_a_scheduler_without_inter_pod_affinity_does_not_watch_namespaces() -> None:
    doc = {
        "apiVersion": config.API_VERSION,
        "kind": config.KIND,
        "profiles": [
            {"schedulerName": "s", "plugins": {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}}}
        ],
    }
    cfg = config.parse(doc, registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT)
    sched = Scheduler(cfg, KubeClient(ClientConfig(server="http://127.0.0.1:1"), rate_limit=None))
    assert sched.namespaces is None
