"""How a kubelet admits a pod bound to it, around the pure decisions of :mod:`.admission`.

Upstream's ``canAdmitPod`` and the resource-allocation admit handler, with their I/O:

* the managers' admit handlers, then the device plugins' ``Allocate`` calls for the devices the
  pod got (:meth:`PodAdmitter.admit_and_allocate`, in a worker thread: the RPCs may block); a
  failed call releases the pod's resources and rejects it with ``UnexpectedAdmissionError``;
* the device manager's checkpoint, written as part of ``Allocate`` when devices were handed
  out (:meth:`PodAdmitter.checkpoint_devices`): a failed write rejects the pod the same way;
* the sandbox check of an admitted pod (:meth:`PodAdmitter.sandbox_error`): its RuntimeClass
  must exist and name a handler the node's runtime has.

Every use of the managers holds the kubelet's lock.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from nrop.localcluster.apiserver.clients import StoreReads
from nrop.localcluster.kubelet.checkpointfiles import write_device_checkpoint
from nrop.localcluster.kubelet.decisions import nodeobjects
from nrop.localcluster.kubelet.decisions.admission import AdmissionResult, NodeResourceManagers
from nrop.localcluster.kubelet.grpcservers.deviceplugins import DevicePluginError
from nrop.localcluster.kubelet.pluginendpoints import PluginEndpoints

__all__ = ["PodAdmitter"]

Obj = dict[str, Any]


class PodAdmitter:
    """The admission steps of the kubelet whose node root is ``root``."""

    def __init__(
        self,
        managers: NodeResourceManagers,
        lock: threading.RLock,
        device_plugins: PluginEndpoints,
        root: Path,
        store: StoreReads,
    ) -> None:
        self._managers = managers
        self._lock = lock
        self._device_plugins = device_plugins
        self._root = root
        self._store = store

    def admit_and_allocate(self, pod: Obj) -> AdmissionResult:
        """Worker thread: the admit handlers, then the device plugins' ``Allocate`` calls."""
        with self._lock:
            result = self._managers.admit(pod)
            if not result.admitted or result.allocation is None:
                return result
            try:
                self._device_plugins.allocate(result.allocation)
            except DevicePluginError as err:
                self._managers.release(result.allocation.uid)
                return AdmissionResult(
                    False, "UnexpectedAdmissionError", f"Allocate failed due to {err}, which is unexpected"
                )
            return result

    def checkpoint_devices(self, result: AdmissionResult) -> AdmissionResult:
        """Upstream's device manager writes its checkpoint as part of ``Allocate`` when it handed out
        devices: if that write fails (a full disk), the pod is rejected and its resources released."""
        allocation = result.allocation
        if not result.admitted or allocation is None or not any(c.devices for c in allocation.containers):
            return result
        with self._lock:
            data = self._managers.device_manager_checkpoint()
        message = write_device_checkpoint(self._root, data)
        if message:
            with self._lock:
                self._managers.release(allocation.uid)
            return AdmissionResult(False, "UnexpectedAdmissionError", message)
        return result

    def sandbox_error(self, pod: Obj) -> str:
        """Why the container runtime cannot make the pod's sandbox (RuntimeClass handler), or ``""``."""
        name = (pod.get("spec") or {}).get("runtimeClassName")
        if not name:
            return ""
        runtime_class = self._store.get(("node.k8s.io", "runtimeclasses"), "", name)
        if runtime_class is None:
            return f'RuntimeClass "{name}" not found'
        handler = runtime_class.get("handler", "")
        if handler not in nodeobjects.RUNTIME_HANDLERS:
            return (
                "rpc error: code = Unknown desc = failed to get sandbox runtime: "
                f'no runtime for "{handler}" is configured'
            )
        return ""
