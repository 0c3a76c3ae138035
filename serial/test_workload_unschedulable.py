"""Unschedulable workloads (upstream workload_unschedulable.go): pods, deployments and
daemonsets whose Guaranteed pods fit a node but no single NUMA zone stay pending with the
NUMA-aware scheduler's "cannot align" reason (the default scheduler lets the kubelet reject
them with TopologyAffinityError), and nothing is accounted in the NRT.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _accounting_helpers as acct
import _polling_helpers as polling
import pytest
import yaml

from nrop.api.nrt import ATTR_TOPOLOGY_MANAGER_SCOPE
from nrop.api.quantity import Quantity
from nrop.suite import WaitTimeout, nrtconsumed, nrtupdates, nrtwaiters, objects, scheduling, spec, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.config import MULTI_NUMA_LABEL
from nrop.suite.e2e.fixture import pop_node_name

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler] numaresources workload unschedulable",
    "Serial",
    "disruptive",
    "scheduler",
    "feature:unsched",
)
FIXTURE_BASENAME = "e2e-test-workload-unschedulable"

REQUIRED_NUMA_ZONES = 2  # exactly 2, as upstream
CELL_COUNT_2 = {MULTI_NUMA_LABEL: "2"}


@dataclass
class Cluster:
    """The Describe's BeforeEach: the NRT list, the 2-zone single-numa-node NRTs and the scope."""

    nrt_list: list[dict]
    nrts: list[dict]
    tm_scope: str


@pytest.fixture
def cluster(fxt: Any, padder: e2epad.Padder) -> Cluster:
    nrt_list = fxt.kube.list(k8s.NRT)
    # any TM policy the updater handles would do: the proxy for "valid NRT data"
    nrts = e2enrt.filter_by_policy(nrt_list, e2enrt.SINGLE_NUMA_NODE)
    if len(nrts) < 2:
        fxt.skip(f"not enough nodes with valid policy - found {len(nrts)}")
    nrts = e2enrt.filter_zone_count_equal(nrts, REQUIRED_NUMA_ZONES)
    if len(nrts) < REQUIRED_NUMA_ZONES:
        fxt.skip(f"not enough nodes with {REQUIRED_NUMA_ZONES} NUMA zones - found {len(nrts)}")
    # the same policy is expected on every NRT
    scope = e2enrt.attribute(nrts[0], ATTR_TOPOLOGY_MANAGER_SCOPE)
    assert scope is not None, f"Unable to find required Attribute {acct.q(ATTR_TOPOLOGY_MANAGER_SCOPE)}"
    return Cluster(nrt_list=nrt_list, nrts=nrts, tm_scope=scope)


def _sched_namespace(suite_config: Any) -> str:
    return str(((suite_config.nrosched.get("status") or {}).get("deployment") or {}).get("namespace") or "")


def _expect_failed_alignment(fxt: Any, suite_config: Any, pod: dict, scope: str, *dump_pods: dict) -> None:
    kube = fxt.kube
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    scheduler = suite_config.scheduler_name
    try:
        failed = acct.check_pod_scheduling_failed_for_alignment(kube, namespace, name, scheduler, scope)
    except AssertionError:
        waiters.log_events_for_pod(kube, namespace, name)
        raise
    if not failed:
        scheduling.dump_scheduler_logs(kube, _sched_namespace(suite_config), dump_pods)
    assert failed, f"pod {namespace}/{name} with scheduler {scheduler} did NOT fail"


def _pad_leaving(
    fxt: Any, suite_config: Any, node_names: list[str], nrts: list[dict], leave: acct.ResList, name_fmt: str
) -> list[dict]:
    """Pad each zone of each node to leave ``leave`` (plus the node's baseload on zone 0)."""
    kube = fxt.kube
    pods = []
    for node_idx, node_name in enumerate(node_names):
        info = acct.find_from_list(nrts, node_name)
        load = acct.baseload_for_node(kube, node_name)
        for zone_idx, zone in enumerate(acct.zones(info)):
            zone_res = rl.add(leave, load) if zone_idx == 0 else dict(leave)  # any zone is fine
            name = name_fmt.format(node=node_name, node_idx=node_idx, zone_idx=zone_idx)
            log.info("padding pod %s on %s zone %s", name, node_name, zone["name"])
            pod = e2epad.make_padding_pod(fxt.namespace, name, zone, zone_res, image=suite_config.pause_image)
            objects.pin_pod_to(pod, node_name, zone["name"])
            pods.append(kube.create(pod))
    return pods


