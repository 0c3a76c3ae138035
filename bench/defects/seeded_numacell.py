"""Replacements for the numacell device plugin's defects (``catalog.yaml``): each factory takes the
original function and returns the broken one, reaching the product only through it."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def advertises_zone_zero(original: Fn) -> Fn:
    """Every cell's devices are advertised on NUMA node 0."""

    @functools.wraps(original)
    def cell_devices(*args: Any, **kwargs: Any) -> Any:
        return [dataclasses.replace(device, numa_nodes=(0,)) for device in original(*args, **kwargs)]

    return cell_devices
