"""The NRT object as the exporter writes it: scan results, topology-manager attributes, owner, patch.

This module owns upstream ``nrtupdater``'s object mutations, over plain dicts (the
bodies the Kubernetes API carries), with no I/O:

* :func:`update_nrt_info`: annotations merged with the scan's (the legacy fingerprint
  annotation) plus ``k8stopoawareschedwg/rte-update`` = ``periodic`` for timer events and
  ``reactive`` for every other; ``zones`` replaced; ``attributes`` = the scan's (the
  fingerprint pair) followed by ``topologyManagerScope`` then ``topologyManagerPolicy``;
  ``topologyPolicies`` left alone;
* :func:`set_node_owner`: exactly one owner reference, to the Node of the same name;
* :func:`merge_patch`: the JSON merge patch (RFC 7386) from the previous object to the
  new one, what upstream's three-way patch with original == current reduces to. Lists
  (zones, attributes, owner references) are replaced wholesale.
"""

from __future__ import annotations

import copy
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from nrop.api.nrt import (
    ANNOTATION_RTE_UPDATE,
    API_VERSION,
    ATTR_TOPOLOGY_MANAGER_POLICY,
    ATTR_TOPOLOGY_MANAGER_SCOPE,
    KIND,
)
from nrop.rte.decisions.scan import ScanResult

__all__ = [
    "TopologyManager",
    "Trigger",
    "merge_patch",
    "new_nrt",
    "patch_size_ratio",
    "set_node_owner",
    "update_nrt_info",
]

_NODE_API_VERSION: Final = "v1"
_NODE_KIND: Final = "Node"


class Trigger(enum.StrEnum):
    """Why a scan ran; the value of the ``rte-update`` annotation and the metrics' ``trigger``."""

    PERIODIC = "periodic"
    REACTIVE = "reactive"


@dataclass(frozen=True)
class TopologyManager:
    """The kubelet's topology manager settings, published verbatim as attributes."""

    policy: str
    scope: str


def new_nrt(name: str) -> dict[str, Any]:
    """An empty NRT body called ``name`` (what upstream starts from on create)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "annotations": {}},
        "zones": [],
    }


def update_nrt_info(
    obj: Mapping[str, Any], result: ScanResult, tm: TopologyManager, trigger: Trigger
) -> dict[str, Any]:
    """A copy of ``obj`` carrying ``result`` (upstream ``updateNRTInfo``)."""
    out = copy.deepcopy(dict(obj))
    out.setdefault("apiVersion", API_VERSION)
    out.setdefault("kind", KIND)
    metadata = out.setdefault("metadata", {})
    annotations = dict(metadata.get("annotations") or {})
    annotations.update(result.annotations)
    annotations[ANNOTATION_RTE_UPDATE] = trigger.value
    metadata["annotations"] = annotations
    out["zones"] = [zone.to_dict() for zone in result.zones]
    attributes = [attr.to_dict() for attr in result.attributes]
    attributes.append({"name": ATTR_TOPOLOGY_MANAGER_SCOPE, "value": tm.scope})
    attributes.append({"name": ATTR_TOPOLOGY_MANAGER_POLICY, "value": tm.policy})
    out["attributes"] = attributes
    return out


def set_node_owner(obj: dict[str, Any], node_name: str, node_uid: str) -> None:
    """Make the Node ``node_name`` the one owner of ``obj`` (replacing any others)."""
    obj.setdefault("metadata", {})["ownerReferences"] = [
        {"apiVersion": _NODE_API_VERSION, "kind": _NODE_KIND, "name": node_name, "uid": node_uid}
    ]


def merge_patch(original: Any, modified: Any) -> Any:
    """The RFC 7386 merge patch turning ``original`` into ``modified`` (``{}`` when equal)."""
    if not isinstance(original, Mapping) or not isinstance(modified, Mapping):
        return copy.deepcopy(modified)
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified:
            patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = copy.deepcopy(value)
            continue
        old = original[key]
        if old == value:
            continue
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            patch[key] = merge_patch(old, value)
        else:
            patch[key] = copy.deepcopy(value)
    return patch


def patch_size_ratio(patch: Any, full: Any) -> float:
    """Bytes of the patch over bytes of the full object, both as compact JSON."""
    full_bytes = len(json.dumps(full, separators=(",", ":")))
    if full_bytes == 0:
        return 1.0
    return len(json.dumps(patch, separators=(",", ":"))) / full_bytes
