"""``nrop-cluster nodes``: per node and NUMA zone, what is allocated out of what is allocatable.

Reads the embedded cluster through its API only: the Node list, then each node's
``/api/v1/nodes/<name>/proxy/numa`` (served by the emulated kubelet, see
``kubelet/fleet.py``).  Formatting is a pure function of those documents, so it is
table-tested; numbers are *allocated/allocatable* (exclusive CPUs, memory-manager
blocks, hugepages, devices).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nrop.api import quantity

__all__ = ["fetch_reports", "format_reports", "human_bytes"]

log = logging.getLogger(__name__)

_UNITS = (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024))


def human_bytes(value: int) -> str:
    """``1073741824`` -> ``1Gi``; ``12805210112`` -> ``11.9Gi``; 0 -> ``0``."""
    if value == 0:
        return "0"
    for suffix, size in _UNITS:
        if value >= size:
            amount = value / size
            text = f"{amount:.1f}".rstrip("0").rstrip(".")
            return f"{text}{suffix}"
    return str(value)


def _pair(allocated: int, allocatable: int, *, as_bytes: bool) -> str:
    if as_bytes:
        return f"{human_bytes(allocated)}/{human_bytes(allocatable)}"
    return f"{allocated}/{allocatable}"


def _page_size(resource: str) -> int:
    try:
        return quantity.parse(resource.split("-", 1)[1]).value()
    except (IndexError, quantity.QuantityError):
        return 0


def format_reports(reports: Sequence[Mapping[str, Any]]) -> str:
    """One row per (node, NUMA zone); a node without a report (not emulated) gets one ``-`` row."""
    sizes = sorted(
        {name for r in reports for z in r.get("zones") or () for name in z.get("hugepages_allocatable", {})},
        key=_page_size,
    )
    header = [
        "NODE",
        "NUMA",
        "CPUS",
        "MEMORY",
        *(f"HUGEPAGES-{s.split('-', 1)[1]}" for s in sizes),
        "DEVICES",
    ]
    rows: list[list[str]] = [header]
    for report in reports:
        zones = report.get("zones")
        if not zones:
            rows.append([str(report.get("node")), "-", "-", "-", *("-" for _ in sizes), "-"])
            continue
        for zone in zones:
            devices = ", ".join(
                f"{name} {zone['devices_allocated'].get(name, 0)}/{count}"
                for name, count in sorted(zone.get("devices_allocatable", {}).items())
            )
            rows.append(
                [
                    str(report.get("node")),
                    str(zone["numa"]),
                    _pair(zone["cpus_allocated"], zone["cpus_allocatable"], as_bytes=False),
                    _pair(zone["memory_allocated"], zone["memory_allocatable"], as_bytes=True),
                    *(
                        _pair(
                            zone["hugepages_allocated"].get(size, 0),
                            zone["hugepages_allocatable"].get(size, 0),
                            as_bytes=True,
                        )
                        for size in sizes
                    ),
                    devices or "-",
                ]
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def fetch_reports(kubeconfig: Path) -> list[dict[str, Any]]:
    """Every node's ``proxy/numa`` document (``{"node": name}`` alone where none is served)."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        core = client.CoreV1Api(api)
        reports: list[dict[str, Any]] = []
        for node in core.list_node().items:
            name = node.metadata.name
            try:
                response = core.connect_get_node_proxy_with_path(name, "numa", _preload_content=False)
                reports.append(json.loads(response.data))
            except (client.ApiException, ValueError) as exc:
                log.debug("node %s serves no NUMA report: %s", name, exc)
                reports.append({"node": name})
        return reports
    finally:
        api.close()
