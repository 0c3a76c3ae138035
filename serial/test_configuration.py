"""Serial specs of upstream ``configuration.go``: operator configuration management.

Node groups (MCP selector vs poolName, validation -> Degraded), RTE log level, the NodeGroupConfig
reported in the NROP status, relatedObjects, KubeletConfig tracking (TM policy/scope reaching
the RTE ConfigMap and the NRT attributes), the NRS scheduler name, and the TLS profile of the
RTE. OpenShift-only steps (MachineConfigPools, KubeletConfigs, PerformanceProfiles, the
APIServer TLS profile, cluster types) run when the cluster serves those APIs; otherwise the
spec skips saying which API is missing. On Kubernetes a pool named ``P`` is the set of nodes
labelled ``node-role.kubernetes.io/P`` (the operator's poolName convention), so specs that only
need "a pool with no machines" run there with no MCP object.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import _accounting_helpers as acct
import _mcp_helpers as mcph
import _node_helpers as nodeh
import _nropcr_helpers as nropcr
import _openshift_helpers as ocp
import _operand_helpers as operands
import _polling_helpers as polling
import _tmconfig_helpers as tmconfig
import pytest
import urllib3
import yaml

from nrop.api import quantity
from nrop.api.annotations import SELINUX_POLICY_ANNOTATION, SELINUX_POLICY_CUSTOM
from nrop.api.selectors import matches as selector_matches
from nrop.suite import Kube, WaitTimeout, consistently, entry, nrtupdates, scheduling, spec, wait_for, waiters
from nrop.suite import nrt as e2enrt
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.kube import (
    CONFIGMAP,
    DAEMONSET,
    DEPLOYMENT,
    NODE,
    NROP,
    NROSCHED,
    NRT,
    POD,
    ApiError,
    Kind,
    UnknownKindError,
)
from nrop.suite.e2e.objects import new_test_deployment, new_test_pod_pause, randomize_name

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive] numaresources configuration management", "Serial", "disruptive", "feature:config"
)
FIXTURE_BASENAME = "e2e-test-configuration"

SCHEDULER_TEST_NAME = "test-topology-scheduler"
MIN_CUSTOM_POLICY_VERSION = "4.18"
SNN = "single-numa-node"
# 75354: pods with a Topology Affinity Error tolerated before the warning
MAX_PODS_WITH_TAE = 10


def _nrop(kube: Kube, suite_config: Any) -> dict[str, Any]:
    return kube.get(NROP, suite_config.nrop["metadata"]["name"])


def _nrs(kube: Kube, suite_config: Any) -> dict[str, Any]:
    return kube.get(NROSCHED, suite_config.nrosched["metadata"]["name"])


@pytest.fixture(autouse=True)
def _suitable_nrts(fxt: Any) -> list[Mapping[str, Any]]:
    """The Describe's BeforeEach: at least two NRTs with a valid (single-numa-node) policy."""
    nrts = fxt.kube.list(NRT)
    candidates = e2enrt.filter_by_policy(nrts, SNN)
    if len(candidates) < 2:
        pytest.skip(f"not enough nodes with valid policy - found {len(candidates)}")
    return nrts


@pytest.fixture
def platform(kube: Kube) -> ocp.ClusterPlatform:
    return ocp.detect_platform(kube)


#: what a failed Get raises: the API server's answer, a transport failure, an unserved kind
GET_ERRORS = (ApiError, urllib3.exceptions.HTTPError, UnknownKindError)


def _get_attempt(
    kube: Kube, kind: Kind, name: str, namespace: str | None = None, what: str = ""
) -> tuple[dict[str, Any] | None, str | None]:
    """``g.Expect(Client.Get(...)).To(Succeed(), what)`` inside Gomega's ``Eventually`` or
    ``Consistently(func(g Gomega))``: the object and None, or None and the problem. A failed Get
    fails that one attempt: an Eventually tries again within its window, a Consistently fails
    with its own message (a bare ``kube.get`` would end the spec at once)."""
    try:
        return kube.get(kind, name, namespace), None
    except GET_ERRORS as exc:
        prefix = f"{what}\n" if what else ""
        return None, f"{prefix}Expected success, but got an error: {exc}"


def _revert_spec(
    kube: Kube, name: str, initial_spec: Mapping[str, Any], target: str, timeout: float = 600
) -> None:
    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"] = dict(initial_spec)

    nropcr.update_nrop(kube, name, mutate, timeout=timeout, interval=polling.poll(target, 30))


def _revert_node_groups_and_wait_available(
    kube: Kube, name: str, node_groups: list[Any], target: str
) -> None:
    """The node-group specs' deferred revert: restore the groups, then Available=True (5m / 5s)."""

    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeGroups"] = node_groups

    nropcr.update_nrop(kube, name, mutate, timeout=600, interval=polling.poll(target, 30))

    def available() -> str | None:
        obj, problem = _get_attempt(kube, NROP, name)
        return problem if obj is None else nropcr.available_true_problem(obj)

    polling.eventually(
        available,
        "operator did not return to Available state in time",
        300,
        polling.poll(target, 5),
    )


def _append_node_group(
    kube: Kube,
    name: str,
    group: Mapping[str, Any],
    target: str,
    timeout: float = 600,
    description: str | None = None,
) -> dict[str, Any]:
    """Append ``group`` to the NROP node groups (``Eventually`` Get/append/Update, 30s polls);
    ``description`` is the Eventually's failure message, where upstream gives one."""

    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeGroups"] = [*obj["spec"].get("nodeGroups", []), dict(group)]

    return polling.update_object(
        kube, NROP, name, mutate, timeout=timeout, interval=polling.poll(target, 30), description=description
    )


def _set_node_groups(
    kube: Kube,
    name: str,
    groups: list[Any],
    target: str,
    description: str | None = "failed to update node groups",
) -> dict[str, Any]:
    """Replace the NROP node groups with ``groups`` (``Eventually`` Get/set/Update, 10m / 30s polls);
    ``description`` is the Eventually's failure message (upstream's, or none where it gives none)."""

    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeGroups"] = [dict(group) for group in groups]

    return polling.update_object(
        kube,
        NROP,
        name,
        mutate,
        timeout=600,
        interval=polling.poll(target, 30),
        description=description,
    )


def _create_test_mcp(
    kube: Kube, machine_config_selector: Mapping[str, Any], name: str = nodeh.ROLE_MCP_TEST
) -> dict[str, Any]:
    """``objects.TestMCP`` with the spec's selectors; zero machines (no node has the role)."""
    mcp = {
        "apiVersion": ocp.MCP.api_version,
        "kind": ocp.MCP.kind,
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": name}},
        "spec": {
            "machineConfigSelector": dict(machine_config_selector),
            "nodeSelector": {"matchLabels": {nodeh.role_label(name): ""}},
        },
    }
    return kube.create(mcp)


def _delete_mcp(kube: Kube, suite_config: Any, name: str) -> None:
    """CLEANUP: delete the MCP (must succeed), then ``ForMachineConfigPoolDeleted``."""
    kube.delete(ocp.MCP, name, missing_ok=False)
    t = suite_config.timeouts
    waiters.for_object_deleted(
        kube,
        ocp.MCP,
        name,
        timeout=t.mcp_update_timeout,
        interval=polling.poll(suite_config.target, t.mcp_update_interval),
    )


def _is_transient_api_error(exc: BaseException) -> bool:
    """``isTransientMCPError``: transport failures, API timeouts, 503s and HTTP/2 stream resets,
    expected while the control plane rolls out (88383 retries them)."""
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return True
    if isinstance(exc, ApiError) and (
        exc.status in (503, 504) or getattr(exc, "reason", "") in ("Timeout", "ServerTimeout")
    ):
        return True
    text = str(exc)
    return "stream error" in text or "INTERNAL_ERROR" in text


