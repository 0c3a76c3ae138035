"""Pod overhead of a RuntimeClass and the NRT (upstream ``workload_overhead.go``).

A RuntimeClass ``test-rtclass`` with a fixed pod overhead is used by a guaranteed
deployment: the pod's own resources are accounted in one NUMA zone but its overhead is
not; and when the overhead makes the pod too big for the target node the pod stays
Pending while no NRT changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import _placement_helpers as h
import pytest
from _placement_helpers import MINUTE, q

from nrop.suite import kube as k
from nrop.suite import nrt as e2enrt
from nrop.suite import nrtconsumed, nrtupdates, objects, padding, spec, waiters
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.fixture import pop_node_name

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler] numaresources workload overhead",
    "Serial",
    "disruptive",
    "scheduler",
    "feature:overhead",
)
FIXTURE_BASENAME = "e2e-test-workload-overhead"

RUNTIME_HANDLERS = ("crun", "runc")
RTCLASS_NAME = "test-rtclass"
# the ballpark of 5x the base load is a good starting point
POD_RESOURCES = {"cpu": "6", "memory": "6Gi"}
# fractional amounts are rounded up to whole requests to stay clear of accounting corner cases
MIN_RES = {"cpu": "1", "memory": "1Gi"}


@pytest.fixture
def two_zone_candidates(fxt: Any, padder: padding.Padder) -> list[Any]:
    """The Describe's and the Context's ``BeforeEach``: single-numa-node NRTs, at least one with 2 zones."""
    nrt_list = e2enrt.list_nrts(fxt.kube)
    # any TM policy the updater handles will do: this is a proxy for "valid NRT data on X nodes"
    nrts = e2enrt.filter_by_policy(nrt_list, h.SINGLE_NUMA_NODE)
    if len(nrts) < 2:
        fxt.skip(f"not enough nodes with valid policy - found {len(nrts)}")
    log.info("filtering available nodes with at least %d NUMA zones", 2)
    candidates = e2enrt.filter_zone_count_equal(nrts, 2)
    if len(candidates) < 1:
        fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}")
    return candidates


@pytest.fixture
def rtclass(fxt: Any, two_zone_candidates: list[Any]) -> Iterator[dict[str, Any]]:
    """The When's ``BeforeEach``: RuntimeClass ``test-rtclass`` on the node's crun/runc handler, 500m/500M overhead."""
    kube = fxt.kube
    node_name = e2enrt.parse(two_zone_candidates[0]).name
    node = kube.get(k.NODE, node_name)
    handlers = [h_["name"] for h_ in (node.get("status") or {}).get("runtimeHandlers") or ()]
    handler = next((name for name in handlers if name in RUNTIME_HANDLERS), "")
    assert handler, f"no crun/runc runtime handler on node {q(node_name)}"
    log.info("creating RuntimeClass %s with handler %s (node %s)", RTCLASS_NAME, handler, node_name)
    created = kube.create(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": RTCLASS_NAME},
            "handler": handler,
            "overhead": {"podFixed": {"cpu": "500m", "memory": "500M"}},
        }
    )
    yield created
    try:  # as upstream, any failure (NotFound too) is logged, not asserted
        kube.delete(k.RUNTIMECLASS, RTCLASS_NAME, missing_ok=False)
    except k.ApiError as err:
        log.error("Unable to delete RuntimeClass %s: %s", RTCLASS_NAME, err)


def _rounded_overhead(rtclass: dict[str, Any]) -> rl.ResourceList:
    fixed = rl.of(rtclass["overhead"]["podFixed"])
    log.info("kubernetes pod fixed overhead: %s", rl.to_string(fixed))
    cpu, memory = rl.round_up_core_resources(fixed["cpu"], fixed["memory"])
    rounded = {"cpu": cpu, "memory": memory}
    log.info("kubernetes pod fixed overhead rounded to: %s", rl.to_string(rounded))
    return rounded


def _pad_zones(fxt: Any, node_name: str, nrt: Any, *, zone0_only: bool = False) -> list[dict[str, Any]]:
    """Leave ``MIN_RES`` (plus the base load on zone 0) on the node's zones (zone 0 only if asked)."""
    pods = []
    for zone_idx, zone in enumerate(e2enrt.zones_of(nrt)):
        if zone_idx == 0:  # any zone is fine for the base load
            leave = h.with_baseload(fxt.kube, node_name, MIN_RES, failure="cannot get the base load for")
        elif zone0_only:
            continue
        else:
            leave = MIN_RES
        pods.append(h.create_padding_pod(fxt, node_name, node_name, zone, leave))
    return pods


