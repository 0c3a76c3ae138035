"""Cluster profiles: named YAML files describing the nodes an embedded cluster starts with.

A profile is given by name (a file shipped in this package) or by path.  This
module finds and parses it; node pools are validated and instantiated by the
kubelet emulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


class ProfileError(ValueError):
    """A profile that cannot be used: names the file and what is wrong."""


@dataclass(frozen=True)
class Profile:
    name: str
    source: str
    summary: str
    pools: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)


def shipped() -> dict[str, str]:
    """Shipped profile names and their one-line summaries."""
    out = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            data = yaml.safe_load(entry.read_text()) or {}
            out[entry.name[: -len(".yaml")]] = str(data.get("summary", ""))
    return out


def load_profile(name_or_path: str) -> Profile:
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
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ProfileError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: a profile must be a mapping")
    pools = data.get("pools", [])
    if not isinstance(pools, list):
        raise ProfileError(f"{source}: pools: must be a list")
    return Profile(name=path.stem, source=source, summary=str(data.get("summary", "")), pools=pools, raw=data)
