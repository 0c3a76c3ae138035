"""Replacements for the operator's defects (``catalog.yaml``): each factory takes the original
function and returns the broken one, reaching the product only through it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def drops_fingerprinting_setting(original: Fn) -> Fn:
    """A node group's ``podsFingerprinting`` is dropped: the default is rendered whatever was asked."""
    defaults = original.__globals__["DEFAULT_CONFIG"]

    @functools.wraps(original)
    def effective_config(config: Any) -> dict[str, Any]:
        result = original(config)
        result["podsFingerprinting"] = defaults["podsFingerprinting"]
        return result

    return effective_config


def ignores_manual_edits(original: Fn) -> Fn:
    """An object whose desired-state hash annotation matches is left alone, however it was edited since."""
    annotation = original.__globals__["DESIRED_HASH_ANNOTATION"]
    desired_hash = original.__globals__["desired_hash"]
    kind_of = original.__globals__["kind_of"]

    @functools.wraps(original)
    def apply(self: Any, desired: Any) -> Any:
        meta = desired["metadata"]
        live = self.get(kind_of(desired), meta["name"], meta.get("namespace"))
        recorded = ((live or {}).get("metadata") or {}).get("annotations") or {}
        if live is not None and recorded.get(annotation) == desired_hash(desired):
            return live, "unchanged"
        return original(self, desired)

    return apply
