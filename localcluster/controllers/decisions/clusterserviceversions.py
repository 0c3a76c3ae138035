"""OLM decisions of the embedded cluster: a ClusterServiceVersion's Deployments and its phase.

Pure, after operator-lifecycle-manager (OLM) for the part of it an operator installed through a
Subscription uses (``pkg/controller/install/deployment.go``,
``pkg/controller/operators/olm/overrides``, the CSV state machine of
``pkg/controller/operators/olm/operator.go``):

* :func:`owner_subscription`: the Subscription whose ``status.installedCSV`` names the CSV
  (OLM's ``findOwner``); its ``spec.config`` overrides the CSV's pod templates;
* :func:`merge_env` and :func:`apply_config`: OLM's ``inject`` rules, for every container:
  config env replaces same-named variables in place and appends the others in the
  Subscription's order; ``envFrom`` and tolerations are appended unless already present;
  volumes and volume mounts replace same-named ones or are appended; ``resources`` and
  ``nodeSelector`` replace the template's when set;
* :func:`render_deployment`: ``deploymentForSpec``: the Deployment of one
  ``spec.install.spec.deployments[]`` entry, labelled ``olm.managed`` and with the owner labels
  ``olm.owner``/``olm.owner.namespace``/``olm.owner.kind``, a non-blocking owner reference to
  the CSV, the CSV's annotations on the pod template, the config applied,
  ``OPERATOR_CONDITION_NAME``, ``revisionHistoryLimit: 1`` and the ``olm.deployment-spec-hash``
  label;
* :func:`install_problem`: ``CheckInstalled``: the first Deployment missing, not rolled out
  (``DeploymentStatus``) or changed since it was rendered (the spec hash), as a reason and a
  message;
* :func:`next_phase`: the CSV's phase step (``Pending`` → ``InstallReady`` → ``Installing`` →
  ``Succeeded``, and back to ``InstallReady``/``Pending`` when a Deployment changed or went),
  with OLM's reasons and messages;
* :func:`subscription_status`: what the catalog operator records on a Subscription whose
  ``startingCSV`` is in the namespace: ``currentCSV``, ``installedCSV``, ``state: AtLatestKnown``.

Differences from OLM: no catalogs, InstallPlans or CSV replacement chains (the Subscription's
``startingCSV`` is the CSV, as a single-bundle channel would resolve); the CSV's permissions
are not turned into RBAC objects; affinity and annotation overrides are not applied.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nrop.api.metatime import parse_time
from nrop.localcluster.controllers.decisions.workloads import compute_hash, get_condition

__all__ = [
    "API_VERSION",
    "CSV_KIND",
    "DEPLOYMENT_SPEC_HASH",
    "INSTALL_TIMEOUT",
    "OLM_MANAGED",
    "OWNER",
    "OWNER_KIND",
    "OWNER_NAMESPACE",
    "InstallProblem",
    "Phase",
    "apply_config",
    "deployment_status",
    "install_problem",
    "install_time_left",
    "merge_env",
    "next_phase",
    "owner_labels",
    "owner_subscription",
    "phase_status",
    "render_deployment",
    "render_deployments",
    "subscription_status",
]

Obj = dict[str, Any]

API_VERSION = "operators.coreos.com/v1alpha1"
CSV_KIND = "ClusterServiceVersion"
OWNER = "olm.owner"
OWNER_NAMESPACE = "olm.owner.namespace"
OWNER_KIND = "olm.owner.kind"
OLM_MANAGED = "olm.managed"
DEPLOYMENT_SPEC_HASH = "olm.deployment-spec-hash"
#: OLM fails a CSV that stays ``Installing`` this long (seconds; fixed in OLM, a setting here).
INSTALL_TIMEOUT = 300.0
_CONDITION_NAME_ENV = "OPERATOR_CONDITION_NAME"

# StrategyError reasons (pkg/controller/install/errors.go)
COMPONENT_MISSING = "ComponentMissing"
WAITING = "Waiting"
TIMEOUT = "Timeout"
DEPLOYMENT_UPDATED = "DeploymentUpdated"


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


# -- the owning Subscription and its config --------------------------------------------------------


def owner_subscription(subscriptions: Iterable[Mapping[str, Any]], csv_name: str) -> Mapping[str, Any] | None:
    """``findOwner``: the first Subscription whose ``status.installedCSV`` is ``csv_name``."""
    for sub in subscriptions:
        if (sub.get("status") or {}).get("installedCSV") == csv_name:
            return sub
    return None


def merge_env(container_env: Sequence[Mapping[str, Any]], new_env: Sequence[Mapping[str, Any]]) -> list[Obj]:
    """``mergeEnvVars``: ``new_env`` wins; the container's names keep their places, new names follow
    in ``new_env``'s order (each name once)."""
    merged: dict[str, Mapping[str, Any]] = {}
    for env in container_env:
        merged[env["name"]] = env
    for env in new_env:
        merged[env["name"]] = env
    out: list[Obj] = []
    for env in container_env:
        if env["name"] in merged:
            out.append(copy.deepcopy(dict(merged.pop(env["name"]))))
    for env in new_env:
        if env["name"] in merged:
            out.append(copy.deepcopy(dict(merged.pop(env["name"]))))
    return out


