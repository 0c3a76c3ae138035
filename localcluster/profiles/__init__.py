"""Cluster profiles: named YAML files describing the nodes an embedded cluster starts with.

A profile is given by name (a file shipped in this package) or by path.  This
module finds and reads it; ``schema`` turns its pools into validated
``NodeSpec``s, so loading an invalid profile fails with a ``ProfileError`` that
names the file, the field path and the problem.  The format is documented in
``README.md`` next to this file.

Code outside this package imports only what ``__all__`` lists (``schema`` for its pure pool
parsing helpers); every other module here is internal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from nrop.localcluster.kubelet.machine import NodeSpec
from nrop.localcluster.profiles.schema import ProfileError, build_nodes, openshift_version, reboot_seconds

__all__ = ["Profile", "ProfileError", "build_nodes", "load_profile", "parse_profile", "schema", "shipped"]


@dataclass(frozen=True)
class Profile:
    name: str
    source: str
    summary: str
    pools: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    node_specs: tuple[NodeSpec, ...] = ()
    #: The OpenShift flavour: the version the cluster reports (``None``: plain Kubernetes).
    openshift_version: str | None = None
    #: Seconds a node the embedded MachineConfig operator updates stays down (``None``: its default).
    reboot_seconds: float | None = None

    def nodes(self) -> list[NodeSpec]:
        """Every node of every pool, in pool order (validated when the profile was loaded)."""
        return list(self.node_specs)


def shipped() -> dict[str, str]:
    """Shipped profile names and their one-line summaries."""
    out = {}
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".yaml"):
            data = yaml.safe_load(entry.read_text()) or {}
            out[entry.name[: -len(".yaml")]] = str(data.get("summary", ""))
    return dict(sorted(out.items()))


def load_profile(name_or_path: str) -> Profile:
    """Read, parse and validate a profile given by shipped name or by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or "/" in name_or_path:
        if not path.is_file():
            raise ProfileError(f"{name_or_path}: no such profile file")
        text, source = path.read_text(), str(path)
    else:
        entry = resources.files(__package__) / f"{name_or_path}.yaml"
        if not entry.is_file():
            known = ", ".join(shipped())
            raise ProfileError(f"unknown profile {name_or_path!r} (shipped profiles: {known})")
        text, source = entry.read_text(), f"{name_or_path}.yaml"
    return parse_profile(text, source, name=path.stem)


def parse_profile(text: str, source: str, *, name: str | None = None) -> Profile:
    """A profile from YAML text; ``source`` is the file name errors start with."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ProfileError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: a profile must be a mapping")
    nodes = build_nodes(data, source)
    version = openshift_version(data, source)
    reboot = reboot_seconds(data, source)
    pools = data.get("pools") or []
    return Profile(
        name=name if name is not None else Path(source).stem,
        source=source,
        summary=str(data.get("summary", "")),
        pools=pools,
        raw=data,
        node_specs=tuple(nodes),
        openshift_version=version,
        reboot_seconds=reboot,
    )