def _fully_pad(fxt: Any, suite_config: Any, node_names: list[str], nrts: list[dict]) -> list[dict]:
    """Zone 0 left with nothing, the other zones with the node's baseload."""
    return acct.pad_nodes_to_baseload(fxt.kube, fxt.namespace, suite_config.pause_image, nrts, node_names)


def _test_deployment(
    fxt: Any, suite_config: Any, name: str, labels: dict, scheduler: str, limits: acct.ResList
) -> dict:
    pod_spec = acct.pause_pod_spec(
        f"{name}-cnt", suite_config.pause_image, scheduler=scheduler, limits=limits
    )
    return objects.new_test_deployment_with_pod_spec(1, labels, {}, fxt.namespace, name, pod_spec)


def _test_daemonset(fxt: Any, suite_config: Any, limits: acct.ResList) -> dict:
    pod_spec = acct.pause_pod_spec(
        "test-ds-cnt", suite_config.pause_image, scheduler=suite_config.scheduler_name, limits=limits
    )
    return objects.new_test_daemonset_with_pod_spec(
        {"test": "test-daemonset"}, CELL_COUNT_2, fxt.namespace, "test-ds", pod_spec
    )


def _for_daemonset_pods(fxt: Any, ds: dict, count: int) -> list[dict]:
    """``ForDaemonsetPodsCreation`` (1 s / 1 min): the DaemonSet wants ``count`` pods; its pods."""
    name = ds["metadata"]["name"]
    ds = waiters.for_daemonset_pods(fxt.kube, fxt.namespace, name, count, interval=1, timeout=60)
    pods = waiters.pods_of_workload(fxt.kube, ds)
    assert pods, f"cannot find any pods for DS {fxt.namespace}/{name}"
    return pods


def _deployment_pods(fxt: Any, dp: dict, replicas: int) -> list[dict]:
    """``ForDeploymentReplicasCreation`` (1 s / 1 min), then the Deployment's pods."""
    dp = waiters.for_deployment_replicas_creation(fxt.kube, dp, replicas, interval=1, timeout=60)
    pods = waiters.pods_of_workload(fxt.kube, dp)
    assert pods, f"cannot find any pods for DP {fxt.namespace}/{dp['metadata']['name']}"
    return pods


def _get_updated(fxt: Any, reference: list[dict]) -> list[dict]:
    """``GetUpdated(..., 1 min)`` at the suite's NRT update poll interval."""
    return nrtupdates.get_updated(fxt.kube, reference, 60, interval=fxt.config.timeouts.nrt_update_interval)


def _pop_target(names: set[str], message: str) -> str:
    """``PopNodeName`` with its ``ok`` asserted (``message``)."""
    listed = sorted(names)
    target = pop_node_name(names)
    assert target is not None, f"{message} among {listed}"
    return target


