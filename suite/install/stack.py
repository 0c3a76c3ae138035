"""Installing and removing the NUMA-aware stack through the operator: the suite's ``--setup`` / ``--teardown``.

Owns what upstream's install, sched-install, sched-uninstall and uninstall suites do
(``test/e2e/install``, ``test/e2e/sched/{install,uninstall}``, ``test/e2e/uninstall``), the
way a user would on any cluster:

* :func:`setup` applies :func:`nrop.operator.decisions.manifests.install_manifests` (CRDs, namespace,
  RBAC, the operator Deployment), waits for the CRDs to be established and the operator
  to be rolled out; or, ``via="olm"`` (``--install-via olm``), installs the operator the way
  OLM does on OpenShift (:func:`olm_manifests`: the same manifests but the Deployment, an
  OperatorGroup, a ClusterServiceVersion whose install strategy holds that same Deployment,
  and a Subscription carrying the operator's extra env in ``spec.config.env``) and waits for
  the CSV to reach ``Succeeded`` and the Deployment OLM rendered to be rolled out; then creates the ``NUMAResourcesOperator`` (the shipped sample, node group
  = the ``E2E_NODE_ROLE`` pool, ``logLevel: Debug``) and waits ``Available=True``
  (5m/10s), the exporter DaemonSets it owns fully scheduled and ready, and an NRT for
  every worker; then creates the ``NUMAResourcesScheduler`` (the sample, with the given
  image) and waits ``Available=True``, ``Upgradeable=True``, ``Degraded=False``,
  ``Progressing=False`` (5m/10s) and its Deployment ready;
* :func:`teardown` deletes the NRS and waits for its scheduler objects to go, deletes the
  NROP and waits for the exporters to go, then deletes the operator's own objects (its
  Subscription, CSV and OperatorGroup first when it was installed through OLM);
* :func:`wait_crds_established` is setup's wait for CRDs, also for one created otherwise (the
  project's tests create the NodeResourceTopology CRD alone, :data:`NRT_CRD`);
* changing one variable of the running operator is :mod:`nrop.suite.install.operatorenv`.

Every step logs a progress line with the time elapsed since the start. Condition checks
and readiness are pure functions over the objects (tested with tables).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.api import images
from nrop.api.distribution import package_version
from nrop.suite.e2e.kube import (
    CRD,
    DAEMONSET,
    DEPLOYMENT,
    NAMESPACE,
    NODE,
    NROP,
    NROSCHED,
    NRT,
    POD,
    Kind,
    Kube,
    Manifest,
    UnknownKindError,
    kind_of,
    name_of,
)
from nrop.suite.e2e.objects import NROP_NAME, NROSCHED_NAME
from nrop.suite.e2e.wait.polling import wait_for

__all__ = [
    "CLUSTERSERVICEVERSION",
    "CRD_NAMES",
    "INSTALL_VIA",
    "NRT_CRD",
    "OPERATORGROUP",
    "OPERATOR_NAMESPACE",
    "OPERATOR_PACKAGE",
    "SUBSCRIPTION",
    "Stack",
    "StackError",
    "StackTimings",
    "condition_status",
    "csv_name",
    "csv_phase",
    "daemonset_fully_ready",
    "deployment_ready",
    "node_role",
    "nrop_manifest",
    "nrosched_manifest",
    "olm_manifests",
    "scheduler_healthy",
    "setup",
    "teardown",
    "wait_crds_established",
]

log = logging.getLogger(__name__)

OPERATOR_NAMESPACE = "numaresources"
OPERATOR_DEPLOYMENT = "numaresources-controller-manager"
CRD_NAMES = (
    "numaresourcesoperators.nodetopology.openshift.io",
    "numaresourcesschedulers.nodetopology.openshift.io",
)
NRT_CRD = "noderesourcetopologies.topology.node.k8s.io"
RTE_POD_LABEL = "name=resource-topology"
SCHEDULER_POD_LABEL = "app=secondary-scheduler"
WORKER_ROLE_LABEL = "node-role.kubernetes.io/worker"
OPERATOR_LABELS = {"control-plane": "controller-manager", "app": "numaresources-operator"}
#: The operator's OLM package (upstream's ``consts.SubscriptionSpecNamePackage``): the Subscription's
#: ``spec.name``, and its name when :func:`setup` creates it.
OPERATOR_PACKAGE = "numaresources-operator"
SUBSCRIPTION = Kind("operators.coreos.com/v1alpha1", "Subscription")
CLUSTERSERVICEVERSION = Kind("operators.coreos.com/v1alpha1", "ClusterServiceVersion")
OPERATORGROUP = Kind("operators.coreos.com/v1", "OperatorGroup")
#: How :func:`setup` installs the operator (``--install-via``): its manifests applied directly, or through OLM.
INSTALL_VIA = ("direct", "olm")
_OLM_CRD = "subscriptions.operators.coreos.com"


class StackError(AssertionError):
    """The stack is not in a state the suite can work with (what upstream's install suites fail with)."""


@dataclass(frozen=True)
class StackTimings:
    """Upstream's install waits: conditions 5m/10s, DaemonSet 1m/5s; the embedded target polls faster."""

    available_timeout: float = 300.0
    available_interval: float = 10.0
    daemonset_timeout: float = 60.0
    daemonset_interval: float = 5.0
    rollout_timeout: float = 300.0
    deletion_timeout: float = 300.0
    deletion_interval: float = 5.0

    @classmethod
    def local(cls) -> StackTimings:
        return cls(available_interval=0.5, daemonset_interval=0.5, deletion_interval=0.5)


@dataclass
class Stack:
    """What :func:`setup` created and found."""

    namespace: str
    nrop: Manifest
    nrosched: Manifest
    scheduler_name: str
    rte_daemonsets: list[str] = field(default_factory=list)
    nrts: list[Manifest] = field(default_factory=list)


class _Progress:
    def __init__(self, what: str) -> None:
        self.what = what
        self.started = time.monotonic()

    def __call__(self, step: str) -> None:
        log.info("%s: %s (%.1fs)", self.what, step, time.monotonic() - self.started)


# -- pure ---------------------------------------------------------------------------------------------


def condition_status(obj: Mapping[str, Any] | None, kind: str) -> str | None:
    """``status`` of the condition ``kind`` ("True"/"False"/"Unknown"), ``None`` when absent."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


def scheduler_healthy(nrosched: Mapping[str, Any] | None) -> bool:
    """``isReportedAvailable`` of the sched-install suite: Available and Upgradeable True, Degraded and
    Progressing not True."""
    return (
        condition_status(nrosched, "Available") == "True"
        and condition_status(nrosched, "Upgradeable") == "True"
        and condition_status(nrosched, "Degraded") not in (None, "True")
        and condition_status(nrosched, "Progressing") not in (None, "True")
    )


def daemonset_fully_ready(ds: Mapping[str, Any] | None) -> bool:
    """The install suite's DaemonSet check: none misscheduled or unavailable, every desired pod current and ready."""
    if ds is None:
        return False
    status = ds.get("status") or {}
    desired = int(status.get("desiredNumberScheduled") or 0)
    return (
        int(status.get("observedGeneration") or 0) >= int(ds["metadata"].get("generation") or 0)
        and int(status.get("numberMisscheduled") or 0) == 0
        and int(status.get("numberUnavailable") or 0) == 0
        and int(status.get("currentNumberScheduled") or 0) == desired
        and int(status.get("numberReady") or 0) == desired
    )


def deployment_ready(dp: Mapping[str, Any] | None) -> bool:
    """Rolled out at the current generation, every replica updated and ready."""
    if dp is None:
        return False
    want = int((dp.get("spec") or {}).get("replicas", 1))
    status = dp.get("status") or {}
    return (
        int(status.get("observedGeneration") or 0) >= int(dp["metadata"].get("generation") or 0)
        and int(status.get("updatedReplicas") or 0) == want
        and int(status.get("readyReplicas") or 0) == want
        and int(status.get("replicas") or 0) == want
    )


def _crd_established(crd: Mapping[str, Any] | None) -> bool:
    return condition_status(crd, "Established") == "True"


def node_role(environ: Mapping[str, str]) -> str:
    """The pool the install suite targets: ``E2E_NODE_ROLE`` (default ``worker``; ``master`` on compact clusters)."""
    return environ.get("E2E_NODE_ROLE") or "worker"


def nrop_manifest(
    pool: str = "worker", log_level: str = "Debug", refresh_period: str | None = None
) -> Manifest:
    """The shipped NROP sample with one node group for ``pool`` and ``logLevel`` (the install suite's CR).

    ``refresh_period`` sets the group's ``config.infoRefreshPeriod`` (the mode stays the
    default ``Periodic``); ``None`` keeps the operator's default (10s).
    """
    from nrop.operator import samples

    nrop = samples.load("NUMAResourcesOperator")
    group: dict[str, Any] = {"poolName": pool}
    if refresh_period:
        group["config"] = {"infoRefreshPeriod": refresh_period}
    nrop["spec"]["nodeGroups"] = [group]
    nrop["spec"]["logLevel"] = log_level
    return nrop


def nrosched_manifest(image: str | None = None) -> Manifest:
    """The shipped NRS sample; ``image`` replaces its ``imageSpec`` when given."""
    from nrop.operator import samples

    nrosched = samples.load("NUMAResourcesScheduler")
    if image:
        nrosched["spec"]["imageSpec"] = image
    return nrosched


def csv_name() -> str:
    """The operator's ClusterServiceVersion: ``numaresources-operator.v<version>``, as its bundle names it."""
    return f"{OPERATOR_PACKAGE}.v{package_version()}"


def olm_manifests(namespace: str, image: str, env: Mapping[str, str] | None = None) -> list[Manifest]:
    """The operator as an OLM bundle and a Subscription deliver it, in apply order.

    Every manifest of :func:`~nrop.operator.decisions.manifests.install_manifests` but the Deployment (CRDs,
    namespace, service account, RBAC: what the bundle and OLM's InstallPlan create), then an
    OperatorGroup for the namespace, the Subscription to :data:`OPERATOR_PACKAGE` starting at
    the CSV, with ``env`` in ``spec.config.env`` (OLM injects it into the operator's containers),
    and the ClusterServiceVersion whose ``deployment`` install strategy holds that same
    Deployment (name, labels, spec).
    """
    from nrop.operator.decisions.manifests import install_manifests

    manifests = install_manifests(namespace, image)
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    name = csv_name()
    operator_group = {
        "apiVersion": OPERATORGROUP.api_version,
        "kind": OPERATORGROUP.kind,
        "metadata": {"name": OPERATOR_PACKAGE, "namespace": namespace},
        "spec": {"targetNamespaces": [namespace]},
    }
    csv = {
        "apiVersion": CLUSTERSERVICEVERSION.api_version,
        "kind": CLUSTERSERVICEVERSION.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "displayName": "numaresources-operator",
            "version": package_version(),
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [
                        {
                            "name": deployment["metadata"]["name"],
                            "label": dict(deployment["metadata"]["labels"]),
                            "spec": deployment["spec"],
                        }
                    ]
                },
            },
            "installModes": [
                {"type": "OwnNamespace", "supported": True},
                {"type": "SingleNamespace", "supported": True},
                {"type": "MultiNamespace", "supported": False},
                {"type": "AllNamespaces", "supported": False},
            ],
            "relatedImages": [{"name": "numaresources-operator", "image": image}],
        },
    }
    subscription = {
        "apiVersion": SUBSCRIPTION.api_version,
        "kind": SUBSCRIPTION.kind,
        "metadata": {"name": OPERATOR_PACKAGE, "namespace": namespace},
        "spec": {
            "name": OPERATOR_PACKAGE,
            "channel": "stable",
            "source": "redhat-operators",
            "sourceNamespace": "openshift-marketplace",
            "installPlanApproval": "Automatic",
            "startingCSV": name,
            "config": {"env": [{"name": k, "value": v} for k, v in sorted((env or {}).items())]},
        },
    }
    # The Subscription before the CSV, as OLM creates the CSV for a Subscription (its InstallPlan).
    return [*(m for m in manifests if m is not deployment), operator_group, subscription, csv]


