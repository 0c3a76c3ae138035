"""Private helpers of the operator-configuration spec families.

Shared by ``test_configuration``, ``test_tolerations``, ``test_workload_placement_no_nrt``,
``test_metrics``, ``test_network_policy``, ``test_version`` and ``test_introspection``: the
things those specs do to the NUMAResourcesOperator (update the CR with retries, read its
conditions and status), to RTE DaemonSets and their pods, to node taints and to
MachineConfigPools. Which platform the cluster is lives in :mod:`_openshift_helpers`, commands
in pods in :mod:`_podexec_helpers`. Pure decisions (condition checks, RTE config parsing,
related-object lists) are plain functions over dicts; the rest are thin loops on
:func:`nrop.suite.e2e.wait.polling.wait_for` and :func:`~nrop.suite.e2e.wait.polling.consistently`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from _openshift_helpers import MCP, ClusterPlatform, Platform, serves

from nrop.api.selectors import matches as selector_matches
from nrop.api.tolerations import (
    add_or_update_taint,
    parse_taint,  # noqa: F401  (test_workload_placement_taint reads cfg.parse_taint)
    remove_taint,
)
from nrop.suite import Kube, WaitTimeout, wait_for, waiters
from nrop.suite import consistently as polling_consistently
from nrop.suite.e2e.kube import DAEMONSET, NODE, NROP, POD, ApiError, Kind, Manifest
from nrop.suite.e2e.timeouts import spec_poll

log = logging.getLogger(__name__)

# -- names (upstream constants) -----------------------------------------------------------

LABEL_OPERATOR_NAME = "numaresourcesoperator.nodetopology.openshift.io/name"
LABEL_NODEGROUP_MCP = "nodegroup.nodetopology.openshift.io/machineconfigpool"
RTE_CONFIG_KEY = "config.yaml"
RTE_POD_LABEL_NAME = "resource-topology"
OPERATOR_POD_LABELS = {"app": "numaresources-operator"}
SCHEDULER_POD_LABELS = {"app": "secondary-scheduler"}
LABEL_ROLE = "node-role.kubernetes.io"
ROLE_WORKER = "worker"
ROLE_CONTROL_PLANE = "control-plane"
ROLE_MCP_TEST = "mcp-test"
NODEPOOL_LABEL = "hypershift.openshift.io/nodePool"
TERMINATION_FALLBACK = "FallbackToLogsOnError"

CONDITION_AVAILABLE = "Available"
CONDITION_DEGRADED = "Degraded"
REASON_INTERNAL_ERROR = "InternalError"
REASON_NODEGROUPS_ERROR = "ValidationErrorUnderNodeGroups"


# loglevel.ToKlog: the RTE -v value for each operator LogLevel
KLOG_LEVELS = {"Normal": "2", "Debug": "4", "Trace": "6", "TraceAll": "8"}


def role_label(role: str) -> str:
    return f"{LABEL_ROLE}/{role}"


# -- polling --------------------------------------------------------------------------------


def poll(target: str, upstream_interval: float) -> float:
    """The poll interval to use on ``target`` (``SuiteConfig.target``): :func:`spec_poll`'s."""
    return spec_poll(upstream_interval, local=target == "embedded")


def eventually(attempt: Callable[[], str | None], description: str, timeout: float, interval: float) -> None:
    """Gomega ``Eventually(...).Should(Succeed())``: ``attempt`` returns None on success or what
    is still wrong; the last problem is in the failure message."""
    wait_for(attempt, lambda problem: problem is None, description, timeout, interval=interval)


def consistently(
    attempt: Callable[[], str | None],
    description: str,
    duration: float,
    interval: float,
    *,
    last_look: bool = False,
) -> None:
    """Gomega ``Consistently(...).Should(Succeed(), description)``: ``attempt`` must return None on
    every poll for ``duration``; the first problem fails with the description and that problem.
    ``last_look=True``: an upstream hand-written deadline loop instead (one more poll once the
    window has ended, :func:`~nrop.suite.e2e.wait.polling.consistently`)."""
    polling_consistently(
        attempt,
        lambda problem: problem is None,
        description,
        duration,
        interval=interval,
        last_look=last_look,
        failure=lambda problem: f"{description}: {problem}",
    )


