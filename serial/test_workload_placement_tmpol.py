"""Workload placement considering the topology-manager policy and scope (upstream ``workload_placement_tmpol.go``).

Guaranteed pods and deployments land on the one node with a NUMA zone (pod scope) or a
node total (container scope) that fits them, the other nodes being padded so that they
fit only at node level; multi-container pods with init containers, hugepages and devices;
and the negative table, where the pod stays Pending with the scheduler's alignment error.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import _placement_helpers as h
import pytest
from _placement_helpers import (
    CONTAINER_SCOPE,
    MINUTE,
    POD_SCOPE,
    PodResources,
    ScopeFuncs,
    q,
)

from nrop.suite import entry, nrtcompare, nrtconsumed, nrtupdates, objects, scheduling, spec, waiters
from nrop.suite import kube as k
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.fixture import pop_node_name
from nrop.suite.e2e.scheduling import ERROR_CANNOT_ALIGN_CONTAINER, ERROR_CANNOT_ALIGN_POD

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler] numaresources workload placement considering TM policy",
    "Serial",
    "disruptive",
    "scheduler",
    "feature:wlplacement",
    "feature:tmpol",
)
FIXTURE_BASENAME = "e2e-test-workload-placement-tmpol"

HOSTS_REQUIRED = 2
NUMA_ZONES_REQUIRED = 2

# Upstream's pattern holds only where "N Insufficient cpu" sorts first among the scheduler's reasons
# (they are listed sorted as strings), as on a cluster of three control-plane nodes: 74257 runs on
# the embedded profile shaped so.
INSUFFICIENT_CPU = "0.* nodes are available: [0-9]* Insufficient cpu"

CPU4_MEM4 = {"cpu": "4", "memory": "4Gi"}
CPU3_MEM3 = {"cpu": "3", "memory": "3Gi"}
CPU4_MEM4_HP = {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "256Mi"}
CPU3_MEM3_HP = {"cpu": "3", "memory": "3Gi", "hugepages-2Mi": "192Mi"}


def _expect_nrt_consumed(
    fxt: Any, nrt_before: Mapping[str, Any], required: h.Resources, pod: Mapping[str, Any]
) -> dict[str, Any]:
    """``expectNRTConsumedResources``: some zone of the pod's node shows the pod's consumption."""
    nrt_after = nrtupdates.get_updated_for_node(fxt.kube, nrt_before, MINUTE)
    match = nrtconsumed.check_zone_consumed_resources_at_least(
        nrt_before, nrt_after, rl.of(required), objects.pod_qos(pod)
    )
    assert match, h.not_consumed_message(nrt_before, nrt_after, required)
    return nrt_after


# ------------------------------------------------- with at least two nodes suitable


def _setup_cluster(fxt: Any, required: h.Resources, padding: h.Resources, policy: str, scope: str) -> str:
    """Pad every candidate but a random target so that none of their zones fits ``required``."""
    nrt_list = e2enrt.list_nrts(fxt.kube)
    log.info("filtering available nodes with at least %d NUMA zones", NUMA_ZONES_REQUIRED)
    candidates = e2enrt.filter_zone_count_equal(nrt_list, NUMA_ZONES_REQUIRED)
    if len(candidates) < HOSTS_REQUIRED:
        fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed {HOSTS_REQUIRED}")

    nrts = e2enrt.filter_by_policy_and_scope(candidates, policy, scope)
    if len(nrts) != len(candidates):
        fxt.skip(
            f"not enough nodes with policy {q(policy)} and scope {q(scope)} - "
            f"required {len(candidates)}, found {len(nrts)}"
        )

    log.info(
        "filtering available nodes with allocatable resources on at least one NUMA zone that can match request"
    )
    candidates = e2enrt.filter_any_zone_matching_resources(candidates, rl.of(required))
    if len(candidates) < HOSTS_REQUIRED:
        fxt.skip(
            "not enough nodes with NUMA zones each of them can match requests: "
            f"found {len(candidates)}, needed: {HOSTS_REQUIRED}"
        )
    names = e2enrt.accumulate_names(candidates)
    target = pop_node_name(names)
    assert target is not None, f"cannot select a target node among {sorted(names)}"
    log.info("selecting node to schedule the pod: %s", q(target))

    padding_pods = h.pad_nodes(fxt, candidates, sorted(names), lambda _zone: padding)
    h.expect_padding_pods_running(fxt, padding_pods)
    return target


def _run_pod(fxt: Any, required: h.Resources) -> list[dict[str, Any]]:
    """A guaranteed pause pod ``testpod``; returns it once running."""
    kube = fxt.kube
    pod = h.pause_pod(fxt.namespace, "testpod", fxt.config.pause_image, required)
    pod["spec"]["schedulerName"] = fxt.config.scheduler_name
    kube.create(pod)
    return [
        h.wait_pod_running(
            kube, fxt.namespace, "testpod", MINUTE, 'Pod "testpod" not up & running after 1m0s'
        )
    ]


def _run_deployment(fxt: Any, required: h.Resources) -> list[dict[str, Any]]:
    """A one-replica deployment ``test-dp`` of guaranteed pods; returns its pods once complete."""
    kube = fxt.kube
    pod_labels = {"test": "test-dp"}
    dp = objects.new_test_deployment(1, pod_labels, {}, fxt.namespace, "test-dp", fxt.config.pause_image)
    dp["spec"]["template"]["spec"]["schedulerName"] = fxt.config.scheduler_name
    objects.set_resources(dp, limits=required)
    dp = kube.create(dp)

    try:
        waiters.for_deployment_complete(kube, dp, interval=10.0, timeout=MINUTE)
    except AssertionError as err:
        raise AssertionError(f'Deployment "test-dp" not up & running after 1m0s: {err}') from None

    pods = h.pods_by_labels(kube, fxt.namespace, pod_labels)
    assert pods, f"cannot find any pods for DP {fxt.namespace}/test-dp"
    return pods


def _run_one_container(
    fxt: Any,
    policy: str,
    scope: str,
    required: h.Resources,
    padding: h.Resources,
    run: Callable[[Any, h.Resources], list[dict[str, Any]]],
) -> None:
    """The one-container tables: the workload ``run`` starts lands on the target and is accounted."""
    target = _setup_cluster(fxt, required, padding, policy, scope)
    kube, scheduler = fxt.kube, fxt.config.scheduler_name
    target_nrt_initial = e2enrt.get_nrt(kube, target)

    pods = run(fxt, required)
    for pod in pods:
        assert pod["spec"]["nodeName"] == target
        h.expect_scheduled_by(kube, pod, scheduler)

    fxt.settle_nrts()
    _expect_nrt_consumed(fxt, target_nrt_initial, required, pods[0])


# (policy, scope, required, padding) of both one-container tables, in upstream's entry order
ONE_CONTAINER_CASES = (
    (h.SINGLE_NUMA_NODE, h.SCOPE_CONTAINER, CPU4_MEM4, CPU3_MEM3),
    (h.SINGLE_NUMA_NODE, h.SCOPE_POD, CPU4_MEM4, CPU3_MEM3),
    (h.SINGLE_NUMA_NODE, h.SCOPE_CONTAINER, CPU4_MEM4_HP, CPU3_MEM3_HP),
    (h.SINGLE_NUMA_NODE, h.SCOPE_POD, CPU4_MEM4_HP, CPU3_MEM3_HP),
)


def _one_container_entries(*texts: tuple[str, tuple[str, ...]]) -> list[object]:
    """One entry per case of ``ONE_CONTAINER_CASES``, given each entry's (text, labels)."""
    return [
        entry(text, *case, labels=labels)
        for (text, labels), case in zip(texts, ONE_CONTAINER_CASES, strict=True)
    ]


