"""The exporter's Prometheus metrics: upstream's ``rte_*`` names and labels, off by default.

This module owns the metric families (in their own registry, so that tests and several
exporters in one process do not collide) and serving them on ``/metrics`` when
``--metrics-mode`` is ``http`` or ``httptls``:

| name | type | labels |
|---|---|---|
| ``rte_podresource_api_call_failures_total`` | counter | node, function_name |
| ``rte_noderesourcetopology_writes_total`` | counter | node, operation, trigger |
| ``rte_operation_delay_milliseconds`` | gauge | node, operation_name, trigger |
| ``rte_wakeup_delay_milliseconds`` | gauge | node, trigger |
| ``rte_noderesourcetopology_patch_failures_total`` | counter | node, trigger |
| ``rte_noderesourcetopology_patch_size_ratio`` | histogram | node |

The ``node`` label is the node name. As upstream, ``node_resource_object_update`` delays
are always labelled ``reactive`` and patches do not count as writes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.exposition import generate_latest

__all__ = ["Metrics"]

log = logging.getLogger(__name__)

_PATCH_RATIO_BUCKETS: Final = tuple(round(0.1 * i, 1) for i in range(1, 11))


class Metrics:
    def __init__(self, node: str) -> None:
        self.node = node
        self.registry = CollectorRegistry(auto_describe=True)
        self._podres_failures = Counter(
            "rte_podresource_api_call_failures",
            "Number of failed podresources API calls.",
            ["node", "function_name"],
            registry=self.registry,
        )
        self._writes = Counter(
            "rte_noderesourcetopology_writes",
            "Number of NodeResourceTopology object creations and updates.",
            ["node", "operation", "trigger"],
            registry=self.registry,
        )
        self._operation_delay = Gauge(
            "rte_operation_delay_milliseconds",
            "Duration of the last operation, in milliseconds.",
            ["node", "operation_name", "trigger"],
            registry=self.registry,
        )
        self._wakeup_delay = Gauge(
            "rte_wakeup_delay_milliseconds",
            "Time between consecutive events, in milliseconds.",
            ["node", "trigger"],
            registry=self.registry,
        )
        self._patch_failures = Counter(
            "rte_noderesourcetopology_patch_failures",
            "Number of failed NodeResourceTopology patches, by reason.",
            ["node", "trigger"],
            registry=self.registry,
        )
        self._patch_ratio = Histogram(
            "rte_noderesourcetopology_patch_size_ratio",
            "Size of a patch relative to the full object.",
            ["node"],
            buckets=_PATCH_RATIO_BUCKETS,
            registry=self.registry,
        )
        self._server: Any = None

    # -- recording
    def podresources_failure(self, function_name: str) -> None:
        self._podres_failures.labels(self.node, function_name).inc()

    def write(self, operation: str, trigger: str) -> None:
        self._writes.labels(self.node, operation, trigger).inc()

    def operation_delay(self, operation_name: str, trigger: str, milliseconds: float) -> None:
        self._operation_delay.labels(self.node, operation_name, trigger).set(milliseconds)

    def wakeup_delay(self, trigger: str, milliseconds: float) -> None:
        self._wakeup_delay.labels(self.node, trigger).set(milliseconds)

    def patch_failure(self, reason: str) -> None:
        self._patch_failures.labels(self.node, reason).inc()

    def patch_size_ratio(self, ratio: float) -> None:
        self._patch_ratio.labels(self.node).observe(ratio)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- serving
    def serve(
        self,
        address: str,
        port: int,
        *,
        tls: bool = False,
        certs_dir: str = "",
        cert_file: str = "",
        key_file: str = "",
        want_client_auth: bool = False,
    ) -> None:
        """Serve ``/metrics`` in a background thread (raises ``OSError`` if it cannot bind)."""
        kwargs: dict[str, Any] = {}
        if tls:
            kwargs = {
                "certfile": str(Path(certs_dir) / cert_file),
                "keyfile": str(Path(certs_dir) / key_file),
                "client_auth_required": want_client_auth,
            }
        self._server, _thread = start_http_server(port, addr=address, registry=self.registry, **kwargs)
        log.info("serving metrics on %s://%s:%d/metrics", "https" if tls else "http", address, port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