def _for_mcp_condition_with_retry(
    kube: Kube, mcp: Mapping[str, Any], ctype: str, timeout: float, interval: float
) -> None:
    """``waitForMCPConditionWithRetry``: :func:`mcph.for_mcp_condition`, retried after a transient
    API error (:func:`_is_transient_api_error`) within one overall ``timeout``."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            suffix = f": {last}" if last is not None else ""
            raise AssertionError(
                f"timed out waiting for MCP {mcp['metadata']['name']!r} condition {ctype!r}{suffix}"
            )
        try:
            mcph.for_mcp_condition(kube, mcp, ctype, remaining, interval)
            return
        except (ApiError, urllib3.exceptions.HTTPError) as exc:
            if not _is_transient_api_error(exc):
                raise
            last = exc
            log.info(
                "transient MCP wait error; retrying (mcp %s condition %s): %s",
                mcp["metadata"]["name"],
                ctype,
                exc,
            )
            time.sleep(interval)


PERFORMANCE_PROFILE = Kind("performance.openshift.io/v2", "PerformanceProfile")


def _kubelet_config_of(kc: Mapping[str, Any]) -> dict[str, Any]:
    """``kubeletconfig.MCOKubeletConfToKubeletConf``: the KubeletConfig payload (must be there)."""
    payload = (kc.get("spec") or {}).get("kubeletConfig")
    assert payload is not None, f"KubeletConfig {kc['metadata']['name']!r}: missing kubeletconfig payload"
    return dict(payload)


def _targeted_kubelet_config(kube: Kube, nrop: Mapping[str, Any]) -> dict[str, Any]:
    targeted = None
    kcs = kube.list(ocp.KUBELETCONFIG)
    for mcp in mcph.nrop_mcps(kube, nrop):
        for kc in kcs:
            if selector_matches(
                (kc.get("spec") or {}).get("machineConfigPoolSelector"), mcp["metadata"].get("labels") or {}
            ):
                targeted = kc
    assert targeted is not None, "there should be at least one kubeletconfig.machineconfiguration object"
    return targeted


def _set_kubelet_config_field(kube: Kube, target: str, kc_name: str, field_name: str, value: str) -> None:
    """Set one string field of the KubeletConfig payload (10m / 30s). Upstream round-trips the
    payload through ``v1beta1.KubeletConfiguration``, whose string fields are ``omitempty``:
    an empty ``value`` removes the key. The zero values of the other fields that the round trip
    also writes are not reproduced: the MCO merges the payload with mergo, which skips them."""

    def mutate(obj: dict[str, Any]) -> None:
        payload = obj["spec"].get("kubeletConfig")
        assert payload is not None, f"KubeletConfig {kc_name!r}: missing kubeletconfig payload"
        if value:
            payload[field_name] = value
        else:
            payload.pop(field_name, None)

    polling.update_object(
        kube, ocp.KUBELETCONFIG, kc_name, mutate, timeout=600, interval=polling.poll(target, 30)
    )


def _update_performance_profile(kube: Kube, target: str, name: str, value: str, *path: str) -> None:
    """``updatePerformanceProfileFieldUnstructured``: the field path must exist, then is set."""
    profile = kube.get(PERFORMANCE_PROFILE, name)
    current: Any = profile
    for key in path[:-1]:
        assert isinstance(current.get(key), dict), (
            f"Key '{key}' in path {list(path)} does not exist in PerformanceProfile {name}"
        )
        current = current[key]
    assert path[-1] in current, (
        f"Final field '{path[-1]}' in path {list(path)} does not exist in PerformanceProfile {name}"
    )

    def mutate(obj: dict[str, Any]) -> None:
        node = obj
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    polling.update_object(
        kube, PERFORMANCE_PROFILE, name, mutate, timeout=600, interval=polling.poll(target, 30)
    )


def _new_tm_scope(old: str) -> str:
    """``getNewTopologyManagerScopeValue``."""
    return "pod" if old in ("container", "") else "container"


def _cluster_type(kube: Kube) -> str:
    """``getClusterType``: compact / mno-masters-schedulable / mno. As upstream, a missing object
    reads as not schedulable / not highly available, a kind the cluster does not serve fails."""
    nodes = kube.list(NODE)
    sched = kube.get_or_none(ocp.SCHEDULER_CONFIG, "cluster")
    masters_schedulable = bool(((sched or {}).get("spec") or {}).get("mastersSchedulable"))
    infra = kube.get_or_none(ocp.INFRASTRUCTURE, "cluster")
    if (
        infra is not None
        and (infra.get("status") or {}).get("controlPlaneTopology") == "HighlyAvailable"
        and masters_schedulable
    ):
        return "compact" if len(nodes) == 3 else "mno-masters-schedulable"
    return "mno"


class TestClusterHasAtLeastOneSuitableNode:
    pytestmark = spec("cluster has at least one suitable node")

    @spec(
        "[test_id:47674] should be able to modify the configurable values under the NUMAResourcesOperator CR",
        "images",
        "tier2",
        "openshift",
    )
    def test_47674_modify_nrop_configurable_values(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        target = suite_config.target
        name = suite_config.nrop["metadata"]["name"]
        initial = _nrop(kube, suite_config)
        # A new node group for a pool with zero machines (no reboot). On OpenShift: a new MCP selected by
        # its labels; on Kubernetes (no MCPs) the same pool by name, whose nodes are the role label's.
        mcp_served = ocp.serves(kube, ocp.MCP)
        if mcp_served:
            mcp = _create_test_mcp(
                kube,
                {
                    "matchLabels": {
                        "machineconfiguration.openshift.io/role": nodeh.ROLE_WORKER,
                        "test-id": "47674",
                    }
                },
            )
            test_group: dict[str, Any] = {
                "machineConfigPoolSelector": {"matchLabels": dict(mcp["metadata"]["labels"])}
            }
            pool_selector = dict(mcp["spec"]["nodeSelector"]["matchLabels"])
        else:
            test_group = {"poolName": nodeh.ROLE_MCP_TEST}
            pool_selector = {nodeh.role_label(nodeh.ROLE_MCP_TEST): ""}
        try:
            new_level: list[str] = ["Trace"]

            def mutate(obj: dict[str, Any]) -> None:
                obj["spec"]["nodeGroups"] = [*obj["spec"].get("nodeGroups", []), test_group]
                new_level[0] = "Debug" if obj["spec"].get("logLevel") == "Trace" else "Trace"
                obj["spec"]["logLevel"] = new_level[0]

            applied = nropcr.update_nrop(kube, name, mutate, timeout=300, interval=polling.poll(target, 30))
            try:
                updated: dict[str, Any] = {}

                def synced() -> str | None:
                    obj, problem = _get_attempt(kube, NROP, name)
                    if obj is None:
                        return problem
                    updated.clear()
                    updated.update(obj)
                    return nropcr.synced_at_problem(
                        updated.get("status"), nropcr.CONDITION_AVAILABLE, updated["metadata"]["generation"]
                    )

                polling.eventually(
                    synced, "failed to update RTE daemonset node selector", 600, polling.poll(target, 30)
                )
                dss = operands.daemonsets_by_name(kube, updated["status"].get("daemonsets") or [])
                assert len(dss) == len(applied["spec"]["nodeGroups"]), (
                    "daemonsets found owned by NRO object doesn't align with specified NodeGroups"
                )
                for ds in dss:
                    pod_spec = ds["spec"]["template"]["spec"]
                    if ds["metadata"]["name"] == f"{name}-{nodeh.ROLE_MCP_TEST}":
                        assert pod_spec.get("nodeSelector") == pool_selector
                    cnt = pod_spec["containers"][0]
                    value = operands.container_flag(cnt.get("args") or (), "-v")
                    assert value is not None, (
                        f"-v flag doesn't exist in container {cnt['name']!r} args under DaemonSet: {ds['metadata']['name']!r}"
                    )
                    assert value == operands.KLOG_LEVELS[new_level[0]], (
                        f"LogLevel {updated['spec'].get('logLevel')} doesn't match the existing -v flag in container: "
                        f"{cnt['name']!r} managed by DaemonSet: {ds['metadata']['name']!r}"
                    )
            finally:
                _revert_spec(kube, name, initial["spec"], target)
        finally:
            if mcp_served:
                _delete_mcp(kube, suite_config, nodeh.ROLE_MCP_TEST)

    @spec("should converge with mixed SELinux policy across node groups", "tier2", "openshift")
    @pytest.mark.nrop_profile("openshift")
    def test_mixed_selinux_policy(
        self, fxt: Any, kube: Kube, suite_config: Any, platform: ocp.ClusterPlatform
    ) -> None:
        # upstream compares the platform version (on Kubernetes the server's 1.x, so it skips)
        if not platform.at_least(MIN_CUSTOM_POLICY_VERSION):
            pytest.skip("mixed SELinux policy test requires platform >= 4.18")
        reason = ocp.openshift_kinds_missing(kube, ocp.MCP)
        if reason:
            pytest.skip(reason)
        target = suite_config.target
        name = suite_config.nrop["metadata"]["name"]
        initial = _nrop(kube, suite_config)
        mcp = _create_test_mcp(
            kube,
            {
                "matchExpressions": [
                    {
                        "key": "machineconfiguration.openshift.io/role",
                        "operator": "In",
                        "values": [nodeh.ROLE_MCP_TEST, nodeh.ROLE_WORKER],
                    }
                ]
            },
        )
        try:
            test_group = {
                "machineConfigPoolSelector": {"matchLabels": dict(mcp["metadata"]["labels"])},
                "annotations": {SELINUX_POLICY_ANNOTATION: SELINUX_POLICY_CUSTOM},
            }
            applied = _append_node_group(kube, name, test_group, target, timeout=300)
            try:
                updated: dict[str, Any] = {}

                def synced() -> str | None:
                    obj, problem = _get_attempt(kube, NROP, name)
                    if obj is None:
                        return problem
                    updated.clear()
                    updated.update(obj)
                    return nropcr.synced_at_problem(
                        updated.get("status"), nropcr.CONDITION_AVAILABLE, updated["metadata"]["generation"]
                    )

                polling.eventually(
                    synced, "operator to converge with mixed policy", 600, polling.poll(target, 30)
                )
                dss = operands.daemonsets_by_name(kube, updated["status"].get("daemonsets") or [])
                assert len(dss) == len(applied["spec"]["nodeGroups"]), (
                    "daemonsets found owned by NRO object doesn't align with specified NodeGroups"
                )
            finally:
                _revert_spec(kube, name, initial["spec"], target)
        finally:
            _delete_mcp(kube, suite_config, mcp["metadata"]["name"])

    @spec(
        "[test_id:54916] should be able to modify the configurable values under the NUMAResourcesScheduler CR",
        "tier2",
        "schedrst",
        "feature:schedrst",
    )
    def test_54916_modify_nrs_configurable_values(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        target = suite_config.target
        nrs_name = suite_config.nrosched["metadata"]["name"]
        initial = kube.get(NROSCHED, nrs_name)
        initial_name = (initial.get("status") or {}).get("schedulerName", "")

        def set_name(value: str, timeout: float, interval: float, description: str | None = None) -> None:
            def mutate(obj: dict[str, Any]) -> None:
                obj["spec"]["schedulerName"] = value

            polling.update_object(
                kube,
                NROSCHED,
                nrs_name,
                mutate,
                timeout=timeout,
                interval=polling.poll(target, interval),
                description=description,
            )

        set_name(SCHEDULER_TEST_NAME, 600, 30)
        try:
            updated: dict[str, Any] = {}

            def synced() -> str | None:
                updated.clear()
                obj, problem = _get_attempt(kube, NROSCHED, nrs_name)
                if obj is None:
                    return problem
                updated.update(obj)
                return nropcr.synced_at_problem(
                    updated.get("status"), nropcr.CONDITION_AVAILABLE, updated["metadata"]["generation"]
                )

            polling.eventually(
                synced, "failed to update the schedulerName field", 60, polling.poll(target, 15)
            )
            got = updated["status"].get("schedulerName")
            assert got == SCHEDULER_TEST_NAME, (
                f"failed to update the schedulerName field,expected {SCHEDULER_TEST_NAME!r} but found {got!r}"
            )

            polling.consistently(
                synced, "unexpected mutation in NUMAResourcesScheduler", 60, polling.poll(target, 5)
            )

            pod = new_test_pod_pause(fxt.namespace, randomize_name("testpod"), image=suite_config.pause_image)
            pod["spec"]["schedulerName"] = SCHEDULER_TEST_NAME
            kube.create(pod)
            running = waiters.for_pod_phase(
                kube,
                fxt.namespace,
                pod["metadata"]["name"],
                "Running",
                timeout=300,
                interval=polling.poll(target, 1),
            )
            meta = running["metadata"]
            assert scheduling.check_pod_was_scheduled_with(
                kube, meta["namespace"], meta["name"], SCHEDULER_TEST_NAME
            ), (
                f"pod {meta['namespace']}/{meta['name']} not scheduled with expected scheduler {SCHEDULER_TEST_NAME}"
            )
        finally:
            # upstream defers this revert after the first status check; here it also runs when
            # that check fails, so a failed spec does not leave the scheduler renamed
            set_name(
                initial_name, 300, 10, "failed to revert changes the changes to the NRO scheduler object"
            )

            def reverted() -> str | None:
                obj, problem = _get_attempt(kube, NROSCHED, nrs_name)
                if obj is None:
                    return problem
                found = (obj.get("status") or {}).get("schedulerName", "")
                if found == initial_name:
                    return None
                return (
                    f"failed to revert the schedulerName field,expected {initial_name!r} but found {found!r}"
                )

            polling.eventually(
                reverted, "the schedulerName field to be reverted", 60, polling.poll(target, 15)
            )

    @spec("[test_id:84307] should report the NodeGroupConfig in the status", "tier2", "openshift")
    def test_84307_report_node_group_config(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        nrop = _nrop(kube, suite_config)
        groups = nrop["spec"].get("nodeGroups") or []
        if len(groups) != 1:
            fxt.skip(f"more than one NodeGroup not yet supported, found {len(groups)}")
        seen = [False]

        def attempt() -> tuple[str | None, bool]:
            """(what is still wrong, whether the poll ends with it: upstream's condition
            returns an error for a failed read or a status/spec length mismatch)."""
            try:
                obj = _nrop(kube, suite_config)
            except ApiError as exc:
                return f"cannot get {nrop['metadata']['name']!r} in the cluster: {exc}", True
            status = obj.get("status") or {}
            mcps, ng_status = status.get("machineconfigpools") or [], status.get("nodeGroups") or []
            spec_groups = obj["spec"].get("nodeGroups") or []
            if len(mcps) != len(spec_groups):
                return f"MCP Status mismatch: found {len(mcps)}, expected {len(spec_groups)}", True
            if len(ng_status) != len(spec_groups):
                return f"NodeGroupStatus mismatch: found {len(ng_status)}, expected {len(spec_groups)}", True
            # the assumption here is that the configured node group selector targets one pool
            assert mcps[0]["name"] == ng_status[0].get("selector")
            assert len(status.get("daemonsets") or []) == 1  # always one daemonset per pool
            assert status["daemonsets"][0] == ng_status[0].get("daemonsets")
            conf_from_mcp = mcps[0].get("config")
            if conf_from_mcp is None:
                # is this a transient error or does the cluster not support the Config reporting?
                return "the config is not reported in status.machineconfigpools yet", False
            seen[0] = True
            expected = nropcr.merged_config(spec_groups[0].get("config"))
            match_mcp = nropcr.config_equal(conf_from_mcp, expected)
            match_group = nropcr.config_equal(ng_status[0].get("config"), expected)
            log.info(
                "status (MCP) %s status (group) %s spec %s",
                conf_from_mcp,
                ng_status[0].get("config"),
                expected,
            )
            return (None if match_mcp and match_group else "config status mismatch"), False

        try:
            wait_for(
                attempt,
                lambda result: result[0] is None,
                "the NodeGroupConfig status to match the spec",
                300,
                interval=polling.poll(suite_config.target, 10),
                terminal=lambda result: result[1],
            )
        except WaitTimeout as exc:
            if not seen[0]:
                fxt.skip("NodeGroupConfig never reported in status, assuming not supported")
            raise AssertionError(
                f"failed to check the NodeGroupConfig status for {nrop['metadata']['name']!r}: {exc}"
            ) from exc

    @spec("[test_id:84309] should report relatedObjects in the status", "related_objects")
    def test_84309_report_related_objects(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        nrop = _nrop(kube, suite_config)
        groups = nrop["spec"].get("nodeGroups") or []
        if len(groups) != 1:
            fxt.skip(f"more than one NodeGroup not yet supported, found {len(groups)}")
        status = nrop.get("status") or {}
        dss = operands.daemonsets_by_name(kube, status.get("daemonsets") or [])
        assert len(dss) == 1, f"unexpected DaemonSet count: {len(dss)}"
        expected = nropcr.related_objects_rte(dss[0]["metadata"]["namespace"], status.get("daemonsets") or [])
        got = nropcr.object_refs(status.get("relatedObjects"))
        assert got == expected, "mismatching related objects for NUMAResourcesOperator"

        nrs = _nrs(kube, suite_config)
        deployment = (nrs.get("status") or {}).get("deployment") or {}
        assert deployment.get("name"), "unexpected missing scheduler deployment"
        expected_nrs = nropcr.related_objects_scheduler(deployment["namespace"], deployment)
        got_nrs = nropcr.object_refs((nrs.get("status") or {}).get("relatedObjects"))
        assert got_nrs == expected_nrs, "mismatching related objects for NUMAResourcesScheduler"

    @spec("[test_id:84310] ignores non-matching kubeletconfigs", "slow", "tier1", "openshift")
    def test_84310_ignores_non_matching_kubeletconfigs(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        reason = ocp.openshift_kinds_missing(kube, ocp.KUBELETCONFIG)
        if reason:
            pytest.skip(reason)
        nrop_name = suite_config.nrop["metadata"]["name"]

        def kc_configmap_names() -> list[str]:
            cms = kube.list(CONFIGMAP, label_selector=f"{operands.LABEL_OPERATOR_NAME}={nrop_name}")
            return sorted({cm["metadata"]["name"] for cm in cms})

        before = kc_configmap_names()
        log.info("initial set of configmaps from kubeletconfigs: %s", ",".join(before))
        kc = _kubelet_config_autoresize_control_plane()
        kube.create(kc)
        try:

            def unchanged() -> str | None:
                current = kc_configmap_names()
                log.info("current set of configmaps from kubeletconfigs: %s", ",".join(current))
                return None if current == before else f"expected {before}, got {current}"

            polling.consistently(
                unchanged,
                "the KubeletConfig ConfigMaps soft-owned by the NROP changed",
                300,
                polling.poll(suite_config.target, 10),
            )
        finally:
            # upstream: Delete must succeed, then ForMCOKubeletConfigDeleted (default 1s / 3m)
            kube.delete(ocp.KUBELETCONFIG, kc["metadata"]["name"], missing_ok=False)
            waiters.for_object_deleted(
                kube,
                ocp.KUBELETCONFIG,
                kc["metadata"]["name"],
                timeout=suite_config.timeouts.poll_timeout,
                interval=suite_config.timeouts.poll_interval,
            )

    @spec(
        "[test_id:47585] can change kubeletconfig and controller should adapt",
        "reboot_required",
        "slow",
        "tier2",
        "openshift",
    )
    def test_47585_kubeletconfig_change_adapts(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
        fxt.is_reboot_test = True
        reason = ocp.openshift_kinds_missing(kube, ocp.KUBELETCONFIG, ocp.MCP)
        if reason:
            pytest.skip(reason)
        target = suite_config.target
        nrop = _nrop(kube, suite_config)
        # upstream: GetUpdated of an empty reference is the current NRT list
        initial_nrts = nrtupdates.get_updated(kube, [], timeout=300)
        infos = mcph.mcps_info(kube, nrop)
        assert infos
        kc = _targeted_kubelet_config(kube, nrop)
        kc_name = kc["metadata"]["name"]
        initial_scope = str(_kubelet_config_of(kc).get("topologyManagerScope", ""))
        new_scope = _new_tm_scope(initial_scope)
        assert initial_scope != new_scope
        owners = kc["metadata"].get("ownerReferences") or []
        assert len(owners) < 2

        def set_scope(value: str) -> None:
            if not owners:
                _set_kubelet_config_field(kube, target, kc_name, "topologyManagerScope", value)
                return
            if owners[0]["kind"] != "PerformanceProfile":
                pytest.skip(f"owner object {owners[0]['kind']!r} is not supported in this test")
            annotation = f'{{"topologyManagerScope": "{value}", "cpuManagerPolicyOptions": {{"full-pcpus-only": "false"}}}}'
            _update_performance_profile(
                kube,
                target,
                owners[0]["name"],
                annotation,
                "metadata",
                "annotations",
                "kubeletconfig.experimental",
            )

        set_scope(new_scope)
        try:
            mcph.wait_for_mcp_update(kube, suite_config, infos, config_update=True)
            kc = kube.get(ocp.KUBELETCONFIG, kc_name)
            cm = next(
                (
                    item
                    for item in kube.list(CONFIGMAP)
                    if any(
                        ref.get("uid") == kc["metadata"]["uid"]
                        for ref in item["metadata"].get("ownerReferences") or ()
                    )
                ),
                None,
            )
            assert cm is not None, (
                f"NUMAResourcesOperator {nrop['metadata']['name']!r} should have a ConfigMap owned by KubeletConfig {kc_name!r}"
            )

            def cm_updated() -> str | None:
                current = kube.get(CONFIGMAP, cm["metadata"]["name"], cm["metadata"]["namespace"])
                data = (current.get("data") or {}).get(tmconfig.RTE_CONFIG_KEY)
                assert data is not None, (
                    f"failed to obtain config.yaml key from ConfigMap {cm['metadata']['name']!r} data"
                )
                scope = ((yaml.safe_load(data) or {}).get("kubelet") or {}).get("topologyManagerScope", "")
                return (
                    None
                    if scope != initial_scope
                    else "ConfigMap not updated with the new TopologyManagerScope yet"
                )

            polling.eventually(
                cm_updated, "the RTE ConfigMap to carry the new scope", 300, polling.poll(target, 30)
            )
            _schedule_gu_pod_and_check(fxt, kube, suite_config, initial_nrts)
        finally:
            kc_now = kube.get(ocp.KUBELETCONFIG, kc_name)
            current_scope = str(_kubelet_config_of(kc_now).get("topologyManagerScope", ""))
            assert len(kc_now["metadata"].get("ownerReferences") or []) < 2
            infos = mcph.mcps_info(kube, nrop)
            assert infos
            if current_scope != initial_scope:
                set_scope(initial_scope)
                mcph.wait_for_mcp_update(kube, suite_config, infos, config_update=True)

    @spec(
        "[test_id:75354] should be able to correctly identify topology manager policy without scheduler restarting",
        "reboot_required",
        "slow",
        "unsched",
        "schedrst",
        "tier2",
        "openshift",
        "feature:schedattrwatch",
        "feature:schedrst",
    )
    def test_75354_tm_policy_without_scheduler_restart(
        self, fxt: Any, kube: Kube, suite_config: Any, _suitable_nrts: Any
    ) -> None:
        # https://issues.redhat.com/browse/OCPBUGS-34583
        fxt.is_reboot_test = True
        target = suite_config.target
        candidates = [nrt for nrt in _suitable_nrts if len(nrt.get("zones") or ()) == 2]
        if len(candidates) < 1:
            fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}")
        zone = candidates[0]["zones"][0]
        cpu = next((res for res in zone.get("resources") or () if res["name"] == "cpu"), None)
        assert cpu is not None, (
            f"no CPU resource in zone {zone['name']!r} node {candidates[0]['metadata']['name']!r}"
        )
        cpu_qty = quantity.parse(str(cpu["available"]))
        assert cpu_qty.fraction.denominator == 1, (  # Quantity.AsInt64
            f"invalid CPU resource in zone {zone['name']!r} node {candidates[0]['metadata']['name']!r}: {cpu_qty}"
        )
        cpu_num = int(cpu_qty.fraction)
        log.info("available CPUs per numa on the node: %d", cpu_num)
        cpus = str(math.floor(cpu_num * 1.5))
        log.info("CPU resources requested to create a topology affinity error deployment: %s", cpus)
        reason = ocp.openshift_kinds_missing(kube, ocp.KUBELETCONFIG, ocp.MCP)
        if reason:
            pytest.skip(reason)

        nrop = _nrop(kube, suite_config)
        infos = mcph.mcps_info(kube, nrop)
        assert infos
        kc = _targeted_kubelet_config(kube, nrop)
        kc_name = kc["metadata"]["name"]
        owners = kc["metadata"].get("ownerReferences") or []
        assert len(owners) < 2
        kconf = _kubelet_config_of(kc)
        initial_policy = str(kconf.get("topologyManagerPolicy", ""))

        def set_policy(value: str) -> None:
            if not owners:
                _set_kubelet_config_field(kube, target, kc_name, "topologyManagerPolicy", value)
                return
            if owners[0]["kind"] != "PerformanceProfile":
                fxt.skip(f"owner object {owners[0]['kind']!r} is not supported in this test")
            _update_performance_profile(
                kube, target, owners[0]["name"], value, "spec", "numa", "topologyPolicy"
            )

        try:
            if initial_policy != "none":
                set_policy("none")
            mcph.wait_for_mcp_update(kube, suite_config, infos, config_update=True)
            nrs = _nrs(kube, suite_config)
            dp = _deployment_by_owner_reference(kube, nrs["metadata"]["uid"])
            sched_pods = _pods_by_deployment(kube, dp)
            assert len(sched_pods) == int(dp["spec"].get("replicas", 1))
            scheduler_name = (nrs.get("status") or {}).get("schedulerName", "")
            assert scheduler_name, "cannot autodetect the TAS scheduler name from the cluster"
            log.info(
                "deleting the scheduler pod to trigger its restart: %s", sched_pods[0]["metadata"]["name"]
            )
            kube.delete(POD, sched_pods[0]["metadata"]["name"], dp["metadata"]["namespace"], missing_ok=False)
            waiters.for_deployment_complete(kube, dp, timeout=60, interval=polling.poll(target, 10))

            infos = mcph.mcps_info(kube, nrop)
            set_policy(SNN)
            mcph.wait_for_mcp_update(kube, suite_config, infos, config_update=True)

            deployment = _tae_deployment(
                fxt.namespace, "testdp", suite_config.scheduler_name, cpus, suite_config.pause_image
            )
            log.info("creating a topology affinity error deployment %r", deployment["metadata"]["name"])
            deployment = kube.create(deployment)
            dp_name = deployment["metadata"]["name"]
            max_step = 3
            steps = itertools.count(1)

            def look() -> dict[str, Any]:
                log.info(
                    "ensuring the deployment %r keep being pending %d/%d", dp_name, next(steps), max_step
                )
                return kube.get(DEPLOYMENT, dp_name, fxt.namespace)

            def is_complete(current: Mapping[str, Any]) -> bool:
                return waiters.is_deployment_complete(
                    int(deployment["metadata"].get("generation", 0)),
                    current.get("status") or {},
                    int(deployment["spec"]["replicas"]),
                )

            current = consistently(
                look,
                lambda current: not is_complete(current),
                f"deployment {dp_name!r} to keep being pending",
                interval=10,
                steps=max_step,
                failure=lambda _: f"deployment {dp_name!r} become ready",
            )
            pods = _pods_by_deployment(kube, current)
            # pods with a Topology Affinity Error may come and go before the scheduler sees
            # the new policy; exactly one pending pod means the scheduler behaves
            if len(pods) > MAX_PODS_WITH_TAE:
                log.warning(
                    "current length of the pods list: %d, is bigger than %d", len(pods), MAX_PODS_WITH_TAE
                )
            pending = [pod for pod in pods if (pod.get("status") or {}).get("phase") == "Pending"]
            assert len(pending) == 1, f"expected exactly one pending pod, got {len(pending)}"
            assert scheduler_name, "cannot autodetect the TAS scheduler name from the cluster"
            # upstream reads the scope of the KubeletConfig as it was at the start of the spec
            scope = str(kconf.get("topologyManagerScope", ""))
            pod_meta = pending[0]["metadata"]
            failed = scheduling.check_pod_scheduling_failed_with_msg(
                kube, pod_meta["namespace"], pod_meta["name"], scheduler_name, f"cannot align {scope}"
            )
            assert failed, (
                f"pod {pod_meta['namespace']}/{pod_meta['name']} with scheduler {scheduler_name} did NOT fail"
            )
        finally:
            kc_now = kube.get(ocp.KUBELETCONFIG, kc_name)
            current_policy = str(_kubelet_config_of(kc_now).get("topologyManagerPolicy", ""))
            infos = mcph.mcps_info(kube, nrop)
            assert infos
            if current_policy != initial_policy:
                set_policy(initial_policy)
                mcph.wait_for_mcp_update(kube, suite_config, infos, config_update=True)

    class TestNodeGroupWithPoolNameSupport:
        pytestmark = spec("[ngpoolname] node group with PoolName support", "ngpoolname", "feature:ngpoolname")

        @spec(
            "[test_id:84311] should not allow configuring PoolName and MCP selector on same node group",
            "tier2",
        )
        def test_84311_pool_name_and_mcp_selector(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
            target = suite_config.target
            name = suite_config.nrop["metadata"]["name"]
            initial = _nrop(kube, suite_config)
            group = {"machineConfigPoolSelector": {"matchLabels": {"test2": "test2"}}, "poolName": "test2"}
            _append_node_group(kube, name, group, target, description="failed to update node groups")
            try:

                def degraded() -> str | None:
                    obj, problem = _get_attempt(kube, NROP, name, what="failed to get updated NRO object")
                    if obj is None:
                        return problem
                    problem = nropcr.synced_at_problem(
                        obj.get("status"), nropcr.CONDITION_DEGRADED, obj["metadata"]["generation"]
                    )
                    if problem:
                        return problem
                    conds = (obj.get("status") or {}).get("conditions")
                    if not nropcr.is_degraded_with(
                        conds, "must have only a single specifier set", nropcr.REASON_NODEGROUPS_ERROR
                    ):
                        return f"Condition not degraded as expected: {conds}"
                    return None

                polling.eventually(
                    degraded, "Timed out waiting for degraded condition", 300, polling.poll(target, 5)
                )
            finally:
                _revert_node_groups_and_wait_available(kube, name, initial["spec"]["nodeGroups"], target)

        @spec(
            "[test_id:84312] should report the NodeGroupConfig in the NodeGroupStatus with NodePool set and allow updates",
            "tier1",
            "openshift",
        )
        def test_84312_node_group_status_with_pool_name(
            self, fxt: Any, kube: Kube, suite_config: Any
        ) -> None:
            target = suite_config.target
            name = suite_config.nrop["metadata"]["name"]
            initial = _nrop(kube, suite_config)
            orig_groups = list(initial["spec"]["nodeGroups"])
            pool = nodeh.ROLE_MCP_TEST
            # an RTE DaemonSet is created for a pool with zero machines: no reboot. On OpenShift
            # that pool is an MCP; on Kubernetes it is the (absent) node-role label of the name.
            mcp_created = ocp.serves(kube, ocp.MCP)
            if mcp_created:
                _create_test_mcp(
                    kube,
                    {
                        "matchExpressions": [
                            {
                                "key": "machineconfiguration.openshift.io/role",
                                "operator": "In",
                                "values": [nodeh.ROLE_MCP_TEST, nodeh.ROLE_WORKER],
                            }
                        ]
                    },
                )
            try:
                conf = {
                    "podsFingerprinting": "Enabled",
                    "infoRefreshMode": "Periodic",
                    "infoRefreshPause": "Enabled",
                }
                expected = nropcr.merged_config(conf)

                applied = _set_node_groups(
                    kube, name, [*orig_groups, {"poolName": pool, "config": conf}], target
                )
                try:
                    _verify_status_update(kube, target, name, applied, pool, expected)

                    conf2 = {"podsFingerprinting": "Disabled", "infoRefreshMode": "Events"}
                    expected2 = nropcr.merged_config(conf2)
                    applied = _set_node_groups(
                        kube, name, [*orig_groups, {"poolName": pool, "config": conf2}], target
                    )
                    _verify_status_update(kube, target, name, applied, pool, expected2)

                    current = kube.get(NROP, name)
                    group_status = nropcr.pool_of_status(current, pool)
                    assert group_status is not None
                    ds_ref = group_status["daemonsets"]

                    _set_node_groups(kube, name, orig_groups, target, None)
                    waiters.for_daemonset_deleted(
                        kube,
                        ds_ref["namespace"],
                        ds_ref["name"],
                        timeout=60,
                        interval=polling.poll(target, 10),
                    )
                    current = kube.get(NROP, name)
                    status = current.get("status") or {}
                    for ds in status.get("daemonsets") or ():
                        assert ds != ds_ref, (
                            f"daemonset {ds_ref} is still reported in the daemonsets slice in status"
                        )
                    for group in status.get("nodeGroups") or ():
                        assert group.get("selector") != pool, (
                            f"node group status {group} still exists under the operator status"
                        )
                        assert group.get("daemonsets") != ds_ref, (
                            f"daemonset {ds_ref} is still reported in {group}"
                        )
                    for mcp in status.get("machineconfigpools") or ():
                        assert mcp.get("name") != pool, f"status MCPs still contain deleted node group: {mcp}"
                finally:
                    if kube.get(NROP, name)["spec"].get("nodeGroups") != orig_groups:
                        _set_node_groups(kube, name, orig_groups, target, None)
                    assert (
                        nropcr.find_condition(
                            (kube.get(NROP, name).get("status") or {}).get("conditions"),
                            nropcr.CONDITION_AVAILABLE,
                        )
                        is not None
                    ), "expected operators conditions to be Available but was found something else"
            finally:
                if mcp_created:
                    _delete_mcp(kube, suite_config, pool)

        class TestShouldNotAllowDuplicateAndEmptyPoolNameValuesOnTheSameNodeGroup:
            pytestmark = spec(
                "[test_id:80823] should not allow duplicate and empty PoolName values on the same node group",
                "hypershift",
            )

            @pytest.mark.parametrize(
                "msg_type",
                [
                    entry("duplicate pool name", "duplicate"),
                    entry("empty pool name", "empty"),
                ],
            )
            def test_80823_pool_name_validation(
                self, fxt: Any, kube: Kube, suite_config: Any, platform: ocp.ClusterPlatform, msg_type: str
            ) -> None:
                if platform.platform is not ocp.Platform.HYPERSHIFT:
                    pytest.skip(
                        f"requires HyperShift: a spec of the hypershift lane (platform {platform.describe()})"
                    )
                target = suite_config.target
                name = suite_config.nrop["metadata"]["name"]
                initial = _nrop(kube, suite_config)
                if msg_type == "duplicate":
                    pool = initial["spec"]["nodeGroups"][0]["poolName"]
                    expected_msg = f'the pool name "{pool}" has duplicates'
                else:
                    pool = ""
                    expected_msg = "pool name for pool #1 cannot be empty"
                try:
                    _append_node_group(
                        kube, name, {"poolName": pool}, target, description="failed to update node groups"
                    )

                    def degraded() -> str | None:
                        obj, problem = _get_attempt(kube, NROP, name)
                        if obj is None:
                            return problem
                        problem = nropcr.synced_at_problem(
                            obj.get("status"), nropcr.CONDITION_AVAILABLE, obj["metadata"]["generation"]
                        )
                        if problem:
                            return problem
                        conds = (obj.get("status") or {}).get("conditions")
                        if not nropcr.is_degraded_with(conds, expected_msg, nropcr.REASON_NODEGROUPS_ERROR):
                            return f"Condition not degraded as expected for pool name: {pool!r}"
                        return None

                    polling.eventually(
                        degraded, "Timed out waiting for degraded condition", 300, polling.poll(target, 5)
                    )
                finally:
                    _revert_node_groups_and_wait_available(kube, name, initial["spec"]["nodeGroups"], target)

        @spec(
            "[test_id:80912] should not allow MCP selector on hypershift",
            "feature:ngpoolname",
            "tier2",
            "hypershift",
        )
        def test_80912_mcp_selector_on_hypershift(
            self, fxt: Any, kube: Kube, suite_config: Any, platform: ocp.ClusterPlatform
        ) -> None:
            if platform.platform is not ocp.Platform.HYPERSHIFT:
                pytest.skip(
                    f"requires HyperShift: MachineConfigPoolSelector is refused only there (platform {platform.describe()})"
                )
            target = suite_config.target
            name = suite_config.nrop["metadata"]["name"]
            initial = _nrop(kube, suite_config)
            try:
                _append_node_group(
                    kube,
                    name,
                    {"machineConfigPoolSelector": {"matchLabels": {"test2": "test2"}}},
                    target,
                    description="failed to update node groups",
                )

                def degraded() -> str | None:
                    obj, problem = _get_attempt(kube, NROP, name)
                    if obj is None:
                        return problem
                    problem = nropcr.synced_at_problem(
                        obj.get("status"), nropcr.CONDITION_AVAILABLE, obj["metadata"]["generation"]
                    )
                    if problem:
                        return problem
                    conds = (obj.get("status") or {}).get("conditions")
                    if not nropcr.is_degraded_with(
                        conds, "Should specify PoolName only", nropcr.REASON_NODEGROUPS_ERROR
                    ):
                        return "Condition not degraded as expected"
                    return None

                polling.eventually(
                    degraded, "Timed out waiting for degraded condition", 300, polling.poll(target, 5)
                )
            finally:
                _revert_node_groups_and_wait_available(kube, name, initial["spec"]["nodeGroups"], target)

    class TestSchedulableControlPlaneNodeGroupConfiguration:
        pytestmark = spec("schedulable control-plane node group configuration")

        @pytest.mark.nrop_profile("mno-masters-schedulable")
        @spec(
            "[test_id:83869] should configure NRO CR with multiple non-overlapping node groups and check e2e results",
            "tier2",
            "openshift",
            "mno-masters-schedulable",
        )
        def test_83869_non_overlapping_node_groups(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
            cluster_type = _cluster_type(kube)
            if cluster_type != "mno-masters-schedulable":
                fxt.skip(f'test requires "mno-masters-schedulable" cluster type, got "{cluster_type}"')
            target = suite_config.target
            name = suite_config.nrop["metadata"]["name"]
            initial = _nrop(kube, suite_config)
            worker_cnf = "worker-cnf"
            cnf_label = nodeh.role_label(worker_cnf)
            cp_label = nodeh.role_label(nodeh.ROLE_CONTROL_PLANE)
            dedicated = [
                node
                for node in kube.list(NODE, label_selector=nodeh.role_label(nodeh.ROLE_WORKER))
                if cp_label not in node["metadata"].get("labels", {})
                and sum(1 for key in node["metadata"].get("labels", {}) if key.startswith(nodeh.LABEL_ROLE))
                < 2
            ]
            assert dedicated, (
                f"no dedicated worker nodes found while running on cluster type {cluster_type!r}"
            )
            node_name = dedicated[0]["metadata"]["name"]
            kube.patch(NODE, node_name, {"metadata": {"labels": {cnf_label: ""}}})
            mcp = _create_test_mcp(
                kube,
                {
                    "matchExpressions": [
                        {
                            "key": "machineconfiguration.openshift.io/role",
                            "operator": "In",
                            "values": [nodeh.ROLE_WORKER, worker_cnf],
                        }
                    ]
                },
                name=worker_cnf,
            )
            try:
                try:
                    mcph.wait_mcp_condition(kube, suite_config, mcp, "Updated")
                except WaitTimeout as exc:
                    raise AssertionError(f"MCP {worker_cnf!r} did not reach Updated state: {exc}") from exc
                _set_node_groups(kube, name, [{"poolName": "master"}, {"poolName": worker_cnf}], target)
                try:
                    updated: dict[str, Any] = {}

                    def synced() -> str | None:
                        obj, problem = _get_attempt(kube, NROP, name)
                        if obj is None:
                            return problem
                        updated.clear()
                        updated.update(obj)
                        return nropcr.synced_at_problem(
                            updated.get("status"),
                            nropcr.CONDITION_AVAILABLE,
                            updated["metadata"]["generation"],
                        )

                    polling.eventually(
                        synced,
                        "operator did not become Available after adding node group",
                        600,
                        polling.poll(target, 30),
                    )
                    ds_refs = updated["status"].get("daemonsets") or []
                    assert len(ds_refs) == len(updated["spec"]["nodeGroups"]), (
                        "expected one DaemonSet per NodeGroup"
                    )
                    dss = operands.daemonsets_by_name(kube, ds_refs)
                    assert len(dss) == len(updated["spec"]["nodeGroups"]), (
                        "DaemonSets count mismatch with NodeGroups"
                    )
                    for ds in dss:
                        st = ds.get("status") or {}
                        assert st.get("desiredNumberScheduled", 0) > 0, (
                            f"DaemonSet {ds['metadata']['name']!r} has no scheduled pods"
                        )
                        assert st.get("numberReady", 0) == st.get("desiredNumberScheduled"), (
                            f"DaemonSet {ds['metadata']['name']!r} not all pods ready"
                        )
                        assert st.get("numberMisscheduled", 0) == 0, (
                            f"DaemonSet {ds['metadata']['name']!r} has misscheduled pods"
                        )
                    nrt_names = {nrt["metadata"]["name"] for nrt in kube.list(NRT)}
                    assert nrt_names, "expected at least one NRT for the active node groups"
                    expected_nodes = {
                        node["metadata"]["name"]
                        for node in kube.list(NODE)
                        if cp_label in node["metadata"].get("labels", {})
                        or cnf_label in node["metadata"].get("labels", {})
                    }
                    assert expected_nodes, "expected at least one target node for node groups"
                    for node in sorted(expected_nodes):
                        assert node in nrt_names, f"missing NRT for expected target node {node!r}"
                finally:
                    _revert_node_groups_and_wait_available(kube, name, initial["spec"]["nodeGroups"], target)
            finally:
                kube.patch(NODE, node_name, {"metadata": {"labels": {cnf_label: None}}})
                # the worker pool read now must change, then be Updated
                mcph.wait_mcp_condition(kube, suite_config, nodeh.ROLE_WORKER, "Updated")
                _delete_mcp(kube, suite_config, worker_cnf)

        @pytest.mark.nrop_profile("compact")
        @spec(
            "[test_id:83870] should handle overlapping node group pools by keeping the duplicate RTE pods pending",
            "tier2",
            "openshift",
            "compact",
            "mno-masters-schedulable",
        )
        def test_83870_overlapping_node_groups(self, fxt: Any, kube: Kube, suite_config: Any) -> None:
            cluster_type = _cluster_type(kube)
            if cluster_type not in ("compact", "mno-masters-schedulable"):
                fxt.skip(
                    f'test requires one of ["compact", "mno-masters-schedulable"] cluster types, got "{cluster_type}"'
                )
            target = suite_config.target
            name = suite_config.nrop["metadata"]["name"]
            initial = _nrop(kube, suite_config)

            _set_node_groups(kube, name, [{"poolName": "master"}, {"poolName": "worker"}], target)
            try:
                namespace = initial["status"]["daemonsets"][0]["namespace"]
                master, worker = f"{name}-master", f"{name}-worker"

                def both_exist() -> str | None:
                    m, problem = _get_attempt(kube, DAEMONSET, master, namespace)
                    if m is None:
                        return problem
                    w, problem = _get_attempt(kube, DAEMONSET, worker, namespace)
                    if w is None:
                        return problem
                    total = (m.get("status") or {}).get("desiredNumberScheduled", 0) + (
                        w.get("status") or {}
                    ).get("desiredNumberScheduled", 0)
                    return None if total > 0 else "DaemonSets have no desired pods yet"

                polling.eventually(both_exist, "DaemonSets were not created", 300, polling.poll(target, 10))

                def some_pending() -> str | None:
                    st: list[Mapping[str, Any]] = []
                    for ds in (master, worker):
                        obj, problem = _get_attempt(kube, DAEMONSET, ds, namespace)
                        if obj is None:
                            return problem
                        st.append(obj.get("status") or {})
                    desired = sum(s.get("desiredNumberScheduled", 0) for s in st)
                    ready = sum(s.get("numberReady", 0) for s in st)
                    if desired > ready:
                        return None
                    return f"expected some pods to be pending due to anti-affinity, but all {desired} desired pods are ready"

                polling.consistently(
                    some_pending,
                    "overlapping DaemonSets should have pending pods",
                    60,
                    polling.poll(target, 10),
                )
            finally:
                _revert_node_groups_and_wait_available(kube, name, initial["spec"]["nodeGroups"], target)

    class TestKubeletConfigChangesAreBeingTrackedCorrectlyByTheOperator:
        pytestmark = spec("KubeletConfig changes are being tracked correctly by the operator")

        @spec("[test_id:84315] should reflect correct TM configuration in the NRT object attributes", "tier0")
        def test_84315_tm_configuration_in_nrt_attributes(
            self, fxt: Any, kube: Kube, suite_config: Any, platform: ocp.ClusterPlatform
        ) -> None:
            target = suite_config.target
            nrop = _nrop(kube, suite_config)
            nrop_name = nrop["metadata"]["name"]
            found: list[dict[str, Any]] = []

            def configmap_listed() -> str | None:
                cms = kube.list(CONFIGMAP, label_selector=f"{operands.LABEL_OPERATOR_NAME}={nrop_name}")
                if not cms:
                    return "RTE configmap mismatch: current 0, desired 1"
                found[:] = [cms[0]]  # choose the first one arbitrarily
                return None

            polling.eventually(
                configmap_listed,
                f"an RTE ConfigMap labelled {operands.LABEL_OPERATOR_NAME}={nrop_name}",
                300,
                polling.poll(target, 10),
            )
            rte_cm = found[0]
            log.info("found RTE configmap: %s", rte_cm)
            pool = (rte_cm["metadata"].get("labels") or {}).get(nropcr.LABEL_NODEGROUP_MCP, "")
            selector = mcph.pool_node_selector(kube, platform, nrop, pool)
            nodes = nodeh.nodes_by_selector(kube, selector)
            assert nodes, f"no nodes found with the nodeSelector {nodeh.selector_text(selector)}"
            conf = tmconfig.rte_tm_config(rte_cm)

            for node in nodes:
                node_name = node["metadata"]["name"]

                def matching(node_name: str = node_name) -> str | None:
                    nrt = kube.get(NRT, node_name)
                    problem = tmconfig.tm_config_mismatch(nrt, conf)
                    return problem or None

                polling.eventually(
                    matching,
                    f"NRT {node_name} to match the RTE topology manager configuration",
                    300,
                    polling.poll(target, 10),
                )

        # upstream branches on the OpenShift version here (isCustomPolicySupportEnabled);
        # the openshift profile (4.22) takes the branch of the platforms it runs on, in both suites
        @pytest.mark.nrop_profile("openshift")
        @spec(
            "[test_id:84316] should change NRT attributes correctly when RTE is pointing to a different nodeGroup",
            "openshift",
            "slow",
            "tier2",
            "reboot_required",
        )
        def test_84316_nrt_attributes_for_different_node_group(
            self, fxt: Any, kube: Kube, suite_config: Any, platform: ocp.ClusterPlatform
        ) -> None:
            fxt.is_reboot_test = True
            reason = ocp.openshift_kinds_missing(kube, ocp.KUBELETCONFIG, ocp.MCP)
            if reason:
                pytest.skip(reason)
            target = suite_config.target
            name = suite_config.nrop["metadata"]["name"]
            initial = _nrop(kube, suite_config)  # the Context's BeforeEach

            def wait_mcp_update_func(mcp_obj: Mapping[str, Any]) -> None:
                # upstream discards both waits' errors, whatever they are (`_ = ...`; TODO there:
                # use ObservedGeneration): a timeout or a failed read of the pool is logged, no more
                for ctype in ("Updating", "Updated"):
                    try:
                        mcph.wait_mcp_condition(kube, suite_config, mcp_obj, ctype)
                    except (WaitTimeout, *GET_ERRORS) as exc:
                        log.info("MCP %s condition %s: %s", mcp_obj["metadata"]["name"], ctype, exc)

            selector = {
                "matchExpressions": [
                    {
                        "key": "machineconfiguration.openshift.io/role",
                        "operator": "In",
                        "values": [nodeh.ROLE_WORKER, nodeh.ROLE_MCP_TEST],
                    }
                ]
            }
            mcp = _create_test_mcp(kube, selector)
            try:
                # the default scope is container: pod makes sure it actually changed
                kc = kube.create(_test_kubelet_config(mcp["metadata"]["labels"], scope="pod"))
                try:
                    workers = nodeh.worker_nodes(kube)
                    node, removed_role = _mutate_node_custom_label(workers)
                    node_name = node["metadata"]["name"]
                    initial_labels = dict(node["metadata"].get("labels") or {})
                    labels_patch: dict[str, Any] = {nodeh.role_label(nodeh.ROLE_MCP_TEST): ""}
                    if removed_role:
                        labels_patch[removed_role] = None
                    kube.patch(NODE, node_name, {"metadata": {"labels": labels_patch}})
                    wait_mcp_update_func(mcp)
                    try:
                        log.info("adding nodeGroup poolName=%s", nodeh.ROLE_MCP_TEST)
                        groups = [*initial["spec"]["nodeGroups"], {"poolName": nodeh.ROLE_MCP_TEST}]
                        # upstream: Patch(MergeFrom(the BeforeEach object))
                        patched = kube.patch(NROP, name, {"spec": {"nodeGroups": groups}})
                        custom = ocp.custom_policy_support_enabled(platform, patched)
                        if custom:
                            wait_mcp_update_func(mcp)
                        try:
                            namespace = patched["status"]["daemonsets"][0]["namespace"]
                            ds_name = f"{name}-{nodeh.ROLE_MCP_TEST}"
                            log.info("waiting for DaemonSet %s/%s to be ready", namespace, ds_name)
                            waiters.for_daemonset_ready(
                                kube,
                                namespace,
                                ds_name,
                                timeout=suite_config.timeouts.poll_timeout,
                                interval=suite_config.timeouts.poll_interval,
                            )
                            cm = wait_for(
                                lambda: kube.get_or_none(CONFIGMAP, ds_name, namespace),
                                lambda obj: obj is not None,
                                f"RTE ConfigMap {namespace}/{ds_name}",
                                300,
                                interval=polling.poll(target, 10),
                            )
                            log.info("found RTE configmap: %s", cm)
                            pool = (cm["metadata"].get("labels") or {}).get(nropcr.LABEL_NODEGROUP_MCP, "")
                            node_selector = mcph.pool_node_selector(
                                kube, platform, kube.get(NROP, name), pool
                            )
                            selected = nodeh.nodes_by_selector(kube, node_selector)
                            assert selected, (
                                f"no nodes found with the nodeSelector {nodeh.selector_text(node_selector)}"
                            )
                            conf = tmconfig.rte_tm_config(cm)
                            for sel_node in selected:
                                sel_name = sel_node["metadata"]["name"]

                                def matching(sel_name: str = sel_name) -> str | None:
                                    nrt = kube.get_or_none(NRT, sel_name)
                                    if nrt is None:
                                        return f"NRT {sel_name} was not found, waiting for its creation"
                                    return tmconfig.tm_config_mismatch(nrt, conf) or None

                                polling.eventually(
                                    matching,
                                    f"NRT {sel_name} to match the RTE topology manager configuration",
                                    300,
                                    polling.poll(target, 10),
                                )
                        finally:
                            kube.patch(NROP, name, {"spec": {"nodeGroups": initial["spec"]["nodeGroups"]}})
                            if custom:
                                wait_mcp_update_func(mcp)
                    finally:
                        log.info("reverting node %s back to its initial state", node_name)
                        restore = {key: initial_labels.get(key) for key in labels_patch}
                        kube.patch(NODE, node_name, {"metadata": {"labels": restore}})
                        # the pool the node returns to: the one selecting its removed custom role
                        # (upstream's loop has no break: the last such pool), else the worker pool
                        targeted: dict[str, Any] | None = None
                        for m in kube.list(ocp.MCP):
                            match_labels = ((m.get("spec") or {}).get("nodeSelector") or {}).get(
                                "matchLabels"
                            ) or {}
                            if removed_role and removed_role in match_labels:
                                targeted = m
                        wait_mcp_update_func(targeted or kube.get(ocp.MCP, nodeh.ROLE_WORKER))
                finally:
                    # no need to wait for the deletion: the pool has no nodes anymore
                    kube.delete(ocp.KUBELETCONFIG, kc["metadata"]["name"], missing_ok=False)
            finally:
                kube.delete(ocp.MCP, mcp["metadata"]["name"], missing_ok=False)


class TestTLSComplianceRteCompliesWithTLSProfileModifications:
    pytestmark = spec(
        "[tlscompliance][rte] rte complies with TLS Profile modifications", "feature:tlscompliance"
    )

    @pytest.mark.nrop_profile("mno")
    @spec(
        "[test_id:88383] should update RTE daemonset TLS args to adhere to modified TLS profile",
        "reboot_required",
        "slow",
        "tier2",
    )
    def test_88383_rte_tls_args_follow_profile(
        self, fxt: Any, kube: Kube, suite_config: Any, defer_cleanup: Callable[[Callable[[], None]], None]
    ) -> None:
        reason = ocp.openshift_kinds_missing(kube, ocp.APISERVER_CONFIG, ocp.MCP)
        if reason:
            pytest.skip(reason)
        fxt.is_reboot_test = True
        target = suite_config.target
        apiserver = kube.get(ocp.APISERVER_CONFIG, "cluster")
        original_spec = dict(apiserver.get("spec") or {})
        # OpenShift defaults to Intermediate when no profile is explicitly set
        original_type = (original_spec.get("tlsSecurityProfile") or {}).get("type") or "Intermediate"
        new_type = "Modern" if original_type != "Modern" else "Intermediate"
        new_profile = {"type": new_type, new_type.lower(): {}}

        def set_spec(spec_value: dict[str, Any]) -> None:
            def mutate(obj: dict[str, Any]) -> None:
                obj["spec"] = spec_value

            polling.update_object(
                kube, ocp.APISERVER_CONFIG, "cluster", mutate, timeout=600, interval=polling.poll(target, 10)
            )

        log.info("updating APIServer TLS profile from %s to %s", original_type, new_type)
        set_spec({**original_spec, "tlsSecurityProfile": new_profile})

        def revert() -> None:  # a DeferCleanup: after the AfterEach's teardown, as upstream
            log.info("reverting APIServer TLS profile from %s to %s", new_type, original_type)
            set_spec(original_spec)
            _wait_mcps_and_verify_nodes(kube, target, "after MCP rollback")

        defer_cleanup(revert)
        _wait_mcps_and_verify_nodes(kube, target, "after MCP rollout")
        expected = TLS_PROFILE_SETTINGS[new_type]
        log.info("verifying RTE DaemonSet TLS flags match the updated profile: %s", expected)
        polling.eventually(
            lambda: _rte_tls_flags_problem(kube, suite_config.nrop["metadata"]["name"], expected),
            "RTE DaemonSet TLS flags to match the TLS profile",
            30,
            polling.poll(target, 5),
        )


# -- helpers of the specs above ----------------------------------------------------------------


def _status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """``status.NUMAResourceOperatorNeedsUpdate``: the statuses differ, conditions compared
    without their ``lastTransitionTime``."""

    def comparable(status: Mapping[str, Any] | None) -> dict[str, Any]:
        out = dict(status or {})
        out["conditions"] = [
            {key: value for key, value in cond.items() if key != "lastTransitionTime"}
            for cond in out.get("conditions") or ()
        ]
        return out

    return comparable(old) != comparable(new)


def _verify_status_update(
    kube: Kube, target: str, name: str, applied: Mapping[str, Any], pool: str, expected: Mapping[str, Any]
) -> None:
    """``verifyStatusUpdate``: wait (10m / 5s) for Available at the generation, as many node
    group statuses as node groups applied and a status changed since ``applied`` was stored;
    then the pool is in status.nodeGroups and status.machineconfigpools (with a config), its
    DaemonSet in status.daemonsets, and both configs equal ``expected``.

    Upstream wraps the call in ``Eventually(5m / 10s)``, but every check after the inner wait
    is a plain ``Expect`` whose failure ends the spec, so that outer poll never retries."""
    updated: dict[str, Any] = {}

    def synced() -> str | None:
        updated.clear()
        obj, problem = _get_attempt(kube, NROP, name)
        if obj is None:
            return problem
        updated.update(obj)
        status = updated.get("status") or {}
        problem = nropcr.synced_at_problem(
            status, nropcr.CONDITION_AVAILABLE, updated["metadata"]["generation"]
        )
        if problem:
            return problem
        found, want = len(status.get("nodeGroups") or []), len(applied["spec"]["nodeGroups"])
        if found != want:
            return f"NodeGroups Status mismatch: found {found}, expected {want}"
        if not _status_changed(applied.get("status"), status):
            return "the status did not change since the node groups were updated"
        return None

    polling.eventually(synced, f"NROP {name} to reconcile the node groups", 600, polling.poll(target, 5))
    status = updated.get("status") or {}
    group = nropcr.pool_of_status(updated, pool)
    assert group is not None, f"no NodeGroupStatus found for pool name {pool!r} yet"
    mcp = next((m for m in status.get("machineconfigpools") or () if m.get("name") == pool), None)
    assert mcp is not None, (
        f"node group with pool name {pool!r} set is still not reflected in the operator status"
    )
    assert mcp.get("config") is not None, (
        f"the config of the node group with pool name {pool!r} set is still not reflected in the operator status"
    )
    assert group.get("daemonsets") in (status.get("daemonsets") or []), (
        "the corresponding daemonset for node group with PoolName set still not reflected in the operator "
        f"status: expected {group.get('daemonsets')} to be among {status.get('daemonsets')}"
    )
    match_mcp = nropcr.config_equal(mcp.get("config"), expected)
    match_group = nropcr.config_equal(group.get("config"), expected)
    log.info(
        "NRO %s status (MCP) %s status (group) %s spec %s match %s",
        name,
        mcp.get("config"),
        group.get("config"),
        dict(expected),
        match_mcp and match_group,
    )
    assert match_mcp and match_group, "config status mismatch"


def _tae_deployment(
    namespace: str, name: str, scheduler_name: str, cpus: str, pause_image: str
) -> dict[str, Any]:
    """``createTAEDeployment``: one replica (pods ``test=test-dp``) whose pause container is
    limited to ``cpus`` CPUs and 256Mi (so Guaranteed)."""
    deployment = new_test_deployment(1, {"test": "test-dp"}, {}, namespace, name, image=pause_image)
    pod_spec = deployment["spec"]["template"]["spec"]
    pod_spec["schedulerName"] = scheduler_name
    pod_spec["containers"][0]["resources"] = {"limits": {"cpu": cpus, "memory": "256Mi"}}
    return deployment


def _deployment_by_owner_reference(kube: Kube, uid: str) -> dict[str, Any]:
    """``podlist.DeploymentByOwnerReference``: the Deployment an owner (by UID) owns."""
    for deployment in kube.list(DEPLOYMENT):
        if any(ref.get("uid") == uid for ref in deployment["metadata"].get("ownerReferences") or ()):
            return deployment
    raise AssertionError(f"failed to get the scheduler deployment: failed to get deployment with uid: {uid}")


def _pods_by_deployment(kube: Kube, deployment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``podlist.ByDeployment``: the pods of the Deployment's namespace its selector matches."""
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return kube.list(POD, deployment["metadata"]["namespace"], label_selector=nodeh.selector_text(labels))


