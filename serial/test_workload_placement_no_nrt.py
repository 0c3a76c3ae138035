"""Serial specs of upstream ``workload_placement_no_nrt.go``: the TAS without updated NRT data.

``infoRefreshPause: Enabled`` on the single node group stops the RTEs from updating the NRT
objects (the operator re-rolls the RTE pods); best-effort, burstable and guaranteed pods with
the NUMA-aware scheduler must still run. The guaranteed spec then re-enables the updates and
checks the NRT of its node shows the consumption.
"""

from __future__ import annotations

import logging
from typing import Any

import _accounting_helpers as acct
import _nropcr_helpers as nropcr
import _openshift_helpers as ocp
import _operand_helpers as operands
import _polling_helpers as polling
import pytest

from nrop.suite import Kube, nrtwaiters, spec, waiters
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.kube import NROP, NRT
from nrop.suite.e2e.objects import new_test_pod_pause

log = logging.getLogger(__name__)

pytestmark = spec("[serial] numaresources profile update", "Serial", "feature:wlplacement", "feature:nonrt")
FIXTURE_BASENAME = "e2e-test-profile-updates"

# the [no_nrt] path rolls the RTE DaemonSet before creating workloads: one higher bound
NO_NRT_POD_RUNNING_TIMEOUT = 600.0


def _info_refresh_pause(nrop: dict[str, Any], platform: ocp.ClusterPlatform) -> str:
    """The effective infoRefreshPause of the first group: status.nodeGroups on HyperShift,
    status.machineconfigpools elsewhere (status.nodeGroups is not backward compatible)."""
    status = nrop.get("status") or {}
    if platform.platform is ocp.Platform.HYPERSHIFT:
        return str(status["nodeGroups"][0]["config"]["infoRefreshPause"])
    return str(status["machineconfigpools"][0]["config"]["infoRefreshPause"])


def update_info_refresh_pause(
    kube: Kube, suite_config: Any, platform: ocp.ClusterPlatform, value: str
) -> None:
    """``updateInfoRefreshPause``: set it if different, wait for the status to report it (2m / 9s)
    and for the RTE pods to be recreated and ready."""
    target = suite_config.target
    name = suite_config.nrop["metadata"]["name"]
    current = kube.get(NROP, name)
    current_value = str(current["status"]["machineconfigpools"][0]["config"]["infoRefreshPause"])
    if current_value == value:
        log.info("profile already has the updated InfoRefreshPause %s", value)
        return
    ds_ref = current["status"]["daemonsets"][0]
    rte_pods = operands.pods_of_daemonset(kube, ds_ref["namespace"], ds_ref["name"])
    log.info("RTE pods before update: %s", operands.pod_names(rte_pods))

    def mutate(obj: dict[str, Any]) -> None:
        nropcr.first_group_config(obj)["infoRefreshPause"] = value

    nropcr.update_nrop(kube, name, mutate, timeout=300, interval=polling.poll(target, 30))

    def reported() -> str | None:
        mode = _info_refresh_pause(kube.get(NROP, name), platform)
        return None if mode == value else f"resource status is not updated yet: expected {value} found {mode}"

    polling.eventually(reported, "Status of NROP failed to get updated", 120, polling.poll(target, 9))
    operands.wait_for_daemonset_update(kube, ds_ref["namespace"], ds_ref["name"], rte_pods, target=target)


class TestNoNrtUsingTheNUMAAwareSchedulerWithoutUpdatedNRTData:
    pytestmark = spec("[no_nrt] using the NUMA-aware scheduler without updated NRT data", "tier2", "no_nrt")

    @pytest.fixture(autouse=True)
    def _paused_refresh(self, fxt: Any, kube: Kube, suite_config: Any) -> Any:
        nrop = kube.get(NROP, suite_config.nrop["metadata"]["name"])
        if len(nrop["spec"].get("nodeGroups") or []) != 1:
            pytest.skip("this test doesn't support more than one node group")
        platform = ocp.detect_platform(kube)
        initial = _info_refresh_pause(nrop, platform)
        nrts = kube.list(NRT)
        try:  # upstream's AfterEach restores even when its BeforeEach failed half-way
            update_info_refresh_pause(kube, suite_config, platform, "Enabled")
            yield nrts, platform, initial
        finally:
            update_info_refresh_pause(kube, suite_config, platform, initial)

    def _run_pod(
        self, fxt: Any, kube: Kube, suite_config: Any, resources: dict[str, Any] | None
    ) -> dict[str, Any]:
        pod = new_test_pod_pause(fxt.namespace, "testpod", image=suite_config.pause_image)
        pod["spec"]["schedulerName"] = suite_config.scheduler_name
        if resources:
            pod["spec"]["containers"][0]["resources"] = resources
        kube.create(pod)
        return waiters.for_pod_phase(
            kube,
            fxt.namespace,
            "testpod",
            "Running",
            timeout=NO_NRT_POD_RUNNING_TIMEOUT,
            interval=polling.poll(suite_config.target, 1),
        )

    @spec("[test_id:85012] should make a best-effort pod running")
    def test_85012_best_effort_pod_running(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        self._run_pod(fxt, kube, suite_config, None)

    @spec("[test_id:85013] should make a burstable pod running")
    def test_85013_burstable_pod_running(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        self._run_pod(fxt, kube, suite_config, {"requests": {"memory": "256Mi"}})

    @spec("[test_id:47611] should make a guaranteed pod running")
    def test_47611_guaranteed_pod_running(
        self, fxt: Any, kube: Kube, suite_config: Any, _paused_refresh: Any
    ) -> None:
        nrts, platform, initial = _paused_refresh
        required = {"cpu": "4", "memory": "256Mi"}
        pod = self._run_pod(fxt, kube, suite_config, {"limits": dict(required)})

        nrtwaiters.for_nrts_equal_to(kube, nrts, interval=polling.poll(suite_config.target, 5), timeout=60)

        update_info_refresh_pause(kube, suite_config, platform, initial)
        fxt.settle_nrts()
        node_name = pod["spec"]["nodeName"]
        before = acct.find_from_list(nrts, node_name)
        acct.expect_nrt_consumed(kube, before, rl.of(required), pod)
