"""Fundamentals non-regression (upstream non_regression_fundamentals.go): bursts of pods of
each QoS class sent to the NUMA-aware scheduler, against one node and against every 2-zone
worker, sized so that over-reserve keeps part of them pending until the cache resyncs; all of
them must go running within ten resync periods.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import _accounting_helpers as acct
import pytest

from nrop.api.durations import parse_duration
from nrop.api.quantity import Quantity
from nrop.suite import entry, objects, spec, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.config import MULTI_NUMA_LABEL

log = logging.getLogger(__name__)

pytestmark = spec(
    "numaresources fundamentals non-regression",
    "Serial",
    "serial",
    "fundamentals",
    "scheduler",
    "feature:nonreg",
)
FIXTURE_BASENAME = "e2e-test-non-regression-fundamentals"

CPUS_PER_POD = 2  # must be even, >= 2


def _gu(pod: dict) -> None:
    acct.set_resources(
        pod["spec"]["containers"][0],
        {"cpu": Quantity.from_int(CPUS_PER_POD), **rl.of({"memory": "64Mi"})},
        limits=True,
    )


def _bu(pod: dict) -> None:
    acct.set_resources(
        pod["spec"]["containers"][0],
        {"cpu": Quantity.from_int(CPUS_PER_POD), **rl.of({"memory": "64Mi"})},
        limits=False,
    )


def _be(pod: dict) -> None:
    """No resources at all: really to prevent the most catastrophic regressions."""


def _burst_timeout(fxt: Any, suite_config: Any) -> float:
    nrs = fxt.kube.get(k8s.NROSCHED, suite_config.nrosched["metadata"]["name"])
    period = (nrs.get("status") or {}).get("cacheResyncPeriod")
    if not period:
        fxt.skip("Scheduler cache not enabled")
    timeout = acct.round_seconds(parse_duration(str(period))) * 10
    log.info("pod running timeout %ss", timeout)
    return timeout


def _two_zone_nrts(fxt: Any) -> list[dict]:
    nrts = e2enrt.filter_zone_count_equal(fxt.kube.list(k8s.NRT), 2)
    if len(nrts) < 1:
        fxt.skip("Not enough nodes found with at least 2 NUMA zones")
    return nrts


def _run_burst(fxt: Any, suite_config: Any, pods: list[dict], timeout: float) -> None:
    kube = fxt.kube
    created = [kube.create(pod) for pod in pods]
    failed, running = waiters.for_pods_all_running(kube, created, timeout=timeout)
    for pod in failed:
        waiters.log_events_for_pod(kube, pod["metadata"]["namespace"], pod["metadata"]["name"])
    assert not failed, f"pods failed to go running: {acct.pod_names(failed)}"
    acct.expect_scheduled_with(kube, running, suite_config.scheduler_name)


class TestUsingTheNUMAAwareSchedulerWithNRTData:
    pytestmark = spec("using the NUMA-aware scheduler with NRT data")

    # Each pod's requests are such that over-reserve lets only a chunk of the burst run; the
    # rest is sent after a cache resync. Sizes were calibrated upstream by trial and error.
    @spec("[node1] against a single node", "node1")
    @pytest.mark.parametrize(
        "setup_pod",
        [
            entry("[test_id:84018] should handle a burst of qos=guaranteed pods", _gu, labels=("tier1",)),
            entry("[test_id:84019] should handle a burst of qos=burstable pods", _bu, labels=("tier1",)),
            entry("[test_id:84020] should handle a burst of qos=best-effort pods", _be, labels=("tier2",)),
        ],
    )
    def test_node1(self, fxt: Any, suite_config: Any, setup_pod: Callable[[dict], None]) -> None:
        timeout = _burst_timeout(fxt, suite_config)
        nrts = _two_zone_nrts(fxt)
        target = acct.pop_node_name(e2enrt.accumulate_names(nrts))
        log.info("selected target node name %s", target)
        nrt_info = acct.find_from_list(nrts, target)
        # assumed: even CPUs per zone, unloaded node, identical zones, baseload <= 1/4 of the node
        max_alloc = e2enrt.max_allocatable_numa_level(nrt_info, "cpu").as_int64()
        assert max_alloc is not None, "cannot convert allocatable CPU resource as int"
        cpus_val = (3 * max_alloc) // 2  # 150% of a zone: anything above a zone is fine
        num_pods = cpus_val // CPUS_PER_POD
        log.info("creating %d pods, max allocatable CPUs per NUMA zone %d", num_pods, max_alloc)
        pods = []
        for idx in range(num_pods):
            pod = acct.new_test_pod(fxt.namespace, f"testpod-{idx}", suite_config.pause_image)
            pod["spec"]["schedulerName"] = suite_config.scheduler_name
            setup_pod(pod)
            objects.pin_pod_to_node(pod, target)
            pods.append(pod)
        _run_burst(fxt, suite_config, pods, timeout)

    # like [node1], flooding every worker node
    @spec("[nodeAll] against all the available worker nodes", "nodeAll")
    @pytest.mark.parametrize(
        "setup_pod",
        [
            entry("[test_id:84021] should handle a burst of qos=guaranteed pods", _gu, labels=("tier0",)),
            entry("[test_id:84022] should handle a burst of qos=burstable pods", _bu, labels=("tier1",)),
            entry("[test_id:84023] should handle a burst of qos=best-effort pods", _be, labels=("tier2",)),
        ],
    )
    def test_node_all(self, fxt: Any, suite_config: Any, setup_pod: Callable[[dict], None]) -> None:
        timeout = _burst_timeout(fxt, suite_config)
        nrts = _two_zone_nrts(fxt)
        # all workers are assumed identical: any one is the reference
        reference = acct.pop_node_name(e2enrt.accumulate_names(nrts))
        nrt_info = acct.find_from_list(nrts, reference)
        res_val = e2enrt.max_allocatable_numa_level(nrt_info, "cpu").as_int64()
        assert res_val is not None, "cannot convert allocatable CPU resource as int"
        cpus_val = (10 * res_val) // 8
        num_pods = len(nrts) * cpus_val // CPUS_PER_POD
        log.info("creating %d pods over %d nodes, CPUs per NUMA zone %d", num_pods, len(nrts), res_val)
        pods = []
        for idx in range(num_pods):
            pod = acct.new_test_pod(fxt.namespace, f"testpod-{idx}", suite_config.pause_image)
            pod["spec"]["schedulerName"] = suite_config.scheduler_name
            setup_pod(pod)
            pod["spec"]["nodeSelector"] = {MULTI_NUMA_LABEL: "2"}
            pods.append(pod)
        _run_burst(fxt, suite_config, pods, timeout)