class TestWithNoSuitableNode:
    pytestmark = spec("with no suitable node")

    REQUIRED = rl.of({"cpu": "16", "memory": "16Gi"})
    # 3/4 of the request: a node holds it, no zone does
    LEAVE = rl.of({"cpu": "12", "memory": "12Gi"})

    @pytest.fixture
    def candidates(self, fxt: Any, suite_config: Any, cluster: Cluster) -> list[dict]:
        candidates = e2enrt.filter_zone_count_equal(cluster.nrts, REQUIRED_NUMA_ZONES)
        if len(candidates) < 1:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed 1")
        names = sorted(e2enrt.accumulate_names(candidates))
        pods = _pad_leaving(fxt, suite_config, names, candidates, self.LEAVE, "padding{node}-{zone_idx}")
        assert not e2epad.wait_for_padding_pods_running(fxt.kube, pods), (
            "some padding pods have failed to run"
        )
        fxt.settle_nrts()
        _get_updated(fxt, cluster.nrt_list)
        return candidates

    @spec(
        "[test_id:47617] workload requests guaranteed pod resources available on one node but not on a single numa",
        "tier2",
        "unsched",
        "failalign",
    )
    def test_pod(self, fxt: Any, suite_config: Any, cluster: Cluster, candidates: list[dict]) -> None:
        pod = acct.new_test_pod(fxt.namespace, "testpod", suite_config.pause_image)
        pod["spec"]["schedulerName"] = suite_config.scheduler_name
        acct.set_resources(pod["spec"]["containers"][0], self.REQUIRED, limits=True)
        pod = fxt.kube.create(pod)
        waiters.while_in_pod_phase(fxt.kube, fxt.namespace, "testpod", "Pending", interval=10, steps=3)
        fxt.settle_nrts()
        _expect_failed_alignment(fxt, suite_config, pod, cluster.tm_scope, pod)

    @spec(
        "[test_id:48963] a deployment with a guaranteed pod resources available on one node but not on a single "
        "numa",
        "tier2",
        "unsched",
        "failalign",
    )
    def test_deployment(self, fxt: Any, suite_config: Any, cluster: Cluster, candidates: list[dict]) -> None:
        dp = _test_deployment(
            fxt,
            suite_config,
            "test-dp",
            {"test": "test-deployment"},
            suite_config.scheduler_name,
            self.REQUIRED,
        )
        pods = _deployment_pods(fxt, fxt.kube.create(dp), 1)
        fxt.settle_nrts()
        for pod in pods:
            _expect_failed_alignment(fxt, suite_config, pod, cluster.tm_scope, pod)

    @spec(
        "[test_id:48962] a daemonset with a guaranteed pod resources available on one node but not on a single "
        "numa",
        "tier2",
        "unsched",
        "failalign",
    )
    def test_daemonset(self, fxt: Any, suite_config: Any, cluster: Cluster, candidates: list[dict]) -> None:
        ds = _test_daemonset(fxt, suite_config, self.REQUIRED)
        fxt.kube.create(ds)
        pods = _for_daemonset_pods(fxt, ds, len(candidates))
        fxt.settle_nrts()
        for pod in pods:
            _expect_failed_alignment(fxt, suite_config, pod, cluster.tm_scope)

    @spec(
        "[test_id:47619] a deployment with a guaranteed pod resources available on one node but not on a single "
        "numa; scheduled by default scheduler",
        "tier3",
        "unsched",
        "default-scheduler",
    )
    def test_deployment_default_scheduler(
        self, fxt: Any, suite_config: Any, cluster: Cluster, candidates: list[dict]
    ) -> None:
        kube = fxt.kube
        name = "test-dp-with-default-sched"
        dp = _test_deployment(
            fxt,
            suite_config,
            name,
            {"test": "test-deployment-with-default-sched"},
            "default-scheduler",
            self.REQUIRED,
        )
        pods = _deployment_pods(fxt, kube.create(dp), 1)
        for pod in pods:
            namespace, pod_name = pod["metadata"]["namespace"], pod["metadata"]["name"]

            def rejected(ns: str = namespace, nm: str = pod_name) -> str | None:
                try:
                    check = scheduling.check_pod_kubelet_reject_with_topology_affinity_error(kube, ns, nm)
                except scheduling.NoEventsError as err:
                    waiters.log_events_for_pod(kube, ns, nm)
                    return str(err)
                return None if check else str(check)

            polling.eventually(
                rejected,
                f"pod {namespace}/{pod_name} with scheduler default-scheduler did NOT fail",
                60,
                fxt.config.timeouts.poll(1),
            )