class TestWithAtLeastTwoNodesSuitable:
    pytestmark = spec("with at least two nodes suitable")

    @spec("a guaranteed pod with one container should be scheduled into one NUMA zone", "tier1")
    @pytest.mark.parametrize(
        "policy,scope,required,padding",
        _one_container_entries(
            ("[test_id:48713][tmscope:cnt] with topology-manager-scope: container", ("tmscope:cnt",)),
            ("[test_id:50156][tmscope:pod] with topology-manager-scope: pod", ("tmscope:pod",)),
            (
                "[test_id:50158][tmscope:cnt][hugepages] with topology-manager-scope: container with hugepages",
                ("tmscope:cnt", "hugepages"),
            ),
            (
                "[test_id:50157][tmscope:pod][hugepages] with topology-manager-scope: pod with hugepages",
                ("tmscope:pod", "hugepages"),
            ),
        ),
    )
    def test_guaranteed_pod_one_container(
        self, fxt: Any, policy: str, scope: str, required: h.Resources, padding: h.Resources
    ) -> None:
        _run_one_container(fxt, policy, scope, required, padding, _run_pod)

    @spec("a deployment with a guaranteed pod with one container should be scheduled into one NUMA zone")
    @pytest.mark.parametrize(
        "policy,scope,required,padding",
        _one_container_entries(
            ("[test_id:47583][tmscope:cnt] with topology-manager-scope: container", ("tier0", "tmscope:cnt")),
            ("[test_id:50159][tmscope:pod] with topology-manager-scope: pod", ("tier0", "tmscope:pod")),
            (
                "[test_id:50165][tmscope:cnt][hugepages] with topology-manager-scope: container and with hugepages",
                ("tier1", "tmscope:cnt", "hugepages"),
            ),
            (
                "[test_id:50182][tmscope:pod][hugepages] with topology-manager-scope: pod and with hugepages",
                ("tier1", "tmscope:pod", "hugepages"),
            ),
        ),
    )
    def test_deployment_guaranteed_pod_one_container(
        self, fxt: Any, policy: str, scope: str, required: h.Resources, padding: h.Resources
    ) -> None:
        _run_one_container(fxt, policy, scope, required, padding, _run_deployment)


