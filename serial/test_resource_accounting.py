"""Workload resource accounting (upstream resource_accounting.go): Guaranteed pods are
accounted in their NUMA zone of the NRT, Burstable and BestEffort pods never are; a pod
that fits the node but no single zone waits until a zone is freed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import _accounting_helpers as acct
import pytest
import yaml

from nrop.api.nrt import ATTR_TOPOLOGY_MANAGER_POLICY, ATTR_TOPOLOGY_MANAGER_SCOPE
from nrop.api.quantity import Quantity
from nrop.suite import WaitTimeout, nrtconsumed, nrtupdates, nrtwaiters, objects, spec, wait_for, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.config import MULTI_NUMA_LABEL

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler][resacct] numaresources workload resource accounting",
    "Serial",
    "disruptive",
    "scheduler",
    "resacct",
    "feature:resacct",
)
FIXTURE_BASENAME = "e2e-test-resource-accounting"

CELL_COUNT_2 = {MULTI_NUMA_LABEL: "2"}


@pytest.fixture
def nrts(fxt: Any) -> list[dict]:
    """The Describe's BeforeEach: any TM policy the updater handles would do; single-numa-node
    is the proxy for "valid NRT data on at least two nodes"."""
    nrt_list = fxt.kube.list(k8s.NRT)
    found = e2enrt.filter_by_policy(nrt_list, e2enrt.SINGLE_NUMA_NODE)
    if len(found) < 2:
        fxt.skip(f"not enough nodes with valid policy - found {len(found)}")
    return found


def _test_pod(fxt: Any, suite_config: Any, name: str) -> dict:
    pod = acct.new_test_pod(fxt.namespace, name, suite_config.pause_image)
    pod["spec"]["schedulerName"] = suite_config.scheduler_name
    pod["spec"]["nodeSelector"] = dict(CELL_COUNT_2)
    return pod


def _expect_running(fxt: Any, name: str) -> dict:
    """``ForPodPhase(Running)`` with upstream's 3 minutes ("plenty, should never timeout")."""
    try:
        return waiters.for_pod_phase(fxt.kube, fxt.namespace, name, "Running", timeout=180)
    except WaitTimeout as err:
        raise AssertionError(f"pod {fxt.namespace}/{name} not Running: {err}") from None


def _expect_scheduled_with_tas(fxt: Any, suite_config: Any, name: str) -> None:
    scheduler = suite_config.scheduler_name
    assert acct.check_pod_was_scheduled_with(fxt.kube, fxt.namespace, name, scheduler), (
        f"pod {fxt.namespace}/{name} not scheduled with expected scheduler {scheduler}"
    )


def _expect_running_with_tas(fxt: Any, suite_config: Any, name: str) -> dict:
    updated = _expect_running(fxt, name)
    _expect_scheduled_with_tas(fxt, suite_config, name)
    return updated