class TestWithAtLeastTwoNodesWithTwoNumaZonesAndEnoughResourcesInOneNumaZone:
    pytestmark = spec("with at least two nodes with two numa zones and enough resources in one numa zone")

    @spec(
        "[test_id:47592] a daemonset with a guaranteed pod resources available on one node/one single numa zone but "
        "not in any other node",
        "tier2",
        "unsched",
        "failalign",
    )
    def test_daemonset_one_node(self, fxt: Any, suite_config: Any, cluster: Cluster) -> None:
        kube = fxt.kube
        candidates = e2enrt.filter_zone_count_equal(cluster.nrts, REQUIRED_NUMA_ZONES)
        if len(candidates) < 2:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed 2")
        names = e2enrt.accumulate_names(candidates)
        target = _pop_target(names, "unable to get targetNodeName")
        required = rl.of({"cpu": "16", "memory": "16Gi"})
        leave = rl.of({"cpu": "12", "memory": "12Gi"})
        pods = _pad_leaving(
            fxt, suite_config, sorted(names), candidates, leave, "padding{node_idx}-{zone_idx}"
        )
        assert not e2epad.wait_for_padding_pods_running(kube, pods), "some padding pods have failed to run"
        fxt.settle_nrts()
        target_before = acct.find_from_list(_get_updated(fxt, cluster.nrt_list), target)

        ds = _test_daemonset(fxt, suite_config, required)
        kube.create(ds)
        _for_daemonset_pods(fxt, ds, len(candidates))
        fxt.settle_nrts()
        ds_pods = waiters.pods_of_workload(kube, ds)  # listed once bound: a pod's node is known only then

        scheduler = suite_config.scheduler_name
        for pod in ds_pods:
            namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            if pod["spec"].get("nodeName") == target:
                try:
                    with_tas = acct.check_pod_was_scheduled_with(kube, namespace, name, scheduler)
                except AssertionError:
                    waiters.log_events_for_pod(kube, namespace, name)
                    raise
                assert with_tas, f"pod {namespace}/{name} was NOT scheduled with  {scheduler}"
                try:
                    waiters.for_pod_phase(kube, namespace, name, "Running", timeout=180)
                except WaitTimeout as err:
                    raise AssertionError(
                        f"unable to get pod {namespace}/{name} to be Running after 3m0s: {err}"
                    ) from None
            else:
                _expect_failed_alignment(fxt, suite_config, pod, cluster.tm_scope)

        acct.expect_nrt_consumed(kube, target_before, required, ds_pods[0])


def _each_request_on_a_different_zone(nrt: dict, r1: acct.ResList, r2: acct.ResList) -> bool:
    """r1 fits one of the first two zones and r2 the other."""
    zs = acct.zones(nrt)
    if len(zs) < 2:
        return False
    z1, z2 = acct.zone_resources(zs[0]), acct.zone_resources(zs[1])
    return (e2enrt.resources_match_request(z1, r1) and e2enrt.resources_match_request(z2, r2)) or (
        e2enrt.resources_match_request(z1, r2) and e2enrt.resources_match_request(z2, r1)
    )


