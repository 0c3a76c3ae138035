"""Placement non-regression (upstream non_regression.go): pods pinned with ``nodeName`` bypass
any scheduler yet are accounted in the NRT; a pod larger than any NUMA zone stays pending
without touching the NRT; a deployment scales up until every NUMA zone holds one replica.
"""

from __future__ import annotations

import logging
from typing import Any

import _accounting_helpers as acct
import _node_helpers as nodeh
import pytest
import yaml

from nrop.api.nrt import ATTR_TOPOLOGY_MANAGER_SCOPE
from nrop.suite import (
    WaitTimeout,
    fixture,
    nrtconsumed,
    nrtupdates,
    objects,
    scheduling,
    spec,
    wait_for,
    waiters,
)
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.config import MULTI_NUMA_LABEL

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler] numaresources workload placement",
    "Serial",
    "disruptive",
    "scheduler",
    "feature:nonreg",
)
FIXTURE_BASENAME = "e2e-test-non-regression"

PAD_TIMEOUT = 300.0


@pytest.fixture
def nrts(fxt: Any, padder: e2epad.Padder) -> list[dict]:
    """The Describe's BeforeEach: at least two 2-zone nodes with single-numa-node policy."""
    candidates = e2enrt.filter_zone_count_equal(fxt.kube.list(k8s.NRT), 2)
    if len(candidates) < 2:
        fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}")
    # any TM policy the updater handles would do: this is the proxy for "valid NRT data"
    found = e2enrt.filter_by_policy(candidates, e2enrt.SINGLE_NUMA_NODE)
    if len(found) < 2:
        fxt.skip(f"not enough nodes with valid policy - found {len(found)}")
    return found


