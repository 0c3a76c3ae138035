"""The built-in kinds' OpenAPI definitions, as shipped by the ``kubernetes-validate`` package.

One pinned Kubernetes version (``KUBE_VERSION``) is loaded once, lazily.  The
definitions carry what strategic merge patch, validation and the generated
OpenAPI v3 documents need: ``x-kubernetes-patch-strategy``,
``x-kubernetes-patch-merge-key``, ``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys`` and ``x-kubernetes-group-version-kind``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

KUBE_VERSION = "1.33.0"
_REF_PREFIX = "#/$defs/"


@dataclass(frozen=True)
class Definitions:
    """All definitions of one Kubernetes version, indexed by name and by group/version/kind."""

    defs: dict[str, dict[str, Any]]
    by_gvk: dict[tuple[str, str, str], str]

    def get(self, name: str) -> dict[str, Any]:
        return self.defs[name]

    def for_gvk(self, group: str, version: str, kind: str) -> str | None:
        """The definition name of a top-level kind, e.g. ``io.k8s.api.core.v1.Pod``."""
        return self.by_gvk.get((group, version, kind))

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Follow a ``$ref`` (possibly nested in ``allOf``) to the schema it names."""
        seen = 0
        while True:
            ref = schema.get("$ref")
            if ref is None and len(schema.get("allOf", [])) == 1:
                ref = schema["allOf"][0].get("$ref")
            if ref is None or not ref.startswith(_REF_PREFIX):
                return schema
            schema = self.defs[ref[len(_REF_PREFIX) :]]
            seen += 1
            if seen > 64:
                raise ValueError(f"reference cycle at {ref}")

    def property(self, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
        """The (unresolved) schema of property ``name`` of an object schema, if declared."""
        return self.resolve(schema).get("properties", {}).get(name)

    def items(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """The resolved item schema of an array schema, if declared."""
        item = self.resolve(schema).get("items")
        return self.resolve(item) if isinstance(item, dict) else None


def schema_types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema admits (``type`` may be a string or a list, ``null`` included)."""
    declared = schema.get("type")
    if declared is None:
        return set()
    return {declared} if isinstance(declared, str) else set(declared)


@functools.cache
def load(version: str = KUBE_VERSION) -> Definitions:
    """Load and index the definitions of one Kubernetes version (cached for the process)."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{version}-local"
    with (root / "_definitions.json").open("rb") as fh:
        raw = json.load(fh)
    defs: dict[str, dict[str, Any]] = raw["$defs"]
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, schema in defs.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            by_gvk.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return Definitions(defs=defs, by_gvk=by_gvk)
