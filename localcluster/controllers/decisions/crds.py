"""The CustomResourceDefinitions the embedded controllers serve for OpenShift kinds: cluster scoped,
one served and stored version ``v1``, a ``status`` subresource, and schemas as loose as upstream's
for what the specs do not read (``spec`` and ``status`` keep unknown fields)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["cluster_crd"]

Obj = dict[str, Any]
_LOOSE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def cluster_crd(
    group: str,
    kind: str,
    plural: str,
    *,
    short_names: Sequence[str] = (),
    spec_properties: Mapping[str, Any] | None = None,
) -> Obj:
    """The CRD of ``plural.group``; ``spec_properties`` types some of ``spec``'s fields."""
    names: Obj = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short_names:
        names["shortNames"] = list(short_names)
    spec: Obj = dict(_LOOSE)
    if spec_properties is not None:
        spec["properties"] = dict(spec_properties)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": dict(_LOOSE),
                            },
                        }
                    },
                }
            ],
        },
    }