class TestClusterHasAtLeastOneSuitableNode:
    pytestmark = spec("cluster has at least one suitable node")

    @pytest.fixture(autouse=True)
    def _pad_all_but_one(self, nrts: list[dict], padder: e2epad.Padder) -> None:
        padder.nodes(len(nrts) - 1).until_available_is_resource_list_per_zone(
            {"cpu": "2", "memory": "4G"}
        ).pad(PAD_TIMEOUT, label_selector=f"{MULTI_NUMA_LABEL}=2")

    @spec("[test_id:47584] should be able to schedule guaranteed pod in selective way", "tier2")
    def test_guaranteed_pod_selective(self, fxt: Any, suite_config: Any, nrts: list[dict]) -> None:
        kube = fxt.kube
        target = acct.pop_node_name(e2enrt.accumulate_names(nrts))
        nrt_initial = kube.get(k8s.NRT, target)

        pod = acct.new_test_pod(fxt.namespace, "testpod", suite_config.pause_image)
        pod["spec"]["nodeName"] = target  # explicitly where the pod lands
        pod["spec"]["schedulerName"] = "foo"  # a scheduler that does not exist: nobody schedules it
        required = rl.of({"cpu": "2", "memory": "100Mi"})
        acct.set_resources(pod["spec"]["containers"][0], required, limits=False)
        acct.set_resources(pod["spec"]["containers"][0], required, limits=True)
        kube.create(pod)

        try:
            updated = waiters.for_pod_phase(kube, fxt.namespace, "testpod", "Running", timeout=PAD_TIMEOUT)
        except WaitTimeout as err:
            raise AssertionError(f"pod {fxt.namespace}/testpod not Running: {err}") from None
        assert updated["spec"]["nodeName"] == target, (
            f"node landed on {acct.q(updated['spec']['nodeName'])} instead of on {target}"
        )
        fxt.settle_nrts()

        limits = rl.from_container_limits(updated["spec"]["containers"])
        nrt_post_create = acct.expect_nrt_consumed(kube, nrt_initial, limits, updated)

        kube.delete(k8s.POD, "testpod", fxt.namespace, missing_ok=False)
        # the updaters MAY be slow to report a removal: tolerate some delay
        nrt_post_delete = nrtupdates.get_updated_for_node(
            kube, nrt_post_create, 60, interval=fxt.config.timeouts.poll(5)
        )
        assert nrtconsumed.check_equal_available_resources(nrt_initial, nrt_post_delete), (
            f"NRT resources not restored correctly on {acct.q(target)}"
        )

    @spec(
        "[test_id:48964] should be able to schedule a guaranteed deployment pod to a specific node", "tier3"
    )
    def test_guaranteed_deployment_to_specific_node(
        self, fxt: Any, suite_config: Any, nrts: list[dict]
    ) -> None:
        kube = fxt.kube
        nrt_initial_list = kube.list(k8s.NRT)
        workers = nodeh.worker_nodes(kube)
        target_idx, ok = fixture.pick_node_index(workers)
        assert ok
        target = workers[target_idx]["metadata"]["name"]

        # the scheduler name does not matter: the pod is pinned to the node
        non_existing_scheduler = "foo"
        required = rl.of({"cpu": "2", "memory": "100Mi"})
        pod_spec = acct.pause_pod_spec(
            "testdp-cnt",
            suite_config.pause_image,
            scheduler=non_existing_scheduler,
            limits=required,
            requests=required,
        )
        del pod_spec["terminationGracePeriodSeconds"]
        pod_spec["nodeName"] = target
        dp = objects.new_test_deployment_with_pod_spec(
            1, {"test": "test-dp"}, None, fxt.namespace, "testdp", pod_spec
        )
        dp = kube.create(dp)
        updated_dp = waiters.for_deployment_complete(kube, dp, timeout=60, interval=10)

        nrt_post_create_list = nrtupdates.get_updated(
            kube, nrt_initial_list, 60, interval=fxt.config.timeouts.poll(5)
        )
        pods = waiters.pods_of_workload(kube, updated_dp)
        assert len(pods) == 1, acct.describe_pods(pods)
        updated = pods[0]
        node = updated["spec"]["nodeName"]
        assert node == target, f"node landed on {acct.q(node)} instead of on {target}"
        assert not acct.check_pod_was_scheduled_with(
            kube, fxt.namespace, updated["metadata"]["name"], non_existing_scheduler
        ), (
            f"pod {acct.pod_key(updated)} not assigned to a specific node without a scheduler {non_existing_scheduler}"
        )

        limits = rl.from_container_limits(updated["spec"]["containers"])
        nrt_initial = acct.find_from_list(nrt_initial_list, node)
        fxt.settle_nrts()
        nrt_post_create = acct.find_from_list(nrt_post_create_list, node)
        scope = e2enrt.attribute(nrt_initial, ATTR_TOPOLOGY_MANAGER_SCOPE)
        assert scope is not None, (
            f"Unable to get required attribute {acct.q(ATTR_TOPOLOGY_MANAGER_SCOPE)} from NRT {acct.q(node)}"
        )
        match = nrtconsumed.check_consumed_resources_for_scope(
            scope, nrt_initial, nrt_post_create, limits, objects.pod_qos(updated)
        )
        assert match, (
            "inconsistent accounting: no resources consumed by the running pod,\n"
            f"NRT before test's pod: {yaml.safe_dump(nrt_initial)} \nNRT after: {yaml.safe_dump(nrt_post_create)} \n"
            f" total required resources: {rl.to_string(limits)}"
        )

        kube.delete(k8s.DEPLOYMENT, "testdp", fxt.namespace, missing_ok=False)

        # the updaters MAY be slow to report a removal: tolerate some delay
        def restored() -> bool:
            try:
                post_delete_list = nrtupdates.get_updated(
                    kube, nrt_post_create_list, 60, interval=fxt.config.timeouts.poll(5)
                )
            except WaitTimeout as err:
                # upstream's Expect inside the Eventually: fails the spec at once, not retried
                raise AssertionError(str(err)) from None
            return nrtconsumed.check_equal_available_resources(
                nrt_initial, acct.find_from_list(post_delete_list, node)
            )

        try:
            wait_for(
                restored,
                bool,
                f"resources restored on {acct.q(node)}",
                60,
                interval=fxt.config.timeouts.poll(5),
            )
        except WaitTimeout as err:
            raise AssertionError(f"resources not restored on {acct.q(node)}\n{err}") from None


