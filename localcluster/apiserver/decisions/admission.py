"""Mutating admission of new pods, as upstream's default admission plugins do it.

Runs on ``POST pods`` after defaulting and before validation, in upstream's plugin order:

* ``ServiceAccount``: ``serviceAccountName`` defaults to ``default``; unless
  ``automountServiceAccountToken`` is false (pod first, then its ServiceAccount), a
  projected ``kube-api-access-<suffix>`` volume (a bound token of 3607 s, ``ca.crt`` from
  the ``kube-root-ca.crt`` ConfigMap, the namespace from the downward API) mounted read-only at :data:`SERVICE_ACCOUNT_DIR` in every container that
  does not mount something there already.  A mirror pod (``kubernetes.io/config.mirror``)
  is left as it is, and refused if it names a service account, references a secret or
  projects a service-account token, as upstream refuses it;
* ``DefaultTolerationSeconds``: the ``not-ready`` and ``unreachable`` ``NoExecute``
  tolerations for 300 s, unless the pod tolerates those taints already;
* ``RuntimeClass``: the RuntimeClass named by ``runtimeClassName`` must exist; its
  ``overhead.podFixed`` becomes ``spec.overhead`` and its ``scheduling`` merges into the
  pod's nodeSelector and tolerations; a conflict is refused with upstream's text;
* ``Priority``: ``spec.priority`` (and ``preemptionPolicy``) from the PriorityClass named by
  ``priorityClassName``, which must exist; without one, from the ``globalDefault`` class if
  there is one (its name is set on the pod), else priority 0. A pod stating a different
  priority or preemption policy than its class is refused with upstream's text.

Pure: objects are looked up through the callables given.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from nrop.localcluster.apiserver import errors

__all__ = ["MIRROR_ANNOTATION", "SERVICE_ACCOUNT_DIR", "admit_pod"]

Obj = dict[str, Any]
#: ``(plural, namespace, name) -> object | None``: reads the store.
Lookup = Callable[[str, str, str], Obj | None]
#: ``plural -> objects``: lists a cluster-scoped resource.
Lister = Callable[[str], list[Obj]]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
#: A pod with this annotation is a static pod's mirror, created by its kubelet.
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
#: Upstream's bound-token lifetime for the projected volume (one hour plus 7 s).
TOKEN_EXPIRATION_SECONDS = 3607
DEFAULT_TOLERATION_SECONDS = 300
_TOLERATED_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def admit_pod(
    pod: Obj, lookup: Lookup, *, lister: Lister | None = None, rng: random.Random | None = None
) -> None:
    """Mutate a new pod in place; raises :class:`errors.Forbidden` as the plugins do."""
    _service_account(pod, lookup, rng or random.Random())
    _default_tolerations(pod)
    _runtime_class(pod, lookup)
    _priority(pod, lookup, lister or (lambda _plural: []))


def _forbidden(pod: Obj, why: str) -> errors.Forbidden:
    return errors.Forbidden.for_object("pods", "", pod["metadata"].get("name", ""), why)


# -- ServiceAccount ------------------------------------------------------------------------


def _service_account(pod: Obj, lookup: Lookup, rng: random.Random) -> None:
    spec = pod["spec"]
    if MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}):
        # Never change a mirror pod (its kubelet would see a different pod), only refuse it.
        why = _mirror_pod_refusal(spec)
        if why:
            raise _forbidden(pod, why)
        return
    _default(spec, "serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        account = lookup("serviceaccounts", pod["metadata"].get("namespace", ""), spec["serviceAccountName"])
        automount = (account or {}).get("automountServiceAccountToken")
    if automount is False:
        return
    volumes = spec.setdefault("volumes", [])
    existing = next((v["name"] for v in volumes if v.get("name", "").startswith("kube-api-access-")), None)
    name = existing or "kube-api-access-" + "".join(rng.choices(_SUFFIX_CHARS, k=5))
    if existing is None:
        volumes.append(_token_volume(name))
    for container in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
        mounts = container.setdefault("volumeMounts", [])
        if any(m.get("mountPath") == SERVICE_ACCOUNT_DIR for m in mounts):
            continue
        mounts.append({"name": name, "readOnly": True, "mountPath": SERVICE_ACCOUNT_DIR})


def _default(mapping: Obj, key: str, value: Any) -> None:
    if not mapping.get(key):
        mapping[key] = value


def _mirror_pod_refusal(spec: Obj) -> str:
    """Why a mirror pod may not be created (upstream's rule for static pods), or ``""``."""
    if spec.get("serviceAccountName"):
        return "a mirror pod may not reference service accounts"
    if _references_secrets(spec):
        return "a mirror pod may not reference secrets"
    for volume in spec.get("volumes") or ():
        if any("serviceAccountToken" in s for s in (volume.get("projected") or {}).get("sources") or ()):
            return "a mirror pod may not use ServiceAccountToken volume projections"
    return ""


def _references_secrets(spec: Obj) -> bool:
    """``VisitPodSecretNames`` finds any: pull secrets, env, secret volumes and volume secret refs."""
    if spec.get("imagePullSecrets"):
        return True
    containers = (
        *(spec.get("initContainers") or ()),
        *(spec.get("containers") or ()),
        *(spec.get("ephemeralContainers") or ()),
    )
    for container in containers:
        if any("secretRef" in source for source in container.get("envFrom") or ()):
            return True
        if any("secretKeyRef" in (env.get("valueFrom") or {}) for env in container.get("env") or ()):
            return True
    for volume in spec.get("volumes") or ():
        if "secret" in volume:
            return True
        if any("secret" in s for s in (volume.get("projected") or {}).get("sources") or ()):
            return True
        for source in volume.values():
            if isinstance(source, dict) and (
                source.get("secretRef") or source.get("nodePublishSecretRef") or source.get("secretName")
            ):
                return True
    return False


def _token_volume(name: str) -> Obj:
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


# -- DefaultTolerationSeconds --------------------------------------------------------------


def _default_tolerations(pod: Obj) -> None:
    tolerations = pod["spec"].setdefault("tolerations", [])
    for key in _TOLERATED_TAINTS:
        if any(_tolerates_no_execute(t, key) for t in tolerations):
            continue
        tolerations.append(
            {
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
            }
        )


def _tolerates_no_execute(toleration: Obj, key: str) -> bool:
    """Upstream skips a default when any toleration already matches the key (or all keys) for NoExecute."""
    if toleration.get("effect") not in (None, "", "NoExecute"):
        return False
    if not toleration.get("key"):
        return toleration.get("operator") == "Exists"
    return toleration.get("key") == key


# -- RuntimeClass --------------------------------------------------------------------------


def _runtime_class(pod: Obj, lookup: Lookup) -> None:
    spec = pod["spec"]
    name = spec.get("runtimeClassName")
    if not name:
        if spec.get("overhead"):
            raise _forbidden(pod, "pod rejected: Pod Overhead set without corresponding RuntimeClass")
        return
    runtime_class = lookup("runtimeclasses", "", name)
    if runtime_class is None:
        raise _forbidden(pod, f'pod rejected: RuntimeClass "{name}" not found')
    fixed = (runtime_class.get("overhead") or {}).get("podFixed")
    if fixed:
        if spec.get("overhead") and spec["overhead"] != fixed:
            raise _forbidden(
                pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
            )
        spec["overhead"] = dict(fixed)
    elif spec.get("overhead"):
        raise _forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    scheduling = runtime_class.get("scheduling") or {}
    selector = scheduling.get("nodeSelector") or {}
    if selector:
        merged = dict(spec.get("nodeSelector") or {})
        for key, value in selector.items():
            if key in merged and merged[key] != value:
                raise _forbidden(
                    pod,
                    f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                    f"pod.spec.nodeSelector[{key}] = {merged[key]}",
                )
            merged[key] = value
        spec["nodeSelector"] = merged
    for toleration in scheduling.get("tolerations") or ():
        if toleration not in spec.setdefault("tolerations", []):
            spec["tolerations"].append(dict(toleration))


# -- Priority --------------------------------------------------------------------------------


def _priority(pod: Obj, lookup: Lookup, lister: Lister) -> None:
    spec = pod["spec"]
    name = spec.get("priorityClassName") or ""
    if name:
        klass = lookup("priorityclasses", "", name)
        if klass is None:
            raise _forbidden(pod, f"no PriorityClass with name {name} was found")
    else:
        klass = next((c for c in lister("priorityclasses") if c.get("globalDefault")), None)
        if klass is not None:
            spec["priorityClassName"] = klass["metadata"]["name"]
    value = int(klass.get("value", 0)) if klass is not None else 0
    stated = spec.get("priority")
    if stated is not None and stated != value:
        raise _forbidden(
            pod,
            f"the integer value of priority ({stated}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    spec["priority"] = value
    policy = (klass or {}).get("preemptionPolicy")
    if policy:
        stated_policy = spec.get("preemptionPolicy")
        if stated_policy and stated_policy != policy:
            raise _forbidden(
                pod,
                f"the string value of PreemptionPolicy ({stated_policy}) must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name",
            )
        spec["preemptionPolicy"] = policy
