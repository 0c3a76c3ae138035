"""One variable of the running operator's environment, set and put back (upstream ``test/internal/envvar``).

:func:`set_operator_env` changes it through the operator's OLM Subscription when there is one
(``E2E_OPERATOR_SUBSCRIPTION_NAME``, else the one for the ``numaresources-operator`` package:
then it checks the Subscription holds the new env, deletes the Deployment and waits for OLM to
re-create it), else on the Deployment's ``manager`` container; either way it then deletes the
operator's pods of before, waits for them to go, for the Deployment to carry the new env and to
be complete, as upstream does. :func:`restore_operator_env` puts back what it changed the same
way. A cluster without OLM (no ``operators.coreos.com``) reads as one with no Subscription.
BeforeSuite uses it to turn the scheduler image validation off. The env edits are pure
functions (tested with tables).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.api.fielderrors import go_quote
from nrop.api.workloads import deployment_complete
from nrop.suite.e2e.kube import DEPLOYMENT, POD, Kube, Manifest, UnknownKindError, name_of
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install.stack import (
    OPERATOR_DEPLOYMENT,
    OPERATOR_LABELS,
    OPERATOR_PACKAGE,
    SUBSCRIPTION,
    StackError,
)

__all__ = [
    "EnvRestore",
    "env_pairs",
    "find_subscription",
    "has_env",
    "restore_operator_env",
    "set_operator_env",
    "with_env",
]

log = logging.getLogger(__name__)

OPERATOR_CONTAINER = "manager"
#: The embedded target answers at once: poll every second rather than upstream's 10 s / 30 s.
_POLL = 1.0


def with_env(env: Sequence[Mapping[str, Any]], name: str, value: str) -> list[dict[str, Any]]:
    """``env`` with ``name`` set to ``value`` (replaced in place, or appended)."""
    out = [dict(e) for e in env]
    for entry in out:
        if entry.get("name") == name:
            entry.clear()
            entry.update(name=name, value=value)
            return out
    return [*out, {"name": name, "value": value}]


def has_env(env: Sequence[Mapping[str, Any]], name: str, value: str) -> bool:
    return any(e.get("name") == name and e.get("value") == value for e in env)


def find_subscription(subscriptions: Sequence[Manifest], environ: Mapping[str, str]) -> Manifest | None:
    """The operator's OLM Subscription: named ``E2E_OPERATOR_SUBSCRIPTION_NAME``, else the one whose
    ``spec.package`` or ``spec.name`` is ``numaresources-operator``."""
    wanted = environ.get("E2E_OPERATOR_SUBSCRIPTION_NAME", "")
    if wanted:
        for sub in subscriptions:
            if name_of(sub) == wanted:
                return sub
    for sub in subscriptions:
        spec = sub.get("spec") or {}
        if OPERATOR_PACKAGE in (spec.get("package"), spec.get("name")):
            return sub
    return None


@dataclass(frozen=True)
class EnvRestore:
    """What :func:`set_operator_env` changed, to put back: the original env of the Subscription
    (``subscription`` set) or of the Deployment's ``manager`` container."""

    namespace: str
    name: str
    container_index: int
    env: tuple[Mapping[str, Any], ...]
    subscription: str | None = None


def _find_operator_deployment(kube: Kube) -> Manifest:
    """``findOperatorDeployment``: the Deployment named ``numaresources-controller-manager`` among
    those with the operator's labels."""
    for dp in kube.list(DEPLOYMENT, label_selector=OPERATOR_LABELS):
        if name_of(dp) == OPERATOR_DEPLOYMENT:
            return dp
    raise StackError(
        f"cannot find the operator deployment {go_quote(OPERATOR_DEPLOYMENT)} "
        f"(labels {','.join(f'{k}={v}' for k, v in sorted(OPERATOR_LABELS.items()))})"
    )


def _manager_env(dp: Mapping[str, Any], index: int) -> list[Mapping[str, Any]]:
    return list(dp["spec"]["template"]["spec"]["containers"][index].get("env") or ())