def _test_kubelet_config(mcp_labels: Mapping[str, str], scope: str) -> dict[str, Any]:
    """``objects.TestKC`` (the install suite's kc-test) for the pool labels, with ``scope``."""
    return {
        "apiVersion": ocp.KUBELETCONFIG.api_version,
        "kind": ocp.KUBELETCONFIG.kind,
        "metadata": {"name": "kc-test", "labels": {"test": "test"}},
        "spec": {
            "machineConfigPoolSelector": {"matchLabels": dict(mcp_labels)},
            "kubeletConfig": {
                "cpuManagerPolicy": "static",
                "cpuManagerReconcilePeriod": "5s",
                "reservedSystemCPUs": "0,1",
                "memoryManagerPolicy": "Static",
                "systemReserved": {"memory": "512Mi"},
                "kubeReserved": {"memory": "512Mi"},
                "evictionHard": {"memory.available": "100Mi"},
                "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
                "topologyManagerPolicy": SNN,
                "topologyManagerScope": scope,
            },
        },
    }


def _kubelet_config_autoresize_control_plane() -> dict[str, Any]:
    """``intobjs.NewKubeletConfigAutoresizeControlPlane``: ``autoSizingReserved`` for a pool
    label no MachineConfigPool carries, so the MCO picks nothing up and the cluster is not
    altered."""
    return {
        "apiVersion": ocp.KUBELETCONFIG.api_version,
        "kind": ocp.KUBELETCONFIG.kind,
        "metadata": {"name": "autoresize-ctrlplane"},
        "spec": {
            "autoSizingReserved": True,
            "machineConfigPoolSelector": {
                "matchLabels": {"pools.operator.machineconfiguration.openshift.io/ctrplane-invalid-test": ""}
            },
        },
    }


