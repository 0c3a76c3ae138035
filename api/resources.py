"""Kubernetes resource names shared by the kubelet emulation, the exporter and the scheduler."""

from __future__ import annotations

from .quantity import Format, format_quantity

HUGEPAGES_PREFIX = "hugepages-"


def hugepage_resource_name(page_size_bytes: int) -> str:
    """``hugepages-`` + the page size as a BinarySI quantity: ``hugepages-2Mi``, ``hugepages-1Gi``."""
    return HUGEPAGES_PREFIX + format_quantity(page_size_bytes, Format.BINARY_SI)