# ------------------------------------------------------------------ the tables


def _setup_padding(
    fxt: Any,
    nrt_list: Sequence[Mapping[str, Any]],
    target: str,
    target_free_per_numa: Sequence[h.Resources],
    unsuitable: Sequence[str],
    unsuitable_free: Sequence[h.Resources],
) -> list[dict[str, Any]]:
    """``setupPadding``: target zone ``i % 2`` keeps ``target_free_per_numa[i]``, the others ``unsuitable_free``."""
    pods = []
    nrt = e2enrt.find(nrt_list, target)
    assert nrt is not None, f"missing NRT info for {q(target)}"
    for idx, free in enumerate(target_free_per_numa):
        zone = e2enrt.zones_of(nrt)[idx % 2]
        leave = h.with_baseload(fxt.kube, target, free) if idx == 0 else free  # any zone is fine for it
        log.info("padding node %s zone %s to fit only %s", q(target), q(zone.name), h.to_string(leave))
        pods.append(h.create_padding_pod(fxt, "target", target, zone, leave))

    pods.extend(h.pad_nodes(fxt, nrt_list, unsuitable, unsuitable_free.__getitem__, "unsuitable{node}"))
    return pods


def _table_scenario(
    fxt: Any,
    funcs: ScopeFuncs,
    res: PodResources,
    unsuitable_free: Sequence[h.Resources],
    target_free_per_numa: Sequence[h.Resources],
    *,
    unsched: bool,
) -> tuple[dict[str, Any], str]:
    """The common part of both tables: the test pod, the target, the padded cluster."""
    devices = fxt.config.device_types
    res = PodResources(
        app=tuple(h.resolve_devices(r, devices) for r in res.app),
        init=tuple(h.resolve_devices(r, devices) for r in res.init),
    )
    unsuitable_free = [h.resolve_devices(r, devices) for r in unsuitable_free]
    target_free_per_numa = [h.resolve_devices(r, devices) for r in target_free_per_numa]

    nrt_list = e2enrt.list_nrts(fxt.kube)
    nrts = e2enrt.filter_by_policy_and_scope(nrt_list, funcs.policy, funcs.scope)
    if len(nrts) < HOSTS_REQUIRED:
        fxt.skip(
            f"not enough nodes with policy {q(funcs.policy)} and scope {q(funcs.scope)} - "
            f"required {HOSTS_REQUIRED}, found {len(nrts)}"
        )
    assert len(unsuitable_free) == HOSTS_REQUIRED, (
        f"mismatch unsuitable resource declarations expected {HOSTS_REQUIRED} items, "
        f"but found {len(unsuitable_free)}"
    )
    if unsched:
        hugepages_needed = any(h.is_hugepage_in(r) for r in (*res.app, *res.init))
        for nrt in nrts:
            for zone in e2enrt.zones_of(nrt):
                if hugepages_needed and not h.is_hugepage_in(e2enrt.available_from_zone(zone)):
                    fxt.skip(f"hugepages requested but not found under node: {q(e2enrt.parse(nrt).name)}")

    pod = h.multi_container_pod(fxt.namespace, fxt.config.pause_image, fxt.config.scheduler_name, res)
    required = rl.from_guaranteed_pod(pod)

    log.info("filtering available nodes with at least %d NUMA zones", NUMA_ZONES_REQUIRED)
    candidates = e2enrt.filter_zone_count_equal(nrts, NUMA_ZONES_REQUIRED)
    if len(candidates) < HOSTS_REQUIRED:
        fxt.skip(f"not enough nodes with {NUMA_ZONES_REQUIRED} NUMA Zones: found {len(candidates)}")
    log.info("filtering available nodes with allocatable resources on each NUMA zone that can match request")
    if unsched:  # upstream's unsched table always asks for one zone that fits
        candidates = e2enrt.filter_any_zone_matching_resources(candidates, required)
    else:
        candidates = funcs.filter_matching(candidates, required)
    if len(candidates) < HOSTS_REQUIRED:
        fxt.skip(f"not enough nodes with NUMA zones each of them can match requests: found {len(candidates)}")

    names = e2enrt.accumulate_names(candidates)
    target = pop_node_name(names)
    assert target is not None, f"cannot select a target node among {sorted(names)}"
    unsuitable = sorted(names)
    log.info("selecting target node %s and unsuitable nodes %s (random pick)", q(target), unsuitable)

    # none given: the complement of the test pod, one zone per app container
    free_per_numa = list(target_free_per_numa) or [dict(r) for r in res.app]
    padding_pods = _setup_padding(fxt, nrt_list, target, free_per_numa, unsuitable, unsuitable_free)
    h.expect_padding_pods_running(fxt, padding_pods)
    fxt.settle_nrts()
    for name in unsuitable:
        log.info("NRT unsuitable: %s", nrtcompare.to_string_nrt(e2enrt.get_nrt(fxt.kube, name)))
    log.info("NRT target: %s", nrtcompare.to_string_nrt(e2enrt.get_nrt(fxt.kube, target)))
    return pod, target