class TestWithAtLeastOneNode:
    pytestmark = spec("with at least one node")

    @spec(
        "[test_id:47616] pod with two containers each on one numa zone can NOT be scheduled",
        "tier2",
        "tmscope:pod",
        "failalign",
    )
    def test_two_containers_each_on_one_zone(self, fxt: Any, suite_config: Any, cluster: Cluster) -> None:
        kube = fxt.kube
        needed = 1
        policy, scope = e2enrt.SINGLE_NUMA_NODE, e2enrt.SCOPE_POD
        candidates = e2enrt.filter_by_scope(e2enrt.filter_by_policy(cluster.nrt_list, policy), scope)
        if len(candidates) < needed:
            fxt.skip(
                f"not enough nodes with policy {acct.q(policy)} and scope {acct.q(scope)} - required "
                f"{needed}, found {len(candidates)}"
            )
        candidates = e2enrt.filter_zone_count_equal(candidates, REQUIRED_NUMA_ZONES)
        if len(candidates) < needed:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed {needed}")
        cnt1 = rl.of({"cpu": "4", "memory": "4Gi"})
        cnt2 = rl.of({"cpu": "5", "memory": "5Gi"})
        candidates = [nrt for nrt in candidates if _each_request_on_a_different_zone(nrt, cnt1, cnt2)]
        if len(candidates) < needed:
            fxt.skip(
                f"not enough nodes with NUMA zones each of them can match requests: found {len(candidates)}, "
                f"needed: {needed}"
            )
        names = e2enrt.accumulate_names(candidates)
        target = _pop_target(names, "cannot select a target node")
        log.info("selecting node to schedule the pod: %s", target)

        padding_pods = _fully_pad(fxt, suite_config, sorted(names), candidates)
        # each target zone keeps room for the bigger container, not for both
        target_load = acct.baseload_for_node(kube, target)
        leave = rl.of({"cpu": "6", "memory": "6Gi"})
        target_nrt = acct.find_from_list(candidates, target)
        for zone_idx, zone in enumerate(acct.zones(target_nrt)):
            zone_res = rl.add(leave, target_load) if zone_idx == 0 else dict(leave)
            padding = e2epad.saturate_zone_until_left(zone, zone_res)
            pod = e2epad.new_padding_pod(
                fxt.namespace, target, zone["name"], padding, image=suite_config.pause_image
            )
            objects.pin_pod_to(pod, target, zone["name"])
            padding_pods.append(kube.create(pod))
        assert not e2epad.wait_for_padding_pods_running(kube, padding_pods), (
            "some padding pods have failed to run"
        )
        fxt.settle_nrts()
        before_list = _get_updated(fxt, cluster.nrt_list)
        target_before = acct.find_from_list(before_list, target)

        pod = acct.new_test_pod(fxt.namespace, "testpod", suite_config.pause_image, containers=2)
        pod["spec"]["schedulerName"] = suite_config.scheduler_name
        pod["spec"]["containers"][1]["name"] = "testpodcnt-1"
        acct.set_resources(pod["spec"]["containers"][0], cnt1, limits=True)
        acct.set_resources(pod["spec"]["containers"][1], cnt2, limits=True)
        pod = kube.create(pod)
        waiters.while_in_pod_phase(kube, fxt.namespace, "testpod", "Pending", interval=10, steps=3)
        _expect_failed_alignment(fxt, suite_config, pod, scope, pod)

        fxt.settle_nrts()
        target_after = acct.find_from_list(_get_updated(fxt, before_list), target)
        assert nrtconsumed.check_equal_available_resources(target_before, target_after), (
            "NRT of target node was updated although the pods failed to be scheduled, expected: "
            f"{yaml.safe_dump(target_before)}\n  found: {yaml.safe_dump(target_after)}"
        )


