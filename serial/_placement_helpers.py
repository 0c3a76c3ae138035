"""Private helpers shared by the workload-placement families of the serial suite.

Owned by ``test_workload_placement*.py`` and ``test_workload_overhead.py``. Upstream's files of
these families share helpers that the suite library does not offer as such: the per-scope
``tmScopeFuncs``, the tmpol tables' ``podResourcesRequest`` and multi-container test pod,
``makePaddingPod`` + ``pinPodTo`` + create, ``labelNodeWithValue``, Gomega's ``Eventually``
failing with the spec's own message. Each names the upstream helper it mirrors, so that it can
move into the library without a change of behaviour.

Table resource lists are plain ``{name: quantity text}`` mappings as upstream's tables write
them; the placeholders ``DEV1``..``DEV3`` stand for ``E2E_NROP_DEVICE_TYPE_1..3`` and are
resolved when a test runs (upstream resolves them when it builds the spec tree, which here
would be import time). An unset variable resolves to the empty name, as upstream's
``GetDeviceTypeNName()`` does: no NRT offers it, so the entry skips at upstream's
"can match requests" filter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from _accounting_helpers import baseload_for_node, expect_ok, q

from nrop.suite import (
    WaitTimeout,
    nrtcompare,
    nrtconsumed,
    nrtupdates,
    objects,
    padding,
    scheduling,
    wait_for,
    waiters,
)
from nrop.suite import kube as k
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.config import MULTI_NUMA_LABEL
from nrop.suite.e2e.nrt.topologies import SCOPE_CONTAINER, SCOPE_POD, SINGLE_NUMA_NODE

log = logging.getLogger(__name__)

T = TypeVar("T")

Resources = Mapping[str, Any]
"""A resource list: resource name -> quantity (text as in the tables, or :class:`Quantity`)."""


DEFAULT_SCHEDULER = "default-scheduler"
MINUTE = 60.0

DEVICE_PLACEHOLDERS = ("DEV1", "DEV2", "DEV3")


# ----------------------------------------------------------------- resource lists


def add(*lists: Resources) -> rl.ResourceList:
    """Sum of resource lists (``resourcelist.AddInPlace`` over all of them)."""
    return rl.accumulate(rl.of(values) for values in lists)


def to_string(values: Resources) -> str:
    return rl.to_string(rl.of(values))


def resolve_devices(values: Resources, device_types: Sequence[str | None]) -> dict[str, Any]:
    """Replace ``DEV1``..``DEV3`` with the configured device resource names ("" when unset).

    Two placeholders resolving to the same name keep the later amount, as a Go map literal
    whose keys collide at run time does.
    """
    out: dict[str, Any] = {}
    for name, value in values.items():
        resolved = name
        if name in DEVICE_PLACEHOLDERS:
            resolved = device_types[DEVICE_PLACEHOLDERS.index(name)] or ""
        out[resolved] = value
    return out


def is_hugepage_in(values: Resources) -> bool:
    """Some ``hugepages-*`` resource with a non-zero amount (``isHugePageInAvailable``)."""
    return any(name.startswith("hugepages-") and not qty.is_zero for name, qty in rl.of(values).items())


# ------------------------------------------------------------- per-scope policies


@dataclass(frozen=True)
class ScopeFuncs:
    """How a topology-manager scope is checked (upstream ``tmScopeFuncs``).

    Pod scope: the whole pod fits one zone, so candidates need one zone providing the
    request and the NRT must show one zone consuming it. Container scope: containers may
    land on different zones, so the node total is what counts.
    """

    policy: str
    scope: str

    def check_consumed(
        self, before: Mapping[str, Any], after: Mapping[str, Any], required: Resources, pod_qos: str
    ) -> str:
        return nrtconsumed.check_consumed_resources_for_scope(
            self.scope, before, after, rl.of(required), pod_qos
        )

    def filter_matching(self, nrts: Iterable[Mapping[str, Any]], request: Resources) -> list[Any]:
        if self.scope == SCOPE_POD:
            return e2enrt.filter_any_zone_matching_resources(nrts, rl.of(request))
        return e2enrt.filter_any_node_matching_resources(nrts, rl.of(request))


POD_SCOPE = ScopeFuncs(SINGLE_NUMA_NODE, SCOPE_POD)
CONTAINER_SCOPE = ScopeFuncs(SINGLE_NUMA_NODE, SCOPE_CONTAINER)
SCOPE_FUNCS = {SCOPE_POD: POD_SCOPE, SCOPE_CONTAINER: CONTAINER_SCOPE}


@dataclass(frozen=True)
class PodResources:
    """Per-container limits of a test pod (upstream ``podResourcesRequest``)."""

    app: tuple[Resources, ...]
    init: tuple[Resources, ...] = field(default=())


# ------------------------------------------------------------------- pod objects


def pause_pod(namespace: str, name: str, pause_image: str, limits: Resources | None = None) -> dict[str, Any]:
    """``objects.NewTestPodPause`` with ``limits`` on its one container."""
    pod = objects.new_test_pod_pause(namespace, name, image=pause_image)
    if limits is not None:
        objects.set_resources(pod, limits=limits)
    return pod


def multi_container_pod(
    namespace: str, pause_image: str, scheduler_name: str, res_: PodResources
) -> dict[str, Any]:
    """The tmpol tables' ``testpod``: app containers ``testcnt-N``, init containers ``inittestcnt-N``."""
    pod = pause_pod(namespace, "testpod", pause_image)
    spec = pod["spec"]
    spec["schedulerName"] = scheduler_name
    spec["nodeSelector"] = {MULTI_NUMA_LABEL: "2"}
    template = spec["containers"][0]
    spec["containers"] = [
        {**template, "name": f"testcnt-{idx}", "resources": {"limits": rl.to_manifest(rl.of(limits))}}
        for idx, limits in enumerate(res_.app)
    ]
    if res_.init:
        spec["initContainers"] = [
            {
                "name": f"inittestcnt-{idx}",
                "image": pause_image,
                "command": ["/bin/sleep"],
                "args": ["1s"],
                "resources": {"limits": rl.to_manifest(rl.of(limits))},
            }
            for idx, limits in enumerate(res_.init)
        ]
    return pod


