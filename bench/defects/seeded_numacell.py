"""Replacements for the numacell device plugin's defects (``catalog.yaml``): each factory takes the
original function and returns the broken one, reaching the product only through it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def advertises_zone_zero(original: Fn) -> Fn:
    """Every cell's devices are advertised on NUMA node 0."""

    @functools.wraps(original)
    def list_response(*args: Any, **kwargs: Any) -> Any:
        response = original(*args, **kwargs)
        for device in response.devices:
            device.topology.nodes[0].ID = 0
        return response

    return list_response
