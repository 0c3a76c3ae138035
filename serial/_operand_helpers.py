"""The operator's operands as the configuration-family specs find and watch them.

The operator's and the secondary scheduler's pods (``deploy.FindNUMAResourcesOperatorPod``,
``FindNUMAResourcesSchedulerPod``), the RTE DaemonSets and their pods
(``getPodsOfDaemonSet``, ``isRTEPodFoundOnNode``, ``GetDaemonSetsByNamespacedName``), an RTE
DaemonSet's roll-out after a CR change (``waitForDaemonSetUpdate``), and the flags the operator
renders into operand containers (``flagcodec``'s ``GetFlag``, the RTE ``-v`` of each log level).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from _node_helpers import selector_text
from _polling_helpers import poll

from nrop.suite import Kube, WaitTimeout, waiters
from nrop.suite.e2e.kube import DAEMONSET, POD, ApiError, Manifest

log = logging.getLogger(__name__)

LABEL_OPERATOR_NAME = "numaresourcesoperator.nodetopology.openshift.io/name"
RTE_POD_LABEL_NAME = "resource-topology"
OPERATOR_POD_LABELS = {"app": "numaresources-operator"}
SCHEDULER_POD_LABELS = {"app": "secondary-scheduler"}
TERMINATION_FALLBACK = "FallbackToLogsOnError"


# loglevel.ToKlog: the RTE -v value for each operator LogLevel
KLOG_LEVELS = {"Normal": "2", "Debug": "4", "Trace": "6", "TraceAll": "8"}


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