def csv_phase(csv: Mapping[str, Any] | None) -> str:
    return str(((csv or {}).get("status") or {}).get("phase") or "")


def _owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj.get("metadata", {}).get("ownerReferences") or ())


# -- setup --------------------------------------------------------------------------------------------


def wait_crds_established(kube: Kube, names: Iterable[str], timeout: float, *, interval: float) -> None:
    """Until every CRD of ``names`` reports ``Established=True`` (each awaited up to ``timeout``)."""
    for name in names:
        wait_for(
            lambda name=name: kube.get_or_none(CRD, name),
            _crd_established,
            f"CRD {name} to be Established",
            timeout,
            interval=interval,
        )


def _install_operator(
    kube: Kube,
    namespace: str,
    image: str,
    env: Mapping[str, str] | None,
    via: str,
    timings: StackTimings,
    step: _Progress,
) -> None:
    from nrop.operator.decisions.manifests import install_manifests

    if via == "olm":
        if _get_optional(kube, CRD, _OLM_CRD) is None:
            raise StackError(
                f"cannot install through OLM: the cluster does not serve {_OLM_CRD} (use --install-via direct)"
            )
        manifests = olm_manifests(namespace, image, env)
    else:
        manifests = install_manifests(namespace, image, env)
    for manifest in manifests:
        kube.apply(manifest)
    step(f"applied {len(manifests)} operator manifests via {via} (namespace {namespace}, image {image})")
    wait_crds_established(kube, CRD_NAMES, timings.available_timeout, interval=timings.available_interval)
    step("CRDs established")
    if via == "olm":
        name = csv_name()
        wait_for(
            lambda: kube.get_or_none(CLUSTERSERVICEVERSION, name, namespace),
            lambda csv: csv_phase(csv) == "Succeeded",
            f"ClusterServiceVersion {namespace}/{name} to reach phase Succeeded",
            timings.rollout_timeout,
            interval=timings.available_interval,
        )
        step(f"ClusterServiceVersion {namespace}/{name} Succeeded")
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, OPERATOR_DEPLOYMENT, namespace),
        deployment_ready,
        f"deployment {namespace}/{OPERATOR_DEPLOYMENT} to be ready",
        timings.rollout_timeout,
        interval=timings.available_interval,
    )
    step(f"operator deployment {namespace}/{OPERATOR_DEPLOYMENT} ready")