def env_pairs(env: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``toEnvVars``: the (name, value) of each variable (``""`` for one set by ``valueFrom``)."""
    return [(str(e.get("name")), str(e.get("value") or "")) for e in env]


def _rolled_out(dp: Mapping[str, Any] | None) -> bool:
    """``ForDeploymentComplete``: Kubernetes' ``DeploymentComplete`` on the Deployment read now."""
    return dp is not None and deployment_complete(dp)


def _subscriptions(kube: Kube, namespace: str) -> list[Manifest]:
    try:
        return kube.list(SUBSCRIPTION, namespace)
    except UnknownKindError:  # no OLM on this cluster: the Deployment is the operator's only spec
        return []


def _selector(dp: Mapping[str, Any]) -> dict[str, str]:
    return dict(((dp.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})


def _pods_of(kube: Kube, namespace: str, name: str) -> list[Manifest]:
    """``getPodsForDeployment``: the pods the Deployment's selector matches (an error when none)."""
    dp = kube.get(DEPLOYMENT, name, namespace)
    pods = kube.list(POD, namespace, label_selector=_selector(dp))
    if not pods:
        raise StackError(f"failed to get deployment pods: deployment {namespace}/{name} has no pods")
    return pods


def _ensure_subscription_updated(
    kube: Kube, restore: EnvRestore, expected: Sequence[Mapping[str, Any]]
) -> None:
    """``ensureSubscriptionIsUpdated``: the Subscription now holds exactly ``expected``."""
    assert restore.subscription is not None
    sub = kube.get(SUBSCRIPTION, restore.subscription, restore.namespace)
    found = env_pairs(((sub.get("spec") or {}).get("config") or {}).get("env") or ())
    if found != env_pairs(expected):
        raise StackError(
            f"subscription env is not updated with the correct env value: found={found} expected={env_pairs(expected)}"
        )


def _wait_rollout(
    kube: Kube,
    restore: EnvRestore,
    initial_pods: Sequence[Manifest],
    expected: Sequence[Mapping[str, Any]],
    timeout: float,
) -> None:
    """``waitForDeploymentRollout``: delete the pods of before, wait for them to go, for the Deployment's
    first container to hold every ``expected`` (name, value), then for the Deployment to be complete."""
    namespace, name = restore.namespace, restore.name
    for pod in initial_pods:
        kube.delete(POD, name_of(pod), namespace)
    uids = {pod["metadata"]["uid"] for pod in initial_pods}
    wait_for(
        lambda: [p for p in kube.list(POD, namespace) if p["metadata"]["uid"] in uids],
        lambda left: not left,
        f"the pods of deployment {namespace}/{name} from before the change to be deleted",
        timeout,
        interval=_POLL,
    )
    wanted = env_pairs(expected)
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, name, namespace),
        lambda dp: dp is not None and set(wanted) <= set(env_pairs(_manager_env(dp, 0))),
        f"deployment {namespace}/{name} to be updated with the env {wanted}",
        timeout,
        interval=_POLL,
    )
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, name, namespace),
        _rolled_out,
        f"deployment {namespace}/{name} to be complete",
        timeout,
        interval=_POLL,
    )


def _apply_env(kube: Kube, restore: EnvRestore, env: Sequence[Mapping[str, Any]], timeout: float) -> None:
    """Put ``env`` in place (Subscription or Deployment) and wait for the operator to run with it,
    as upstream's ``setOperatorEnvVia*`` and their restore functions do."""
    env = [dict(e) for e in env]
    initial_pods = _pods_of(kube, restore.namespace, restore.name)
    if restore.subscription is None:
        kube.patch(
            DEPLOYMENT,
            restore.name,
            [
                {
                    "op": "add",
                    "path": f"/spec/template/spec/containers/{restore.container_index}/env",
                    "value": env,
                }
            ],
            restore.namespace,
            patch_type="json",
        )
        _wait_rollout(kube, restore, initial_pods, env, timeout)
        return
    kube.patch(SUBSCRIPTION, restore.subscription, {"spec": {"config": {"env": env}}}, restore.namespace)
    _ensure_subscription_updated(kube, restore, env)
    # waitForDeploymentRolloutAfterSubscriptionUpdate: OLM does not always roll the Deployment at
    # once, so upstream deletes it and waits for OLM to re-create it.
    log.info("deleting deployment %s/%s", restore.namespace, restore.name)
    kube.delete(DEPLOYMENT, restore.name, restore.namespace)
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, restore.name, restore.namespace),
        lambda dp: dp is not None,
        f"deployment {restore.namespace}/{restore.name} to be recreated",
        timeout,
        interval=_POLL,
    )
    _wait_rollout(kube, restore, initial_pods, env, timeout)


def set_operator_env(
    kube: Kube, name: str, value: str, environ: Mapping[str, str], timeout: float = 900.0
) -> EnvRestore | None:
    """``SetOperatorEnvVar``: set ``name=value`` through the operator's OLM Subscription when there is
    one, else on the Deployment's ``manager`` container, and wait for the rollout.

    Returns what to restore, or ``None`` when the variable already had that value.
    """
    dp = _find_operator_deployment(kube)
    namespace, dp_name = dp["metadata"]["namespace"], name_of(dp)
    containers = dp["spec"]["template"]["spec"]["containers"]
    index = next((i for i, c in enumerate(containers) if c.get("name") == OPERATOR_CONTAINER), None)
    if index is None:
        raise StackError(
            f"containers {go_quote(OPERATOR_CONTAINER)} not found in deployment {namespace}/{dp_name}"
        )
    sub = find_subscription(_subscriptions(kube, namespace), environ)
    if sub is not None:
        original = tuple(((sub.get("spec") or {}).get("config") or {}).get("env") or ())
        where = f"OLM subscription {namespace}/{name_of(sub)}"
    else:
        original = tuple(_manager_env(dp, index))
        where = f"deployment {namespace}/{dp_name}"
    if has_env(original, name, value):
        log.info("env is already set: %s=%s", name, value)
        return None
    log.info("setting operator env via %s: %s=%s", where, name, value)
    restore = EnvRestore(namespace, dp_name, index, original, name_of(sub) if sub is not None else None)
    _apply_env(kube, restore, with_env(original, name, value), timeout)
    return restore


def restore_operator_env(kube: Kube, restore: EnvRestore, timeout: float = 900.0) -> None:
    log.info("restoring operator env of %s/%s", restore.namespace, restore.subscription or restore.name)
    _apply_env(kube, restore, restore.env, timeout)
