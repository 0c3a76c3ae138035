"""Host-level resources (upstream resource_hostlevel.go): ephemeral-storage is accounted per
node, never per NUMA zone. Pods asking for it are placed by the NUMA-aware scheduler and only
their exclusive part shows in the NRT; when no node has the storage left the scheduler reports
``<N> Insufficient ephemeral-storage``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import _accounting_helpers as acct
import pytest

from nrop.api.quantity import Quantity
from nrop.suite import WaitTimeout, entry, spec, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][hostlevel] numaresources host-level resources", "Serial", "hostlevel", "feature:hostlevel"
)
FIXTURE_BASENAME = "e2e-test-resource-hostlevel"

GU, BU, BE = "Guaranteed", "Burstable", "BestEffort"


def _res(**values: str) -> acct.ResList:
    return rl.of({name.replace("_", "-"): value for name, value in values.items()})


def _status_qos(pod: dict) -> str:
    """``Status.QOSClass``: the class the API server set, not one computed here."""
    return str((pod.get("status") or {}).get("qosClass") or "")


def _make_test_pod(fxt: Any, scheduler: str, required: Sequence[acct.ResList], *, limits: bool) -> dict:
    pod = acct.new_test_pod(fxt.namespace, "testpod", fxt.config.pause_image, len(required))
    pod["spec"]["schedulerName"] = scheduler
    for container, res in zip(pod["spec"]["containers"], required, strict=True):
        acct.set_resources(container, res, limits=limits)
    return pod


class TestWithAtLeastTwoNodesSuitable:
    pytestmark = spec("with at least two nodes suitable")

    # scope=container vs scope=pod is pointless with one pod; kept as non-regression, so
    # the candidates are filtered by policy only.
    @spec("a pod should be placed and aligned on the node", "hostlevel")
    @pytest.mark.parametrize(
        "tm_policy,required,expected_qos",
        [
            entry(
                "[test_id:84015][qos:gu] with ephemeral storage, single-container",
                e2enrt.SINGLE_NUMA_NODE,
                [_res(cpu="2", memory="256Mi", ephemeral_storage="256Mi")],
                GU,
                labels=("tier0", "qos:gu"),
            ),
            entry(
                "[test_id:84016][qos:bu] with ephemeral storage, single-container",
                e2enrt.SINGLE_NUMA_NODE,
                [_res(cpu="2", memory="256Mi", ephemeral_storage="256Mi")],
                BU,
                labels=("tier1", "qos:bu"),
            ),
            entry(
                "[test_id:84017][qos:be] with ephemeral storage, single-container",
                e2enrt.SINGLE_NUMA_NODE,
                [_res(ephemeral_storage="256Mi")],
                BE,
                labels=("tier1", "qos:be"),
            ),
            entry(
                "[test_id:74249][qos:gu] with ephemeral storage, multi-container",
                e2enrt.SINGLE_NUMA_NODE,
                [_res(cpu="2", memory="256Mi", ephemeral_storage="256Mi") for _ in range(4)],
                GU,
                labels=("tier0", "qos:gu"),
            ),
            entry(
                "[test_id:74250][qos:gu] with ephemeral storage, multi-container, fractional",
                e2enrt.SINGLE_NUMA_NODE,
                [
                    _res(cpu="3000m", memory="256Mi", ephemeral_storage="16777216"),
                    _res(cpu="2", memory="256Mi", ephemeral_storage="16777216"),
                    _res(cpu="1500m", memory="256Mi", ephemeral_storage="256Mi"),
                    _res(cpu="2", memory="256Mi", ephemeral_storage="256Mi"),
                ],
                GU,
                labels=("tier0", "qos:gu"),
            ),
            entry(
                "[test_id:74251][qos:bu] with ephemeral storage, multi-container, fractional",
                e2enrt.SINGLE_NUMA_NODE,
                [
                    _res(cpu="1200m", memory="384Mi", ephemeral_storage="16777216"),
                    _res(cpu="1200m", memory="384Mi", ephemeral_storage="256Mi"),
                    _res(cpu="1600m", memory="384Mi", ephemeral_storage="256Mi"),
                    _res(cpu="2", memory="384Mi", ephemeral_storage="16777216"),
                ],
                BU,
                labels=("tier1", "qos:bu"),
            ),
            entry(
                "[test_id:74252][qos:be] with ephemeral storage, multi-container",
                e2enrt.SINGLE_NUMA_NODE,
                [_res(ephemeral_storage="256Mi"), _res(ephemeral_storage="16777216")],
                BE,
                labels=("tier1", "qos:be"),
            ),
        ],
    )
    def test_placed_and_aligned(
        self, fxt: Any, suite_config: Any, tm_policy: str, required: list[acct.ResList], expected_qos: str
    ) -> None:
        kube = fxt.kube
        scheduler = suite_config.scheduler_name
        nrt_list = kube.list(k8s.NRT)
        candidates = acct.filter_nodes(fxt, nrt_list, 2, 2, rl.accumulate(required))
        nrts = e2enrt.filter_by_policy(candidates, tm_policy)
        if len(nrts) != len(candidates):
            fxt.skip(f"not enough nodes with policy {acct.q(tm_policy)} - found {len(nrts)}")

        pod = _make_test_pod(fxt, scheduler, required, limits=expected_qos == GU)
        kube.create(pod)

        try:
            updated = waiters.for_pod_phase(kube, fxt.namespace, "testpod", "Running", timeout=60)
        except WaitTimeout as err:
            raise AssertionError(f'Pod "testpod" not up&running after 1m0s: {err}') from None
        log.info("pod resources: %s", rl.to_string(rl.from_container_requests(updated["spec"]["containers"])))
        assert _status_qos(updated) == expected_qos, "pod QOS mismatch"

        assert acct.check_pod_was_scheduled_with(kube, fxt.namespace, "testpod", scheduler), (
            f"pod {fxt.namespace}/testpod not scheduled with expected scheduler {scheduler}"
        )

        fxt.settle_nrts()
        target_initial = acct.find_from_list(nrt_list, updated["spec"]["nodeName"])
        consumed: acct.ResList = {}
        if expected_qos == GU:
            consumed = rl.accumulate(required, rl.filter_exclusive)
        log.info("expected required resources to reflect in NRT: %s", rl.to_string(consumed))
        acct.expect_nrt_consumed(kube, target_initial, consumed, updated)


class TestUnschedWithoutSuitableNodesWithEnoughHostLevelResources:
    pytestmark = spec("[unsched] without suitable nodes with enough host level resources")

    @spec(
        "[hostlevel][failalign] a pod with multi containers should be pending due to unavailable "
        "host-level resources",
        "hostlevel",
        "failalign",
        "feature:unsched",
    )
    @pytest.mark.parametrize(
        "tm_policy,required,expected_qos",
        [
            entry(
                "[test_id:74253] with ephemeral storage, multi-container",
                e2enrt.SINGLE_NUMA_NODE,
                [
                    _res(cpu="2", memory="16Mi", ephemeral_storage="256Mi"),
                    _res(cpu="1500m", memory="16Mi", ephemeral_storage="128Mi"),
                ],
                GU,
                labels=("tier2", "qos:gu", "unsched"),
            ),
            entry(
                "[test_id:74254] with ephemeral storage, multi-container",
                e2enrt.SINGLE_NUMA_NODE,
                [
                    _res(cpu="2500m", ephemeral_storage="256Mi"),
                    _res(cpu="2", memory="64Mi", ephemeral_storage="16Mi"),
                ],
                BU,
                labels=("tier2", "qos:bu", "unsched"),
            ),
            entry(
                "[test_id:74255] with ephemeral storage, multi-container",
                e2enrt.SINGLE_NUMA_NODE,
                [_res(ephemeral_storage="256Mi"), _res(ephemeral_storage="32Mi"), "device1=2"],
                BE,
                labels=("tier3", "qos:be", "unsched"),
            ),
        ],
    )
    def test_pending_for_host_level_resources(
        self, fxt: Any, suite_config: Any, tm_policy: str, required: list[Any], expected_qos: str
    ) -> None:
        kube = fxt.kube
        scheduler = suite_config.scheduler_name
        required = [_device_request(suite_config, r) for r in required]
        nrt_list = kube.list(k8s.NRT)
        candidates = acct.filter_nodes(fxt, nrt_list, 1, 2, {})
        candidate_names = e2enrt.accumulate_names(candidates)

        # pad every candidate node so that less than the pod's total ephemeral-storage is left
        host_level = rl.accumulate(required, lambda name, _qty: name in rl.HOST_LEVEL_RESOURCES)
        keep = host_level.get("ephemeral-storage", Quantity(0)) - rl.of({"x": "1Mi"})["x"]
        padding_pods = []
        for node_name in sorted(candidate_names):
            node = kube.get(k8s.NODE, node_name)
            allocatable = rl.of(node["status"]["allocatable"]).get("ephemeral-storage", Quantity(0))
            padding = {"ephemeral-storage": allocatable - keep}
            log.info("pad node %s with %s", node_name, rl.to_string(padding))
            pod = e2epad.new_padding_pod(
                fxt.namespace, node_name, "all", padding, image=suite_config.pause_image
            )
            pod["spec"]["nodeName"] = node_name
            padding_pods.append(kube.create(pod))
        failed = e2epad.wait_for_padding_pods_running(kube, padding_pods)
        assert not failed, "some padding pods have failed to run"
        # no need to wait for NRT to settle because padding pods are BE

        pod = _make_test_pod(fxt, scheduler, required, limits=expected_qos != BU)
        kube.create(pod)
        try:
            updated = waiters.while_in_pod_phase(
                kube, fxt.namespace, "testpod", "Pending", interval=5, steps=3
            )
        except WaitTimeout as err:
            seen = acct.phase(kube.get_or_none(k8s.POD, "testpod", fxt.namespace))
            raise AssertionError(
                f"Pod {fxt.namespace}/testpod was found in state {acct.q(seen)} while expected to be Pending: {err}"
            ) from None
        assert _status_qos(updated) == expected_qos, "pod QoS mismatch"
        failed_msg = f"{len(candidate_names)} Insufficient ephemeral-storage"
        is_failed = acct.check_pod_scheduling_failed_with_msg(
            kube, fxt.namespace, "testpod", scheduler, failed_msg
        )
        if not is_failed:
            waiters.log_events_for_pod(kube, fxt.namespace, "testpod")
        assert is_failed, f"pod {fxt.namespace}/testpod with scheduler {scheduler} did NOT fail"


def _device_request(suite_config: Any, res: acct.ResList | str) -> acct.ResList:
    """The table names devices as ``deviceN=count``: resolved from E2E_NROP_DEVICE_TYPE_N at run time."""
    if not isinstance(res, str):
        return res
    key, count = res.split("=")
    device = suite_config.device_types[int(key.removeprefix("device")) - 1]
    return rl.of({device or "": count})