def _deploy_nrop(
    kube: Kube, pool: str, refresh_period: str | None, timings: StackTimings, step: _Progress
) -> list[str]:
    kube.apply(nrop_manifest(pool, refresh_period=refresh_period))
    step(
        f"NUMAResourcesOperator {NROP_NAME} created (nodeGroups poolName={pool}, logLevel Debug"
        + (f", infoRefreshPeriod {refresh_period})" if refresh_period else ")")
    )
    nrop = wait_for(
        lambda: kube.get(NROP, NROP_NAME),
        lambda obj: condition_status(obj, "Available") == "True",
        f"NUMAResourcesOperator {NROP_NAME} to report Available=True",
        timings.available_timeout,
        interval=timings.available_interval,
    )
    step("NUMAResourcesOperator Available=True")
    for name in (NRT_CRD, *CRD_NAMES):
        if kube.get_or_none(CRD, name) is None:
            raise AssertionError(f"CRD {name} is not deployed")
    uid = nrop["metadata"]["uid"]
    daemonsets = wait_for(
        lambda: [ds for ds in kube.list(DAEMONSET) if _owned_by(ds, uid)],
        lambda found: bool(found) and all(daemonset_fully_ready(ds) for ds in found),
        f"the exporter DaemonSets owned by {NROP_NAME} to be up and running",
        timings.daemonset_timeout,
        interval=timings.daemonset_interval,
    )
    names = [f"{ds['metadata']['namespace']}/{name_of(ds)}" for ds in daemonsets]
    step(f"exporter daemonsets ready: {', '.join(names)}")
    return names


