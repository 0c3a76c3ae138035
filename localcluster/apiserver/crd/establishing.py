"""What writing a CustomResourceDefinition does besides storing it.

The real apiextensions-apiserver defaults a CRD, adds its cleanup finalizer,
accepts its names and marks it ``Established`` within milliseconds, then serves
its kinds.  Here the REST verbs do the same synchronously: :func:`prepare_create`
and :func:`prepare_update` shape the CRD before it is stored (``now`` passed in),
and :func:`publish` makes the registry serve, change or drop its kinds once a
write is committed.  Deleting the custom resources under the finalizer is
``lifecycle``'s.
"""

from __future__ import annotations

from typing import Any

from nrop.localcluster.apiserver.crd import schema as crdschema
from nrop.localcluster.apiserver.registry import Kind, Registry, kinds_from_crd

Obj = dict[str, Any]

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def prepare_create(crd: Obj, now: str) -> None:
    """Default a new CRD, hold it with the cleanup finalizer and establish it."""
    crd.update(crdschema.crd_defaults(crd))
    finalizers = crd["metadata"].setdefault("finalizers", [])
    if CRD_CLEANUP_FINALIZER not in finalizers:
        finalizers.append(CRD_CLEANUP_FINALIZER)
    establish(crd, now)


def prepare_update(crd: Obj, now: str) -> None:
    """Default an updated CRD's spec and establish it again (names and versions may have changed)."""
    crd.update({"spec": crdschema.crd_defaults(crd)["spec"]})
    establish(crd, now)


def establish(crd: Obj, now: str) -> None:
    """Accept the CRD's names and mark it Established (the real server does so within ms)."""
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": now,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": now,
        },
    ]
    old = {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or ()}
    for cond in conditions:
        if cond["type"] in old and old[cond["type"]]["status"] == "True":
            cond["lastTransitionTime"] = old[cond["type"]]["lastTransitionTime"]
    storage = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
    crd["status"] = {
        "acceptedNames": crdschema.accepted_names(crd),
        "conditions": conditions,
        "storedVersions": sorted(set((crd.get("status") or {}).get("storedVersions") or []) | set(storage)),
    }


def publish(registry: Registry, kind: Kind, obj: Obj | None, old: Obj | None) -> None:
    """Side effects of a committed write on the registry: a CRD's kinds appear, change or go.

    ``obj`` is the stored object, ``None`` when the write removed it (then ``old`` names it).
    """
    if kind.storage != CRDS:
        return
    crd = obj or old
    assert crd is not None
    name = crd["metadata"]["name"]
    if obj is None:
        registry.set_custom(name, [])
    else:
        registry.set_custom(name, kinds_from_crd(obj))