class TestWithZeroSuitableNodes:
    pytestmark = spec("with zero suitable nodes")

    # unlike the other specs, every worker node is padded here
    @spec(
        "[test_id:47615] a deployment with multiple guaranteed pods resources that doesn't fit at the NUMA level",
        "tier2",
        "unsched",
    )
    def test_deployment_multiple_pods(
        self, fxt: Any, suite_config: Any, cluster: Cluster, padder: e2epad.Padder
    ) -> None:
        kube = fxt.kube
        nrts = cluster.nrts
        if len(nrts) < 1:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(nrts)}, needed 1")
        xload = rl.highest(*(acct.baseload_for_node(kube, e2enrt.nrt_name(nrt)) for nrt in nrts))
        log.info("highest base load resource cost: %s", rl.to_string(xload))
        names = e2enrt.accumulate_names(nrts)
        # prime factors, no exact multiples
        numa_level_free = rl.scale_core_resources(xload, 7, 3)
        numa_level_fit = rl.scale_core_resources(xload, 5, 3)
        unfit = rl.scale_core_resources(xload, 11, 3)
        log.info(
            "available %s target %s blocked %s",
            rl.to_string(numa_level_free),
            rl.to_string(numa_level_fit),
            rl.to_string(unfit),
        )

        padder.nodes(len(nrts)).until_available_is_resource_list_per_zone(numa_level_free).pad(
            120, label_selector=f"{MULTI_NUMA_LABEL}={REQUIRED_NUMA_ZONES}"
        )
        nrt_initial_list = fxt.settle_nrts()

        dp_name = "test-dp-47615"
        replicas = len(nrts) * REQUIRED_NUMA_ZONES + 1  # at least one replica won't fit
        nrs = scheduling.check_nro_scheduler_available(kube, suite_config.nrosched["metadata"]["name"])
        scheduler = nrs["status"]["schedulerName"]
        pod_spec = acct.pause_pod_spec(
            f"{dp_name}-cnt1", suite_config.pause_image, scheduler=scheduler, limits=unfit, requests=unfit
        )
        del pod_spec["terminationGracePeriodSeconds"]
        dp = objects.new_test_deployment_with_pod_spec(
            replicas, {"test": dp_name}, CELL_COUNT_2, fxt.namespace, dp_name, pod_spec
        )
        dp = kube.create(dp)
        pods = _deployment_pods(fxt, dp, replicas)

        succeeded = 0
        for pod in pods:
            namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            try:
                failed = acct.check_pod_scheduling_failed(kube, namespace, name, scheduler)
            except AssertionError:
                waiters.log_events_for_pod(kube, namespace, name)
                raise
            if not failed:
                succeeded += 1
                log.info("pod %s/%s with scheduler %s did NOT fail", namespace, name, scheduler)
        assert succeeded == 0, "some pods are running, but we expect all of them to fail"

        fxt.settle_nrts()
        nrtwaiters.for_nrts_equal_to(
            kube,
            nrt_initial_list,
            timeout=60,
            interval=fxt.config.timeouts.poll(5),
            ignore=lambda nrt: e2enrt.nrt_name(nrt) not in names,
        )

        poll_1s = fxt.config.timeouts.poll(1)

        def update_dp(mutate: Callable[[dict], None]) -> None:
            """``Eventually(Get; mutate; Update)`` (1 min / 1 s)."""
            polling.update_object(
                kube,
                k8s.DEPLOYMENT,
                dp_name,
                mutate,
                timeout=60,
                interval=poll_1s,
                namespace=fxt.namespace,
                description=f"cannot scale down the test deployment {fxt.namespace}/{dp_name}",
            )

        def set_replicas(count: int) -> Callable[[dict], None]:
            def mutate(obj: dict) -> None:
                log.info("setting replicas %d", count)
                obj["spec"]["replicas"] = count

            return mutate

        update_dp(set_replicas(0))

        def no_pods_left() -> str | None:
            # podlist.ByDeployment: every pod the selector matches, terminating ones included
            pods_left = kube.list(k8s.POD, fxt.namespace, label_selector={"test": dp_name})
            return f"found {len(pods_left)} pods, expected 0" if pods_left else None

        polling.eventually(
            no_pods_left,
            f"test deployment {fxt.namespace}/{dp_name} left hanging pods in the cluster",
            60,
            fxt.config.timeouts.poll(3),
        )

        # one pod per NUMA zone of the padded nodes
        expected_ready = len(nrts) * REQUIRED_NUMA_ZONES

        def resize(obj: dict) -> None:
            log.info("expecting replicas to be running: expected %d total %d", expected_ready, replicas)
            obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {
                "limits": rl.to_manifest(numa_level_fit),
                "requests": rl.to_manifest(numa_level_fit),
            }

        polling.update_object(
            kube,
            k8s.DEPLOYMENT,
            dp_name,
            resize,
            timeout=60,
            interval=poll_1s,
            namespace=fxt.namespace,
            description=f"cannot downsize the test deployment {fxt.namespace}/{dp_name}",
        )
        # upstream's message for scaling up again is the scale-down one
        update_dp(set_replicas(replicas))
        try:
            waiters.for_deployment_replicas_readiness(
                kube, dp, expected_ready, timeout=300, interval=fxt.config.timeouts.poll(30)
            )
        except WaitTimeout as err:
            raise AssertionError(
                f"deployment {fxt.namespace}/{dp_name} failed to have {expected_ready} running replicas "
                f"within the defined period: {err}"
            ) from None

        post_list = fxt.settle_nrts()
        qos_class = objects.pod_qos(pods[0])
        for initial in nrt_initial_list:
            if e2enrt.nrt_name(initial) not in names:
                log.info("skipping unpadded node %s", e2enrt.nrt_name(initial))
                continue
            post = acct.find_from_list(post_list, e2enrt.nrt_name(initial))
            match = nrtconsumed.check_zone_consumed_resources_at_least(
                initial, post, numa_level_fit, qos_class
            )
            assert match, (
                f"inconsistent accounting: no resources consumed by the updated pods on node "
                f"{acct.q(e2enrt.nrt_name(initial))}"
            )