def _wait_nrts(kube: Kube, timings: StackTimings, step: _Progress) -> list[Manifest]:
    workers = sorted(name_of(n) for n in kube.list(NODE, label_selector=WORKER_ROLE_LABEL))

    def missing(nrts: list[Manifest]) -> list[str]:
        have = {name_of(n) for n in nrts if n.get("zones")}
        return [w for w in workers if w not in have]

    nrts = wait_for(
        lambda: kube.list(NRT),
        lambda found: not missing(found),
        f"an NRT with zones for every worker ({', '.join(workers)})",
        timings.available_timeout,
        interval=timings.available_interval,
    )
    step(f"NRTs published for {len(workers)} workers")
    return nrts


def _deploy_nrosched(
    kube: Kube, image: str | None, timings: StackTimings, step: _Progress
) -> tuple[Manifest, str]:
    kube.apply(nrosched_manifest(image))
    step(f"NUMAResourcesScheduler {NROSCHED_NAME} created")
    nrosched = wait_for(
        lambda: kube.get(NROSCHED, NROSCHED_NAME),
        scheduler_healthy,
        f"NUMAResourcesScheduler {NROSCHED_NAME} to report Available/Upgradeable=True, Degraded/Progressing=False",
        timings.available_timeout,
        interval=timings.available_interval,
    )
    step("NUMAResourcesScheduler Available=True")
    uid = nrosched["metadata"]["uid"]
    deployment = wait_for(
        lambda: next((d for d in kube.list(DEPLOYMENT) if _owned_by(d, uid)), None),
        deployment_ready,
        f"the scheduler deployment owned by {NROSCHED_NAME} to be ready",
        timings.available_timeout,
        interval=timings.available_interval,
    )
    step(f"scheduler deployment {deployment['metadata']['namespace']}/{name_of(deployment)} ready")
    nrosched = kube.get(NROSCHED, NROSCHED_NAME)
    return nrosched, str((nrosched.get("status") or {}).get("schedulerName") or "")


