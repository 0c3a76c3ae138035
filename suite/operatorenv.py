"""One variable of the running operator's environment, set and put back (upstream ``test/internal/envvar``).

:func:`set_operator_env` changes it through the operator's OLM Subscription when there is one
(then the Deployment is deleted for OLM to re-create it), else on the Deployment's ``manager``
container, and waits for the rollout either way; :func:`restore_operator_env` puts back what
it changed. BeforeSuite uses it to turn the scheduler image validation off. The env edits
are pure functions (tested with tables).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.api.fielderrors import go_quote
from nrop.suite.kube import DEPLOYMENT, Kind, Kube, Manifest, UnknownKindError
from nrop.suite.stack import OPERATOR_DEPLOYMENT, OPERATOR_LABELS, StackError
from nrop.suite.waiting import wait_for

__all__ = [
    "EnvRestore",
    "find_subscription",
    "has_env",
    "restore_operator_env",
    "set_operator_env",
    "with_env",
]

log = logging.getLogger(__name__)

OPERATOR_CONTAINER = "manager"
OPERATOR_PACKAGE = "numaresources-operator"
SUBSCRIPTION = Kind("operators.coreos.com/v1alpha1", "Subscription")


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


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
            if _name(sub) == wanted:
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
    found = kube.list(DEPLOYMENT, label_selector=OPERATOR_LABELS)
    found = [d for d in found if _name(d) == OPERATOR_DEPLOYMENT] or found
    if not found:
        raise StackError(
            f"cannot find the operator deployment {go_quote(OPERATOR_DEPLOYMENT)} "
            f"(labels {','.join(f'{k}={v}' for k, v in sorted(OPERATOR_LABELS.items()))})"
        )
    return found[0]


def _manager_env(dp: Mapping[str, Any], index: int) -> list[Mapping[str, Any]]:
    return list(dp["spec"]["template"]["spec"]["containers"][index].get("env") or ())


def _rolled_out(dp: Mapping[str, Any] | None) -> bool:
    if dp is None:
        return False
    spec, status = dp.get("spec") or {}, dp.get("status") or {}
    want = int(spec.get("replicas", 1))
    return (
        int(status.get("observedGeneration") or 0) >= int(dp["metadata"].get("generation") or 0)
        and int(status.get("updatedReplicas") or 0) == want
        and int(status.get("replicas") or 0) == want
        and int(status.get("availableReplicas") or 0) == want
    )


def _subscriptions(kube: Kube, namespace: str) -> list[Manifest]:
    try:
        return kube.list(SUBSCRIPTION, namespace)
    except UnknownKindError:  # no OLM on this cluster
        return []


def _apply_env(kube: Kube, restore: EnvRestore, env: Sequence[Mapping[str, Any]], timeout: float) -> None:
    """Put ``env`` in place (Subscription or Deployment) and wait for the operator to run with it."""
    env = [dict(e) for e in env]
    if restore.subscription is not None:
        kube.patch(SUBSCRIPTION, restore.subscription, {"spec": {"config": {"env": env}}}, restore.namespace)
        # OLM does not always roll the Deployment at once: delete it and let OLM re-create it.
        kube.delete(DEPLOYMENT, restore.name, restore.namespace)
    else:
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
    wanted = {e["name"]: e.get("value") for e in env if "value" in e}
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, restore.name, restore.namespace),
        lambda dp: (
            _rolled_out(dp)
            and all(has_env(_manager_env(dp, restore.container_index), k, v) for k, v in wanted.items())
        ),
        f"deployment {restore.namespace}/{restore.name} rolled out with the new env",
        timeout,
        interval=1.0,
    )


def set_operator_env(
    kube: Kube, name: str, value: str, environ: Mapping[str, str], timeout: float = 900.0
) -> EnvRestore | None:
    """``SetOperatorEnvVar``: set ``name=value`` through the operator's OLM Subscription when there is
    one, else on the Deployment's ``manager`` container, and wait for the rollout.

    Returns what to restore, or ``None`` when the variable already had that value.
    """
    dp = _find_operator_deployment(kube)
    namespace, dp_name = dp["metadata"]["namespace"], _name(dp)
    containers = dp["spec"]["template"]["spec"]["containers"]
    index = next((i for i, c in enumerate(containers) if c.get("name") == OPERATOR_CONTAINER), None)
    if index is None:
        raise StackError(
            f"containers {go_quote(OPERATOR_CONTAINER)} not found in deployment {namespace}/{dp_name}"
        )
    sub = find_subscription(_subscriptions(kube, namespace), environ)
    if sub is not None:
        original = tuple(((sub.get("spec") or {}).get("config") or {}).get("env") or ())
        where = f"OLM subscription {namespace}/{_name(sub)}"
    else:
        original = tuple(_manager_env(dp, index))
        where = f"deployment {namespace}/{dp_name}"
    if has_env(original, name, value):
        log.info("env is already set: %s=%s", name, value)
        return None
    log.info("setting operator env via %s: %s=%s", where, name, value)
    restore = EnvRestore(namespace, dp_name, index, original, _name(sub) if sub is not None else None)
    _apply_env(kube, restore, with_env(original, name, value), timeout)
    return restore


def restore_operator_env(kube: Kube, restore: EnvRestore, timeout: float = 900.0) -> None:
    log.info("restoring operator env of %s/%s", restore.namespace, restore.subscription or restore.name)
    _apply_env(kube, restore, restore.env, timeout)