def _mutate_node_custom_label(workers: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """``mutateNodeCustomLabel``: a worker with only the worker role, else the first worker minus
    its custom role (returned so it can be restored)."""
    for node in workers:
        roles = [key for key in node["metadata"].get("labels", {}) if key.startswith(nodeh.LABEL_ROLE)]
        if len(roles) < 2:
            return node, ""
    node = workers[0]
    worker_role = nodeh.role_label(nodeh.ROLE_WORKER)
    custom = next(
        (
            key
            for key in node["metadata"].get("labels", {})
            if key.startswith(nodeh.LABEL_ROLE) and key != worker_role
        ),
        "",
    )
    return node, custom


def _schedule_gu_pod_and_check(
    fxt: Any, kube: Kube, suite_config: Any, initial_nrts: list[dict[str, Any]]
) -> None:
    """The tail of 47585: a GU pod (1 CPU, 100M) by the TAS runs, is Scheduled by it, and some
    NRT zone of its node shows the consumption."""
    target = suite_config.target
    scheduler_name = (_nrs(kube, suite_config).get("status") or {}).get("schedulerName", "")
    # upstream: GetUpdated(initial list) after the roll-out is the pre-pod reference
    updated = nrtupdates.get_updated(kube, initial_nrts, timeout=300)
    pod = new_test_pod_pause(fxt.namespace, randomize_name("testpod"), image=suite_config.pause_image)
    pod["spec"]["schedulerName"] = scheduler_name
    res = {"cpu": "1", "memory": "100M"}
    pod["spec"]["containers"][0]["resources"] = {"limits": dict(res), "requests": dict(res)}
    kube.create(pod)
    running = waiters.for_pod_phase(
        kube, fxt.namespace, pod["metadata"]["name"], "Running", timeout=300, interval=polling.poll(target, 1)
    )
    meta = running["metadata"]
    assert scheduling.check_pod_was_scheduled_with(kube, meta["namespace"], meta["name"], scheduler_name), (
        f"pod {meta['namespace']}/{meta['name']} not scheduled with expected scheduler {scheduler_name}"
    )
    required = rl.from_guaranteed_pod(running)
    before = acct.find_from_list(updated, running["spec"]["nodeName"])
    fxt.settle_nrts()
    acct.expect_nrt_consumed(kube, before, required, running)


# The RTE TLS flags of each APIServer profile: ``objtls.NewSettings`` of the tls.Config that
# ``ctrltls.NewTLSConfigFromProfile`` builds from openshift/api's profile (Go cipher names; TLS 1.3
# cipher suites are not configurable, so the Modern profile sets none).
TLS_PROFILE_SETTINGS: dict[str, tuple[str, str]] = {
    "Intermediate": (
        "VersionTLS12",
        ",".join(
            (
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            )
        ),
    ),
    "Modern": ("VersionTLS13", ""),
}
RTE_CONTAINER = "resource-topology-exporter"


def _rte_tls_flags_problem(kube: Kube, nrop_name: str, expected: tuple[str, str]) -> str | None:
    """``intls.CheckRTEDaemonSetTLSFlags``: every node group's RTE container carries the flags."""
    nrop = kube.get(NROP, nrop_name)
    groups = (nrop.get("status") or {}).get("nodeGroups") or []
    if not groups:
        return "expect the numaresourcesoperator to have at least one NodeGroup in status"
    for group in groups:
        ref = group["daemonsets"]
        ds = kube.get(DAEMONSET, ref["name"], ref["namespace"])
        cnt = next(
            (c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == RTE_CONTAINER), None
        )
        if cnt is None:
            return f"main container not found daemonsetName={ref['name']!r}"
        for flag, want in zip(
            ("--metrics-tls-min-version", "--metrics-tls-cipher-suites"), expected, strict=True
        ):
            got = operands.container_flag(cnt.get("args") or (), flag)
            if not want:
                if got:
                    return f"{flag} should be absent or empty for this TLS profile daemonsetName={ref['name']!r} got={got!r}"
            elif got != want:
                return f"{flag} mismatch daemonsetName={ref['name']!r} expected={want!r} got={got or ''!r}"
    return None


def _wait_mcps_and_verify_nodes(kube: Kube, target: str, reason: str) -> None:
    """88383's roll-out wait: every MCP (as listed now) changes and goes Updating, then Updated
    (each 40m / 20s, transient API errors retried, the pools in parallel); then each node of
    each MCP runs its pool's rendered config."""
    from concurrent.futures import ThreadPoolExecutor

    mcps = kube.list(ocp.MCP)
    timeout, interval = 2400.0, polling.poll(target, 20)

    def rollout(mcp: Mapping[str, Any]) -> None:
        _for_mcp_condition_with_retry(kube, mcp, "Updating", timeout, interval)
        log.info("MCP %s started updating; waiting for it to complete", mcp["metadata"]["name"])
        _for_mcp_condition_with_retry(kube, mcp, "Updated", timeout, interval)

    with ThreadPoolExecutor(max_workers=max(1, len(mcps))) as pool:
        futures = [pool.submit(rollout, mcp) for mcp in mcps]
        errors = [exc for future in futures if (exc := future.exception()) is not None]
    if errors:
        raise AssertionError(f"failed while waiting for mcp update: {errors[0]}") from errors[0]
    log.info("verifying per-node MachineConfig alignment %s", reason)
    for listed in mcps:
        name = listed["metadata"]["name"]
        mcp = kube.get(ocp.MCP, name)
        rendered = ((mcp.get("status") or {}).get("configuration") or {}).get("name", "")
        assert rendered, (
            f"node config mismatch for MCP {name!r}: MCP {name!r} has empty status.configuration.name"
        )
        node_selector = (mcp.get("spec") or {}).get("nodeSelector")
        assert node_selector is not None, (
            f"node config mismatch for MCP {name!r}: MCP {name!r} has nil NodeSelector"
        )
        for node in nodeh.nodes_by_selector(kube, node_selector.get("matchLabels") or {}):
            current = (node["metadata"].get("annotations") or {}).get(mcph.CURRENT_CONFIG_ANNOTATION, "")
            assert current == rendered, (
                f"node config mismatch for MCP {name!r}: node {node['metadata']['name']!r} "
                f"currentConfig={current!r} does not match MCP {name!r} rendered config={rendered!r}"
            )
