"""Parsing the YAML files this distribution ships (CRDs, samples, the API server's tables).

Each process that starts a component parses some of them (the operator its CRDs at every
reconcile of its CR, the API server its kinds, CRDs and bootstrap RBAC): libyaml's parser does
it about ten times faster than PyYAML's pure-Python one and builds the same documents with the
same safe constructor. It is used only for these files, which are known to be valid: for text
a user writes, PyYAML's own parser keeps its error messages (with the snippet libyaml's marks
lack).
"""

from __future__ import annotations

from typing import Any, Final

import yaml

__all__ = ["load"]

#: libyaml's safe loader when PyYAML was built with it (its wheels are), else PyYAML's own.
_LOADER: Final[type[yaml.SafeLoader] | type[yaml.CSafeLoader]] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    """The one document of ``text``, as ``yaml.safe_load`` builds it."""
    return yaml.load(text, Loader=_LOADER)