def _expect_placed(
    fxt: Any, funcs: ScopeFuncs, pod: dict[str, Any], target: str
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The test pod lands on ``target`` and the NRT shows it consumed as its scope says.

    Returns the pod's node and the target's NRT before and after the pod.
    """
    kube = fxt.kube
    required = rl.from_guaranteed_pod(pod)
    log.info("checking the resource allocation on %s as the test starts", q(target))
    nrt_initial = e2enrt.get_nrt(kube, target)

    log.info("running the test pod\n%s", objects.dump_pod_resource_requirements(pod))
    kube.create(pod)
    try:
        updated = h.wait_pod_running(
            kube, fxt.namespace, "testpod", 2 * MINUTE, "waiting for the pod to be scheduled"
        )
    except AssertionError:
        log.info("NRT target: %s", nrtcompare.to_string_nrt(e2enrt.get_nrt(kube, target)))
        raise

    node = updated["spec"]["nodeName"]
    assert node == target, f"pod landed on {q(node)} instead of on {target}"
    h.expect_scheduled_by(kube, updated, fxt.config.scheduler_name)

    fxt.settle_nrts()
    nrt_post_create = nrtupdates.get_updated_for_node(kube, nrt_initial, MINUTE)
    match = funcs.check_consumed(nrt_initial, nrt_post_create, required, objects.pod_qos(updated))
    assert match, h.not_consumed_message(nrt_initial, nrt_post_create, required)
    return node, nrt_initial, nrt_post_create


def _failed_scheduling_matches(events: Iterable[Mapping[str, Any]], pattern: str) -> bool:
    """A ``FailedScheduling`` event whose message matches ``pattern`` (``regexp.MatchString``: unanchored)."""
    regex = re.compile(pattern)
    return any(
        e.get("reason") == "FailedScheduling" and regex.search(str(e.get("message") or "")) for e in events
    )


def _expect_pending(fxt: Any, pod: dict[str, Any], target: str, err_msg: str) -> None:
    """The test pod stays Pending, with a ``FailedScheduling`` event matching ``err_msg``."""
    kube = fxt.kube
    log.info("running the test pod\n%s", objects.dump_pod_resource_requirements(pod))
    kube.create(pod)

    try:
        waiters.while_in_pod_phase(kube, fxt.namespace, "testpod", "Pending", interval=10.0, steps=5)
    except AssertionError:
        log.info("%s", scheduling.pod_events_text(kube, fxt.namespace, "testpod"))
        log.info("NRT target: %s", nrtcompare.to_string_nrt(e2enrt.get_nrt(kube, target)))
        raise

    logged_events = False

    def found(events: Sequence[Mapping[str, Any]]) -> bool:
        nonlocal logged_events
        if _failed_scheduling_matches(events, err_msg):
            return True
        log.info(
            'failed to find the expected event with Reason="FailedScheduling" and Message contains %s',
            err_msg,
        )
        if not logged_events:
            log.info("%s", scheduling.pod_events_text(kube, fxt.namespace, "testpod"))
            logged_events = True
        return False

    def events() -> Sequence[Mapping[str, Any]]:
        try:
            return kube.events_for(fxt.namespace, "testpod")
        except k.ApiError as err:  # logged, and the poll goes on, as upstream's
            log.error("failed to get events for pod %s/testpod: %s", fxt.namespace, err)
            return []

    h.eventually(
        events,
        found,
        f"pod {fxt.namespace}/testpod doesn't contains the expected event error",
        2 * MINUTE,
        10.0,
    )


def _run_table_entry(
    fxt: Any,
    funcs: ScopeFuncs,
    err_msg: str | None,
    res: PodResources,
    unsuitable_free: Sequence[h.Resources],
    target_free_per_numa: Sequence[h.Resources],
) -> None:
    """The runner of both tables (upstream's two ``DescribeTable`` bodies).

    Without ``err_msg`` the pod lands on the target, is accounted, and its resources are
    available again once it is deleted; with it, the pod stays Pending for that reason.
    """
    kube = fxt.kube
    pod, target = _table_scenario(
        fxt, funcs, res, unsuitable_free, target_free_per_numa, unsched=err_msg is not None
    )
    placed = None
    if err_msg is None:
        placed = _expect_placed(fxt, funcs, pod, target)
    else:
        _expect_pending(fxt, pod, target, err_msg)

    kube.delete(k.POD, "testpod", fxt.namespace, missing_ok=False)
    waiters.for_pod_deleted(kube, fxt.namespace, "testpod", timeout=3 * MINUTE)
    if placed is not None:
        h.expect_resources_restored(fxt, *placed)


@spec("[placement] cluster with multiple worker nodes suitable", "placement")
@pytest.mark.parametrize(
    "funcs,res,unsuitable_free,target_free_per_numa",
    [
        entry(
            "[test_id:47575] should make a pod with two gu cnt land on a node with enough resources on a specific NUMA zone, each cnt on a different zone",
            CONTAINER_SCOPE,
            PodResources(app=({"cpu": "6", "memory": "6Gi"}, {"cpu": "12", "memory": "8Gi"})),
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "16", "memory": "12Gi"}),
            (),
            labels=("tmscope:cnt", "tier0"),
        ),
        entry(
            "[test_id:47577] should make a pod with two gu cnt land on a node with enough resources on a specific NUMA zone, all cnt on the same zone",
            POD_SCOPE,
            PodResources(app=({"cpu": "6", "memory": "4Gi"}, {"cpu": "8", "memory": "12Gi"})),
            ({"cpu": "14", "memory": "6Gi"}, {"cpu": "10", "memory": "20Gi"}),
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "14", "memory": "16Gi"}),
            labels=("tmscope:pod", "tier0"),
        ),
        entry(
            "[test_id:50183][tmscope:cnt][hugepages] should make a pod with two gu cnt land on a node with enough resources with hugepages on a specific NUMA zone, each cnt on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "6", "memory": "6Gi", "hugepages-2Mi": "96Mi"},
                    {"cpu": "12", "memory": "8Gi", "hugepages-2Mi": "128Mi"},
                )
            ),
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "16", "memory": "12Gi", "hugepages-2Mi": "192Mi"}),
            (),
            labels=("tmscope:cnt", "hugepages"),
        ),
        entry(
            "[test_id:50184][tmscope:pod][hugepages] should make a pod with two gu cnt land on a node with enough resources with hugepages on a specific NUMA zone, all cnt on the same zone",
            POD_SCOPE,
            PodResources(
                app=(
                    {"cpu": "6", "memory": "4Gi", "hugepages-2Mi": "32Mi"},
                    {"cpu": "8", "memory": "12Gi", "hugepages-2Mi": "128Mi"},
                )
            ),
            (
                {"cpu": "14", "memory": "10Gi", "hugepages-2Mi": "32Mi"},
                {"cpu": "10", "memory": "16Gi", "hugepages-2Mi": "144Mi"},
            ),
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "14", "memory": "16Gi", "hugepages-2Mi": "160Mi"}),
            labels=("tmscope:pod", "hugepages"),
        ),
        entry(
            "[test_id:85000] should make a pod with three gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi"},
                    {"cpu": "4", "memory": "4Gi"},
                    {"cpu": "8", "memory": "4Gi"},
                )
            ),
            ({"cpu": "12", "memory": "8Gi"}, {"cpu": "4", "memory": "4Gi"}),
            ({"cpu": "8", "memory": "8Gi"}, {"cpu": "8", "memory": "4Gi"}),
            labels=("tier1", "tmscope:cnt", "testtype4"),
        ),
        entry(
            "[test_id:85001] pod with two gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "7", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier1", "tmscope:cnt", "cpu", "testtype4"),
        ),
        entry(
            "[test_id:85002] pod with two gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "4", "memory": "1Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "7Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier1", "tmscope:cnt", "memory", "testtype4"),
        ),
        entry(
            "[test_id:85003] pod with two gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "16Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "7", "memory": "4Gi", "hugepages-2Mi": "48Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier1", "testtype4", "tmscope:cnt", "hugepages2Mi"),
        ),
        entry(
            "[test_id:85004] pod with two gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "32Mi"},
                {"cpu": "7", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "2Gi"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier1", "testtype4", "tmscope:cnt", "hugepages1Gi"),
        ),
        entry(
            "[test_id:54021] pod with two gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "DEV1": "2", "DEV3": "1"},
                    {"cpu": "4", "memory": "4Gi", "DEV2": "2"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "DEV1": "1", "DEV3": "1"},
                {"cpu": "7", "memory": "4Gi", "DEV1": "1", "DEV2": "2"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "DEV1": "2", "DEV3": "1"},
                {"cpu": "4", "memory": "4Gi", "DEV2": "2"},
            ),
            labels=("tier1", "testtype4", "tmscope:container", "devices"),
        ),
        entry(
            "[test_id:85005] should make a pod with one init cnt and three gu cnt land on a node with enough resources, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi"},
                    {"cpu": "4", "memory": "4Gi"},
                    {"cpu": "8", "memory": "4Gi"},
                ),
                init=({"cpu": "2", "memory": "2Gi"},),
            ),
            ({"cpu": "12", "memory": "8Gi"}, {"cpu": "4", "memory": "4Gi"}),
            ({"cpu": "8", "memory": "8Gi"}, {"cpu": "8", "memory": "4Gi"}),
            labels=("tier1", "tmscope:container", "testtype11"),
        ),
        entry(
            "[test_id:85006] should make a pod with 3 gu cnt and 3 init cnt land on a node with enough resources, when sum of init and app cnt resources are more than node resources",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi"},
                    {"cpu": "4", "memory": "4Gi"},
                    {"cpu": "8", "memory": "4Gi"},
                ),
                init=(
                    {"cpu": "8", "memory": "4Gi"},
                    {"cpu": "8", "memory": "4Gi"},
                    {"cpu": "8", "memory": "4Gi"},
                ),
            ),
            ({"cpu": "12", "memory": "8Gi"}, {"cpu": "4", "memory": "4Gi"}),
            ({"cpu": "8", "memory": "8Gi"}, {"cpu": "8", "memory": "4Gi"}),
            labels=("tier1", "tmscope:container", "testtype29"),
        ),
        entry(
            "[test_id:54018][tmscope:cnt][devices] should make a pod with two gu cnt land on a node with enough resources with devices on a specific NUMA zone,  containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=({"cpu": "6", "memory": "6Gi", "DEV1": "3"}, {"cpu": "12", "memory": "8Gi", "DEV1": "4"})
            ),
            ({"cpu": "6", "memory": "2Gi", "DEV1": "2"}, {"cpu": "12", "memory": "12Gi", "DEV1": "3"}),
            ({"cpu": "6", "memory": "6Gi", "DEV1": "3"}, {"cpu": "12", "memory": "8Gi", "DEV1": "4"}),
            labels=("tmscope:cnt", "devices"),
        ),
        entry(
            "[test_id:54016] should make a pod with one gu cnt requesting devices land on a node with enough resources on a specific NUMA zone",
            POD_SCOPE,
            PodResources(app=({"cpu": "8", "memory": "4Gi", "DEV1": "5"},)),
            ({"cpu": "6", "memory": "4Gi", "DEV1": "3"}, {"cpu": "6", "memory": "4Gi", "DEV1": "3"}),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "8", "memory": "4Gi", "DEV1": "5"}),
            labels=("tier0", "tmscope:pod", "devices"),
        ),
        entry(
            "[test_id:54025] should make a besteffort pod requesting devices land on a node with enough resources on a specific NUMA zone, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(app=({"DEV1": "5", "DEV2": "2"}, {"DEV2": "1", "DEV3": "3"})),
            ({"cpu": "6", "memory": "4Gi", "DEV1": "1"}, {"cpu": "6", "memory": "4Gi", "DEV1": "1"}),
            ({"DEV1": "1", "DEV2": "3"}, {"DEV1": "5", "DEV2": "2"}),
            labels=("tier2", "tmscope:cnt", "devices"),
        ),
        entry(
            "[test_id:55431] should make a besteffort pod requesting devices land on a node with enough resources on a specific NUMA zone",
            POD_SCOPE,
            PodResources(app=({"DEV1": "5", "DEV2": "2"},)),
            ({"cpu": "6", "memory": "4Gi", "DEV1": "1"}, {"cpu": "6", "memory": "4Gi", "DEV1": "1"}),
            ({"DEV2": "1"}, {"DEV1": "5", "DEV2": "2"}),
            labels=("tier1", "tmscope:pod", "devices"),
        ),
        entry(
            "[test_id:55450] should make a burstable pod requesting devices land on a node with enough resources on a specific NUMA zone",
            POD_SCOPE,
            PodResources(
                app=(
                    {"cpu": "1", "DEV2": "2", "DEV3": "3", "ephemeral-storage": "32Mi"},
                    {"ephemeral-storage": "32Mi"},
                )
            ),
            ({"cpu": "6", "memory": "4Gi", "DEV2": "1"}, {"cpu": "6", "memory": "4Gi", "DEV2": "1"}),
            ({"DEV2": "2", "DEV3": "3"}, {"DEV2": "1"}),
            labels=("tier2", "tmscope:pod", "devices", "hostlevel"),
        ),
        entry(
            "[test_id:54024] should make a burstable pod requesting devices land on a node with enough resources on a specific NUMA zone, containers should be spread on a different zone",
            CONTAINER_SCOPE,
            PodResources(
                app=(
                    {"cpu": "1", "DEV1": "5", "DEV2": "2", "ephemeral-storage": "32Mi"},
                    {"DEV2": "1", "DEV3": "3", "ephemeral-storage": "32Mi"},
                )
            ),
            ({"cpu": "6", "memory": "4Gi", "DEV1": "1"}, {"cpu": "6", "memory": "4Gi", "DEV1": "1"}),
            ({"DEV2": "1", "DEV3": "3"}, {"DEV1": "5", "DEV2": "2"}),
            labels=("tier2", "tmscope:container", "devices", "hostlevel"),
        ),
    ],
)
def test_placement_cluster_with_multiple_worker_nodes_suitable(
    fxt: Any,
    funcs: ScopeFuncs,
    res: PodResources,
    unsuitable_free: Sequence[h.Resources],
    target_free_per_numa: Sequence[h.Resources],
) -> None:
    _run_table_entry(fxt, funcs, None, res, unsuitable_free, target_free_per_numa)


@spec(
    "[placement][unsched] cluster with one worker nodes suitable", "placement", "unsched", "feature:unsched"
)
@pytest.mark.parametrize(
    "funcs,err_msg,res,unsuitable_free,target_free_per_numa",
    [
        entry(
            "[test_id:85007] pod with two gu cnt keep on pending because cannot align the second container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(
                app=(
                    {"cpu": "5", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "5", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "9", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier0", "unsched", "tmscope:cnt", "cpu"),
        ),
        entry(
            "[test_id:74256] guaranteed pod with multi cnt with fractional cpus keep on pending because cannot align the second container to a single numa node",
            POD_SCOPE,
            ERROR_CANNOT_ALIGN_POD,
            PodResources(
                app=(
                    {"cpu": "4300m", "memory": "4Gi", "hugepages-2Mi": "32Mi"},
                    {"cpu": "7500m", "memory": "4Gi", "hugepages-2Mi": "32Mi"},
                    {"cpu": "2500m", "memory": "4Gi"},
                )
            ),
            ({"cpu": "1"}, {"cpu": "1"}),
            (
                {"cpu": "11", "memory": "12Gi", "hugepages-2Mi": "128Mi"},
                {"cpu": "6", "memory": "12Gi", "hugepages-2Mi": "128Mi"},
            ),
            labels=("tier3", "unsched", "tmscope:pod", "cpu"),
        ),
        entry(
            "[test_id:74257] burstable pod with multi cnt with fractional cpus keep on pending because of not enough free cpus",
            POD_SCOPE,
            INSUFFICIENT_CPU,
            PodResources(
                app=(
                    {"cpu": "4300m", "hugepages-2Mi": "32Mi"},
                    {"cpu": "10"},
                    {"cpu": "3500m", "memory": "4Gi"},
                )
            ),
            ({"cpu": "1"}, {"cpu": "1"}),
            (
                {"cpu": "8", "memory": "12Gi", "hugepages-2Mi": "128Mi"},
                {"cpu": "7", "memory": "12Gi", "hugepages-2Mi": "128Mi"},
            ),
            labels=("tier3", "unsched", "tmscope:pod", "cpu", "feature:nonreg"),
            marks=(pytest.mark.nrop_profile("mno"),),
        ),
        entry(
            "[test_id:85008] pod with two gu cnt keep on pending because cannot align the second container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "7Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "4", "memory": "7Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "7Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "4", "memory": "1Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "13Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier0", "unsched", "tmscope:cnt", "memory"),
        ),
        entry(
            "[test_id:85009] pod with two gu cnt keep on pending because cannot align the second container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "16Mi", "hugepages-1Gi": "1Gi"},
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "48Mi", "hugepages-1Gi": "1Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier1", "unsched", "tmscope:cnt", "hugepages2Mi"),
        ),
        entry(
            "[test_id:85011] pod with two gu cnt keep on pending because cannot align the second container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi"},
                    {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "2Gi"},
                )
            ),
            (
                {"cpu": "1", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
                {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "32Mi", "hugepages-1Gi": "1Gi"},
            ),
            labels=("tier0", "unsched", "tmscope:cnt", "hugepages1Gi"),
        ),
        entry(
            "[test_id:54020] pod with two gu cnt requesting multiple device types keep on pending because cannot align the second container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(
                app=(
                    {"cpu": "4", "memory": "4Gi", "DEV2": "2"},
                    {"cpu": "4", "memory": "4Gi", "DEV1": "2", "DEV3": "2"},
                )
            ),
            ({"cpu": "1", "memory": "4Gi"}, {"cpu": "4", "memory": "4Gi"}),
            (
                {"cpu": "4", "memory": "4Gi", "DEV1": "1", "DEV3": "2"},
                {"cpu": "4", "memory": "4Gi", "DEV1": "1", "DEV2": "2"},
            ),
            labels=("tier2", "unsched", "tmscope:cnt", "devices"),
        ),
        entry(
            "[test_id:54019] pod with two gu cnt keep on pending because cannot align the second container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(
                app=({"cpu": "5", "memory": "4Gi", "DEV1": "3"}, {"cpu": "5", "memory": "4Gi", "DEV1": "2"})
            ),
            ({"cpu": "1", "memory": "2Gi"}, {"cpu": "2", "memory": "4Gi"}),
            ({"cpu": "5", "memory": "4Gi", "DEV1": "1"}, {"cpu": "5", "memory": "4Gi", "DEV1": "4"}),
            labels=("tier1", "unsched", "tmscope:container", "devices"),
        ),
        entry(
            "[test_id:54017] pod with two gu cnt keep on pending because cannot align the both containers on single numa",
            POD_SCOPE,
            ERROR_CANNOT_ALIGN_POD,
            PodResources(
                app=({"cpu": "8", "memory": "4Gi", "DEV1": "3"}, {"cpu": "8", "memory": "4Gi", "DEV2": "2"})
            ),
            ({"cpu": "1", "memory": "2Gi"}, {"cpu": "2", "memory": "3Gi"}),
            ({"cpu": "8", "memory": "4Gi", "DEV1": "3"}, {"cpu": "8", "memory": "4Gi", "DEV2": "2"}),
            labels=("tier1", "unsched", "tmscope:pod", "devices"),
        ),
        entry(
            "[test_id:55430] besteffort pod requesting multiple device types keep on pending because cannot align the container to a single numa node",
            POD_SCOPE,
            ERROR_CANNOT_ALIGN_POD,
            PodResources(app=({"DEV1": "3", "DEV2": "4"},)),
            (
                {"cpu": "1", "memory": "1Gi", "DEV1": "1", "DEV2": "1"},
                {"cpu": "1", "memory": "1Gi", "DEV1": "1", "DEV2": "1"},
            ),
            ({"DEV1": "1", "DEV2": "2"}, {"DEV1": "2", "DEV2": "2"}),
            labels=("tier2", "unsched", "tmscope:pod", "devices"),
        ),
        entry(
            "[test_id:55429] burstable pod requesting multiple device types keep on pending because cannot align the container to a single numa node",
            POD_SCOPE,
            ERROR_CANNOT_ALIGN_POD,
            PodResources(app=({"cpu": "1", "DEV1": "3", "DEV2": "4"},)),
            (
                {"cpu": "1", "memory": "1Gi", "DEV1": "1", "DEV2": "1"},
                {"cpu": "1", "memory": "1Gi", "DEV1": "1", "DEV2": "1"},
            ),
            (
                {"cpu": "4", "memory": "4Gi", "DEV1": "1", "DEV2": "2"},
                {"cpu": "4", "memory": "4Gi", "DEV1": "2", "DEV2": "2"},
            ),
            labels=("tier2", "unsched", "tmscope:pod", "devices"),
        ),
        entry(
            "[test_id:54023] besteffort pod requesting multiple device types keep on pending because cannot align the container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(app=({"DEV2": "2"}, {"DEV1": "2", "DEV3": "2"})),
            ({"cpu": "1", "memory": "4Gi", "DEV1": "1"}, {"cpu": "4", "memory": "4Gi", "DEV1": "1"}),
            ({"DEV1": "1", "DEV3": "2"}, {"DEV1": "1", "DEV2": "2"}),
            labels=("tier2", "unsched", "tmscope:cnt", "devices"),
        ),
        entry(
            "[test_id:54022] burstable pod requesting multiple device types keep on pending because cannot align the container to a single numa node",
            CONTAINER_SCOPE,
            ERROR_CANNOT_ALIGN_CONTAINER,
            PodResources(app=({"cpu": "4", "DEV2": "2"}, {"DEV1": "2", "DEV3": "2"})),
            ({"cpu": "1", "memory": "4Gi", "DEV2": "1"}, {"cpu": "4", "memory": "4Gi", "DEV2": "1"}),
            ({"DEV1": "1", "DEV3": "2"}, {"DEV1": "1", "DEV2": "2"}),
            labels=("tier2", "unsched", "tmscope:cnt", "devices"),
        ),
    ],
)
def test_placement_unsched_cluster_with_one_worker_nodes_suitable(
    fxt: Any,
    funcs: ScopeFuncs,
    err_msg: str,
    res: PodResources,
    unsuitable_free: Sequence[h.Resources],
    target_free_per_numa: Sequence[h.Resources],
) -> None:
    _run_table_entry(fxt, funcs, err_msg, res, unsuitable_free, target_free_per_numa)