def _append_missing(existing: Sequence[Any], new: Sequence[Any]) -> list[Any]:
    out = list(existing)
    for item in new:
        if item not in existing:
            out.append(copy.deepcopy(item))
    return out


def _replace_by_name(existing: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[Any]:
    out = [dict(e) for e in existing]
    for item in new:
        index = next((i for i, e in enumerate(existing) if e.get("name") == item.get("name")), None)
        if index is None:
            out.append(copy.deepcopy(dict(item)))
        else:
            out[index] = copy.deepcopy(dict(item))
    return out


def apply_config(pod_spec: Obj, config: Mapping[str, Any]) -> Obj:
    """``DeploymentInitializer.initialize``: a Subscription's ``spec.config`` laid over ``pod_spec``
    (modified in place and returned). The embedded cluster has no cluster-wide proxy to add."""
    env = list(config.get("env") or ())
    containers = pod_spec.get("containers") or []
    for container in containers:
        if env:
            container["env"] = merge_env(container.get("env") or (), env)
        if config.get("envFrom"):
            container["envFrom"] = _append_missing(container.get("envFrom") or (), config["envFrom"])
        if config.get("volumeMounts"):
            container["volumeMounts"] = _replace_by_name(
                container.get("volumeMounts") or (), config["volumeMounts"]
            )
        if config.get("resources") is not None:
            container["resources"] = copy.deepcopy(config["resources"])
    if config.get("volumes"):
        pod_spec["volumes"] = _replace_by_name(pod_spec.get("volumes") or (), config["volumes"])
    if config.get("tolerations"):
        pod_spec["tolerations"] = _append_missing(pod_spec.get("tolerations") or (), config["tolerations"])
    if config.get("nodeSelector") is not None:
        pod_spec["nodeSelector"] = dict(config["nodeSelector"])
    return pod_spec


# -- rendering ---------------------------------------------------------------------------------------


def owner_labels(csv: Mapping[str, Any]) -> dict[str, str]:
    """``OwnerLabel``: the labels that tie a generated object to its CSV."""
    meta = csv["metadata"]
    return {OWNER: meta["name"], OWNER_NAMESPACE: meta.get("namespace", ""), OWNER_KIND: CSV_KIND}


def _strategy_deployments(csv: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    install = (csv.get("spec") or {}).get("install") or {}
    return list((install.get("spec") or {}).get("deployments") or ())


def render_deployment(
    csv: Mapping[str, Any], entry: Mapping[str, Any], subscription: Mapping[str, Any] | None
) -> Obj:
    """``deploymentForSpec``: the Deployment OLM creates for one install-strategy entry."""
    meta = csv["metadata"]
    spec = copy.deepcopy(dict(entry.get("spec") or {}))
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    annotations = dict(template_meta.get("annotations") or {})
    annotations.update(meta.get("annotations") or {})
    if annotations:
        template_meta["annotations"] = annotations
    labels = {**(entry.get("label") or {}), OLM_MANAGED: "true", **owner_labels(csv)}
    pod_spec = template.setdefault("spec", {})
    config = ((subscription or {}).get("spec") or {}).get("config") or {}
    apply_config(pod_spec, config)
    for container in pod_spec.get("containers") or ():
        container["env"] = merge_env(
            container.get("env") or (), [{"name": _CONDITION_NAME_ENV, "value": meta["name"]}]
        )
    spec["revisionHistoryLimit"] = 1
    labels[DEPLOYMENT_SPEC_HASH] = compute_hash(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": entry["name"],
            "namespace": meta.get("namespace", ""),
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": CSV_KIND,
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "blockOwnerDeletion": False,
                    "controller": False,
                }
            ],
        },
        "spec": spec,
    }


