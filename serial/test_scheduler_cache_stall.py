"""Scheduler cache stall (upstream scheduler_cache_stall.go): pods the scheduler did not place
and that hold no exclusive resources — non-restartable pods, partially terminated pods,
completed Job pods — must not stall the over-reserve cache: bursts of NUMA-aware pods still
all go running within ten resync periods.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import _accounting_helpers as acct
import pytest

from nrop.api.durations import parse_duration
from nrop.api.quantity import Quantity
from nrop.suite import entry, spec, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.config import MULTI_NUMA_LABEL

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][scheduler][cache] scheduler cache stall",
    "scheduler",
    "cache",
    "stall",
    "feature:cache",
    "feature:stall",
)
FIXTURE_BASENAME = "e2e-test-sched-cache-stall"

HOSTS_REQUIRED = 2
NUMA_ZONES_REQUIRED = 2
CPUS_PER_POD = 2  # must be even, >= 2
MEMORY_PER_POD = 8 * acct.GIB


@pytest.fixture
def resync_timeout(fxt: Any, suite_config: Any) -> float:
    """The Context's BeforeEach: cache enabled in the NRS, one node group with fingerprints and
    Periodic refresh. Returns the burst timeout, ten rounded cache resync periods."""
    kube = fxt.kube
    nrs = kube.get(k8s.NROSCHED, suite_config.nrosched["metadata"]["name"])
    period = (nrs.get("status") or {}).get("cacheResyncPeriod")
    if not period:  # should never trigger
        fxt.skip("Scheduler cache not enabled")
    acct.check_periodic_node_group(fxt, kube, suite_config.nrop["metadata"]["name"], "unsupported pfp mode")
    timeout = acct.round_seconds(parse_duration(str(period))) * 10
    log.info("pod running timeout %ss", timeout)
    return timeout


@pytest.fixture
def nrt_list(fxt: Any) -> list[dict]:
    """The NRT list the outer BeforeEach reads once the fixture is set up."""
    return fxt.kube.list(k8s.NRT)


@pytest.fixture
def nrt_candidates(fxt: Any, nrt_list: list[dict], resync_timeout: float) -> list[dict]:
    nrts = e2enrt.filter_zone_count_equal(nrt_list, NUMA_ZONES_REQUIRED)
    if len(nrts) < HOSTS_REQUIRED:
        fxt.skip(f"not enough nodes with {NUMA_ZONES_REQUIRED} NUMA Zones: found {len(nrts)}")
    return nrts


def _node_all_burst(
    fxt: Any, suite_config: Any, timeout: float, nrt_list: list[dict], setup_pod: Callable[[dict], None]
) -> None:
    """Burst of ``nodes x 1.25 x max allocatable CPUs per zone / 2`` pods on all 2-zone nodes:
    more than a zone holds, so over-reserve makes the scheduler wait for resyncs."""
    kube = fxt.kube
    scheduler = suite_config.scheduler_name
    nrts = e2enrt.filter_zone_count_equal(nrt_list, 2)
    if len(nrts) < 1:
        fxt.skip("Not enough nodes found with at least 2 NUMA zones")
    # all workers are assumed identical: any one is the reference
    reference = acct.pop_node_name(e2enrt.accumulate_names(nrts))
    nrt_info = acct.find_from_list(nrts, reference)
    res_val = e2enrt.max_allocatable_numa_level(nrt_info, "cpu").as_int64()
    assert res_val is not None, "cannot convert allocatable CPU resource as int"
    log.info(
        "total available CPU: nodes %d, zones per node %d, CPUs per zone %d",
        len(nrts),
        len(acct.zones(nrt_info)),
        res_val,
    )
    cpus_val = (10 * res_val) // 8
    num_pods = len(nrts) * cpus_val // CPUS_PER_POD

    pods = []
    for idx in range(num_pods):
        pod = acct.new_test_pod(fxt.namespace, f"testpod-schedstall-{idx}", suite_config.pause_image)
        pod["spec"]["schedulerName"] = scheduler
        setup_pod(pod)
        pod["spec"]["nodeSelector"] = {MULTI_NUMA_LABEL: "2"}
        pods.append(kube.create(pod))

    failed, running = waiters.for_pods_all_running(kube, pods, timeout=timeout)
    for pod in failed:
        waiters.log_events_for_pod(kube, pod["metadata"]["namespace"], pod["metadata"]["name"])
    assert not failed, f"pods failed to go running: {acct.pod_names(failed)}"
    acct.expect_scheduled_with(kube, running, scheduler)


def _gu_burst(pod: dict) -> None:
    acct.set_resources(
        pod["spec"]["containers"][0],
        {"cpu": Quantity.from_int(CPUS_PER_POD), **rl.of({"memory": "64Mi"})},
        limits=True,
    )


def _bu_burst(pod: dict) -> None:
    acct.set_resources(
        pod["spec"]["containers"][0],
        {"cpu": Quantity.from_int(CPUS_PER_POD), **rl.of({"memory": "64Mi"})},
        limits=False,
    )


# -- noise pods (restartPolicy variants)

_NOISE_RES = {"limits": {"cpu": "100m", "memory": "256Mi"}}


def _sleep_container(name: str, image: str, duration: str) -> dict:
    return {
        "name": name,
        "image": image,
        "command": ["/bin/sleep"],
        "args": [duration],
        "resources": _NOISE_RES,
    }


def _noise_pod(
    namespace: str,
    idx: int,
    image: str,
    *,
    init: str | None,
    apps: list[tuple[str, str]],
    restart: str | None,
) -> dict:
    spec_: dict[str, Any] = {"containers": [_sleep_container(name, image, dur) for name, dur in apps]}
    if init is not None:
        spec_["initContainers"] = [_sleep_container("generic-init-cnt", image, init)]
    if restart is not None:
        spec_["restartPolicy"] = restart
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": namespace,
            "generateName": "generic-pause-pod-",
            "labels": {"test-pod-index": str(idx)},
        },
        "spec": spec_,
    }


def _noise_init_and_app(ns: str, idx: int, image: str) -> dict:
    return _noise_pod(ns, idx, image, init="1s", apps=[("generic-main-cnt", "1s")], restart="Never")


def _noise_init_and_long_app(ns: str, idx: int, image: str) -> dict:
    return _noise_pod(ns, idx, image, init="1s", apps=[("generic-main-cnt", "42d")], restart="Never")


def _noise_partially_terminated(ns: str, idx: int, image: str) -> dict:
    apps = [("generic-main-cnt-run-1", "42d"), ("generic-main-cnt-run-2", "1s")]
    return _noise_pod(ns, idx, image, init=None, apps=apps, restart="Never")


def _noise_restartable_partially_terminated(ns: str, idx: int, image: str) -> dict:
    apps = [("generic-main-cnt-run-1", "42d"), ("generic-main-cnt-run-2", "1s")]
    return _noise_pod(ns, idx, image, init=None, apps=apps, restart=None)


# -- idle job


def make_idle_job(namespace: str, pods_per_node: int, nodes: int, image: str) -> dict:
    parallelism = nodes * pods_per_node
    labels = {"app": "idle-job-sched-stall"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"namespace": namespace, "name": "generic-pause"},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "generic-job-idle",
                            "image": image,
                            "command": ["/bin/sleep"],
                            "args": ["1s"],
                            "resources": {},
                        }
                    ],
                    "restartPolicy": "Never",
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "whenUnsatisfiable": "DoNotSchedule",
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": labels},
                            "matchLabelKeys": ["pod-template-hash"],
                        }
                    ],
                },
            },
        },
    }


def _job_resources(kind: str | None, cpu: str = "100m") -> Callable[[dict], None]:
    def setup(job: dict) -> None:
        if kind is None:
            log.info("Creating a job whose containers have requests=none")
            return
        for container in job["spec"]["template"]["spec"]["containers"]:
            container["resources"] = {kind: {"cpu": cpu, "memory": "256Mi"}}
        log.info("Creating a job whose containers have %s cpu=%s memory=256Mi", kind, cpu)

    return setup


def _run_idle_job(
    fxt: Any, suite_config: Any, nodes: int, setup_job: Callable[[dict], None] | None = None
) -> None:
    job = make_idle_job(fxt.namespace, 2, nodes, suite_config.pause_image)
    if setup_job is not None:
        setup_job(job)
    fxt.kube.create(job)
    waiters.for_job_completed(fxt.kube, fxt.namespace, "generic-pause", timeout=30, interval=3)
    fxt.settle_nrts()  # ensure foreign pods are reported


class TestUsingANodeGroupWithPeriodicUneventedUpdates:
    pytestmark = spec("using a NodeGroup with periodic unevented updates", "periodic_update", "openshift")

    class TestWhenThereAreNonRestartablePodsInTheCluster:
        pytestmark = spec(
            "when there are non-restartable pods in the cluster", "generic", "restartPolicy", "tier1"
        )

        @spec("should be able to schedule pods with no stalls", "nodeAll")
        @pytest.mark.parametrize(
            "make_noise_pod",
            [
                entry(
                    "[test_id:83865] with non-restartable pods with guaranteed init and app containers",
                    _noise_init_and_app,
                ),
                entry(
                    "[test_id:83866] with non-restartable pods with guaranteed init and long running app "
                    "containers",
                    _noise_init_and_long_app,
                ),
                entry(
                    "[test_id:83867] with non-restartable pods with guaranteed pod with partially terminated "
                    "app containers",
                    _noise_partially_terminated,
                ),
                entry(
                    "[test_id:83868] with restartable pods with guaranteed pod with partially terminated app "
                    "containers",
                    _noise_restartable_partially_terminated,
                ),
            ],
        )
        def test_no_stalls(
            self,
            fxt: Any,
            suite_config: Any,
            resync_timeout: float,
            nrt_list: list[dict],
            nrt_candidates: list[dict],
            make_noise_pod: Callable[[str, int, str], dict],
        ) -> None:
            kube = fxt.kube
            noise = []
            for nidx, nrt in enumerate(nrt_candidates):
                for idx in range(2):
                    pod = make_noise_pod(fxt.namespace, nidx * 1000 + idx, suite_config.pause_image)
                    pod["spec"]["nodeName"] = e2enrt.nrt_name(nrt)
                    noise.append(kube.create(pod))
            failed, _ = waiters.for_pods_all_running(kube, noise, timeout=180)
            assert not failed, f"pods failed to go running: {acct.pod_names(failed)}"
            fxt.settle_nrts()  # ensure foreign pods are reported
            _node_all_burst(fxt, suite_config, resync_timeout, nrt_list, _gu_burst)

    class TestWhenThereAreJobsInTheCluster:
        pytestmark = spec("when there are jobs in the cluster", "job", "generic")

        @spec("should be able to schedule pods with no stalls")
        @pytest.mark.parametrize(
            "setup_job",
            [
                entry("[test_id:85780] vs best-effort pods", _job_resources(None), labels=("tier1",)),
                entry("[test_id:85781] vs burstable pods", _job_resources("requests"), labels=("tier0",)),
                # GAP: pinnable cpu without pinnable memory needs memorymanager policy=none (not recommended)
                entry(
                    "[test_id:85782] vs guaranteed pods with pinnable memory",
                    _job_resources("limits"),
                    labels=("tier1",),
                ),
                entry(
                    "[test_id:85783] vs guaranteed pods with pinnable memory and CPU",
                    _job_resources("limits", cpu="1"),
                    labels=("tier0",),
                ),
            ],
        )
        def test_no_stalls(
            self,
            fxt: Any,
            suite_config: Any,
            resync_timeout: float,
            nrt_candidates: list[dict],
            setup_job: Callable[[dict], None],
        ) -> None:
            kube = fxt.kube
            scheduler = suite_config.scheduler_name
            _run_idle_job(fxt, suite_config, len(nrt_candidates), setup_job)

            # > 50% of a zone per pod: over-reserve lets one pod per node run until reconciliation
            cpu_num = acct.reference_zone_cpus(nrt_candidates)
            required = {
                "memory": Quantity.from_int(MEMORY_PER_POD),
                "cpu": Quantity.from_int(int(cpu_num * 0.6)),
            }
            pods = []
            for seq in range(HOSTS_REQUIRED * 2):
                pod = acct.new_test_pod(fxt.namespace, f"stall-generic-pod-{seq}", suite_config.pause_image)
                pod["spec"]["containers"][0]["name"] = f"stall-generic-cnt-{seq}"
                pod["spec"]["schedulerName"] = scheduler
                acct.set_resources(pod["spec"]["containers"][0], required, limits=True)
                pods.append(pod)
            log.info("Creating %d pods each requiring %s", len(pods), rl.to_string(required))
            acct.create_all(kube, pods)

            failed, running = waiters.for_pods_all_running(kube, pods, timeout=180)
            acct.dump_failed_pod_info(kube, failed)
            assert not failed, f"unexpected failed pods: {acct.q(acct.pod_names(failed))}"
            acct.expect_scheduled_with(kube, running, scheduler)

        @spec("[nodeAll] against all the available worker nodes", "tier0", "nodeAll")
        @pytest.mark.parametrize(
            "setup_pod",
            [
                entry("[test_id:85784]should handle a burst of qos=guaranteed pods", _gu_burst),
                entry("[test_id:85785]should handle a burst of qos=burstable pods", _bu_burst),
            ],
        )
        def test_node_all(
            self,
            fxt: Any,
            suite_config: Any,
            resync_timeout: float,
            nrt_list: list[dict],
            nrt_candidates: list[dict],
            setup_pod: Callable[[dict], None],
        ) -> None:
            _run_idle_job(fxt, suite_config, len(nrt_candidates))
            _node_all_burst(fxt, suite_config, resync_timeout, nrt_list, setup_pod)