def setup(
    kube: Kube,
    *,
    image: str = images.DEFAULT_IMAGE,
    namespace: str = OPERATOR_NAMESPACE,
    env: Mapping[str, str] | None = None,
    pool: str = "worker",
    scheduler_image: str | None = None,
    refresh_period: str | None = None,
    via: str = "direct",
    timings: StackTimings = StackTimings(),
) -> Stack:
    """Install the operator, the NROP and the NRS; return once every part is ready (see module doc).

    ``via`` is one of :data:`INSTALL_VIA`; ``env`` is the operator's extra environment (the
    Subscription's ``spec.config.env`` through OLM); ``pool`` the node group's pool
    (:func:`node_role`); ``scheduler_image`` replaces the NRS sample's ``imageSpec``
    (default: ``image``); ``refresh_period`` the exporters' ``infoRefreshPeriod``.
    """
    if via not in INSTALL_VIA:
        raise ValueError(f"via={via!r}: expected one of {', '.join(INSTALL_VIA)}")
    step = _Progress("stack setup")
    _install_operator(kube, namespace, image, env, via, timings, step)
    daemonsets = _deploy_nrop(kube, pool, refresh_period, timings, step)
    nrts = _wait_nrts(kube, timings, step)
    nrosched, scheduler_name = _deploy_nrosched(kube, scheduler_image or image, timings, step)
    step(f"done: scheduler name {scheduler_name}")
    return Stack(
        namespace=namespace,
        nrop=kube.get(NROP, NROP_NAME),
        nrosched=nrosched,
        scheduler_name=scheduler_name,
        rte_daemonsets=daemonsets,
        nrts=nrts,
    )


# -- teardown -----------------------------------------------------------------------------------------


def _wait_gone(what: str, getter: Any, timings: StackTimings) -> None:
    wait_for(
        getter,
        lambda found: not found,
        f"{what} to be gone",
        timings.deletion_timeout,
        interval=timings.deletion_interval,
    )


def _get_optional(kube: Kube, kind: Kind, name: str) -> Manifest | None:
    """``kube.get_or_none``, also ``None`` when the cluster does not know the kind (CRD not installed)."""
    try:
        return kube.get_or_none(kind, name)
    except UnknownKindError:
        return None


