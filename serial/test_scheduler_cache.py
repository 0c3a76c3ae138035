"""Scheduler cache (upstream scheduler_cache.go): the NUMA-aware scheduler over-reserves
resources of pods it bound until the NRT data (periodic, unevented refresh with pod
fingerprints) catch up, so a burst of pods is scheduled in phases, interference from pods of
another scheduler is tolerated, a pod that cannot fit stays pending, and becomes schedulable
once resources are freed.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any

import _accounting_helpers as acct
import pytest

from nrop.api.quantity import Quantity
from nrop.suite import entry, spec, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl

log = logging.getLogger(__name__)

pytestmark = spec("scheduler cache", "Serial", "tier0", "scheduler", "cache", "feature:cache")
FIXTURE_BASENAME = "e2e-test-sched-cache"

INTERFERENCE_ANNOTATION = "e2e.test.openshift-kni.io/scheduler-interference"
HOSTS_REQUIRED = 2
NUMA_ZONES_REQUIRED = 2
MEMORY_PER_POD = 8 * acct.GIB


@dataclass(frozen=True)
class MachineDesc:
    desired_pods_per_numa_zone: int
    cores_per_cpu: int  # hyperthreads per physical core
    load_factor: float  # 1.0 = fully loaded, unachievable because of infra pods


@dataclass(frozen=True)
class InterferenceDesc:
    qos: str  # QoS of the interference pods; payload pods are always Guaranteed
    ratio: int  # one pod every `ratio` is an interference pod


@pytest.fixture
def refresh_period(fxt: Any, suite_config: Any) -> float:
    return acct.check_periodic_node_group(
        fxt, fxt.kube, suite_config.nrop["metadata"]["name"], "unsupported fingerprint status"
    )


def _two_zone_candidates(fxt: Any) -> list[dict]:
    nrts = e2enrt.filter_zone_count_equal(fxt.kube.list(k8s.NRT), NUMA_ZONES_REQUIRED)
    if len(nrts) < HOSTS_REQUIRED:
        fxt.skip(f"not enough nodes with {NUMA_ZONES_REQUIRED} NUMA Zones: found {len(nrts)}")
    log.info("Found %d nodes with %d NUMA zones", len(nrts), NUMA_ZONES_REQUIRED)
    return nrts


def _pod(fxt: Any, name: str, container: str, scheduler: str | None, limits: acct.ResList | None) -> dict:
    pod = acct.new_test_pod(fxt.namespace, name, fxt.config.pause_image)
    pod["spec"]["containers"][0]["name"] = container
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
    if limits is not None:
        acct.set_resources(pod["spec"]["containers"][0], limits, limits=True)
    return pod


def _filter_any_zone_providing_at_most(
    nrts: list[dict], resource: str, amount: int, max_zones: int
) -> list[dict]:
    """Nodes where between 1 and ``max_zones`` zones offer at least ``amount`` of ``resource``."""
    wanted = Quantity.from_int(amount)
    out = []
    for nrt in nrts:
        matches = sum(
            1
            for zone in acct.zones(nrt)
            if e2enrt.resource_providing(acct.zone_resources(zone), resource, wanted)
        )
        if matches == 0 or matches > max_zones:
            log.info("SKIP node %s resource %s matchCount %d", e2enrt.nrt_name(nrt), resource, matches)
            continue
        out.append(nrt)
    return out


def _device_name(fxt: Any, suite_config: Any) -> str:
    device = suite_config.device_types[2] or ""
    if not device:
        fxt.skip("missing required device name (device3)")
    return device


def _device_candidates(fxt: Any, device: str, desired_pods: int) -> list[dict]:
    nrts = _two_zone_candidates(fxt)
    zones_with_device = 1
    nrts = _filter_any_zone_providing_at_most(nrts, device, desired_pods, zones_with_device)
    if len(nrts) < HOSTS_REQUIRED:
        fxt.skip(
            f"not enough nodes with at most {zones_with_device} NUMA Zones offering {acct.q(device)}: "
            f"found {len(nrts)}"
        )
    return nrts


def _expect_phased(kube: Any, scheduler: str, pods: list[dict], expected_pending: int) -> tuple[list, list]:
    """Wait a minute for all pods: exactly HOSTS_REQUIRED run, on distinct nodes, the rest pend."""
    failed, running = waiters.for_pods_all_running(kube, pods, timeout=60)
    assert len(running) == HOSTS_REQUIRED, acct.describe_pods(running)
    assert len(failed) == expected_pending, acct.describe_pods(failed)
    assert len(running) + len(failed) == len(pods)
    used_nodes: list[str] = []
    for pod in running:
        acct.expect_scheduled_with(kube, [pod], scheduler)
        node = pod["spec"]["nodeName"]
        assert node not in used_nodes, f"pod {acct.pod_key(pod)} not uniquely placed (on {acct.q(node)})"
        used_nodes.append(node)
    for pod in failed:
        # the Scheduled event comes only after binding: a pending pod has none, as wanted
        if acct.phase(pod) != "Pending":
            waiters.log_events_for_pod(kube, pod["metadata"]["namespace"], pod["metadata"]["name"])
            pytest.fail(f"pod {acct.pod_key(pod)} is in phase {acct.q(acct.phase(pod))}, should be pending")
    return failed, running


class TestUsingANodeGroupWithPeriodicUneventedUpdates:
    pytestmark = spec("using a NodeGroup with periodic unevented updates", "periodic_update", "openshift")

    class TestPodburstHandlingABurstOfPods:
        pytestmark = spec("when [podburst] handling a burst of pods", "podburst")

        @spec(
            "[test_id:85786] should keep possibly-fitting pod in pending state until overreserve is "
            "corrected by update"
        )
        def test_possibly_fitting_pending_until_update(
            self, fxt: Any, suite_config: Any, refresh_period: float
        ) -> None:
            kube = fxt.kube
            scheduler = suite_config.scheduler_name
            desired_pods = HOSTS_REQUIRED * 2
            assert desired_pods > HOSTS_REQUIRED
            nrts = _two_zone_candidates(fxt)
            # > 50% of a zone: a zone runs at most one pod; over-reserve charges both zones of the
            # node, so one pod per node runs until the NRT refresh corrects the cache
            cpu_per_pod = int(acct.reference_zone_cpus(nrts) * 0.6)
            required = {"memory": Quantity.from_int(MEMORY_PER_POD), "cpu": Quantity.from_int(cpu_per_pod)}
            pods = [
                _pod(fxt, f"ovrfix-pod-{seq}", f"ovrfix-cnt-{seq}", scheduler, required)
                for seq in range(desired_pods)
            ]
            log.info("Creating %d pods each requiring %s", desired_pods, rl.to_string(required))
            acct.create_all(kube, pods)

            failed, running = waiters.for_pods_all_running(kube, pods, timeout=180)
            acct.dump_failed_pod_info(kube, failed)
            assert not failed, f"unexpected failed pods: {acct.q(acct.pod_names(failed))}"
            acct.expect_scheduled_with(kube, running, scheduler)

        @spec(
            "should keep possibly-fitting pod in pending state until overreserve is corrected by update "
            "handling interference"
        )
        @pytest.mark.parametrize(
            "mdesc,interference",
            [
                entry(
                    "[test_id:85787] from GU pods, low",
                    MachineDesc(desired_pods_per_numa_zone=2, cores_per_cpu=2, load_factor=0.6),
                    InterferenceDesc(qos="Guaranteed", ratio=2),
                    labels=("qos:gu",),
                ),
                entry(
                    "[test_id:85788] from BU pods, moderate",
                    MachineDesc(desired_pods_per_numa_zone=4, cores_per_cpu=2, load_factor=0.6),
                    InterferenceDesc(qos="Burstable", ratio=5),
                    labels=("qos:bu",),
                ),
            ],
        )
        def test_interference(
            self,
            fxt: Any,
            suite_config: Any,
            refresh_period: float,
            mdesc: MachineDesc,
            interference: InterferenceDesc,
        ) -> None:
            kube = fxt.kube
            scheduler = suite_config.scheduler_name
            desired_pods = HOSTS_REQUIRED * NUMA_ZONES_REQUIRED * mdesc.desired_pods_per_numa_zone
            assert desired_pods > HOSTS_REQUIRED
            assert interference.ratio <= desired_pods
            nrts = _two_zone_candidates(fxt)

            # whole physical cores (full-pcpus-only), expressed back in CPUs
            zone_cpus = acct.reference_zone_cpus(nrts)
            phys = zone_cpus // mdesc.cores_per_cpu
            per_pod = phys // mdesc.desired_pods_per_numa_zone
            cpu_per_pod = int(per_pod * mdesc.load_factor) * mdesc.cores_per_cpu
            required = {"memory": Quantity.from_int(MEMORY_PER_POD), "cpu": Quantity.from_int(cpu_per_pod)}
            log.info("using %d pods total each requiring %s", desired_pods, rl.to_string(required))

            tag = {"Guaranteed": "gu", "Burstable": "bu", "BestEffort": "be"}[interference.qos]
            pods = []
            for seq in range(desired_pods):
                pod = _pod(fxt, f"ovrfix-pod-{tag}-{seq}", f"ovrfix-cnt-{tag}-0", None, None)
                container = pod["spec"]["containers"][0]
                if seq % interference.ratio == 0:
                    pod["metadata"]["annotations"] = {INTERFERENCE_ANNOTATION: "true"}
                    acct.set_resources(container, required, limits=interference.qos == "Guaranteed")
                else:
                    pod["spec"]["schedulerName"] = scheduler
                    acct.set_resources(container, required, limits=True)
                pods.append(pod)
            acct.create_all(kube, pods)

            failed, running = waiters.for_pods_all_running(
                kube, pods, timeout=300, interval=fxt.config.timeouts.poll(5)
            )
            acct.dump_failed_pod_info(kube, failed)
            assert not failed, f"unexpected failed pods: {acct.q(acct.pod_names(failed))}"
            payload = [
                p
                for p in running
                if (p["metadata"].get("annotations") or {}).get(INTERFERENCE_ANNOTATION) != "true"
            ]
            acct.expect_scheduled_with(kube, payload, scheduler)

        @spec("[test_id:85789] should keep non-fitting pod in pending state forever")
        def test_non_fitting_pending_forever(
            self, fxt: Any, suite_config: Any, refresh_period: float
        ) -> None:
            kube = fxt.kube
            scheduler = suite_config.scheduler_name
            desired_pods = 3
            # the device is on one zone per node: M > 2 pods each needing > 50% of a zone's CPUs
            # and one device give 2 running and M-2 pending "forever" (checked: long enough)
            device = _device_name(fxt, suite_config)
            assert desired_pods > HOSTS_REQUIRED
            expected_pending = desired_pods - HOSTS_REQUIRED
            nrts = _device_candidates(fxt, device, desired_pods)
            cpu_per_pod = int(acct.reference_zone_cpus(nrts) * 0.7)
            required = {
                "memory": Quantity.from_int(MEMORY_PER_POD),
                "cpu": Quantity.from_int(cpu_per_pod),
                device: Quantity.from_int(1),
            }
            pods = [
                _pod(fxt, f"keep-pnd-pod-{seq}", f"keep-pnd-cnt-{seq}", scheduler, required)
                for seq in range(desired_pods)
            ]
            log.info("Creating %d pods each requiring %s", desired_pods, rl.to_string(required))
            acct.create_all(kube, pods)
            _expect_phased(kube, scheduler, pods, expected_pending)

        @spec(
            "[test_id:85790] should unblock non-fitting pod in pending state when resources are freed "
            "(pod deleted)"
        )
        def test_unblock_when_freed(self, fxt: Any, suite_config: Any, refresh_period: float) -> None:
            kube = fxt.kube
            scheduler = suite_config.scheduler_name
            desired_pods = 3
            device = _device_name(fxt, suite_config)
            expected_pending = desired_pods - HOSTS_REQUIRED
            assert expected_pending == 1
            nrts = _device_candidates(fxt, device, desired_pods)
            cpu_per_pod = int(acct.reference_zone_cpus(nrts) * 0.6)
            required = {
                "memory": Quantity.from_int(MEMORY_PER_POD),
                "cpu": Quantity.from_int(cpu_per_pod),
                device: Quantity.from_int(1),
            }
            pods = [
                _pod(fxt, f"cache-awk-pod-{seq}", f"cache-awk-cnt-{seq}", scheduler, required)
                for seq in range(desired_pods)
            ]
            log.info("Creating %d pods each requiring %s", desired_pods, rl.to_string(required))
            acct.create_all(kube, pods)
            failed, running = _expect_phased(kube, scheduler, pods, expected_pending)

            target = random.choice(running)
            expected_running = [failed[0]] + [p for p in running if acct.pod_key(p) != acct.pod_key(target)]
            log.info("Deleting pod %s", acct.pod_key(target))
            kube.delete(k8s.POD, target["metadata"]["name"], fxt.namespace, missing_ok=False)
            waiters.for_pod_deleted(kube, fxt.namespace, target["metadata"]["name"], timeout=300)

            # the NRT updater, the resync loop and the scheduler's retries interplay: be generous
            failed, running = waiters.for_pods_all_running(kube, expected_running, timeout=300)
            acct.dump_failed_pod_info(kube, failed)
            assert len(running) == HOSTS_REQUIRED, acct.describe_pods(running)
            assert not failed
