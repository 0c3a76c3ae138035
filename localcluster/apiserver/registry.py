"""The registry of served kinds: built-ins from ``builtin_kinds.yaml``, custom resources from CRDs.

A ``Kind`` says everything the generic REST machinery needs to serve one
resource in one version: identity, scope, verbs, subresources, the generation
and deletion rules of its strategy, and where its schema comes from.  The
registry answers lookups by URL (group, version, plural), by kind, and by short
name, and lists what discovery and OpenAPI publish.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from nrop.api import packageyaml

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "log": ("get",),
    "exec": ("create", "get"),
    "finalize": ("update",),
    "token": ("create",),
    "proxy": ("create", "delete", "get", "patch", "update"),
}


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    # none | spec (a spec or annotations change bumps generation) | custom (anything but metadata)
    generation: str = "none"
    return_deleted_object: bool = False
    create_on_update: bool = False
    name_rule: str = "subdomain"
    # Storage identity: views such as events.k8s.io/v1 events share core/v1's objects.
    storage_group: str = ""
    storage_plural: str = ""
    custom: bool = False
    # For custom resources: the CRD's version entry (schema, printer columns, subresources).
    crd_version: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    crd: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    crd_name: str = ""
    storage_version: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage(self) -> tuple[str, str]:
        return (self.storage_group, self.storage_plural) if self.storage_plural else (self.group, self.plural)

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def has(self, subresource: str) -> bool:
        return subresource in self.subresources

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _kind_from_entry(entry: dict[str, Any]) -> Kind:
    stored = entry.get("storedAs") or {}
    return Kind(
        group=entry["group"],
        version=entry["version"],
        kind=entry["kind"],
        plural=entry["plural"],
        namespaced=entry.get("namespaced", True),
        short_names=tuple(entry.get("shortNames", ())),
        categories=tuple(entry.get("categories", ())),
        verbs=tuple(entry.get("verbs", ALL_VERBS)),
        subresources=tuple(entry.get("subresources", ())),
        generation=entry.get("generation", "none"),
        return_deleted_object=entry.get("returnDeletedObject", False),
        create_on_update=entry.get("createOnUpdate", False),
        name_rule=entry.get("nameRule", "subdomain"),
        storage_group=stored.get("group", ""),
        storage_plural=stored.get("plural", ""),
    )


@functools.cache
def builtin_kinds() -> tuple[Kind, ...]:
    text = (resources.files(__package__) / "builtin_kinds.yaml").read_text()
    return tuple(_kind_from_entry(e) for e in packageyaml.load(text))


def kinds_from_crd(crd: dict[str, Any]) -> list[Kind]:
    """The served versions of an (accepted) CRD as kinds."""
    spec = crd["spec"]
    names = spec["names"]
    storage = next((v["name"] for v in spec["versions"] if v.get("storage")), spec["versions"][0]["name"])
    out = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        subs = version.get("subresources") or {}
        out.append(
            Kind(
                group=spec["group"],
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                singular=names.get("singular", ""),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames", ())),
                categories=tuple(names.get("categories", ())),
                subresources=tuple(s for s in ("status", "scale") if s in subs),
                generation="custom",
                custom=True,
                crd_version=version,
                crd=crd,
                crd_name=crd["metadata"]["name"],
                storage_version=storage,
            )
        )
    return out


class Registry:
    """Served kinds by URL identity; custom kinds come and go with their CRDs."""

    def __init__(self, kinds: Iterable[Kind] = ()) -> None:
        self._by_url: dict[tuple[str, str, str], Kind] = {}
        self._custom: dict[str, list[Kind]] = {}
        self.generation = 0  # bumped on every change, so caches (discovery, OpenAPI) can key on it
        for kind in kinds:
            self._by_url[(kind.group, kind.version, kind.plural)] = kind

    @classmethod
    def with_builtins(cls) -> Registry:
        return cls(builtin_kinds())

    def lookup(self, group: str, version: str, plural: str) -> Kind | None:
        return self._by_url.get((group, version, plural))

    def set_custom(self, crd_name: str, kinds: list[Kind]) -> None:
        """Replace the kinds served for one CRD (an empty list withdraws them)."""
        for old in self._custom.pop(crd_name, []):
            self._by_url.pop((old.group, old.version, old.plural), None)
        if kinds:
            self._custom[crd_name] = kinds
            for kind in kinds:
                self._by_url[(kind.group, kind.version, kind.plural)] = kind
        self.generation += 1

    def custom_kinds(self, crd_name: str) -> list[Kind]:
        return list(self._custom.get(crd_name, []))

    def all(self) -> list[Kind]:
        return list(self._by_url.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name → served versions, preferred (storage, else first) version first."""
        out: dict[str, list[str]] = {}
        for kind in self._by_url.values():
            versions = out.setdefault(kind.group, [])
            if kind.version not in versions:
                if kind.custom and kind.version == kind.storage_version:
                    versions.insert(0, kind.version)
                else:
                    versions.append(kind.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[Kind]:
        return [k for k in self._by_url.values() if k.group == group and k.version == version]

    def by_kind(self, group: str, kind: str) -> Kind | None:
        """The preferred served version of a kind (used for ownerReferences and GC)."""
        found = [
            k for k in self._by_url.values() if k.group == group and k.kind == kind and not k.storage_plural
        ]
        if not found:
            return None
        found.sort(key=lambda k: (not (k.custom and k.version == k.storage_version), k.version))
        return found[0]

    def storage_kinds(self) -> list[Kind]:
        """One kind per storage resource (the preferred version), for controllers that walk all objects."""
        seen: dict[tuple[str, str], Kind] = {}
        for kind in self._by_url.values():
            if "list" not in kind.verbs or kind.storage_plural:
                continue
            current = seen.get(kind.storage)
            if current is None or (kind.custom and kind.version == kind.storage_version):
                seen[kind.storage] = kind
        return list(seen.values())
