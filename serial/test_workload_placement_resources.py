"""Workload placement decided by one specific resource (upstream ``workload_placement_resources.go``).

Every non-target node is padded so that one resource (memory, or CPU) is short in each of
its zones while all the others are plenty; the target keeps exactly the request free in
one zone. A guaranteed pod must land on the target: the scheduler aligned it by the one
resource that differs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import _placement_helpers as h
import pytest
from _placement_helpers import MINUTE, q

from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.fixture import pop_node_name
from nrop.suite.specs import entry, spec

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler][byres] numaresources workload placement considering specific resources requests",
    "Serial",
    "disruptive",
    "scheduler",
    "byres",
    "feature:wlplacement",
    "feature:byres",
)
FIXTURE_BASENAME = "e2e-test-workload-placement-resources"

REQUIRED_NODES = 2
REQUIRED_NUMA_ZONES = 2


def _filter_nodes(fxt: Any, nrt_list: Sequence[Any], required: h.Resources) -> list[Any]:
    """``filterNodes``: 2-zone nodes with one zone able to hold the NUMA-affine part of ``required``."""
    log.info("filtering available nodes with at least %d NUMA zones", REQUIRED_NUMA_ZONES)
    candidates = e2enrt.filter_zone_count_equal(nrt_list, REQUIRED_NUMA_ZONES)
    if len(candidates) < REQUIRED_NODES:
        fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed {REQUIRED_NODES}")
    log.info(
        "filtering available nodes with allocatable resources on at least one NUMA zone that can match request"
    )
    numa_affine = {
        name: qty for name, qty in rl.of(required).items() if name not in (rl.STORAGE, rl.EPHEMERAL_STORAGE)
    }
    candidates = e2enrt.filter_any_zone_matching_resources(candidates, numa_affine)
    if len(candidates) < REQUIRED_NODES:
        fxt.skip(
            "not enough nodes with NUMA zones each of them can match requests: "
            f"found {len(candidates)}, needed: {REQUIRED_NODES}"
        )
    return candidates


def _setup_nodes(
    fxt: Any, candidates: Sequence[Any], required: h.Resources, expected_free: h.Resources
) -> str:
    """``setupNodes``: non-targets keep ``expected_free`` per zone; the target fits ``required`` in zone 1 only."""
    names = e2enrt.accumulate_names(candidates)
    target = pop_node_name(names)
    assert target is not None, f"cannot select a target node among {sorted(names)}"
    log.info("selecting node to schedule the pod: %s", q(target))

    padding_pods = []
    for node_idx, node_name in enumerate(sorted(names)):
        nrt = e2enrt.find(candidates, node_name)
        assert nrt is not None, f"missing NRT info for {q(node_name)}"
        for zone_idx, zone in enumerate(e2enrt.zones_of(nrt)):
            # any zone is fine for the base load
            leave = h.with_baseload(fxt.kube, node_name, expected_free) if zone_idx == 0 else expected_free
            name = f"padding-{node_idx}-{zone_idx}"
            padding_pods.append(h.create_padding_pod(fxt, name, node_name, zone, leave))

    target_nrt = e2enrt.find(candidates, target)
    assert target_nrt is not None, f"missing NRT info for target node {q(target)}"
    zones = e2enrt.zones_of(target_nrt)
    padding_pods.append(
        h.create_padding_pod(fxt, "padding-tgt-0", target, zones[0], h.with_baseload(fxt.kube, target, {}))
    )
    # any zone is fine for the request: zone 1 it is
    padding_pods.append(h.create_padding_pod(fxt, "padding-tgt-1", target, zones[1], required))

    h.expect_padding_pods_running(fxt, padding_pods)
    fxt.settle_nrts()
    return target


class TestWithAtLeastTwoNodesSuitable:
    pytestmark = spec("with at least two nodes suitable")

    @spec("a guaranteed pod with one container should be placed and aligned on the node", "tier0", "ressched")
    @pytest.mark.parametrize(
        "policy,scope,required,expected_free",
        [
            entry(
                "[test_id:85792] [tmscope:pod] with topology-manager-scope: pod, using memory as deciding factor",
                h.SINGLE_NUMA_NODE,
                h.SCOPE_POD,
                {"cpu": "16", "memory": "16Gi"},
                # the non-target zones lack memory only, by more than a baseload
                {"cpu": "16", "memory": "8Gi"},
                labels=("tmscope:pod",),
            ),
            entry(
                "[test_id:85793] [tmscope:pod] with topology-manager-scope: pod, using CPU as the deciding factor",
                h.SINGLE_NUMA_NODE,
                h.SCOPE_POD,
                {"cpu": "16", "memory": "16Gi"},
                # the non-target zones lack CPUs only, by more than a baseload
                {"cpu": "8", "memory": "16Gi"},
                labels=("tmscope:pod",),
            ),
        ],
    )
    def test_guaranteed_pod_placed_and_aligned(
        self, fxt: Any, policy: str, scope: str, required: h.Resources, expected_free: h.Resources
    ) -> None:
        kube, scheduler = fxt.kube, fxt.config.scheduler_name
        candidates = _filter_nodes(fxt, e2enrt.list_nrts(kube), required)
        nrts = e2enrt.filter_by_policy_and_scope(candidates, policy, scope)
        if len(nrts) != len(candidates):
            fxt.skip(
                f"not enough nodes with policy {q(policy)} and scope {q(scope)} - "
                f"required {len(candidates)}, found {len(nrts)}"
            )

        target = _setup_nodes(fxt, candidates, required, expected_free)

        pod = h.pause_pod(fxt.namespace, "testpod", fxt.config.pause_image, required)
        pod["spec"]["schedulerName"] = scheduler
        kube.create(pod)

        updated = h.wait_pod_running(
            kube, fxt.namespace, "testpod", MINUTE, 'Pod "testpod" not up&running after 1m0s'
        )
        assert updated["spec"]["nodeName"] == target
        h.expect_scheduled_by(kube, updated, scheduler)
