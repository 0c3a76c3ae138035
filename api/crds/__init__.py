"""The CustomResourceDefinition manifests this project installs, shipped as package data.

Each manifest is one ``<plural>.yaml`` file in this package (``noderesourcetopologies``
for the NRT API); :func:`load` returns it as a plain dict, ready for the API server.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from nrop.api import packageyaml

__all__ = ["load", "names"]

_SUFFIX = ".yaml"


def names() -> list[str]:
    """The manifests available to :func:`load`, without the ``.yaml`` suffix."""
    return sorted(
        entry.name[: -len(_SUFFIX)]
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(_SUFFIX) and entry.is_file()
    )


def load(name: str) -> dict[str, Any]:
    """The CRD manifest called ``name`` (``"noderesourcetopologies"``, suffix optional)."""
    filename = name if name.endswith(_SUFFIX) else name + _SUFFIX
    entry = resources.files(__name__).joinpath(filename)
    if not entry.is_file():
        available = ", ".join(names()) or "none"
        raise FileNotFoundError(f"no CRD manifest {filename!r} in {__name__} (available: {available})")
    document = packageyaml.load(entry.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{filename} in {__name__} is not a CustomResourceDefinition")
    return document
