"""Workload placement considering taints (upstream ``workload_placement_taint.go``).

Every worker is tainted ``testkey:NoSchedule`` and all 2-zone single-numa-node nodes but
one are padded to 1 CPU / 4G per zone: a guaranteed pod tolerating the taint must land on
the one node left. The taint is removed twice afterwards and no worker may keep a taint.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import _accounting_helpers as acct
import _node_helpers as nodeh
import _placement_helpers as h
import _polling_helpers as polling
import pytest
from _placement_helpers import MINUTE, MULTI_NUMA_LABEL, q

from nrop.api.tolerations import parse_taint
from nrop.suite import kube as k
from nrop.suite import nrt as e2enrt
from nrop.suite import padding, spec, waiters
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.fixture import pop_node_name

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler] numaresources workload placement considering taints",
    "Serial",
    "disruptive",
    "scheduler",
    "feature:wlplacement",
    "feature:taint",
)
FIXTURE_BASENAME = "e2e-test-workload-placement"

PAD_TIMEOUT = 5 * MINUTE
PAD_LEAVE = {"cpu": "1", "memory": "4G"}
TEST_TAINT = f"{nodeh.TEST_KEY}:NoSchedule"


@pytest.fixture
def nrts(fxt: Any, padder: padding.Padder) -> list[Any]:
    """The Describe's ``BeforeEach``: at least two 2-zone nodes with single-numa-node NRT data."""
    nrt_list = e2enrt.list_nrts(fxt.kube)
    candidates = e2enrt.filter_zone_count_equal(nrt_list, 2)
    if len(candidates) < 2:
        fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}")
    # any TM policy the updater handles will do: this is a proxy for "valid NRT data on X nodes"
    found = e2enrt.filter_by_policy(candidates, h.SINGLE_NUMA_NODE)
    if len(found) < 2:
        fxt.skip(f"not enough nodes with valid policy - found {len(found)}")
    return found


@dataclass
class Tainted:
    taint: dict[str, str]
    node_names: list[str] = field(default_factory=list)


def _check_nodes_untainted(kube: k.Kube, node_names: list[str], target: str) -> None:
    """``checkNodesUntainted`` (3m, poll 10s per node): no taint at all is left."""
    for name in node_names:

        def problem(name: str = name) -> str | None:
            taints = (kube.get(k.NODE, name).get("spec") or {}).get("taints") or []
            return f"node {q(name)} has unexpected taints: {taints}" if taints else None

        polling.eventually(problem, f"node {name} without taints", 3 * MINUTE, polling.poll(target, 10))


@pytest.fixture
def tainted(fxt: Any, padder: padding.Padder, nrts: list[Any]) -> Iterator[Tainted]:
    """The When's ``BeforeEach``/``AfterEach``: pad all but one node, taint every worker; undo it all."""
    kube, target = fxt.kube, fxt.config.target
    log.info("padding the nodes before test start")
    padder.nodes(len(nrts) - 1).until_available_is_resource_list_per_zone(PAD_LEAVE).pad(
        PAD_TIMEOUT, label_selector=f"{MULTI_NUMA_LABEL}=2"
    )
    state = Tainted(parse_taint(TEST_TAINT))
    try:
        for node in nodeh.worker_nodes(kube):
            nodeh.apply_taint_to_node(kube, node["metadata"]["name"], state.taint, target=target)
            state.node_names.append(node["metadata"]["name"])
        log.info("considering nodes: %s tainted with %s", state.node_names, q(TEST_TAINT))
        yield state
    finally:
        # first untaint the nodes we know we tainted, then every worker: leaking taints is especially bad
        nodeh.untaint_nodes(kube, state.node_names, state.taint, target=target)
        worker_names = [node["metadata"]["name"] for node in nodeh.worker_nodes(kube)]
        nodeh.untaint_nodes(kube, worker_names, state.taint, target=target)
        log.info("unpadding the nodes after test finish")
        padder.clean()
        # intentionally last
        _check_nodes_untainted(kube, worker_names, target)


class TestWhenClusterHasTwoFeasibleNodesWithTaint:
    pytestmark = spec(
        "when cluster has two feasible nodes with taint but only one has the requested resources on a single NUMA zone"
    )

    @spec(
        "[test_id:47594] should make a pod with a toleration land on a node with enough resources on a specific "
        "NUMA zone",
        "tier1",
    )
    def test_pod_with_toleration(
        self, fxt: Any, padder: padding.Padder, nrts: list[Any], tainted: Tainted
    ) -> None:
        kube, scheduler, ns = fxt.kube, fxt.config.scheduler_name, fxt.namespace
        targets = e2enrt.accumulate_names(nrts) - set(padder.get_padded_nodes())
        assert len(targets) == 1, "could not find the target node"
        target = pop_node_name(targets)
        assert target is not None
        log.info("target node will be %s", q(target))
        nrt_initial = e2enrt.get_nrt(kube, target)

        required = {"cpu": "4", "memory": "100Mi"}
        pod = h.pause_pod(ns, "testpod", fxt.config.pause_image)
        pod["spec"]["tolerations"] = nodeh.test_toleration()
        pod["spec"]["schedulerName"] = scheduler
        pod["spec"]["containers"][0]["resources"] = {
            "requests": rl.to_manifest(rl.of(required)),
            "limits": rl.to_manifest(rl.of(required)),
        }
        kube.create(pod)

        updated = h.wait_pod_running(kube, ns, "testpod", PAD_TIMEOUT, "waiting for the pod to be running")
        node = updated["spec"]["nodeName"]
        assert node == target, f"node landed on {q(node)} instead of on {target}"
        h.expect_scheduled_by(kube, updated, scheduler)

        fxt.settle_nrts()
        used = rl.from_guaranteed_pod(updated)
        nrt_post_create = acct.expect_nrt_consumed(kube, nrt_initial, used, updated)

        kube.delete(k.POD, "testpod", ns)
        waiters.for_pod_deleted(kube, ns, "testpod", timeout=3 * MINUTE)
        h.expect_resources_restored(fxt, node, nrt_initial, nrt_post_create)