def _deployment(fxt: Any) -> dict[str, Any]:
    dp = objects.new_test_deployment(
        1, {"test": "test-dp"}, {}, fxt.namespace, "test-dp", fxt.config.pause_image
    )
    spec_ = dp["spec"]["template"]["spec"]
    spec_["schedulerName"] = fxt.config.scheduler_name
    spec_["runtimeClassName"] = RTCLASS_NAME
    objects.set_resources(dp, limits=POD_RESOURCES)
    return dp


class TestClusterWithAtLeastAWorkerNodeSuitable:
    pytestmark = spec("cluster with at least a worker node suitable")

    class TestWhenARuntimeClassExistInTheCluster:
        pytestmark = spec("when a RuntimeClass exist in the cluster")

        @spec(
            "[test_id:47582] schedule a guaranteed Pod in a single NUMA zone and check overhead is not accounted in NRT",
            "tier2",
        )
        def test_overhead_not_accounted(
            self, fxt: Any, two_zone_candidates: list[Any], rtclass: dict[str, Any]
        ) -> None:
            kube, scheduler, ns = fxt.kube, fxt.config.scheduler_name, fxt.namespace
            overhead = _rounded_overhead(rtclass)
            # a zone for the pod, its overhead and a little more so that the zone is not saturated
            zone_required = h.add(POD_RESOURCES, overhead, MIN_RES)
            log.info("kubernetes final zone required resources: %s", rl.to_string(zone_required))
            candidates = e2enrt.filter_any_zone_matching_resources(two_zone_candidates, zone_required)
            if len(candidates) < 1:
                fxt.skip(
                    f"There should be at least 1 nodes with at least {rl.to_string(zone_required)} resources: "
                    f"found {len(candidates)}"
                )
            names = e2enrt.accumulate_names(candidates)
            target = pop_node_name(names)
            assert target is not None, f"cannot select a target node among {sorted(names)}"

            log.info("padding non-target nodes")
            padding_pods = []
            for node_name in sorted(names):
                nrt = e2enrt.find(candidates, node_name)
                assert nrt is not None, f"missing NRT Info for node {q(node_name)}"
                padding_pods.extend(_pad_zones(fxt, node_name, nrt))
            h.expect_padding_pods_running(fxt, padding_pods)

            log.info("checking the resource allocation on %s as the test starts", q(target))
            nrt_initial = e2enrt.get_nrt(kube, target)

            log.info("Scheduling the testing deployment with RuntimeClass=%s", q(RTCLASS_NAME))
            dp = kube.create(_deployment(fxt))
            try:
                waiters.for_deployment_complete(kube, dp, interval=10.0, timeout=2 * MINUTE)
            except AssertionError as err:
                raise AssertionError(f'Deployment "test-dp" not up&running after 2m0s: {err}') from None

            fxt.settle_nrts()
            nrt_post_create = nrtupdates.get_updated_for_node(kube, nrt_initial, MINUTE)

            pods = h.pods_by_labels(kube, ns, {"test": "test-dp"})
            assert pods, f"cannot find any pods for DP {ns}/test-dp"
            with_overhead = h.add(POD_RESOURCES, overhead)
            for pod in pods:
                assert pod["spec"]["nodeName"] == target
                h.expect_scheduled_by(kube, pod, scheduler)
                pod_qos = objects.pod_qos(pod)
                match = nrtconsumed.check_zone_consumed_resources_at_least(
                    nrt_initial, nrt_post_create, rl.of(POD_RESOURCES), pod_qos
                )
                # the pod runs, so its resources must be accounted somewhere
                assert match, "inconsistent accounting: no resources consumed by deployment running"
                match_with_overhead = nrtconsumed.check_zone_consumed_resources_at_least(
                    nrt_initial, nrt_post_create, with_overhead, pod_qos
                )
                # but no zone may have accounted the overhead on top
                assert not match_with_overhead, (
                    f"unexpected found resource+overhead allocation accounted to zone {q(match_with_overhead)}"
                )

        @spec(
            "[test_id:53819] Pod pending when resources requested + pod overhead don't fit on the target node; "
            "NRT objects are not updated",
            "tier2",
            "unsched",
            "feature:unsched",
        )
        def test_pending_when_overhead_does_not_fit(
            self, fxt: Any, two_zone_candidates: list[Any], rtclass: dict[str, Any]
        ) -> None:
            kube, ns = fxt.kube, fxt.namespace
            names = e2enrt.accumulate_names(two_zone_candidates)
            target = pop_node_name(names)
            assert target is not None, f"cannot select a node among {sorted(names)}"
            log.info("selecting node to schedule the test pod: %s", q(target))
            target_nrt_initial = e2enrt.find(e2enrt.list_nrts(kube), target)
            assert target_nrt_initial is not None

            # the overhead: the largest per-zone allocatable of the target
            rtclass = kube.get(k.RUNTIMECLASS, RTCLASS_NAME)
            rtclass["overhead"] = {
                "podFixed": {
                    "cpu": str(e2enrt.max_allocatable_numa_level(target_nrt_initial, "cpu")),
                    "memory": str(e2enrt.max_allocatable_numa_level(target_nrt_initial, "memory")),
                }
            }
            rtclass = kube.replace(rtclass)
            overhead = _rounded_overhead(rtclass)
            zone_required = h.add(POD_RESOURCES, overhead, MIN_RES)
            log.info("kubernetes final zone required resources: %s", rl.to_string(zone_required))

            log.info("padding non-target nodes")
            padding_pods = []
            for node_name in sorted(names):
                nrt = e2enrt.find(two_zone_candidates, node_name)
                assert nrt is not None, f"missing NRT Info for node {q(node_name)}"
                padding_pods.extend(_pad_zones(fxt, node_name, nrt))
            h.expect_padding_pods_running(fxt, padding_pods)

            log.info("padding a NUMA node on the target node")
            h.expect_padding_pods_running(fxt, _pad_zones(fxt, target, target_nrt_initial, zone0_only=True))

            log.info("checking the resource allocation as the test starts")
            nrt_list_initial = nrtupdates.get_updated(kube, fxt.initial_nrts, MINUTE)

            log.info("Scheduling the testing deployment with RuntimeClass=%s", q(RTCLASS_NAME))
            dp = kube.create(_deployment(fxt))
            waiters.for_deployment_replicas_creation(kube, dp, 1, interval=1.0, timeout=MINUTE)

            pods = h.pods_by_labels(kube, ns, {"test": "test-dp"})
            assert pods, f"cannot find any pods for DP {ns}/test-dp"
            for pod in pods:
                waiters.while_in_pod_phase(
                    kube, ns, pod["metadata"]["name"], "Pending", interval=10.0, steps=3
                )

            fxt.settle_nrts()
            for initial in nrt_list_initial:
                name = initial["metadata"]["name"]
                current = e2enrt.get_nrt(kube, name)
                assert nrtconsumed.check_equal_available_resources(initial, current), (
                    f"inconsistent accounting: resources consumed by the updated pods on node {q(name)}"
                )