def pods_by_labels(kube: k.Kube, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The pods of a workload selecting ``labels`` in ``namespace`` (``podlist.ByDeployment`` /
    ``ByReplicaSet``, :func:`nrop.suite.e2e.wait.waiters.pods_of_workload`): terminating ones included."""
    selector = {"matchLabels": dict(labels)}
    return waiters.pods_of_workload(
        kube, {"metadata": {"namespace": namespace}, "spec": {"selector": selector}}
    )


# ---------------------------------------------------------------------- padding


def create_padding_pod(
    fxt: Any, label_node: str, node_name: str, zone: Any, leave: Resources
) -> dict[str, Any]:
    """``makePaddingPod`` + ``pinPodTo`` + create: a pod leaving ``leave`` free on ``zone`` of ``node_name``.

    ``label_node`` is the value of the ``e2e-serial-pad-node`` label: upstream passes the
    pod's base name there in some tests and the node name in others.
    """
    name, zone_name = q(label_node), q(zone.name)
    try:
        pod = padding.make_padding_pod(
            fxt.namespace, label_node, zone, rl.of(leave), image=fxt.config.pause_image
        )
    except ValueError as err:
        raise AssertionError(f"unable to create padding pod {name} on zone {zone_name}: {err}") from None
    pod = objects.pin_pod_to(pod, node_name, zone.name)  # cannot fail here, unlike upstream's pinPodTo
    return expect_ok(lambda: fxt.kube.create(pod), f"unable to create pod {name} on zone {zone_name}")


def expect_padding_pods_running(fxt: Any, pods: Sequence[Mapping[str, Any]]) -> None:
    failed = padding.wait_for_padding_pods_running(fxt.kube, pods)
    assert not failed, f"some padding pods have failed to run: {failed}"


def with_baseload(
    kube: k.Kube, node_name: str, values: Resources, *, failure: str = "missing node load info for"
) -> rl.ResourceList:
    """``values`` plus the node's base load (``baseload.ForNode`` + ``AddTo``); a failed read
    fails with ``failure`` and the node's name, as upstream's Expect does."""
    return add(values, baseload_for_node(kube, node_name, f"{failure} {q(node_name)}"))


def pad_nodes(
    fxt: Any,
    nrts: Iterable[Any],
    node_names: Iterable[str],
    free_of_zone: Callable[[int], Resources],
    label_fmt: str = "padding-{node}-{zone}",
) -> list[dict[str, Any]]:
    """Pad every zone of each node of ``node_names``: zone ``i`` keeps ``free_of_zone(i)`` free.

    Zone 0 also keeps room for the node's base load (any zone is fine for it). The
    ``e2e-serial-pad-node`` label of each pod is ``label_fmt`` filled with the node's and
    the zone's index, as the upstream tests name them.
    """
    nrts = list(nrts)
    pods = []
    for node_idx, node_name in enumerate(node_names):
        nrt = e2enrt.find(nrts, node_name)
        assert nrt is not None, f"missing NRT info for {q(node_name)}"
        for zone_idx, zone in enumerate(e2enrt.zones_of(nrt)):
            free = free_of_zone(zone_idx)
            leave = with_baseload(fxt.kube, node_name, free) if zone_idx == 0 else free
            label = label_fmt.format(node=node_idx, zone=zone_idx)
            pods.append(create_padding_pod(fxt, label, node_name, zone, leave))
    return pods


def new_padder(fxt: Any) -> padding.Padder:
    return padding.Padder(fxt.kube, fxt.namespace, image=fxt.config.pause_image)


# ------------------------------------------------------------------ accounting


def not_consumed_message(before: Mapping[str, Any], after: Mapping[str, Any], required: Resources) -> str:
    """Upstream's failure text when no NRT shows the running pod's consumption."""
    return (
        "inconsistent accounting: no resources consumed by the running pod,\n"
        f"NRT before test's pod: {nrtcompare.to_string_nrt(before)} \n"
        f"NRT after: {nrtcompare.to_string_nrt(after)} \npod resources: {to_string(required)}"
    )


def expect_resources_restored(
    fxt: Any, node: str, reference: Mapping[str, Any], last_seen: Mapping[str, Any]
) -> None:
    """The node's NRT, re-published since ``last_seen``, shows ``reference``'s available again.

    The NRT updaters may be slow to report a pod removal: some delay is tolerated.
    """
    eventually(
        lambda: nrtupdates.get_updated_for_node(fxt.kube, last_seen, MINUTE),
        lambda nrt_post_delete: nrtconsumed.check_equal_available_resources(reference, nrt_post_delete),
        f"resources not restored on {q(node)}",
        MINUTE,
        fxt.config.timeouts.poll(5),
    )


# ------------------------------------------------------------------ events, nodes


def expect_scheduled_by(kube: k.Kube, pod: Mapping[str, Any], scheduler: str) -> None:
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    assert scheduling.check_pod_was_scheduled_with(kube, namespace, name, scheduler), (
        f"pod {namespace}/{name} not scheduled with expected scheduler {scheduler}"
    )


def wait_pod_running(kube: k.Kube, namespace: str, name: str, timeout: float, what: str) -> dict[str, Any]:
    """``ForPodPhase(Running)``; on failure ``what`` explains the assertion (the pod's events follow)."""
    try:
        return waiters.for_pod_phase(kube, namespace, name, "Running", timeout=timeout)
    except WaitTimeout as err:
        raise AssertionError(f"{what}: {err}") from None


def eventually(
    getter: Callable[[], T], predicate: Callable[[T], bool], message: str, timeout: float, interval: float
) -> T:
    """Gomega ``Eventually(getter).WithTimeout(timeout).WithPolling(interval).Should(...)``.

    Returns the value that satisfied ``predicate``; on timeout fails with upstream's
    ``message`` followed by the last value seen.
    """
    try:
        return wait_for(getter, predicate, message, timeout, interval=interval)
    except WaitTimeout as err:
        raise AssertionError(f"{message}\n{err}") from None


def label_node(kube: k.Kube, key: str, value: str, node_name: str) -> Callable[[], None]:
    """Set label ``key=value`` on a node; returns the function removing it (``labelNodeWithValue``)."""
    log.info("adding label %s=%s to node %s", key, value, node_name)
    kube.patch(k.NODE, node_name, {"metadata": {"labels": {key: value}}})

    def unlabel() -> None:
        log.info("removing label %s from node %s", key, node_name)
        kube.patch(k.NODE, node_name, {"metadata": {"labels": {key: None}}})

    return unlabel
