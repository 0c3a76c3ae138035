"""The rules of DELETE: preconditions, propagation finalizers, graceful deletion.

Plain functions over the stored object and the ``DeleteOptions``, as
kube-apiserver's registry store decides them: whether the preconditions hold,
which finalizer a propagation policy adds (``lifecycle``'s garbage collector
removes them), how long a pod's graceful deletion lasts, and whether a
namespace is still held by its ``spec.finalizers``.  The REST ``delete`` verb
applies them to the store.
"""

from __future__ import annotations

from typing import Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions
from nrop.localcluster.apiserver.registry import Kind

Obj = dict[str, Any]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def check_preconditions(kind: Kind, meta: Obj, preconditions: dict[str, str]) -> None:
    """Raise ``Conflict`` when a UID or resourceVersion precondition does not hold for ``meta``."""
    name = meta["name"]
    if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
        raise errors.Conflict(
            f"Precondition failed: UID in precondition: {preconditions['uid']}, "
            f"UID in object meta: {meta.get('uid')}",
            name=name,
            group=kind.group,
            kind=kind.plural,
        )
    if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != meta.get(
        "resourceVersion"
    ):
        raise errors.Conflict(
            "Precondition failed: ResourceVersion in precondition: "
            f"{preconditions['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
            name=name,
            group=kind.group,
            kind=kind.plural,
        )


def finalizers_for(finalizers: list[str], propagation: str | None) -> list[str]:
    """The object's finalizers once a ``Foreground`` or ``Orphan`` propagation policy has added its own."""
    if propagation == "Foreground" and FOREGROUND not in finalizers:
        return [*finalizers, FOREGROUND]
    if propagation == "Orphan" and ORPHAN not in finalizers:
        return [*finalizers, ORPHAN]
    return list(finalizers)


def grace_period(kind: Kind, obj: Obj, opts: DeleteOptions) -> int:
    """Upstream's graceful deletion applies to pods bound to a node and not yet terminal."""
    if kind.storage != ("", "pods"):
        return 0
    if not obj.get("spec", {}).get("nodeName"):
        return 0
    if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if opts.grace_period is not None:
        return max(0, opts.grace_period)
    spec_grace = obj["spec"].get("terminationGracePeriodSeconds")
    return 30 if spec_grace is None else int(spec_grace)


def held_by_spec(kind: Kind, obj: Obj) -> bool:
    """Namespaces are also held by ``spec.finalizers`` (``kubernetes``, removed by the namespace controller)."""
    return kind.storage == ("", "namespaces") and bool((obj.get("spec") or {}).get("finalizers"))
