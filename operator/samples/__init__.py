"""The sample custom resources a user applies as they are (shipped as package data).

``load(kind)`` returns the sample of ``NUMAResourcesOperator`` or ``NUMAResourcesScheduler``
as a plain dict, a fresh copy on every call.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Final

from nrop.api import packageyaml

__all__ = ["FILES", "load"]

#: Kind -> file of this package holding its sample.
FILES: Final = {
    "NUMAResourcesOperator": "nodetopology_v1_numaresourcesoperator.yaml",
    "NUMAResourcesScheduler": "nodetopology_v1_numaresourcesscheduler.yaml",
}


def load(kind: str) -> dict[str, Any]:
    """The sample CR of ``kind`` ("NUMAResourcesOperator" or "NUMAResourcesScheduler")."""
    try:
        filename = FILES[kind]
    except KeyError:
        raise ValueError(f"no sample for kind {kind!r} (known: {', '.join(FILES)})") from None
    document = packageyaml.load(resources.files(__name__).joinpath(filename).read_text(encoding="utf-8"))
    if not isinstance(document, dict) or document.get("kind") != kind:
        raise ValueError(f"{filename} does not hold a {kind}")
    return document