class TestClusterWithAtLeastAWorkerNodeSuitable:
    pytestmark = spec("cluster with at least a worker node suitable")

    @pytest.fixture
    def two_zone_nrts(self, fxt: Any, nrts: list[dict]) -> list[dict]:
        # at least 2 zones would do, but the padding logic is hardcoded for exactly 2
        found = e2enrt.filter_zone_count_equal(nrts, 2)
        if len(found) < 1:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(found)}")
        return found

    @spec(
        "[test_id:49068] should keep the pod pending if not enough resources available, then schedule when "
        "resources are freed",
        "placement",
        "tier2",
    )
    def test_pending_then_scheduled_when_freed(
        self, fxt: Any, suite_config: Any, two_zone_nrts: list[dict]
    ) -> None:
        kube = fxt.kube
        image = suite_config.pause_image
        nrt_list = kube.list(k8s.NRT)
        unsuitable_free = rl.of({"cpu": "2", "memory": "4Gi"})  # > 1 and LESS than required
        required = rl.of({"cpu": "4", "memory": "8Gi"})

        candidates = e2enrt.filter_any_zone_matching_resources(two_zone_nrts, required)
        if len(candidates) < 1:
            fxt.skip(
                f"not enough nodes with NUMA zones each of them can match requests: found {len(candidates)}"
            )
        names = e2enrt.accumulate_names(candidates)
        target = acct.pop_node_name(names)
        unsuitable = sorted(names)
        log.info("selecting target node %s and unsuitable nodes %s", target, unsuitable)

        # only the required resources fit in either zone of the target node
        nrt_info = acct.find_from_list(nrt_list, target)
        padding_pods = []
        for zone in acct.zones(nrt_info):
            pod = e2epad.make_padding_pod(fxt.namespace, "target", zone, required, image=image)
            objects.pin_pod_to(pod, target, zone["name"])
            padding_pods.append(kube.create(pod))
        assert not e2epad.wait_for_padding_pods_running(kube, padding_pods), (
            "some padding pods have failed to run"
        )
        fxt.settle_nrts()

        target_padding_pods = []
        target_before: dict = {}
        for idx, zone in enumerate(acct.zones(nrt_info)):
            if idx == len(acct.zones(nrt_info)) - 1:
                # the target NRT before the last placeholder: compared once it is deleted
                target_before = acct.find_from_list(
                    nrtupdates.get_updated(kube, nrt_list, 60, interval=fxt.config.timeouts.poll(5)), target
                )
            # a minimal pod per zone: the node as a whole still fits, no zone does
            placeholder = acct.new_test_pod(fxt.namespace, f"tgtpadpod-{zone['name']}", image)
            placeholder["spec"]["nodeName"] = target
            acct.set_resources(
                placeholder["spec"]["containers"][0], rl.of({"cpu": "1", "memory": "1Gi"}), limits=True
            )
            objects.pin_pod_to(placeholder, target, zone["name"])
            target_padding_pods.append(kube.create(placeholder))
        assert not e2epad.wait_for_padding_pods_running(kube, target_padding_pods), (
            "some padding pods have failed to run"
        )
        fxt.settle_nrts()

        for idx, node_name in enumerate(unsuitable):
            info = acct.find_from_list(nrt_list, node_name)
            for zone in acct.zones(info):
                pod = e2epad.make_padding_pod(
                    fxt.namespace, f"unsuitable{idx}", zone, unsuitable_free, image=image
                )
                objects.pin_pod_to(pod, node_name, zone["name"])
                padding_pods.append(kube.create(pod))
        failed = e2epad.wait_for_padding_pods_running(kube, padding_pods + target_padding_pods)
        assert not failed, "some padding pods have failed to run"
        fxt.settle_nrts()
        for nrt in kube.list(k8s.NRT):
            log.info("%s", acct.nrt_to_string(nrt))

        pod = _test_pod(fxt, suite_config, "testpod")
        acct.set_resources(pod["spec"]["containers"][0], required, limits=True)
        kube.create(pod)
        # "long enough" Pending means little, but Running or Failed means something is wrong
        waiters.while_in_pod_phase(kube, fxt.namespace, "testpod", "Pending", interval=10, steps=3)

        # delete the LAST placeholder: target_before is the target without it, so the test pod
        # must land on the zone it frees
        last = target_padding_pods[-1]["metadata"]["name"]
        kube.delete(k8s.POD, last, fxt.namespace, missing_ok=False)
        waiters.for_pod_deleted(kube, fxt.namespace, last, timeout=180)

        updated = _expect_running(fxt, "testpod")
        assert updated["spec"]["nodeName"] == target, (
            f"node landed on {acct.q(updated['spec']['nodeName'])} instead of on {target}"
        )
        _expect_scheduled_with_tas(fxt, suite_config, "testpod")
        fxt.settle_nrts()
        acct.expect_nrt_consumed(kube, target_before, required, updated)


@dataclass
class BurstableSetup:
    """What the second Context's BeforeEach prepares."""

    target: str
    initial: dict
    reference_list: list[dict]
    reference: dict
    requests: acct.ResList


def _subtract_baseload(res: acct.ResList, load: acct.ResList) -> acct.ResList:
    """``baseload.SubtractFrom``: every resource of the load, asserted to fit."""
    try:
        return rl.sub(res, load)
    except ValueError as err:
        raise AssertionError(f"failed deducting resources from baseload: {err}") from None