def render_deployments(csv: Mapping[str, Any], subscription: Mapping[str, Any] | None) -> list[Obj]:
    return [render_deployment(csv, entry, subscription) for entry in _strategy_deployments(csv)]


# -- install check -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstallProblem:
    """A ``StrategyError``: why the CSV's Deployments are not installed and healthy."""

    reason: str
    message: str


def deployment_status(dp: Mapping[str, Any]) -> tuple[str, bool, str | None]:
    """OLM's ``DeploymentStatus``: (what it waits for, ready, error)."""
    meta, status = dp["metadata"], dp.get("status") or {}
    name = meta["name"]
    if int(meta.get("generation") or 0) > int(status.get("observedGeneration") or 0):
        return f'waiting for spec update of deployment "{name}" to be observed...', False, None
    conditions = list(status.get("conditions") or ())
    progressing = get_condition(conditions, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return "", False, f'deployment "{name}" exceeded its progress deadline'
    outdated = int(status.get("replicas") or 0) - int(status.get("updatedReplicas") or 0)
    if outdated > 0:
        return f'deployment "{name}" waiting for {outdated} outdated replica(s) to be terminated', False, None
    available = get_condition(conditions, "Available")
    if available is None or available.get("status") != "True":
        why = 'missing condition "Available"' if available is None else str(available.get("message", ""))
        return f'deployment "{name}" not available: {why}', False, None
    return f'deployment "{name}" is up-to-date and available', True, None


def install_problem(
    desired: Sequence[Mapping[str, Any]], existing: Mapping[str, Mapping[str, Any]]
) -> InstallProblem | None:
    """``checkForDeployments``: ``None`` when every desired Deployment exists (among ``existing``, by
    name, the CSV's by owner labels), is rolled out and still has the spec hash it was rendered with."""
    for want in desired:
        name = want["metadata"]["name"]
        dp = existing.get(name)
        if dp is None:
            return InstallProblem(COMPONENT_MISSING, f"missing deployment with name={name}")
        reason, ready, error = deployment_status(dp)
        if error is not None:
            return InstallProblem(TIMEOUT, f"deployment {name} not ready before timeout: {error}")
        if not ready:
            return InstallProblem(WAITING, f"waiting for deployment {name} to become ready: {reason}")
        have_hash = (dp["metadata"].get("labels") or {}).get(DEPLOYMENT_SPEC_HASH)
        if have_hash is None:
            return InstallProblem(
                DEPLOYMENT_UPDATED, f"deployment {name} doesn't have a spec hash, update it"
            )
        want_hash = want["metadata"]["labels"][DEPLOYMENT_SPEC_HASH]
        if have_hash != want_hash:
            return InstallProblem(
                DEPLOYMENT_UPDATED, f"deployment changed old hash={have_hash}, new hash={want_hash}"
            )
    return None


# -- the phase ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """A CSV phase to record (``SetPhaseWithEvent``), and whether to install the Deployments first."""

    phase: str
    reason: str
    message: str
    install: bool = False


def _operator_group_problem(operator_groups: int) -> Phase | None:
    if operator_groups == 0:
        return Phase("Failed", "NoOperatorGroup", "csv in namespace with no operatorgroups")
    if operator_groups > 1:
        return Phase(
            "Failed",
            "TooManyOperatorGroups",
            "csv created in namespace with multiple operatorgroups, can't pick one automatically",
        )
    return None


def _after_check(problem: InstallProblem | None, requeue_phase: str, requeue_reason: str) -> Phase:
    """``updateInstallStatus``: Succeeded, or the phase a problem leads to."""
    if problem is None:
        return Phase("Succeeded", "InstallSucceeded", "install strategy completed with no errors")
    if problem.reason == TIMEOUT:  # unrecoverable
        return Phase("Failed", "InstallCheckFailed", f"install failed: {problem.message}")
    message = f"installing: {problem.message}"
    if problem.reason == DEPLOYMENT_UPDATED:
        return Phase("InstallReady", requeue_reason, message)
    return Phase(requeue_phase, requeue_reason, message)


def next_phase(
    csv: Mapping[str, Any],
    operator_groups: int,
    problem: InstallProblem | None,
    now: datetime,
    install_timeout: float = INSTALL_TIMEOUT,
) -> Phase | None:
    """``transitionCSVState`` for one step; ``None`` when the CSV stays as it is.

    ``problem`` is :func:`install_problem` for the CSV's Deployments as they are now. As in OLM,
    an ``Installing`` CSV whose Deployment is deleted keeps waiting until ``install_timeout``
    fails it; a ``Failed`` or ``Succeeded`` one is installed again at once.
    """
    status = csv.get("status") or {}
    phase = status.get("phase") or ""
    og = _operator_group_problem(operator_groups)
    if og is not None:
        return None if (phase, status.get("reason")) == (og.phase, og.reason) else og
    if not _strategy_deployments(csv):
        invalid = Phase("Failed", "InvalidInstallStrategy", "install strategy invalid: no deployments")
        return None if phase == "Failed" and status.get("reason") == invalid.reason else invalid
    if phase == "":
        return Phase("Pending", "RequirementsUnknown", "requirements not yet checked")
    if phase == "Pending":
        return Phase("InstallReady", "AllRequirementsMet", "all requirements found, attempting install")
    if phase == "InstallReady":
        return Phase(
            "Installing", "InstallSucceeded", "waiting for install components to report healthy", install=True
        )
    if phase == "Installing":
        step = _after_check(problem, "Installing", "InstallWaiting")
        if step.phase == "Installing" and _since_transition(status, now) >= install_timeout:
            step = Phase("Failed", "InstallCheckFailed", "install timeout")
    elif phase in ("Succeeded", "Failed"):
        step = _after_check(problem, "Pending", "NeedsReinstall")
    else:
        return None
    same = (step.phase, step.reason, step.message) == (phase, status.get("reason"), status.get("message"))
    return None if same else step


def install_time_left(
    csv: Mapping[str, Any], now: datetime, install_timeout: float = INSTALL_TIMEOUT
) -> float | None:
    """Seconds until an ``Installing`` CSV times out (``None`` in any other phase)."""
    status = csv.get("status") or {}
    if status.get("phase") != "Installing":
        return None
    return install_timeout - _since_transition(status, now)


def _since_transition(status: Mapping[str, Any], now: datetime) -> float:
    stamp = status.get("lastTransitionTime")
    if not stamp:
        return 0.0
    return (now - parse_time(str(stamp))).total_seconds()


def phase_status(status: Mapping[str, Any], step: Phase, stamp: str) -> Obj:
    """``SetPhase``: the CSV status with ``step`` recorded and appended to ``conditions``."""
    out = dict(status)
    transition = stamp if out.get("phase") != step.phase else out.get("lastTransitionTime") or stamp
    out.update(
        phase=step.phase,
        reason=step.reason,
        message=step.message,
        lastUpdateTime=stamp,
        lastTransitionTime=transition,
    )
    condition = {
        "phase": step.phase,
        "reason": step.reason,
        "message": step.message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": transition,
    }
    out["conditions"] = [*(status.get("conditions") or ())[-19:], condition]
    return out


# -- the Subscription --------------------------------------------------------------------------------


def subscription_status(sub: Mapping[str, Any], csv_names: Iterable[str], stamp: str) -> Obj | None:
    """The status the catalog operator records once the Subscription's CSV is in its namespace
    (``startingCSV``, or the one already installed); ``None`` when nothing changes."""
    status = dict(sub.get("status") or {})
    wanted = (sub.get("spec") or {}).get("startingCSV") or status.get("installedCSV")
    if not wanted or wanted not in set(csv_names):
        return None
    fields = {"currentCSV": wanted, "installedCSV": wanted, "state": "AtLatestKnown"}
    if all(status.get(k) == v for k, v in fields.items()):
        return None
    return {**status, **fields, "lastUpdated": stamp}