class TestRequestingResourcesThatAreGreaterThanAllocatableAtNumaLevel:
    pytestmark = spec("Requesting resources that are greater than allocatable at numa level")

    @spec(
        "[test_id:47613] should not schedule a pod requesting resources that are not allocatable at numa level",
        "tier3",
        "nonreg",
        "unsched",
        "feature:unsched",
    )
    def test_not_allocatable_at_numa_level(self, fxt: Any, suite_config: Any, nrts: list[dict]) -> None:
        kube = fxt.kube
        names = e2enrt.accumulate_names(nrts)
        target = acct.pop_node_name(names)
        log.info("selecting node to schedule the test pod: %s", target)

        # pad the non-target nodes, leaving room for the baseload only
        padding_pods = acct.pad_nodes_to_baseload(
            kube, fxt.namespace, suite_config.pause_image, nrts, sorted(names)
        )
        failed = e2epad.wait_for_padding_pods_running(kube, padding_pods)
        assert not failed, "some padding pods have failed to run"
        fxt.settle_nrts()

        target_initial_list = kube.list(k8s.NRT)
        target_initial = acct.find_from_list(target_initial_list, target)
        required = {
            "cpu": e2enrt.max_allocatable_numa_level(target_initial, "cpu"),
            "memory": e2enrt.max_allocatable_numa_level(target_initial, "memory"),
        }
        # a little more than any zone's allocatable
        required = rl.add(required, rl.of({"cpu": "1", "memory": "100Mi"}))

        pod = acct.new_test_pod(fxt.namespace, "testpod", suite_config.pause_image)
        pod["spec"]["schedulerName"] = suite_config.scheduler_name
        acct.set_resources(pod["spec"]["containers"][0], required, limits=True)
        log.info("requested resources of the test pod: %s", rl.to_string(required))
        kube.create(pod)

        waiters.while_in_pod_phase(kube, fxt.namespace, "testpod", "Pending", interval=10, steps=3)
        fxt.settle_nrts()

        post_list = nrtupdates.get_updated(
            kube, target_initial_list, 60, interval=fxt.config.timeouts.poll(5)
        )
        post = acct.find_from_list(post_list, target)
        assert nrtconsumed.check_equal_available_resources(target_initial, post), (
            "new changes were detected in the nrt of the target node, but expected no change"
        )


class TestWithSuitableNodes:
    pytestmark = spec("with suitable nodes")

    @spec(
        "[test_id:85779] should handle deployment scaleup such as nodes can be fully utilized",
        "tier2",
        "nonreg",
    )
    def test_deployment_scaleup_full_utilization(self, fxt: Any, suite_config: Any, nrts: list[dict]) -> None:
        kube = fxt.kube
        needed_nodes = 2
        # "high enough" for the infra pods to run comfortably
        expected_free = rl.of({"cpu": "6", "memory": "6Gi"})
        candidates = e2enrt.filter_any_zone_matching_resources(nrts, expected_free)
        if len(candidates) < needed_nodes:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed {needed_nodes}")
        # all zones assumed equal: the workload pods almost saturate a NUMA zone
        required = e2epad.saturate_zone_until_left(acct.zones(nrts[0])[0], expected_free)
        fxt.settle_nrts()

        dp_name = "test-dp-scaleup"
        replicas = len(candidates)  # then one replica per NUMA zone
        nrs = scheduling.check_nro_scheduler_available(kube, suite_config.nrosched["metadata"]["name"])
        scheduler = nrs["status"]["schedulerName"]
        pod_spec = acct.pause_pod_spec(
            f"{dp_name}-cnt",
            suite_config.pause_image,
            scheduler=scheduler,
            limits=required,
            requests=required,
        )
        del pod_spec["terminationGracePeriodSeconds"]
        dp = objects.new_test_deployment_with_pod_spec(
            replicas,
            {"test": dp_name},
            {MULTI_NUMA_LABEL: "2"},
            fxt.namespace,
            dp_name,
            pod_spec,
        )
        dp = kube.create(dp)
        dp = waiters.for_deployment_replicas_readiness(kube, dp, replicas, timeout=60)

        pods = waiters.pods_of_workload(kube, dp)
        assert pods, f"cannot find any pods for DP {fxt.namespace}/{dp_name}"
        error_pods = 0
        for pod in pods:
            if not acct.check_pod_was_scheduled_with(kube, fxt.namespace, pod["metadata"]["name"], scheduler):
                error_pods += 1
                log.info("pod %s was NOT scheduled with %s", acct.pod_key(pod), scheduler)
        assert error_pods == 0, f"some pods not scheduled with {scheduler}"

        replicas *= 2
        kube.patch(k8s.DEPLOYMENT, dp_name, {"spec": {"replicas": replicas}}, fxt.namespace)
        waiters.for_deployment_replicas_readiness(kube, dp, replicas, timeout=300, interval=30)
        fxt.settle_nrts()