def _expect_burstable_unaccounted(
    fxt: Any, setup: BurstableSetup, pods: list[dict], scheduler: str, owner: str
) -> None:
    """The burstable pods of ``owner`` run on the target, scheduled by ``scheduler``, and the
    target's NRT shows the reference's available resources: burstable pods are not accounted."""
    kube = fxt.kube
    assert pods, f"cannot find any pods for {owner}"
    for pod in pods:
        assert pod["spec"]["nodeName"] == setup.target, (
            f"pod {acct.pod_key(pod)} is scheduled on node {acct.q(pod['spec']['nodeName'])} but expected to "
            f"be on the target node {acct.q(setup.target)}"
        )
        acct.expect_scheduled_with(kube, [pod], scheduler)

    current = acct.find_from_list(
        nrtupdates.get_updated(kube, setup.reference_list, 60, interval=fxt.config.timeouts.poll(5)),
        setup.target,
    )
    assert nrtconsumed.check_equal_available_resources(setup.reference, current), (
        "new resources are accounted in NRT although scheduling burstable pod"
    )


class TestBurstableNotAccounted:
    pytestmark = spec(
        "cluster with node/s having two numa zones, and there are enough resources on one node but not in any "
        "numa zone when trying to schedule a deployment with burstable pods"
    )

    @pytest.fixture
    def setup(self, fxt: Any, suite_config: Any, nrts: list[dict]) -> BurstableSetup:
        """1. a target node for the burstable workload; 2. every other node fully padded;
        3. the reference NRT list once padded."""
        kube = fxt.kube
        candidates = e2enrt.filter_zone_count_equal(nrts, 2)
        if len(candidates) < 1:
            fxt.skip(f"not enough nodes with at least 2 NUMA Zones: found {len(candidates)}, needed 1")
        names = e2enrt.accumulate_names(candidates)
        target = acct.pop_node_name(names)
        log.info("selecting node to schedule the test pod: %s", target)

        initial_list = kube.list(k8s.NRT)
        initial = acct.find_from_list(initial_list, target)
        load = acct.baseload_for_node(kube, target, f"missing node load info for {acct.q(target)}")
        # availableResourceType: the zones' available amounts summed
        available = {name: Quantity(0) for name in ("cpu", "memory")}
        for zone in acct.zones(initial):
            for name, qty in acct.zone_resources(zone).items():
                if name in available:
                    available[name] = available[name] + qty
        log.info("considering maximum available resources: %s", rl.to_string(available))
        requests = _subtract_baseload(available, load)
        log.info("requests: maximum available on the target minus its baseload: %s", rl.to_string(requests))

        padding_pods = acct.pad_nodes_to_baseload(
            kube, fxt.namespace, suite_config.pause_image, candidates, sorted(names), get_nodes=True
        )
        assert not e2epad.wait_for_padding_pods_running(kube, padding_pods), (
            "some padding pods have failed to run"
        )
        fxt.settle_nrts()

        reference_list = nrtupdates.get_updated(kube, initial_list, 60, interval=fxt.config.timeouts.poll(5))
        return BurstableSetup(
            target=target,
            initial=initial,
            reference_list=reference_list,
            reference=acct.find_from_list(reference_list, target),
            requests=requests,
        )

    @staticmethod
    def _expect_nrts_unchanged(fxt: Any, setup: BurstableSetup) -> None:
        nrtwaiters.for_nrts_equal_to(
            fxt.kube, setup.reference_list, timeout=60, interval=fxt.config.timeouts.poll(5)
        )

    @spec("[test_id:48685] should properly schedule a best-effort pod with no changes in NRTs", "tier1")
    def test_best_effort_pod(self, fxt: Any, suite_config: Any, setup: BurstableSetup) -> None:
        fxt.kube.create(_test_pod(fxt, suite_config, "testpod-be"))
        _expect_running_with_tas(fxt, suite_config, "testpod-be")
        self._expect_nrts_unchanged(fxt, setup)

    @spec("[test_id:48686] should properly schedule a burstable pod with no changes in NRTs", "tier1")
    def test_burstable_pod(self, fxt: Any, suite_config: Any, setup: BurstableSetup) -> None:
        pod = _test_pod(fxt, suite_config, "testpod-bu")
        acct.set_resources(pod["spec"]["containers"][0], setup.requests, limits=False)
        fxt.kube.create(pod)
        _expect_running_with_tas(fxt, suite_config, "testpod-bu")
        self._expect_nrts_unchanged(fxt, setup)

    @spec(
        "[test_id:47618] should properly schedule deployment with burstable pod with no changes in NRTs",
        "tier2",
    )
    def test_burstable_deployment(self, fxt: Any, suite_config: Any, setup: BurstableSetup) -> None:
        kube = fxt.kube
        scheduler = suite_config.scheduler_name
        pod_spec = acct.pause_pod_spec(
            "test-dp-cnt", suite_config.pause_image, scheduler=scheduler, requests=setup.requests
        )
        dp = objects.new_test_deployment_with_pod_spec(
            1, {"test": "test-dp"}, {}, fxt.namespace, "test-dp", pod_spec
        )
        log.info("create the burstable test deployment with requests %s", rl.to_string(setup.requests))
        try:
            dp = kube.create(dp)
        except k8s.ApiError as err:
            raise AssertionError(f'unable to create deployment "test-dp": {err}') from None
        try:
            dp = waiters.for_deployment_complete(kube, dp, timeout=60, interval=10)
        except (AssertionError, k8s.ApiError) as err:
            raise AssertionError(f'Deployment "test-dp" not up & running after 1m0s: {err}') from None

        # podlist ByDeployment: the selector's pods in the namespace, terminating ones too
        try:
            pods = kube.list(
                k8s.POD, fxt.namespace, label_selector=dict(dp["spec"]["selector"]["matchLabels"])
            )
        except k8s.ApiError as err:
            raise AssertionError(f'Unable to get pods from Deployment "test-dp": {err}') from None
        _expect_burstable_unaccounted(fxt, setup, pods, scheduler, f"DP {fxt.namespace}/test-dp")

    @spec(
        "[test_id:85768] should properly schedule a burstable pod when one of the containers is asking for "
        "requests=limits, with no changes in NRTs",
        "tier2",
    )
    def test_burstable_pod_with_guaranteed_container(
        self, fxt: Any, suite_config: Any, setup: BurstableSetup
    ) -> None:
        kube = fxt.kube
        pod = _test_pod(fxt, suite_config, "testpod-bu")
        load = acct.baseload_for_node(
            kube, setup.target, f"missing node load info for {acct.q(setup.target)}"
        )
        per_numa = []
        for zone in acct.zones(setup.initial):
            available = acct.zone_resources(zone)
            numa_res = {name: available[name] for name in ("cpu", "memory") if name in available}
            per_numa.append(_subtract_baseload(numa_res, load))

        containers = pod["spec"]["containers"]
        containers.append(acct.pause_container("testpod-bu-cnt2", suite_config.pause_image))
        acct.set_resources(containers[0], per_numa[0], limits=True)  # requests=limits
        acct.set_resources(containers[1], per_numa[1], limits=False)  # keeps the pod Burstable
        policy = e2enrt.attribute(setup.initial, ATTR_TOPOLOGY_MANAGER_POLICY)
        assert policy is not None, f"Unable to get {acct.q(ATTR_TOPOLOGY_MANAGER_POLICY)} attribute"
        scope = e2enrt.attribute(setup.initial, ATTR_TOPOLOGY_MANAGER_SCOPE)
        assert scope is not None, f"Unable to get {acct.q(ATTR_TOPOLOGY_MANAGER_POLICY)} attribute"
        if policy == e2enrt.SINGLE_NUMA_NODE and scope == e2enrt.SCOPE_POD:
            # both containers must fit one zone: the burstable one asks for as little as possible,
            # so the node is not filtered out by NodeResourcesFit
            containers[1]["resources"]["requests"] = {"memory": "5Mi"}
        kube.create(pod)
        _expect_running_with_tas(fxt, suite_config, "testpod-bu")
        self._expect_nrts_unchanged(fxt, setup)

    @spec(
        "[test_id:47620] should properly schedule a burstable pod with no changes in NRTs followed by a guaranteed "
        "pod that stays pending till burstable pod is deleted",
        "tier2",
    )
    def test_burstable_then_guaranteed(self, fxt: Any, suite_config: Any, setup: BurstableSetup) -> None:
        kube = fxt.kube
        burstable = _test_pod(fxt, suite_config, "testpod-first-bu")
        acct.set_resources(burstable["spec"]["containers"][0], setup.requests, limits=False)
        kube.create(burstable)
        first = _expect_running_with_tas(fxt, suite_config, "testpod-first-bu")
        self._expect_nrts_unchanged(fxt, setup)

        guaranteed = _test_pod(fxt, suite_config, "testpod-second-gu")
        zone0 = acct.zone_resources(acct.zones(setup.initial)[0])
        per_numa0 = {name: zone0[name] for name in ("cpu", "memory") if name in zone0}
        acct.set_resources(guaranteed["spec"]["containers"][0], per_numa0, limits=False)
        acct.set_resources(guaranteed["spec"]["containers"][0], per_numa0, limits=True)
        kube.create(guaranteed)
        waiters.while_in_pod_phase(kube, fxt.namespace, "testpod-second-gu", "Pending", interval=10, steps=3)
        self._expect_nrts_unchanged(fxt, setup)

        # deleting the burstable pod lets the guaranteed one run
        kube.delete(k8s.POD, "testpod-first-bu", fxt.namespace, missing_ok=False)
        second = _expect_running_with_tas(fxt, suite_config, "testpod-second-gu")
        fxt.settle_nrts()

        post_create_list = nrtupdates.get_updated(
            kube, setup.reference_list, 60, interval=fxt.config.timeouts.poll(5)
        )
        post_create = acct.find_from_list(post_create_list, first["spec"]["nodeName"])
        limits = rl.from_guaranteed_pod(second)
        scope = e2enrt.attribute(setup.initial, ATTR_TOPOLOGY_MANAGER_SCOPE)
        assert scope is not None, (
            f"Unable to find required attribute {acct.q(ATTR_TOPOLOGY_MANAGER_SCOPE)} on NRT {acct.q(setup.target)}"
        )
        # simpler to check against the initial data than the delta: both must give the same result
        match = nrtconsumed.check_consumed_resources_for_scope(
            scope, setup.initial, post_create, limits, objects.pod_qos(second)
        )
        assert match, (
            "inconsistent accounting: no resources consumed by the running pod,\n"
            f"NRT before test's pod: {yaml.safe_dump(setup.initial)} \nNRT after: {yaml.safe_dump(post_create)} \n"
            f" total required resources: {rl.to_string(limits)}"
        )

        kube.delete(k8s.POD, "testpod-second-gu", fxt.namespace, missing_ok=False)
        node = second["spec"]["nodeName"]

        # the updaters MAY be slow to report a removal: tolerate some delay
        def restored() -> bool:
            post_delete = acct.find_from_list(
                nrtupdates.get_updated(kube, post_create_list, 60, interval=fxt.config.timeouts.poll(5)), node
            )
            return nrtconsumed.check_equal_available_resources(setup.initial, post_delete)

        wait_for(
            restored, bool, f"resources restored on {acct.q(node)}", 60, interval=fxt.config.timeouts.poll(5)
        )

    @spec(
        "[test_id:49071] should properly schedule daemonset with burstable pod with no changes in NRTs",
        "tier2",
    )
    def test_burstable_daemonset(self, fxt: Any, suite_config: Any, setup: BurstableSetup) -> None:
        kube = fxt.kube
        scheduler = suite_config.scheduler_name
        pod_spec = acct.pause_pod_spec(
            "test-ds-cnt", suite_config.pause_image, scheduler=scheduler, requests=setup.requests
        )
        ds = objects.new_test_daemonset_with_pod_spec(
            {"test": "test-ds"},
            {objects.HOSTNAME_LABEL: setup.target},
            fxt.namespace,
            "test-ds",
            pod_spec,
        )
        log.info("create the burstable test daemonset with requests %s", rl.to_string(setup.requests))
        try:
            kube.create(ds)
        except k8s.ApiError as err:
            raise AssertionError(f'unable to create daemonset "test-ds": {err}') from None
        try:
            ds = waiters.for_daemonset_ready(
                kube, fxt.namespace, "test-ds", timeout=60, interval=fxt.config.timeouts.poll(10)
            )
        except (AssertionError, k8s.ApiError) as err:
            raise AssertionError(f'Daemonset "test-ds" not up & running after 1m0s: {err}') from None

        # podlist ByDaemonset: the selector's pods in every namespace, terminating ones too
        try:
            pods = kube.list(k8s.POD, label_selector=dict(ds["spec"]["selector"]["matchLabels"]))
        except k8s.ApiError as err:
            raise AssertionError(f'Unable to get pods from Daemonset "test-ds": {err}') from None
        _expect_burstable_unaccounted(fxt, setup, pods, scheduler, f"DS {fxt.namespace}/test-ds")
        kube.delete(k8s.DAEMONSET, "test-ds", fxt.namespace, missing_ok=False)
