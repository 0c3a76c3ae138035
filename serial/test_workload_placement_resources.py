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

import _accounting_helpers as acct
import _placement_helpers as h
import pytest
from _placement_helpers import MINUTE, q

from nrop.suite import entry, spec
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.fixture import pop_node_name

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


def _setup_nodes(
    fxt: Any, candidates: Sequence[Any], required: h.Resources, expected_free: h.Resources
) -> str:
    """``setupNodes``: non-targets keep ``expected_free`` per zone; the target fits ``required`` in zone 1 only."""
    names = e2enrt.accumulate_names(candidates)
    target = pop_node_name(names)
    assert target is not None, f"cannot select a target node among {sorted(names)}"
    log.info("selecting node to schedule the pod: %s", q(target))

    padding_pods = h.pad_nodes(fxt, candidates, sorted(names), lambda _zone: expected_free)

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
        candidates = acct.filter_nodes(
            fxt, e2enrt.list_nrts(kube), REQUIRED_NODES, REQUIRED_NUMA_ZONES, rl.of(required)
        )
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