def _uninstall_nrosched(kube: Kube, timings: StackTimings, step: _Progress) -> None:
    nrosched = _get_optional(kube, NROSCHED, NROSCHED_NAME)
    if nrosched is None:
        step(f"NUMAResourcesScheduler {NROSCHED_NAME} not found: nothing to delete")
        return
    deployment = (nrosched.get("status") or {}).get("deployment") or {}
    kube.delete(NROSCHED, NROSCHED_NAME)
    _wait_gone(
        f"NUMAResourcesScheduler {NROSCHED_NAME}", lambda: kube.get_or_none(NROSCHED, NROSCHED_NAME), timings
    )
    if deployment.get("name"):
        _wait_gone(
            f"scheduler deployment {deployment.get('namespace')}/{deployment['name']}",
            lambda: kube.get_or_none(DEPLOYMENT, deployment["name"], deployment.get("namespace")),
            timings,
        )
    _wait_gone("scheduler pods", lambda: kube.list(POD, label_selector=SCHEDULER_POD_LABEL), timings)
    step("NUMAResourcesScheduler and its scheduler deleted")


def _uninstall_nrop(kube: Kube, timings: StackTimings, step: _Progress) -> None:
    nrop = _get_optional(kube, NROP, NROP_NAME)
    if nrop is None:
        step(f"NUMAResourcesOperator {NROP_NAME} not found: nothing to delete")
        return
    uid = nrop["metadata"]["uid"]
    kube.delete(NROP, NROP_NAME)
    _wait_gone(f"NUMAResourcesOperator {NROP_NAME}", lambda: kube.get_or_none(NROP, NROP_NAME), timings)
    _wait_gone(
        f"exporter daemonsets of {NROP_NAME}",
        lambda: [ds for ds in kube.list(DAEMONSET) if _owned_by(ds, uid)],
        timings,
    )
    _wait_gone("exporter pods", lambda: kube.list(POD, label_selector=RTE_POD_LABEL), timings)
    step("NUMAResourcesOperator and its exporters deleted")


def _uninstall_olm(kube: Kube, namespace: str, step: _Progress) -> None:
    """Delete what :func:`olm_manifests` adds (Subscription first, as OLM would re-create its CSV);
    the CSV's Deployment goes with it (owner reference). Nothing to do on a cluster without OLM."""
    found = []
    for kind, name in (
        (SUBSCRIPTION, OPERATOR_PACKAGE),
        (CLUSTERSERVICEVERSION, csv_name()),
        (OPERATORGROUP, OPERATOR_PACKAGE),
    ):
        try:
            if kube.delete(kind, name, namespace, propagation_policy="Background"):
                found.append(f"{kind.kind} {name}")
        except UnknownKindError:
            return
    if found:
        step(f"OLM install removed: {', '.join(found)}")


def _uninstall_operator(
    kube: Kube, namespace: str, image: str, timings: StackTimings, step: _Progress
) -> None:
    from nrop.operator.decisions.manifests import install_manifests

    _uninstall_olm(kube, namespace, step)
    manifests: Sequence[Manifest] = install_manifests(namespace, image)
    for manifest in reversed(manifests):
        if manifest["kind"] == "CustomResourceDefinition":
            continue  # CRDs stay: deleting one deletes every object of the kind cluster-wide
        metadata = manifest["metadata"]
        kube.delete(
            kind_of(manifest), metadata["name"], metadata.get("namespace"), propagation_policy="Background"
        )
    _wait_gone(f"namespace {namespace}", lambda: kube.get_or_none(NAMESPACE, namespace), timings)
    step(f"operator removed (namespace {namespace} deleted)")


def teardown(
    kube: Kube,
    *,
    image: str = images.DEFAULT_IMAGE,
    namespace: str = OPERATOR_NAMESPACE,
    timings: StackTimings = StackTimings(),
) -> None:
    """sched-uninstall, uninstall, then the operator's own objects; each step tolerates what is already gone."""
    step = _Progress("stack teardown")
    _uninstall_nrosched(kube, timings, step)
    _uninstall_nrop(kube, timings, step)
    _uninstall_operator(kube, namespace, image, timings, step)
    step("done")
