"""The device plugins registered with one kubelet, as upstream's device manager keeps their endpoints.

The I/O half of upstream ``pkg/kubelet/cm/devicemanager`` (``manager.go``'s endpoint handling);
the decisions are :class:`~nrop.localcluster.kubelet.cm.DeviceManager`'s, reached through
:class:`~.admission.NodeResourceManagers`:

* as the registration server's :class:`~.grpcservers.deviceplugins.DevicePluginHandler`, it
  records each plugin's client and hands every ``ListAndWatch`` list to the managers (with the
  plugin's ``GetPreferredAllocation`` when it offers one);
* a plugin whose stream ended keeps its (now unhealthy) devices for
  ``ENDPOINT_STOP_GRACE_PERIOD`` seconds; they are removed then unless it registered again;
* :meth:`PluginEndpoints.allocate` calls ``Allocate`` and ``PreStartContainer`` of the plugins
  whose devices an admitted pod got, and records each ``Allocate`` response for the checkpoint.

Threads: the handler methods run in the gRPC loop's worker threads and hand what follows to
the event loop through ``from_thread``; every use of the managers holds the kubelet's lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from nrop.api.deviceplugin import Device
from nrop.localcluster.kubelet.decisions.admission import NodeResourceManagers, PodAllocation
from nrop.localcluster.kubelet.grpcservers.deviceplugins import (
    ENDPOINT_STOP_GRACE_PERIOD,
    DevicePluginError,
    PluginClient,
)

__all__ = ["PluginEndpoints"]


class PluginEndpoints:
    """The plugin clients of one kubelet; ``on_change`` runs on the loop after a device change."""

    def __init__(
        self,
        managers: NodeResourceManagers,
        lock: threading.RLock,
        *,
        from_thread: Callable[..., None],
        on_change: Callable[[], None],
    ) -> None:
        self._managers = managers
        self._lock = lock
        self._from_thread = from_thread
        self._on_change = on_change
        self._plugins: dict[str, PluginClient] = {}
        self._removals: dict[str, asyncio.TimerHandle] = {}

    # -- DevicePluginHandler (the gRPC loop's worker threads) -------------------------------------

    def plugin_connected(self, resource: str, client: PluginClient) -> None:
        with self._lock:
            self._plugins[resource] = client
        self._from_thread(self._cancel_removal, resource)

    def plugin_devices(self, resource: str, devices: list[Device]) -> None:
        with self._lock:
            client = self._plugins.get(resource)
            self._managers.set_plugin_devices(
                resource, devices, client.preferred_allocation if client is not None else None
            )
        self._from_thread(self._on_change)

    def plugin_disconnected(self, resource: str) -> None:
        with self._lock:
            self._plugins.pop(resource, None)
        self._from_thread(self._schedule_removal, resource)

    # -- the event loop ----------------------------------------------------------------------------

    def cancel_removals(self) -> None:
        """The kubelet stops: no removal runs any more."""
        for handle in self._removals.values():
            handle.cancel()

    def _cancel_removal(self, resource: str) -> None:
        handle = self._removals.pop(resource, None)
        if handle is not None:
            handle.cancel()

    def _schedule_removal(self, resource: str) -> None:
        self._cancel_removal(resource)
        self._removals[resource] = asyncio.get_running_loop().call_later(
            ENDPOINT_STOP_GRACE_PERIOD, self._remove, resource
        )

    def _remove(self, resource: str) -> None:
        self._removals.pop(resource, None)
        with self._lock:
            if resource in self._plugins:
                return
            self._managers.remove_plugin_devices(resource)
        self._on_change()

    # -- admission (the kubelet's worker thread, under its lock) -----------------------------------

    def allocate(self, allocation: PodAllocation) -> None:
        """``Allocate`` then ``PreStartContainer`` per container and plugin resource, in name order.

        Raises :class:`DevicePluginError` when a call fails or a plugin answers with a wrong
        number of container responses.
        """
        for container in allocation.containers:
            per_resource: dict[str, list[str]] = {}
            for device in container.devices:
                per_resource.setdefault(device.resource, []).append(device.device_id)
            for resource, ids in sorted(per_resource.items()):
                client = self._plugins.get(resource)
                if client is None:
                    continue  # a profile's built-in devices: nothing to call
                response = client.allocate([ids])
                if len(response.container_responses) != 1:
                    raise DevicePluginError(
                        f"device plugin {resource} returned {len(response.container_responses)} responses for 1 request"
                    )
                self._managers.record_device_allocate_response(
                    allocation.uid,
                    container.name,
                    resource,
                    response.container_responses[0].SerializeToString(),
                )
                client.pre_start_container(ids)