# -- conditions -----------------------------------------------------------------------------


def find_condition(conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> Mapping[str, Any] | None:
    return next((cond for cond in conditions or () if cond.get("type") == ctype), None)


def synced_at_problem(status: Mapping[str, Any] | None, ctype: str, generation: int) -> str | None:
    """``isNROOperSyncedAt`` / ``isNROSchedSyncedAt``: None when condition ``ctype`` is True at
    ``generation``, else the upstream error text."""
    if status is None:
        return "nil status"
    cond = find_condition(status.get("conditions"), ctype)
    if cond is None:
        return "missing condition"
    if cond.get("status") != "True":
        return "condition not true"
    if cond.get("observedGeneration") != generation:
        return f"condition at {cond.get('observedGeneration')} expected {generation}"
    return None


def is_degraded_with(conditions: Iterable[Mapping[str, Any]] | None, msg_contains: str, reason: str) -> bool:
    """``isDegradedWith``: Degraded=True, message containing ``msg_contains``, reason ``reason``."""
    cond = find_condition(conditions, CONDITION_DEGRADED)
    if cond is None or cond.get("status") != "True":
        return False
    if msg_contains not in str(cond.get("message", "")):
        log.info("Degraded message is not as expected: %s (expected to contain %r)", cond, msg_contains)
        return False
    if cond.get("reason") != reason:
        log.info("Degraded reason is not as expected: %s (expected %r)", cond, reason)
        return False
    return True


def available_true_problem(obj: Mapping[str, Any]) -> str | None:
    cond = find_condition((obj.get("status") or {}).get("conditions"), CONDITION_AVAILABLE)
    if cond is None:
        return f"condition Available was not found: {(obj.get('status') or {}).get('conditions')}"
    if cond.get("status") != "True":
        return f"Expected operator condition to be Available=True, got: {(obj.get('status') or {}).get('conditions')}"
    return None


# -- CR updates -----------------------------------------------------------------------------


def update_object(
    kube: Kube,
    kind: Kind,
    name: str,
    mutate: Callable[[Manifest], None],
    *,
    timeout: float,
    interval: float,
    namespace: str | None = None,
    description: str | None = None,
) -> Manifest:
    """``Eventually(Get; mutate; Update)``: a full-object update at the read resourceVersion,
    retried (conflicts, transient errors) until it succeeds; returns the stored object.
    ``description`` is the Eventually's failure message (default: what was to be updated)."""
    result: list[Manifest] = []

    def attempt() -> str | None:
        try:
            obj = kube.get(kind, name, namespace)
            mutate(obj)
            result[:] = [kube.replace(obj)]
        except ApiError as exc:
            return f"update failed: {exc}"
        return None

    eventually(attempt, description or f"{kind.kind} {name} to be updated", timeout, interval)
    return result[0]


def update_nrop(
    kube: Kube, name: str, mutate: Callable[[Manifest], None], *, timeout: float, interval: float
) -> Manifest:
    return update_object(kube, NROP, name, mutate, timeout=timeout, interval=interval)


def first_group_config(nrop: Manifest) -> dict[str, Any]:
    """``nodeGroups[0].config``, created empty when missing (mutates ``nrop``)."""
    group = nrop["spec"]["nodeGroups"][0]
    if group.get("config") is None:
        group["config"] = {}
    return group["config"]


def set_rte_tolerations(
    kube: Kube, nrop_name: str, tolerations: Sequence[Mapping[str, Any]], *, target: str
) -> Manifest:
    """``setRTETolerations``: nodeGroups[0].config.tolerations = ``tolerations`` (5m / 30s)."""

    def mutate(obj: Manifest) -> None:
        first_group_config(obj)["tolerations"] = [dict(tol) for tol in tolerations]

    return update_nrop(kube, nrop_name, mutate, timeout=300, interval=poll(target, 30))


# -- node group config ----------------------------------------------------------------------

DEFAULT_NODE_GROUP_CONFIG: Mapping[str, Any] = {
    "podsFingerprinting": "EnabledExclusiveResources",
    "infoRefreshMode": "Periodic",
    "infoRefreshPeriod": "10s",
    "infoRefreshPause": "Disabled",
}
_MERGED_FIELDS = ("podsFingerprinting", "infoRefreshPeriod", "infoRefreshMode", "infoRefreshPause")


def merged_config(user: Mapping[str, Any] | None) -> dict[str, Any]:
    """``DefaultNodeGroupConfig().Merge(user)``: the four knobs overlaid on the defaults
    (Merge does not carry tolerations)."""
    conf = dict(DEFAULT_NODE_GROUP_CONFIG)
    for field_name in _MERGED_FIELDS:
        if (user or {}).get(field_name) is not None:
            conf[field_name] = user[field_name]  # type: ignore[index]
    return conf


def config_equal(status_conf: Mapping[str, Any] | None, expected: Mapping[str, Any]) -> bool:
    """``cmp.Equal`` of a reported NodeGroupConfig with the expected one (durations compared as
    Go durations, so ``10s`` equals ``10.000s``)."""
    if status_conf is None:
        return False
    left = {key: value for key, value in status_conf.items() if value not in (None, [], {})}
    right = {key: value for key, value in expected.items() if value not in (None, [], {})}
    if "infoRefreshPeriod" in left and "infoRefreshPeriod" in right:
        from nrop.api.durations import parse_duration

        if parse_duration(str(left["infoRefreshPeriod"])) == parse_duration(str(right["infoRefreshPeriod"])):
            left["infoRefreshPeriod"] = right["infoRefreshPeriod"]
    return left == right


def pool_of_status(nrop: Mapping[str, Any], pool: str) -> Mapping[str, Any] | None:
    """The ``status.nodeGroups`` entry of ``pool`` (JSON key ``selector``)."""
    for group in (nrop.get("status") or {}).get("nodeGroups") or ():
        if group.get("selector") == pool:
            return group
    return None


# -- tolerations and taints -----------------------------------------------------------------

TEST_KEY = "testkey"


def toleration(key: str, operator: str, effect: str, value: str | None = None) -> dict[str, Any]:
    tol: dict[str, Any] = {"key": key, "operator": operator, "effect": effect}
    if value is not None:
        tol["value"] = value
    return tol


def test_toleration() -> list[dict[str, Any]]:
    """``testToleration``: tolerate ``testkey`` (Exists) for NoSchedule."""
    return [toleration(TEST_KEY, "Exists", "NoSchedule")]


test_toleration.__test__ = False  # type: ignore[attr-defined]


def sriov_toleration() -> dict[str, Any]:
    return toleration("sriov", "Equal", "NoSchedule", "true")


def _set_node_taints(
    kube: Kube, node_name: str, change: Callable[[list[dict[str, Any]]], tuple[list[dict[str, Any]], bool]]
) -> str | None:
    try:
        node = kube.get(NODE, node_name)
        taints = list((node.get("spec") or {}).get("taints") or [])
        new_taints, updated = change(taints)
        if not updated:
            return None
        node.setdefault("spec", {})["taints"] = new_taints
        kube.replace(node)
    except ApiError as exc:
        return f"updating the taints of node {node_name} failed: {exc}"
    return None


def apply_taint_to_node(kube: Kube, node_name: str, taint: Mapping[str, Any], *, target: str) -> None:
    """``applyTaintToNode`` (1m / 1s)."""
    log.info("adding taint %s to node %s", taint, node_name)
    eventually(
        lambda: _set_node_taints(kube, node_name, lambda taints: add_or_update_taint(taints, taint)),
        f"node {node_name} tainted with {taint}",
        60,
        poll(target, 1),
    )


def untaint_nodes(kube: Kube, node_names: Iterable[str], taint: Mapping[str, Any], *, target: str) -> None:
    """``untaintNodes`` (1m / 5s per node)."""
    for node_name in node_names:
        log.info("removing taint %s from node %s", taint, node_name)
        eventually(
            lambda node_name=node_name: _set_node_taints(  # type: ignore[misc]
                kube, node_name, lambda taints: remove_taint(taints, taint)
            ),
            f"taint {taint} removed from node {node_name}",
            60,
            poll(target, 5),
        )


# -- nodes ----------------------------------------------------------------------------------


def worker_nodes(kube: Kube) -> list[Manifest]:
    """``nodes.GetWorkers``: the nodes matching the selector ``node-role.kubernetes.io/worker=``
    (the worker role label with an empty value, as upstream's ``GetByRole`` parses it)."""
    return kube.list(NODE, label_selector=f"{role_label(ROLE_WORKER)}=")


def selector_text(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" if value else key for key, value in sorted(labels.items()))


def nodes_by_selector(kube: Kube, labels: Mapping[str, str]) -> list[Manifest]:
    return kube.list(NODE, label_selector=selector_text(labels)) if labels else kube.list(NODE)


# -- daemonsets and pods --------------------------------------------------------------------


def pod_names(pods: Iterable[Mapping[str, Any]]) -> str:
    return " ".join(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}" for pod in pods)


def rte_pod_on_node(kube: Kube, node_name: str) -> Manifest | None:
    """``isRTEPodFoundOnNode``: an RTE pod (label name=resource-topology) bound to the node."""
    for pod in kube.list(POD, field_selector=f"spec.nodeName={node_name}"):
        if (pod["metadata"].get("labels") or {}).get("name") == RTE_POD_LABEL_NAME:
            return pod
    return None


def pods_of_daemonset(kube: Kube, namespace: str, name: str) -> list[Manifest]:
    """``getPodsOfDaemonSet``: the DaemonSet, read again, must exist and its pods
    (``podlist.ByDaemonset``) must not be none."""
    ds = kube.get(DAEMONSET, name, namespace)
    try:
        pods = waiters.pods_of_daemonset(kube, ds)
    except ApiError as err:
        raise AssertionError(f'unable to get daemonset "{namespace}/{name}": {err}') from None
    assert pods, f'cannot find any pods for daemonset "{namespace}/{name}"'
    return pods


def wait_for_daemonset_update(
    kube: Kube, namespace: str, name: str, old_pods: Sequence[Mapping[str, Any]], *, target: str
) -> None:
    """``waitForDaemonSetUpdate``: the old RTE pods are gone (5m / 30s), then as many new ones
    are created and ready (3m / 10s each); each wait fails with upstream's message."""
    log.info("ensure old RTE pods of ds %s/%s are deleted", namespace, name)
    try:
        waiters.for_pods_all_deleted(kube, old_pods, timeout=300, interval=poll(target, 30))
    except (WaitTimeout, ApiError) as err:
        raise AssertionError(
            f"Expected old RTE pods owned by the DaemonSet to be deleted within the timeout: {err}"
        ) from None
    log.info("waiting for DaemonSet to be ready with the new data")
    failed = f'failed to get the daemonset "{namespace}/{name}"'
    try:
        waiters.for_daemonset_pods(
            kube, namespace, name, len(old_pods), timeout=180, interval=poll(target, 10)
        )
    except (WaitTimeout, ApiError) as err:
        raise AssertionError(f"{failed}: {err}") from None
    try:
        waiters.for_daemonset_ready(kube, namespace, name, timeout=180, interval=poll(target, 10))
    except (WaitTimeout, ApiError) as err:
        raise AssertionError(f"{failed}: {err}") from None


def first_pod(kube: Kube, namespace: str, labels: Mapping[str, str], *, exactly_one: bool) -> Manifest:
    """``deploy.FindNUMAResourcesOperatorPod`` (exactly one) / ``FindNUMAResourcesSchedulerPod``."""
    pods = kube.list(POD, namespace, label_selector=selector_text(labels))
    if (exactly_one and len(pods) != 1) or not pods:
        raise AssertionError(f"unexpected number of pods found: {len(pods)}")
    return pods[0]


def operator_pod(kube: Kube, nrop: Mapping[str, Any]) -> Manifest:
    daemonsets = (nrop.get("status") or {}).get("daemonsets") or []
    if not daemonsets:
        raise AssertionError("node groups not reported, nothing to do")
    return first_pod(kube, daemonsets[0]["namespace"], OPERATOR_POD_LABELS, exactly_one=True)


def scheduler_pod(kube: Kube, nrs: Mapping[str, Any]) -> Manifest:
    deployment = (nrs.get("status") or {}).get("deployment") or {}
    if not deployment.get("name") or not deployment.get("namespace"):
        raise AssertionError("scheduler deployment not reported in status")
    return first_pod(kube, deployment["namespace"], SCHEDULER_POD_LABELS, exactly_one=False)


def daemonsets_by_name(kube: Kube, names: Iterable[Mapping[str, str]]) -> list[Manifest]:
    """``objects.GetDaemonSetsByNamespacedName``."""
    return [kube.get(DAEMONSET, item["name"], item["namespace"]) for item in names]


# -- RTE configuration ----------------------------------------------------------------------

_RTE_CONFIG_KEYS = {"kubelet", "resourceExclude", "podExclude"}
_RTE_LEGACY_KEYS = {"topologyManagerPolicy", "topologyManagerScope", "excludeList", "podExcludes"}


@dataclass(frozen=True)
class TMConfig:
    policy: str
    scope: str


def rte_tm_config(configmap: Mapping[str, Any]) -> TMConfig:
    """``configuration.ValidateAndExtractRTEConfigData``: parse ``config.yaml`` strictly (falling
    back to the legacy layout) and require the single-numa-node policy."""
    meta = configmap.get("metadata") or {}
    raw = (configmap.get("data") or {}).get(RTE_CONFIG_KEY)
    if raw is None:
        raise AssertionError(f"config.yaml not found in ConfigMap {meta.get('namespace')}/{meta.get('name')}")
    data = yaml.safe_load(raw) or {}
    if not isinstance(data, dict):
        raise AssertionError(f"config.yaml of ConfigMap {meta.get('name')} is not a mapping")
    if set(data) <= _RTE_CONFIG_KEYS and set(data.get("kubelet") or {}) <= {
        "topologyManagerPolicy",
        "topologyManagerScope",
    }:
        kubelet = data.get("kubelet") or {}
        conf = TMConfig(
            str(kubelet.get("topologyManagerPolicy", "")), str(kubelet.get("topologyManagerScope", ""))
        )
    elif set(data) <= _RTE_LEGACY_KEYS:
        log.error(
            "failed to unmarshal config.yaml; falling back to legacy config (ConfigMap %s)", meta.get("name")
        )
        conf = TMConfig(str(data.get("topologyManagerPolicy", "")), str(data.get("topologyManagerScope", "")))
    else:
        raise AssertionError(
            f"failed to unmarshal legacy config.yaml: unknown fields {sorted(set(data) - _RTE_CONFIG_KEYS)}"
        )
    if conf.policy != "single-numa-node":
        raise AssertionError(f'invalid topologyManagerPolicy: got "{conf.policy}", want "single-numa-node"')
    return conf


def tm_config_mismatch(nrt: Mapping[str, Any], conf: TMConfig) -> str:
    """``configuration.CheckTopologyManagerConfigMatching``: empty when the NRT attributes agree."""
    problems = ""
    for attr in nrt.get("attributes") or ():
        name, value = attr.get("name"), attr.get("value")
        if name == "topologyManagerPolicy" and value != conf.policy:
            problems += f'"{name}" value is different; want: {conf.policy} got: {value}\n'
        if name == "topologyManagerScope" and conf.scope and value != conf.scope:
            problems += f'"{name}" value is different; want: {conf.scope} got: {value}\n'
    return problems


def pool_node_selector(
    kube: Kube, platform: ClusterPlatform, nrop: Mapping[str, Any], pool: str
) -> dict[str, str]:
    """``nodegroups.NodeSelectorFromPoolName``: the NodePool label on HyperShift, the MCP node
    selector on OpenShift; on Kubernetes (no MCPs) the node selector the operator gave the
    pool's RTE DaemonSet, which is the operator's own statement of the pool's nodes."""
    if platform.platform is Platform.HYPERSHIFT:
        return {NODEPOOL_LABEL: pool}
    if serves(kube, MCP):
        mcp = kube.get(MCP, pool)
        return dict(((mcp.get("spec") or {}).get("nodeSelector") or {}).get("matchLabels") or {})
    group = pool_of_status(nrop, pool)
    if group is None:
        raise AssertionError(
            f"no node group status for pool {pool!r} in {(nrop.get('status') or {}).get('nodeGroups')}"
        )
    ds_ref = group.get("daemonsets") or group.get("daemonset") or {}
    ds = kube.get(DAEMONSET, ds_ref["name"], ds_ref["namespace"])
    return dict(ds["spec"]["template"]["spec"].get("nodeSelector") or {})


def _normalize_flag_name(name: str) -> str:
    """flagcodec's normalization: a one-char flag spelled with two dashes (``--v``) is ``-v``."""
    return name[1:] if len(name) == 3 and name.startswith("--") else name


def container_flag(args: Iterable[str], flag: str) -> str | None:
    """``flagcodec.ParseArgvKeyValue(args, WithFlagNormalization).GetFlag(flag)``: the value of
    ``flag`` (spelled as upstream, e.g. ``-v`` or ``--metrics-tls-min-version``), ``""`` for a
    toggle, None when absent; a flag given twice keeps its last value."""
    wanted = _normalize_flag_name(flag)
    found: str | None = None
    for arg in args:
        name, sep, value = arg.partition("=")
        if _normalize_flag_name(name) == wanted:
            found = value if sep else ""
    return found


# -- related objects ------------------------------------------------------------------------


def _ref(group: str, resource: str, namespace: str = "", name: str = "") -> str:
    return f"{group}/{resource}/{namespace}/{name}"


def related_objects_rte(namespace: str, daemonsets: Iterable[Mapping[str, str]]) -> list[str]:
    """``relatedobjects.ResourceTopologyExporter`` as sorted ``group/resource/ns/name`` strings."""
    refs = [
        _ref("", "namespaces", "", namespace),
        _ref("machineconfiguration.openshift.io", "kubeletconfigs"),
        _ref("machineconfiguration.openshift.io", "machineconfigs"),
        _ref("topology.node.k8s.io", "noderesourcetopologies"),
    ]
    refs += [_ref("apps", "daemonsets", ds["namespace"], ds["name"]) for ds in daemonsets]
    return sorted(refs)


def related_objects_scheduler(namespace: str, deployment: Mapping[str, str]) -> list[str]:
    """``relatedobjects.Scheduler`` as sorted strings."""
    return sorted(
        [
            _ref("", "namespaces", "", namespace),
            _ref("apps", "deployments", deployment["namespace"], deployment["name"]),
        ]
    )


def object_refs(refs: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """``objRefListToStringList``."""
    return sorted(
        _ref(ref.get("group", ""), ref.get("resource", ""), ref.get("namespace", ""), ref.get("name", ""))
        for ref in refs or ()
    )


# -- MachineConfigPools (OpenShift roll-outs) -------------------------------------------------


def for_mcp_condition(
    kube: Kube, mcp: Mapping[str, Any] | str, ctype: str, timeout: float, interval: float
) -> Manifest:
    """``wait.ForMachineConfigPoolCondition`` (:func:`nrop.suite.e2e.wait.waiters.for_mcp_condition`):
    ``mcp`` is the pool as read before the change, or a name (read now)."""
    return waiters.for_mcp_condition(kube, mcp, ctype, interval=interval, timeout=timeout)


def wait_mcp_condition(kube: Kube, suite_config: Any, mcp: Mapping[str, Any] | str, ctype: str) -> Manifest:
    """:func:`for_mcp_condition` with ``MachineConfigPoolUpdateTimeout`` / ``...Interval``."""
    t = suite_config.timeouts
    return for_mcp_condition(
        kube, mcp, ctype, t.mcp_update_timeout, poll(suite_config.target, t.mcp_update_interval)
    )


CURRENT_CONFIG_ANNOTATION = "machineconfiguration.openshift.io/currentConfig"
DESIRED_CONFIG_ANNOTATION = "machineconfiguration.openshift.io/desiredConfig"


def nrop_mcps(kube: Kube, nrop: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``nropmcp.GetListByNodeGroupsV1``: MCPs selected by the node groups (selector or name)."""
    mcps = kube.list(MCP)
    selected: dict[str, dict[str, Any]] = {}
    for group in (nrop.get("spec") or {}).get("nodeGroups") or ():
        for mcp in mcps:
            name = mcp["metadata"]["name"]
            if group.get("poolName") == name or selector_matches(
                group.get("machineConfigPoolSelector"), mcp["metadata"].get("labels") or {}
            ):
                selected[name] = mcp
    return list(selected.values())


@dataclass(frozen=True)
class McpInfo:
    """``mcpInfo``: the pool as read before the change, its rendered config then, a node of it."""

    mcp: Mapping[str, Any]
    initial_config: str
    sample_node: str

    @property
    def name(self) -> str:
        return str(self.mcp["metadata"]["name"])


def mcps_info(kube: Kube, nrop: Mapping[str, Any]) -> list[McpInfo]:
    """``buildMCPsInfo``: per NROP MCP, the pool itself (its resourceVersion is the reference
    of :func:`wait_for_mcp_update`), its initial rendered config and a sample node."""
    info = []
    for mcp in nrop_mcps(kube, kube.get(NROP, nrop["metadata"]["name"])):
        labels = ((mcp.get("spec") or {}).get("nodeSelector") or {}).get("matchLabels") or {}
        nodes = nodes_by_selector(kube, labels)
        if not nodes:
            raise AssertionError(f"empty node list for mcp {mcp['metadata']['name']}")
        config = ((mcp.get("status") or {}).get("configuration") or {}).get("name", "")
        info.append(McpInfo(mcp, config, nodes[0]["metadata"]["name"]))
    return info


def wait_for_mcp_update(kube: Kube, suite_config: Any, infos: list[McpInfo], config_update: bool) -> None:
    """``waitForMcpUpdate``: every MCP Updated since its snapshot in ``infos``
    (:func:`wait_mcp_condition`), its rendered config changed (MachineConfig update) and the
    sample node's desired and current config equal to it."""
    for info in infos:
        wait_mcp_condition(kube, suite_config, info.mcp, "Updated")
    for info in infos:
        name, initial, sample = info.name, info.initial_config, info.sample_node
        mcp = kube.get(MCP, name)
        updated = ((mcp.get("status") or {}).get("configuration") or {}).get("name", "")
        if config_update:
            assert updated != initial, f"config of MCP {name} was not updated"
        annotations = kube.get(NODE, sample)["metadata"].get("annotations") or {}
        assert annotations.get(DESIRED_CONFIG_ANNOTATION) == updated, (
            f"desired mc mismatch for node {sample!r}"
        )
        assert annotations.get(CURRENT_CONFIG_ANNOTATION) == updated, (
            f"current mc mismatch for node {sample!r}"
        )
