"""Writing NRT objects through the Kubernetes API, as upstream ``nrtupdater`` does.

This module owns the exporter's only API traffic:

* **update path**: ``GET`` the cluster-scoped ``noderesourcetopologies/<node>``; on
  NotFound ``CREATE`` it, else ``UPDATE`` a mutated copy (each counted in
  ``rte_noderesourcetopology_writes_total``);
* **patch mode** (default): after one full write, send JSON merge patches from the last
  object the server returned; every ``patch_resync`` patches, or when a patch fails,
  go through the update path again (a conflict also drops the cached object);
* the owner reference to the Node of the same name, looked up until found, then
  cached (upstream lists Nodes once at start-up, so a Node created later never owns
  its NRT);

Every API failure becomes a :class:`PublishError` (``raise … from`` the client's
``ApiError``) that the main loop logs and retries with back-off: the exporter outlives API
server restarts, expired connections and RBAC mistakes that get fixed.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from nrop.api.restapi import NODES, NRTS, ApiError, PatchType
from nrop.api.restclient import RestClient
from nrop.rte.decisions.nrtinfo import (
    TopologyManager,
    Trigger,
    merge_patch,
    new_nrt,
    patch_size_ratio,
    set_node_owner,
    update_nrt_info,
)
from nrop.rte.decisions.scan import ScanResult
from nrop.rte.metrics import Metrics

__all__ = ["PublishError", "Publisher"]

log = logging.getLogger(__name__)

_CONFLICT: Final = 409
_NOT_FOUND: Final = 404
DEFAULT_REQUEST_TIMEOUT: Final = 10.0


class PublishError(Exception):
    """Writing the NRT failed; ``status`` is the HTTP status when the server answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _describe(exc: ApiError) -> tuple[str, int | None]:
    """The failure as logged, and the HTTP status when the server answered."""
    return str(exc), exc.status or None


class Publisher:
    """Creates, updates and patches the NRT object of one node; see the module docstring."""

    def __init__(
        self,
        api: RestClient,
        node_name: str,
        tm: TopologyManager,
        *,
        patch_mode: bool = True,
        patch_resync: int = 10,
        add_owner: bool = True,
        metrics: Metrics | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        self.node_name = node_name
        self.tm = tm
        self.patch_mode = patch_mode
        self.patch_resync = patch_resync
        self.add_owner = add_owner
        self.metrics = metrics
        self._timeout = request_timeout
        self._api = api
        self._node_uid: str | None = None
        self._prev: dict[str, Any] | None = None
        self._patch_count = 0

    # -- owner
    def _owner_uid(self) -> str | None:
        if self._node_uid is None:
            try:
                node = self._api.request("GET", NODES.path(name=self.node_name), timeout=self._timeout)
            except ApiError as exc:
                log.debug(
                    "cannot read Node %s for the owner reference: %s", self.node_name, _describe(exc)[0]
                )
                return None
            self._node_uid = (node.get("metadata") or {}).get("uid")
            log.info("NRT owner: Node %s uid %s", self.node_name, self._node_uid)
        return self._node_uid

    def _mutate(self, obj: dict[str, Any], result: ScanResult, trigger: Trigger) -> dict[str, Any]:
        out = update_nrt_info(obj, result, self.tm, trigger)
        if self.add_owner and (uid := self._owner_uid()) is not None:
            set_node_owner(out, self.node_name, uid)
        return out

    # -- writes
    def publish(self, result: ScanResult, trigger: Trigger) -> dict[str, Any]:
        """Write ``result``; returns the object as the server stored it."""
        if self.patch_mode and self._prev is not None:
            if self.patch_resync > 0 and self._patch_count >= self.patch_resync:
                log.debug("full update after %d patches", self._patch_count)
            else:
                try:
                    obj = self._patch(result, trigger)
                except PublishError as exc:
                    log.info(
                        "patching NRT %s failed (%s); falling back to a full update", self.node_name, exc
                    )
                else:
                    self._patch_count += 1
                    return obj
        obj = self._update(result, trigger)
        self._prev, self._patch_count = obj, 0
        return obj

    def _patch(self, result: ScanResult, trigger: Trigger) -> dict[str, Any]:
        assert self._prev is not None
        new = self._mutate(self._prev, result, trigger)
        patch = merge_patch(self._prev, new)
        if self.metrics is not None:
            self.metrics.patch_size_ratio(patch_size_ratio(patch, new))
        try:
            obj = self._api.request(
                "PATCH",
                NRTS.path(name=self.node_name),
                body=patch,
                content_type=PatchType.MERGE.content_type,
                timeout=self._timeout,
            )
        except ApiError as exc:
            if self.metrics is not None:
                self.metrics.patch_failure("send_patch")
            text, status = _describe(exc)
            if status == _CONFLICT:
                self._prev = None
            raise PublishError(f"patch noderesourcetopologies/{self.node_name}: {text}", status) from exc
        self._prev = obj
        return obj

    def _update(self, result: ScanResult, trigger: Trigger) -> dict[str, Any]:
        name = self.node_name
        try:
            current = self._api.request("GET", NRTS.path(name=name), timeout=self._timeout)
        except ApiError as exc:
            text, status = _describe(exc)
            if status != _NOT_FOUND:
                raise PublishError(f"get noderesourcetopologies/{name}: {text}", status) from exc
            current = None
        if current is None:
            body = self._mutate(new_nrt(name), result, trigger)
            operation = "create"
            try:
                obj = self._api.request("POST", NRTS.path(), body=body, timeout=self._timeout)
            except ApiError as exc:
                text, status = _describe(exc)
                raise PublishError(f"create noderesourcetopologies/{name}: {text}", status) from exc
        else:
            body = self._mutate(current, result, trigger)
            operation = "update"
            try:
                obj = self._api.request("PUT", NRTS.path(name=name), body=body, timeout=self._timeout)
            except ApiError as exc:
                text, status = _describe(exc)
                raise PublishError(f"update noderesourcetopologies/{name}: {text}", status) from exc
        if self.metrics is not None:
            self.metrics.write(operation, trigger.value)
        log.debug(
            "%sd NRT %s (resourceVersion %s)", operation, name, obj.get("metadata", {}).get("resourceVersion")
        )
        return obj
