"""The operator's CRs as the configuration-family specs edit and read them.

Edits of the NUMAResourcesOperator's node groups (``nodeGroups[0].config``, upstream's
``setRTETolerations``), the node-group config the operator should report
(``DefaultNodeGroupConfig().Merge``, compared as ``cmp.Equal``) and the status the specs check:
conditions (``isNROOperSyncedAt`` / ``isNROSchedSyncedAt``, ``isDegradedWith``, Available), the
``status.nodeGroups`` entry of a pool, related objects (``relatedobjects``,
``objRefListToStringList``). The status checks and the config arithmetic are pure functions
over dicts, table-tested in ``tests/unit/serial/test_nropcr_helpers.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from _polling_helpers import poll, update_object

from nrop.suite import Kube
from nrop.suite.e2e.kube import NROP, Manifest

log = logging.getLogger(__name__)

# -- names (upstream constants) -----------------------------------------------------------

LABEL_NODEGROUP_MCP = "nodegroup.nodetopology.openshift.io/machineconfigpool"

CONDITION_AVAILABLE = "Available"
CONDITION_DEGRADED = "Degraded"
REASON_INTERNAL_ERROR = "InternalError"
REASON_NODEGROUPS_ERROR = "ValidationErrorUnderNodeGroups"


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
