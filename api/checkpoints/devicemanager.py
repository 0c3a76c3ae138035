"""The device manager's checkpoint, ``device-plugins/kubelet_internal_checkpoint`` (v2).

``DeviceIDs`` per NUMA node, ``AllocResp`` as base64, the registered devices per resource, the
checksum over go-spew's rendering of ``Data`` (``BootID``, written by master kubelets only, is
outside it).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from nrop.api.checkpoints.encoding import CheckpointError, CorruptCheckpointError, fnv32a, go_json

# --- device manager (device-plugins/kubelet_internal_checkpoint, v2) ---------------------------

DEVICE_MANAGER_CHECKPOINT_FILE: Final = "kubelet_internal_checkpoint"


def _spew_list(values: Sequence[Any] | None) -> str:
    return "<nil>" if values is None else "[" + " ".join(str(v) for v in values) + "]"


@dataclass
class PodDevicesEntry:
    pod_uid: str
    container_name: str
    resource_name: str
    device_ids: dict[int, list[str] | None]
    alloc_resp: bytes | None = None


@dataclass
class DeviceCheckpoint:
    """``/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint`` (v2, ``DeviceIDs`` per NUMA)."""

    entries: list[PodDevicesEntry] | None = None
    registered: dict[str, list[str] | None] | None = None
    checksum: int = 0
    #: Written by master kubelets only (outside the checksummed data).
    boot_id: str = ""

    def render_for_hash(self) -> str:
        """The go-spew ``%#v`` text of ``Data`` that upstream hashes."""
        if self.entries is None:
            entries = "<nil>"
        else:
            entries = (
                "["
                + " ".join(
                    f"{{PodUID:(string){e.pod_uid} ContainerName:(string){e.container_name} "
                    f"ResourceName:(string){e.resource_name} DeviceIDs:(checkpoint.DevicesPerNUMA)map["
                    + " ".join(f"{node}:{_spew_list(e.device_ids[node])}" for node in sorted(e.device_ids))
                    + f"] AllocResp:([]uint8){_spew_list(None if e.alloc_resp is None else list(e.alloc_resp))}}}"
                    for e in self.entries
                )
                + "]"
            )
        if self.registered is None:
            registered = "<nil>"
        else:
            registered = (
                "map["
                + " ".join(f"{res}:{_spew_list(self.registered[res])}" for res in sorted(self.registered))
                + "]"
            )
        return (
            f"(checkpoint.checkpointData){{PodDeviceEntries:([]checkpoint.PodDevicesEntry){entries} "
            f"RegisteredDevices:(map[string][]string){registered}}}"
        )

    def compute_checksum(self) -> int:
        return fnv32a(self.render_for_hash().encode())

    def to_json(self) -> str:
        """``MarshalCheckpoint``: sets ``checksum`` and returns the file content."""
        self.checksum = self.compute_checksum()
        entries = None
        if self.entries is not None:
            entries = [
                {
                    "PodUID": e.pod_uid,
                    "ContainerName": e.container_name,
                    "ResourceName": e.resource_name,
                    # Go sorts integer map keys by their string form in JSON ("-1" < "0").
                    "DeviceIDs": {str(n): e.device_ids[n] for n in sorted(e.device_ids, key=str)},
                    "AllocResp": None if e.alloc_resp is None else base64.b64encode(e.alloc_resp).decode(),
                }
                for e in self.entries
            ]
        registered = (
            None if self.registered is None else {r: self.registered[r] for r in sorted(self.registered)}
        )
        body: dict[str, Any] = {
            "Data": {"PodDeviceEntries": entries, "RegisteredDevices": registered},
            "Checksum": self.checksum,
        }
        if self.boot_id:
            body["BootID"] = self.boot_id
        return go_json(body)

    @classmethod
    def from_json(cls, data: str | bytes) -> DeviceCheckpoint:
        """Parse and verify; raises :class:`CorruptCheckpointError` on a checksum mismatch."""
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise CheckpointError(f"could not parse checkpoint: {exc}") from None
        body = raw.get("Data") or {}
        entries = None
        if body.get("PodDeviceEntries") is not None:
            entries = [
                PodDevicesEntry(
                    e.get("PodUID", ""),
                    e.get("ContainerName", ""),
                    e.get("ResourceName", ""),
                    {int(n): ids for n, ids in (e.get("DeviceIDs") or {}).items()},
                    None if e.get("AllocResp") is None else base64.b64decode(e["AllocResp"]),
                )
                for e in body["PodDeviceEntries"]
            ]
        registered = body.get("RegisteredDevices")
        checkpoint = cls(entries, registered, int(raw.get("Checksum", 0)), raw.get("BootID", ""))
        if checkpoint.checksum != checkpoint.compute_checksum():
            raise CorruptCheckpointError("checkpoint is corrupted")
        return checkpoint
