"""Padding: making NUMA zones hold exactly a given amount of free resources.

Two mechanisms, as upstream:

(a) :class:`Padder` (``test/internal/padder``): for ``n`` nodes among those with a
    ``single-numa-node`` NRT (optionally restricted by a node label selector), picked as
    upstream picks them (``sets.Set.PopAny``: Go map order, :func:`candidate_order`, from
    the padder's injectable random source; a picked node none of whose zones can be
    padded is not counted and not tried again), every zone
    that still has at least the target gets a guaranteed pause pod ``padder-<0..9999>``
    labelled ``nrop-test-pad-pod=""`` whose requests = limits = ``available - target`` for
    *every* resource the zone reports (0 for those not in the target), pinned to the node
    and, when the zone exposes numacell resources, to the zone. Then it waits for the pods
    to run and for the NRTs to show ``available <= target`` in every zone of the padded nodes.
(b) :func:`make_padding_pod` / :func:`saturate_zone_until_left` /
    :func:`saturate_node_until_left` (the tests' helpers): pad only the resources listed in
    the "leave" list; pods ``padpod-*`` with limits only and the labels
    ``e2e-serial-pad-node`` / ``e2e-serial-pad-numazone``.

The arithmetic and the choice of nodes and zones (:func:`candidate_order`,
:func:`plan_padding`) are pure; the I/O is thin
over :class:`~nrop.suite.e2e.kube.Kube` and :mod:`nrop.suite.e2e.wait.waiters`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.api.gomaps import GoMap
from nrop.api.nrt import NodeResourceTopology, Zone
from nrop.api.quantity import Quantity
from nrop.suite.e2e import kube as k
from nrop.suite.e2e import objects
from nrop.suite.e2e.nrt import topologies as nrtutil
from nrop.suite.e2e.nrt.updates import get_updated
from nrop.suite.e2e.resourcelist import ResourceList, drop_host_level, of, to_manifest, to_string
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import WaitTimeout, wait_for

__all__ = [
    "PADDER_LABEL",
    "PAD_NODE_LABEL",
    "PAD_ZONE_LABEL",
    "PadPlan",
    "Padder",
    "candidate_order",
    "diff_available_to_expected",
    "is_zone_meeting_target",
    "make_padding_pod",
    "new_padding_pod",
    "plan_padding",
    "saturate_node_until_left",
    "saturate_zone_until_left",
    "wait_for_padding_pods_running",
]

log = logging.getLogger(__name__)

PADDER_LABEL = "nrop-test-pad-pod"
PAD_NODE_LABEL = "e2e-serial-pad-node"
PAD_ZONE_LABEL = "e2e-serial-pad-numazone"
#: Upstream lists the NRTs with ``GetUpdated(empty list, 10s)``: one 5s interval, then the list.
NRT_LIST_TIMEOUT = 10.0


# ------------------------------------------------------------------------------- pure part


def diff_available_to_expected(
    available: Mapping[str, Quantity], expected: Mapping[str, Quantity]
) -> ResourceList:
    """What a pad pod must take so the zone keeps ``expected``: ``available - expected`` for
    the resources in ``expected``, 0 for every other resource the zone has.

    ``NotEnoughResourcesError`` when ``expected`` exceeds ``available``.
    """
    out: ResourceList = {}
    for name, qty in available.items():
        if name not in expected:
            out[name] = Quantity(0)
            continue
        left = qty - expected[name]
        if left.sign() < 0:
            raise nrtutil.NotEnoughResourcesError(
                f"expected resource: {name}={expected[name]} is higher than available: {name}={qty}"
            )
        out[name] = left
    return out


def is_zone_meeting_target(zone: Zone, target: Mapping[str, Quantity]) -> bool:
    """Every target resource has ``available <= target`` (a missing resource counts as 0)."""
    available = nrtutil.available_from_zone(zone)
    return all(available.get(name, Quantity(0)) <= qty for name, qty in target.items())


@dataclass(frozen=True)
class PadPlan:
    """One pad pod to create: node, zone, the resources it takes, and whether to pin to the zone."""

    node: str
    zone: str
    resources: ResourceList
    pin_zone: bool


def candidate_order(names: Sequence[str], rng: random.Random) -> list[str]:
    """The order in which upstream's padder pops candidate nodes: ``names`` (the single-NUMA
    NRTs in node-list order) go into a ``sets.Set``, then ``PopAny`` takes one at a time,
    each pop a fresh Go map iteration (:class:`~nrop.api.gomaps.GoMap`)."""
    candidates = GoMap(names, rng)
    return [candidates.pop_any(rng) for _ in range(len(candidates))]


def plan_padding(
    nrts: Sequence[NodeResourceTopology], target: Mapping[str, Quantity], n_nodes: int, order: Sequence[str]
) -> tuple[list[PadPlan], list[str]]:
    """The pad pods for ``n_nodes`` nodes, trying nodes in ``order`` (:func:`candidate_order`);
    returns ``(plans, padded nodes)``.

    A node counts as padded when at least one of its zones could be padded (a zone with
    less than the target is left alone, and the node is not tried again). ``ValueError``
    when ``order`` runs out first.
    """
    by_name = {nrt.name: nrt for nrt in nrts}
    plans: list[PadPlan] = []
    padded: list[str] = []
    candidates = list(order)
    while len(padded) < n_nodes:
        if not candidates:
            raise ValueError(f"cannot select a node to be padded among [] (padded: {padded})")
        node = candidates.pop(0)
        nrt = by_name[node]
        node_plans = []
        for zone in nrt.zones:
            if nrtutil.resource_info_matches_request(zone.resources, target):
                diff = diff_available_to_expected(nrtutil.available_from_zone(zone), target)
                node_plans.append(PadPlan(node, zone.name, diff, nrtutil.numacell_resource_found(zone)))
            else:
                log.warning(
                    "node: %r zone: %r doesn't have enough available allocationTarget", node, zone.name
                )
        if node_plans:
            plans.extend(node_plans)
            padded.append(node)
    return plans, padded


def saturate_zone_until_left(
    zone: Zone | Mapping[str, Any],
    required: Mapping[str, Quantity],
    keep: Callable[[Mapping[str, Quantity]], ResourceList] = drop_host_level,
) -> ResourceList:
    """What to take from ``zone`` so that exactly ``required`` is left, per resource of ``required``
    after ``keep`` (by default host-level resources are dropped) (``SaturateZoneUntilLeft``).

    ``ValueError`` when a resource is absent from the zone; ``NotEnoughResourcesError``
    when the zone already has less than ``required``.
    """
    zone_obj = zone if isinstance(zone, Zone) else Zone.from_dict(zone)
    available = nrtutil.available_from_zone(zone_obj)
    padding: ResourceList = {}
    for name, qty in keep(required).items():
        if name not in available:
            raise ValueError(f"resource {name!r} not found in zone {zone_obj.name!r}")
        if available[name] < qty:
            raise nrtutil.NotEnoughResourcesError(
                f"nrt: Not enough resources: resource {name!r} already too scarce in zone {zone_obj.name!r} "
                f"(target {qty} amount {available[name]})"
            )
        padding[name] = available[name] - qty
    return padding


def saturate_node_until_left(
    nrt: NodeResourceTopology | Mapping[str, Any], required: Mapping[str, Quantity]
) -> dict[str, ResourceList]:
    """Per zone, the padding so that zone 0 keeps no cpu/memory and every other zone keeps ``required``.

    (``SaturateNodeUntilLeft``; zones in NRT order, the first one is "zone 0".)
    """
    obj = nrtutil.parse(nrt)
    zero = of(cpu=0, memory=0)
    return {
        zone.name: saturate_zone_until_left(zone, zero if idx == 0 else required)
        for idx, zone in enumerate(obj.zones)
    }


# ------------------------------------------------------------------------------- pods


def new_padding_pod(
    namespace: str,
    node_name: str,
    zone_name: str,
    padding: Mapping[str, Quantity],
    *,
    image: str | None = None,
) -> dict[str, Any]:
    """A pod taking ``padding`` (upstream ``newPaddingPod``).

    ``generateName: padpod-``, labels naming the node and the zone, limits only (hence
    guaranteed), not pinned: call :func:`nrop.suite.e2e.objects.pin_pod_to` to pin it.
    """
    pod = objects.new_test_pod_pause(namespace, "padpod", image=image)
    pod["metadata"] = {
        "generateName": "padpod-",
        "namespace": namespace,
        "labels": {PAD_NODE_LABEL: node_name, PAD_ZONE_LABEL: zone_name},
    }
    pod["spec"]["containers"][0]["resources"] = {"limits": to_manifest(padding)}
    return pod


def make_padding_pod(
    namespace: str,
    node_name: str,
    zone: Zone | Mapping[str, Any],
    leave: Mapping[str, Quantity],
    *,
    image: str | None = None,
) -> dict[str, Any]:
    """A padding pod taking what ``zone`` has beyond ``leave`` (mechanism (b), upstream
    ``makePaddingPod``): :func:`saturate_zone_until_left` then :func:`new_padding_pod`."""
    zone_obj = zone if isinstance(zone, Zone) else Zone.from_dict(zone)
    padding = saturate_zone_until_left(zone_obj, leave)
    log.info("node %s zone %s padding: %s", node_name, zone_obj.name, to_string(padding))
    return new_padding_pod(namespace, node_name, zone_obj.name, padding, image=image)


def wait_for_padding_pods_running(
    kube: k.Kube, pods: Iterable[Mapping[str, Any]], *, timeout: float = 180.0, interval: float = 1.0
) -> list[str]:
    """``ns/name`` of the padding pods that did not reach Running (their events and limits logged)."""
    failed, _ = waiters.for_pods_all_running(kube, pods, interval=interval, timeout=timeout)
    ids = []
    for pod in failed:
        meta = pod["metadata"]
        waiters.log_events_for_pod(kube, meta["namespace"], meta["name"])
        log.warning(
            "padding pod %s/%s not running:\n%s\n%s",
            meta["namespace"],
            meta["name"],
            waiters.pod_summary(pod),
            objects.dump_pod_resource_requirements(pod),
        )
        ids.append(f"{meta['namespace']}/{meta['name']}")
    return ids


# ------------------------------------------------------------------------------- the Padder


@dataclass
class Padder:
    """Mechanism (a): ``Padder(kube, ns).nodes(2).until_available_is_resource_list_per_zone(rl).pad(timeout)``."""

    kube: k.Kube
    namespace: str
    image: str | None = None
    n_nodes: int = 0
    target: ResourceList = field(default_factory=dict)
    padded_nodes: list[str] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    poll_interval: float = 1.0
    pods_running_timeout: float = 180.0

    def nodes(self, n: int) -> Padder:
        self.n_nodes = n
        return self

    def until_available_is_resource_per_zone(self, name: str, quantity: Quantity | str | int) -> Padder:
        self.target[name] = of({name: quantity})[name]
        return self

    def until_available_is_resource_list_per_zone(
        self, resources: Mapping[str, Quantity | str | int]
    ) -> Padder:
        self.target = of(resources)
        return self

    def get_padded_nodes(self) -> list[str]:
        return list(self.padded_nodes)

    def pad(self, timeout: float, label_selector: str | Mapping[str, str] | None = None) -> None:
        """Create the pad pods, wait for them to run and for the NRTs to show the target.

        ``AssertionError`` (with what to look at) when there are not enough candidate
        nodes, a pad pod does not run, or the NRTs do not converge within ``timeout``.
        """
        if self.n_nodes == 0:
            log.warning("no nodes for padding were found. please specify at least one node")
            return
        node_names = [n["metadata"]["name"] for n in self.kube.list(k.NODE, label_selector=label_selector)]
        nrts = [nrtutil.parse(obj) for obj in get_updated(self.kube, [], NRT_LIST_TIMEOUT)]
        candidates = nrtutil.filter_by_policy(
            nrtutil.filter_by_node_names(nrts, node_names), nrtutil.SINGLE_NUMA_NODE
        )
        if self.n_nodes > len(candidates):
            raise AssertionError(
                f"not enough nodes were found for padding. requested: {self.n_nodes}, got: {len(candidates)}"
            )
        order = candidate_order([nrtutil.nrt_name(nrt) for nrt in candidates], self.rng)
        plans, padded = plan_padding(candidates, self.target, self.n_nodes, order)  # type: ignore[arg-type]
        for plan in plans:
            self.pods.append(self.kube.create(self._pod_for(plan)))
        self.padded_nodes.extend(padded)
        failed = wait_for_padding_pods_running(
            self.kube, self.pods, timeout=self.pods_running_timeout, interval=self.poll_interval
        )
        if failed:
            raise AssertionError(f"pad pods are not running: {', '.join(failed)}")
        self._wait_for_nrts(timeout)

    def _pod_for(self, plan: PadPlan) -> dict[str, Any]:
        name = objects.randomize_name("padder", self.rng)
        pod = objects.new_test_pod_pause(self.namespace, name, image=self.image)
        pod["metadata"]["labels"] = {PADDER_LABEL: ""}
        resources = {"limits": to_manifest(plan.resources)}
        pod["spec"]["containers"][0]["resources"] = resources
        if plan.pin_zone:
            objects.pin_pod_to(pod, plan.node, plan.zone)
        else:
            objects.pin_pod_to_node(pod, plan.node)
        # requests and limits are one map upstream: the numacell pin lands in both
        resources["requests"] = dict(resources["limits"])
        return pod

    def _wait_for_nrts(self, timeout: float) -> None:
        def unmet(nrts: list[dict[str, Any]]) -> list[str]:
            out = []
            for node in self.padded_nodes:
                found = nrtutil.find(nrts, node)
                if found is None:
                    out.append(f"{node}: no NRT")
                    continue
                for zone in nrtutil.parse(found).zones:
                    if not is_zone_meeting_target(zone, self.target):
                        have = nrtutil.available_from_zone(zone)
                        out.append(
                            f"{node} {zone.name}: available "
                            f"{to_string({n: have.get(n, Quantity(0)) for n in self.target})}"
                        )
            return out

        try:
            wait_for(
                lambda: get_updated(self.kube, [], NRT_LIST_TIMEOUT),
                lambda nrts: not unmet(nrts),
                f"NRTs of {self.padded_nodes} to show at most {to_string(self.target)} per zone",
                timeout,
                interval=self.poll_interval,
                fixed_rate=True,
            )
        except WaitTimeout:
            raise AssertionError(
                "noderesourcestopologies are not updated with correct amount of available resources: "
                + "; ".join(unmet(nrtutil.list_nrts(self.kube)))
            ) from None

    def clean(self) -> None:
        """Delete the pad pods (grace 5s) and wait until each is gone (1m)."""
        pods = self.kube.list(k.POD, self.namespace, label_selector={PADDER_LABEL: ""})
        for pod in pods:
            self.kube.delete(k.POD, pod["metadata"]["name"], self.namespace, grace_period_seconds=5)
        waiters.for_pods_all_deleted(self.kube, pods, interval=self.poll_interval, timeout=60.0)
        self.padded_nodes = []
        self.pods = []