class TestRequestingAllocatableResourcesOnTheNode:
    pytestmark = spec("Requesting allocatable resources on the node")

    @pytest.fixture
    def setup(self, fxt: Any, suite_config: Any, cluster: Cluster) -> tuple[list[dict], acct.ResList]:
        """Target: the sum of a node's zone allocatables; every other node fully padded."""
        kube = fxt.kube
        candidates = e2enrt.filter_zone_count_equal(cluster.nrts, REQUIRED_NUMA_ZONES)
        if len(candidates) < 1:
            fxt.skip(
                f"not enough nodes with at least {REQUIRED_NUMA_ZONES} NUMA Zones: found {len(candidates)}, "
                "needed 1"
            )
        names = e2enrt.accumulate_names(candidates)
        target = _pop_target(names, "cannot select a node")
        log.info("selecting node to schedule the test pod: %s", target)
        target_initial = kube.get(k8s.NRT, target)
        required = {
            name: sum(
                (
                    acct.zone_resources(z, "allocatable").get(name, Quantity(0))
                    for z in acct.zones(target_initial)
                ),
                Quantity(0),
            )
            for name in ("cpu", "memory")
        }
        pods = _fully_pad(fxt, suite_config, sorted(names), candidates)
        assert not e2epad.wait_for_padding_pods_running(kube, pods), "some padding pods have failed to run"
        fxt.settle_nrts()
        return candidates, required

    @staticmethod
    def _expect_pending(fxt: Any, pods: list[dict]) -> None:
        for pod in pods:
            waiters.while_in_pod_phase(
                fxt.kube, fxt.namespace, pod["metadata"]["name"], "Pending", interval=10, steps=3
            )

    @spec(
        "[test_id:47614] workload requests guaranteed pod resources available on one node but not on a single numa",
        "tier3",
        "unsched",
        "pod",
    )
    def test_pod(self, fxt: Any, suite_config: Any, setup: tuple[list[dict], acct.ResList]) -> None:
        _, required = setup
        pod = acct.new_test_pod(fxt.namespace, "testpod", suite_config.pause_image)
        pod["spec"]["schedulerName"] = suite_config.scheduler_name
        acct.set_resources(pod["spec"]["containers"][0], required, limits=True)
        self._expect_pending(fxt, [fxt.kube.create(pod)])

    @spec(
        "[test_id:47614] a deployment with a guaranteed pod resources available on one node but not on a single "
        "numa",
        "tier3",
        "unsched",
        "deployment",
    )
    def test_deployment(self, fxt: Any, suite_config: Any, setup: tuple[list[dict], acct.ResList]) -> None:
        _, required = setup
        dp = _test_deployment(
            fxt, suite_config, "test-dp", {"test": "test-deployment"}, suite_config.scheduler_name, required
        )
        self._expect_pending(fxt, _deployment_pods(fxt, fxt.kube.create(dp), 1))

    @spec(
        "[test_id:47614] a daemonset with a guaranteed pod resources available on one node but not on a single "
        "numa",
        "tier3",
        "unsched",
        "daemonset",
    )
    def test_daemonset(self, fxt: Any, suite_config: Any, setup: tuple[list[dict], acct.ResList]) -> None:
        candidates, required = setup
        ds = _test_daemonset(fxt, suite_config, required)
        fxt.kube.create(ds)
        self._expect_pending(fxt, _for_daemonset_pods(fxt, ds, len(candidates)))
