"""Serial specs of upstream ``tolerations.go``: RTE tolerations set through the NROP node group.

Invalid tolerations make the operator Degraded; valid ones reach the RTE DaemonSet; NoSchedule
and NoExecute taints on worker nodes keep or evict RTE pods depending on the tolerations, both
while the RTEs run and when the NROP is (re)created. Every spec restores taints, tolerations and
the NROP it changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import _mcp_helpers as mcph
import _node_helpers as nodeh
import _nropcr_helpers as nropcr
import _openshift_helpers as ocp
import _operand_helpers as operands
import _polling_helpers as polling
import pytest

from nrop.api.fielderrors import go_quote
from nrop.api.tolerations import parse_taint, sorted_tolerations
from nrop.suite import Kube, WaitTimeout, spec, waiters
from nrop.suite.e2e.fixture import pick_node_index
from nrop.suite.e2e.kube import DAEMONSET, NROP, POD, ApiError

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][rtetols] numaresources RTE tolerations support",
    "Serial",
    "disruptive",
    "rtetols",
    "feature:rtetols",
)
FIXTURE_BASENAME = "e2e-test-configuration"

# upstream's failure messages of the DaemonSet waits ({found}: currentNumberScheduled then)
PODS_NUMBER = "pods number is not as expected for daemonset: expected {expected} found {{found}}"
PODS_NUMBER_RTE = "pods number is not as expected for RTE daemonset: expected {expected} found {{found}}"
NOT_STARTED_UPDATED = "daemonset {key} did not start updated"
NOT_READY = "failed to get the daemonset ready"

# The RTE DaemonSet manifest the operator starts from (deployer's rte/daemonset.yaml) has no
# tolerations, so with no node-group tolerations the DaemonSet must carry none.
BUILTIN_RTE_TOLERATIONS: list[dict[str, Any]] = []


class RteTarget:
    """The Context's BeforeEach state: the NROP, its single RTE DaemonSet and the workers."""

    def __init__(self, kube: Kube, suite_config: Any, nrop: dict[str, Any]) -> None:
        self.kube = kube
        self.suite_config = suite_config
        self.target = suite_config.target
        self.nrop = nrop
        self.nrop_name = nrop["metadata"]["name"]
        ds_ref = nrop["status"]["daemonsets"][0]
        self.ds_namespace = ds_ref["namespace"]
        self.ds_name = ds_ref["name"]
        self.ds = kube.get(DAEMONSET, self.ds_name, self.ds_namespace)
        self.workers: list[dict[str, Any]] = []
        self.tainted: list[str] = []
        self.taints: list[dict[str, str]] = []
        self.extra_tolerations = False

    @property
    def key(self) -> str:
        return f"{self.ds_namespace}/{self.ds_name}"

    def set_tolerations(self, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
        return nropcr.set_rte_tolerations(self.kube, self.nrop_name, tolerations, target=self.target)

    def pods_creation(self, expected: int, timeout: float, interval: float, message: str) -> dict[str, Any]:
        """``ForDaemonsetPodsCreation``; on failure ``message`` (``{found}``: the DaemonSet's
        currentNumberScheduled then) and the wait's report."""
        try:
            return waiters.for_daemonset_pods(
                self.kube,
                self.ds_namespace,
                self.ds_name,
                expected,
                timeout=timeout,
                interval=polling.poll(self.target, interval),
            )
        except WaitTimeout as err:
            ds = self.kube.get_or_none(DAEMONSET, self.ds_name, self.ds_namespace) or {}
            found = (ds.get("status") or {}).get("currentNumberScheduled", 0)
            raise AssertionError(f"{message.format(found=found)}: {err}") from None

    def ready(
        self, timeout: float = 180, interval: float = 10, message: str = "failed to get the daemonset {key}"
    ) -> dict[str, Any]:
        """``ForDaemonSetReadyByKey`` (3m / 10s by default); on failure ``message`` (``{key}``:
        the DaemonSet) and the wait's report."""
        try:
            return waiters.for_daemonset_ready(
                self.kube,
                self.ds_namespace,
                self.ds_name,
                timeout=timeout,
                interval=polling.poll(self.target, interval),
            )
        except WaitTimeout as err:
            raise AssertionError(f"{message.format(key=self.key)}: {err}") from None

    def pick_worker(self) -> dict[str, Any]:
        self.workers = nodeh.worker_nodes(self.kube)
        log.info("randomly picking the target node (among %d)", len(self.workers))
        index, ok = pick_node_index(self.workers)
        assert ok
        return self.workers[index]

    def taint(self, node_name: str, taint: dict[str, str]) -> None:
        nodeh.apply_taint_to_node(self.kube, node_name, taint, target=self.target)
        if node_name not in self.tainted:
            self.tainted.append(node_name)
        log.info("considering node %s tainted with %s", node_name, taint)

    def untaint_all(self) -> None:
        for taint in self.taints:
            nodeh.untaint_nodes(self.kube, self.tainted, taint, target=self.target)

    def wait_pod_deleted(self, pod: dict[str, Any], timeout: float = 120) -> None:
        """``ForPodDeleted`` (default interval), asserted "pod ns/name still exists"."""
        meta = pod["metadata"]
        try:
            waiters.for_pod_deleted(
                self.kube,
                meta["namespace"],
                meta["name"],
                timeout=timeout,
                interval=polling.poll(self.target, 1),
            )
        except WaitTimeout as err:
            raise AssertionError(f"pod {meta['namespace']}/{meta['name']} still exists: {err}") from None
        log.info("pod %s/%s deleted", meta["namespace"], meta["name"])


@pytest.fixture
def rte(fxt: Any, kube: Kube, suite_config: Any) -> RteTarget:
    nrop = kube.get(NROP, suite_config.nrop["metadata"]["name"])
    groups = nrop["spec"].get("nodeGroups") or []
    if len(groups) != 1:
        fxt.skip(f"more than one NodeGroup not yet supported, found {len(groups)}")
    return RteTarget(kube, suite_config, nrop)


def _reset_and_wait_ready(rte: RteTarget) -> None:
    """The invalid-toleration specs' deferred reset: no tolerations, then the DS ready (3m / 10s)."""
    rte.set_tolerations([])
    # no need to wait for an update - the original change must not have gone through
    log.info("waiting for DaemonSet to be ready")
    rte.ready(timeout=180, interval=10)


def _expect_degraded_unsupported(rte: RteTarget, platform: ocp.ClusterPlatform) -> None:
    """Degraded with "Unsupported value" (5m / 30s), with the reason of the platform's operator:
    InternalError from OpenShift 4.18 on, Degraded before.

    Kubernetes adaptation (listed in docs/faithfulness.md): upstream compares any platform
    version with 4.18, so on Kubernetes (1.x) it expects the pre-4.18 reason, which the operator
    of the pinned commit never sets; on every platform but OpenShift the port expects the current
    operator's InternalError.
    """
    expected_reason = nropcr.CONDITION_DEGRADED
    if not platform.is_openshift_like or platform.at_least("4.18"):
        expected_reason = nropcr.REASON_INTERNAL_ERROR

    def degraded() -> str | None:
        conds = (rte.kube.get(NROP, rte.nrop_name).get("status") or {}).get("conditions")
        if nropcr.is_degraded_with(conds, "Unsupported value", expected_reason):
            return None
        return f"Condition not degraded as expected: {conds}"

    polling.eventually(
        degraded,
        f"Degraded with {expected_reason} and an Unsupported value",
        300,
        polling.poll(rte.target, 30),
    )


@contextmanager
def _deferred(cleanup: Callable[[], None]) -> Iterator[None]:
    """A Go ``defer`` holding Expects: ``cleanup`` runs after the body however it ended, and
    its failure fails the spec. When the body failed first, the body's failure stays the one
    reported (Ginkgo keeps a spec's first failure) and the cleanup's is added to it as a note,
    so both show."""
    try:
        yield
    except BaseException as err:
        try:
            cleanup()
        except Exception as cleanup_err:
            log.error("deferred cleanup failed after the spec failed: %s", cleanup_err)
            err.add_note(f"deferred cleanup failed too: {type(cleanup_err).__name__}: {cleanup_err}")
        raise
    cleanup()


def _expect_equal_tolerations(got: list[Any] | None, expected: list[Any] | None) -> None:
    assert sorted_tolerations(got) == sorted_tolerations(expected), "mismatched tolerations"


class TestClusterHasAtLeastOneSuitableNode:
    pytestmark = spec("cluster has at least one suitable node")

    class TestWhenInvalidTolerationsAreSubmitted:
        pytestmark = spec("when invalid tolerations are submitted ", "tier2")

        # upstream branches on the OpenShift version here (isPlatformVersionAtLeast("4.18"));
        # the openshift profile (4.22) takes the branch of the platforms it runs on, in both suites
        @pytest.mark.nrop_profile("openshift")
        @spec("[test_id:84302] should handle invalid field: operator")
        def test_84302_invalid_operator(self, rte: RteTarget, kube: Kube) -> None:
            platform = ocp.detect_platform(kube)
            rte.set_tolerations(
                [{"key": "invalid", "operator": "foo", "value": "abc", "effect": "NoSchedule"}]
            )
            try:
                _expect_degraded_unsupported(rte, platform)
            finally:
                _reset_and_wait_ready(rte)

        # upstream branches on the OpenShift version here (isPlatformVersionAtLeast("4.18"));
        # the openshift profile (4.22) takes the branch of the platforms it runs on, in both suites
        @pytest.mark.nrop_profile("openshift")
        @spec("[test_id:72862] should handle invalid field: effect")
        def test_72862_invalid_effect(self, rte: RteTarget, kube: Kube) -> None:
            platform = ocp.detect_platform(kube)
            rte.set_tolerations(
                [{"key": "invalid", "operator": "Equal", "value": "abc", "effect": "__foobar__"}]
            )
            try:
                _expect_degraded_unsupported(rte, platform)
            finally:
                _reset_and_wait_ready(rte)

    @spec("[test_id:84303] should enable to change tolerations in the RTE daemonsets", "tier3")
    def test_84303_change_tolerations(self, rte: RteTarget) -> None:
        kube = rte.kube
        _expect_equal_tolerations(
            rte.ds["spec"]["template"]["spec"].get("tolerations"), BUILTIN_RTE_TOLERATIONS
        )
        log.info("list RTE pods before the CR update")
        rte_pods = operands.pods_of_daemonset(kube, rte.ds_namespace, rte.ds_name)
        log.info("RTE pods before reverting tolerations: %s", operands.pod_names(rte_pods))
        log.info("adding extra tolerations")
        updated_nrop = rte.set_tolerations([nodeh.sriov_toleration()])

        def revert() -> None:
            log.info("list RTE pods before the CR update")
            ds_ref = updated_nrop["status"]["daemonsets"][0]
            pods = operands.pods_of_daemonset(kube, ds_ref["namespace"], ds_ref["name"])
            log.info("RTE pods before reverting tolerations: %s", operands.pod_names(pods))
            log.info("removing extra tolerations")
            rte.set_tolerations([])
            log.info("ensure that RTE pods are recreated and DS is ready")
            operands.wait_for_daemonset_update(
                kube, ds_ref["namespace"], ds_ref["name"], pods, target=rte.target
            )

        with _deferred(revert):
            log.info("ensure that RTE pods are recreated and DS is ready")
            operands.wait_for_daemonset_update(
                kube, rte.ds_namespace, rte.ds_name, rte_pods, target=rte.target
            )
            log.info("checking the tolerations in the owned DaemonSet")
            try:
                ds = kube.get(DAEMONSET, rte.ds_name, rte.ds_namespace)
            except ApiError as err:
                raise AssertionError(f'cannot get "{rte.key}" in the cluster: {err}') from None
            _expect_equal_tolerations(
                ds["spec"]["template"]["spec"].get("tolerations"),
                updated_nrop["spec"]["nodeGroups"][0]["config"]["tolerations"],
            )

    class TestWhenAddingTolerationsToTheTargetMCP:
        pytestmark = spec("when adding tolerations to the target MCP")

        @pytest.fixture(autouse=True)
        def _restore(self, rte: RteTarget) -> Any:
            yield
            if rte.taints and rte.tainted:
                rte.untaint_all()
            if rte.extra_tolerations:
                rte.set_tolerations([])
            workers = len(rte.workers)
            log.info("ensuring the RTE DS was restored - expected pods=%d", workers)
            rte.pods_creation(workers, timeout=60, interval=1, message=PODS_NUMBER.format(expected=workers))
            ready = rte.ready(timeout=180, interval=10)
            assert ready["status"].get("numberReady") == workers, (
                f"RTE DS ready={ready['status'].get('numberReady')} original worker nodes={workers}"
            )

        @spec(
            "[test_id:72857] should handle untolerations of tainted nodes while RTEs are running",
            "slow",
            "tier2",
        )
        def test_72857_untolerations_while_running(self, rte: RteTarget) -> None:
            kube = rte.kube
            rte.set_tolerations(nodeh.test_toleration())
            rte.extra_tolerations = True
            target = rte.pick_worker()
            taint = parse_taint(f"{nodeh.TEST_KEY}:NoSchedule")
            rte.taints = [taint]
            rte.taint(target["metadata"]["name"], taint)
            workers = len(rte.workers)

            log.info("waiting for DaemonSet to be ready - should match worker nodes count %d", workers)
            rte.pods_creation(
                workers, timeout=60, interval=10, message=NOT_STARTED_UPDATED.format(key=rte.key)
            )
            rte.ready()
            # extra check, not required by the test case: the operator recreates a deleted DS
            kube.delete(DAEMONSET, rte.ds_name, rte.ds_namespace, missing_ok=False)
            log.info("checking that the DaemonSet is recreated with matching worker nodes count %d", workers)
            rte.pods_creation(workers, timeout=120, interval=1, message=PODS_NUMBER.format(expected=workers))
            ready = rte.ready()
            assert ready["status"].get("numberReady") == workers, (
                f"updated DS ready={ready['status'].get('numberReady')} original worker nodes={workers}"
            )

            rte.set_tolerations([])
            rte.extra_tolerations = False
            # the taint is still there
            log.info("ensuring the RTE DS is running with less pods because taints: expected %d", workers - 1)
            rte.pods_creation(
                workers - 1, timeout=60, interval=10, message=NOT_STARTED_UPDATED.format(key=rte.key)
            )
            rte.ready()

        @spec(
            "[test_id:84304] should evict running RTE pod if taint-toleration matching criteria is shaken - NROP CR toleration update",
            "tier3",
            "slow",
        )
        def test_84304_evict_on_toleration_update(self, rte: RteTarget) -> None:
            tolerate = nodeh.toleration(nodeh.TEST_KEY, "Equal", "NoExecute", "val1")
            rte.set_tolerations([tolerate])
            rte.extra_tolerations = True
            target = rte.pick_worker()
            node_name = target["metadata"]["name"]
            taint = parse_taint(f"{nodeh.TEST_KEY}=val1:NoExecute")
            rte.taints = [taint]
            rte.taint(node_name, taint)
            workers = len(rte.workers)

            log.info("ensuring the RTE DS was created with expected pods count=%d", workers)
            rte.pods_creation(workers, timeout=180, interval=1, message=PODS_NUMBER.format(expected=workers))
            rte.ready()
            pod_on_node = operands.rte_pod_on_node(rte.kube, node_name)
            assert pod_on_node is not None, f"no RTE pod found on node {go_quote(node_name)}"

            rte.set_tolerations([nodeh.toleration(nodeh.TEST_KEY, "Equal", "NoExecute", "val2")])
            log.info("ensuring the RTE DS was created with expected pods count=%d", workers - 1)
            rte.pods_creation(
                workers - 1, timeout=60, interval=1, message=PODS_NUMBER.format(expected=workers - 1)
            )
            rte.ready()
            log.info("verify the rte pod on node %s is evicted", node_name)
            rte.wait_pod_deleted(pod_on_node, timeout=120)

        @spec(
            "[test_id:84305] should evict running RTE pod if taint-tolartion matching criteria is shaken - node taints update",
            "tier3",
            "slow",
        )
        def test_84305_evict_on_taint_update(self, rte: RteTarget) -> None:
            target = rte.pick_worker()
            node_name = target["metadata"]["name"]
            taint1 = parse_taint(f"{nodeh.TEST_KEY}=val1:NoExecute")
            rte.taints = [taint1]
            rte.taint(node_name, taint1)
            rte.set_tolerations([nodeh.toleration(nodeh.TEST_KEY, "Equal", "NoExecute", "val1")])
            rte.extra_tolerations = True
            workers = len(rte.workers)

            log.info("ensuring the RTE DS was created with expected pods count=%d", workers)
            rte.pods_creation(workers, timeout=180, interval=1, message=PODS_NUMBER.format(expected=workers))
            rte.ready()
            pod_on_node = operands.rte_pod_on_node(rte.kube, node_name)
            assert pod_on_node is not None, f"no RTE pod found on node {go_quote(node_name)}"

            taint2 = parse_taint(f"{nodeh.TEST_KEY}=val2:NoExecute")
            rte.taints = [taint2]  # AddOrUpdateTaint replaced val1 by val2 (same key and effect)
            rte.taint(node_name, taint2)
            log.info("waiting for daemonset %s to report correct pods' number", rte.key)
            rte.pods_creation(
                workers - 1, timeout=60, interval=1, message=PODS_NUMBER_RTE.format(expected=workers - 1)
            )
            rte.ready(message=NOT_READY)
            log.info("verify the rte pod on node %s is evicted", node_name)
            rte.wait_pod_deleted(pod_on_node, timeout=120)

    class TestWhenAddingTaintsToNodesInTheTargetMCP:
        pytestmark = spec("when adding taints to nodes in the target MCP")

        @pytest.fixture(autouse=True)
        def _restore(self, rte: RteTarget) -> Any:
            yield
            if rte.taints and rte.tainted:
                rte.untaint_all()
            workers = len(rte.workers)
            log.info("ensuring the RTE DS was restored - expected pods=%d", workers)
            rte.pods_creation(workers, timeout=60, interval=1, message=PODS_NUMBER.format(expected=workers))
            rte.ready()

        @spec(
            "[test_id:72861] should tolerate partial taints and not schedule or evict the pod on the tainted node",
            "tier2",
        )
        def test_72861_partial_taints(self, rte: RteTarget) -> None:
            kube = rte.kube
            target = rte.pick_worker()
            node_name = target["metadata"]["name"]
            rte.tainted.append(node_name)
            no_sched = parse_taint(f"{nodeh.TEST_KEY}NoSched:NoSchedule")
            no_exec = parse_taint(f"{nodeh.TEST_KEY}NoExec:NoExecute")
            rte.taints = [no_sched, no_exec]
            workers = len(rte.workers)

            rte.taint(node_name, no_sched)
            # no DS/pod recreation is expected
            ds = rte.ready()
            pods = waiters.pods_of_daemonset(kube, ds)
            log.info("ensuring the RTE DS is running with the same pods count (expected pods=%d)", workers)
            assert len(pods) == workers, f"updated DS ready={len(pods)} original worker nodes={workers}"

            rte.taint(node_name, no_exec)

            # NoExecute evicts "immediately" but termination takes nonzero time: count only pods
            # that are not terminating
            def fewer_pods() -> str | None:
                current = kube.get(DAEMONSET, rte.ds_name, rte.ds_namespace)
                all_pods = waiters.pods_of_daemonset(kube, current)
                running = [pod for pod in all_pods if not pod["metadata"].get("deletionTimestamp")]
                ready = (current.get("status") or {}).get("numberReady", 0)
                if ready != workers - 1:
                    return f"updated DS ready={ready} original worker nodes={workers - 1}"
                if len(running) != workers - 1:
                    return f"running DS pods={len(running)} expected={workers - 1} (total including terminating={len(all_pods)})"
                return None

            log.info(
                "ensuring the RTE DS is running with less pods because taints (expected pods=%d)", workers - 1
            )
            polling.eventually(
                fewer_pods, "the RTE DS running with one pod less", 300, polling.poll(rte.target, 10)
            )

        @spec(
            "[test_id:72859] should not restart a running RTE pod on tainted node with NoSchedule effect",
            "tier3",
        )
        def test_72859_no_restart_on_noschedule(self, rte: RteTarget) -> None:
            kube = rte.kube
            target = rte.pick_worker()
            node_name = target["metadata"]["name"]
            taint = parse_taint(f"{nodeh.TEST_KEY}:NoSchedule")
            rte.taints = [taint]
            rte.taint(node_name, taint)
            workers = len(rte.workers)

            ds = kube.get(DAEMONSET, rte.ds_name, rte.ds_namespace)
            pods = waiters.pods_of_daemonset(kube, ds)
            assert len(pods) == workers, (
                f"pods number is not as expected for RTE daemonset: expected {workers} found {len(pods)}"
            )
            to_delete = next((pod for pod in pods if pod["spec"].get("nodeName") == node_name), None)
            assert to_delete is not None, f"RTE pod was not found on node {go_quote(node_name)}"
            kube.delete(
                POD, to_delete["metadata"]["name"], to_delete["metadata"]["namespace"], missing_ok=False
            )
            rte.wait_pod_deleted(to_delete, timeout=120)

            log.info("waiting for daemonset %s to report correct pods' number", rte.key)
            rte.pods_creation(
                workers - 1, timeout=60, interval=1, message=PODS_NUMBER_RTE.format(expected=workers - 1)
            )
            rte.ready(message=NOT_READY)
            assert operands.rte_pod_on_node(kube, node_name) is None, (
                f"RTE pod was found on node {go_quote(node_name)} while expected not to be found"
            )

        class TestWhenRTEPodsAreNotRunningYet:
            pytestmark = spec("when RTE pods are not running yet")

            @pytest.fixture
            def tainted_without_nrop(self, fxt: Any, rte: RteTarget) -> Any:
                """BeforeEach: delete the NROP (its DS and RTE pods go), taint a worker; AfterEach:
                restore the NROP (recreate it if missing)."""
                kube = rte.kube
                platform = ocp.detect_platform(kube)
                custom = ocp.custom_policy_support_enabled(platform, rte.nrop)
                rte.workers = nodeh.worker_nodes(kube)
                dss = operands.daemonsets_by_name(kube, rte.nrop["status"].get("daemonsets") or [])
                assert len(dss) == 1
                rte_pods = waiters.pods_of_daemonset(kube, dss[0])
                assert rte_pods, f"cannot find any pods for daemonset {rte.key}"
                infos = mcph.mcps_info(kube, rte.nrop) if custom else []
                if custom:
                    assert infos, "no MachineConfigPool found for the NROP node groups"
                kube.delete(NROP, rte.nrop_name, missing_ok=False)
                try:
                    if custom:
                        mcph.wait_for_mcp_update(kube, rte.suite_config, infos, config_update=True)
                    waiters.for_daemonset_deleted(
                        kube,
                        rte.ds_namespace,
                        rte.ds_name,
                        timeout=120,
                        interval=polling.poll(rte.target, 30),
                    )
                    try:
                        waiters.for_pods_all_deleted(
                            kube, rte_pods, timeout=120, interval=polling.poll(rte.target, 30)
                        )
                    except WaitTimeout as err:
                        raise AssertionError(
                            "Expected all RTE pods owned by the DaemonSet to be deleted within the timeout: "
                            f"{err}"
                        ) from None
                    taint = parse_taint(f"{nodeh.TEST_KEY}:NoSchedule")
                    rte.taints = [taint]
                    index, ok = pick_node_index(rte.workers)
                    assert ok
                    tainted = rte.workers[index]
                    rte.taint(tainted["metadata"]["name"], taint)
                    fxt.is_reboot_test = custom
                    yield tainted["metadata"]["name"]
                finally:
                    current = kube.get_or_none(NROP, rte.nrop_name)
                    if current is None:
                        log.warning("NROP CR is not found on the cluster")
                        kube.create(_fresh_nrop(rte.nrop))
                        if custom:
                            _wait_machine_count_update(rte)
                    else:

                        def mutate(obj: dict[str, Any]) -> None:
                            obj["spec"] = rte.nrop["spec"]

                        nropcr.update_nrop(
                            kube, rte.nrop_name, mutate, timeout=600, interval=polling.poll(rte.target, 30)
                        )

            # upstream branches on the OpenShift version here (isCustomPolicySupportEnabled);
            # the openshift profile (4.22) takes the branch of the platforms it runs on, in both suites
            @pytest.mark.nrop_profile("openshift")
            @spec(
                "[test_id:72854] should add tolerations in-place while RTEs are running",
                "reboot_required",
                "slow",
                "tier2",
            )
            def test_72854_add_tolerations_in_place(self, rte: RteTarget, tainted_without_nrop: str) -> None:
                kube = rte.kube
                workers = len(rte.workers)
                kube.create(_fresh_nrop(rte.nrop))
                if _custom_policy(rte):
                    _wait_machine_count_update(rte)
                log.info("waiting for DaemonSet to be ready")
                rte.pods_creation(
                    workers - 1, timeout=60, interval=1, message=PODS_NUMBER.format(expected=workers - 1)
                )
                rte.ready()
                assert operands.rte_pod_on_node(kube, tainted_without_nrop) is None, (
                    "found RTE pod running on tainted node without toleration on NROP obj"
                )
                rte.set_tolerations(nodeh.test_toleration())
                log.info("waiting for DaemonSet pods to scale up and be ready")
                rte.pods_creation(
                    workers, timeout=60, interval=1, message=PODS_NUMBER.format(expected=workers)
                )
                rte.ready()
                assert operands.rte_pod_on_node(kube, tainted_without_nrop) is not None, (
                    f"no RTE pod was found on node {go_quote(tainted_without_nrop)}"
                )

            # upstream branches on the OpenShift version here (isCustomPolicySupportEnabled);
            # the openshift profile (4.22) takes the branch of the platforms it runs on, in both suites
            @pytest.mark.nrop_profile("openshift")
            @spec(
                "[test_id:72855] should tolerate node taint on NROP CR creation",
                "reboot_required",
                "slow",
                "tier2",
            )
            def test_72855_tolerate_taint_on_creation(
                self, rte: RteTarget, tainted_without_nrop: str
            ) -> None:
                kube = rte.kube
                workers = len(rte.workers)
                fresh = _fresh_nrop(rte.nrop)
                group = fresh["spec"]["nodeGroups"][0]
                if group.get("config") is None:
                    group["config"] = {}
                group["config"]["tolerations"] = nodeh.test_toleration()
                kube.create(fresh)
                if _custom_policy(rte):
                    _wait_machine_count_update(rte)
                log.info("waiting for DaemonSet to be ready")
                rte.pods_creation(
                    workers, timeout=60, interval=1, message=PODS_NUMBER.format(expected=workers)
                )
                rte.ready()
                assert operands.rte_pod_on_node(kube, tainted_without_nrop) is not None, (
                    f"RTE pod is not found on node {go_quote(tainted_without_nrop)}"
                )

        @spec(
            "[test_id:84306] should evict RTE pod on tainted node with NoExecute effect and restore it when taint is removed",
            "tier3",
        )
        def test_84306_evict_and_restore_on_noexecute(self, rte: RteTarget) -> None:
            kube = rte.kube
            target = rte.pick_worker()
            node_name = target["metadata"]["name"]
            taint = parse_taint(f"{nodeh.TEST_KEY}NoExec:NoExecute")
            rte.taints = [taint]
            rte.taint(node_name, taint)
            workers = len(rte.workers)

            log.info("waiting for daemonset %s to report correct pods' number", rte.key)
            ds = rte.pods_creation(
                workers - 1, timeout=60, interval=1, message=PODS_NUMBER_RTE.format(expected=workers - 1)
            )
            rte.ready(message=NOT_READY)
            # even after eviction the pod takes time to terminate and is still owned by the DS
            for pod in waiters.pods_of_daemonset(kube, ds):
                if pod["spec"].get("nodeName") == node_name:
                    rte.wait_pod_deleted(pod, timeout=120)
                    break

            nodeh.untaint_nodes(kube, [node_name], taint, target=rte.target)
            rte.tainted = []
            log.info("watch for daemonset %s pods scale up", rte.key)
            rte.pods_creation(
                workers, timeout=60, interval=1, message=PODS_NUMBER_RTE.format(expected=workers)
            )
            rte.ready(message=NOT_READY)
            assert operands.rte_pod_on_node(kube, node_name) is not None, (
                f"RTE pod is not found on node {go_quote(node_name)}"
            )


def _custom_policy(rte: RteTarget) -> bool:
    """``isCustomPolicySupportEnabled`` of the NROP as it was before the spec."""
    return ocp.custom_policy_support_enabled(ocp.detect_platform(rte.kube), rte.nrop)


def _wait_machine_count_update(rte: RteTarget) -> None:
    """``buildMCPsInfo`` of the re-created NROP (not empty), then ``waitForMcpUpdate(MachineCount)``:
    with the custom SELinux policy the re-created NROP rolls its MachineConfig out again."""
    infos = mcph.mcps_info(rte.kube, rte.nrop)
    assert infos, "no MachineConfigPool found for the NROP node groups"
    mcph.wait_for_mcp_update(rte.kube, rte.suite_config, infos, config_update=False)


def _fresh_nrop(nrop: dict[str, Any]) -> dict[str, Any]:
    """A copy of the NROP for re-creation: its spec under a bare ``metadata.name``."""
    return {
        "apiVersion": nrop["apiVersion"],
        "kind": nrop["kind"],
        "metadata": {"name": nrop["metadata"]["name"]},
        "spec": dict(nrop["spec"]),
    }
