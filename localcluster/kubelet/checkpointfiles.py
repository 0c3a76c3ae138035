"""Where a kubelet's manager checkpoints live under its node root, and how they are written.

Owns the files of upstream's checkpoint manager for the CPU, memory and device managers
(``var/lib/kubelet/cpu_manager_state``, ``memory_manager_state`` and
``device-plugins/kubelet_internal_checkpoint``; their content is the managers' own, see
:mod:`nrop.localcluster.kubelet.cm`):

* every write is atomic (:func:`write_atomically`): readers such as RTE and the numainfo
  exporter see the old or the new content, never a part;
* a write that fails, as on a full disk, keeps the previous file: for the CPU and memory
  managers, and for the device manager after a device change, it is logged
  (:func:`write_checkpoints`); the device checkpoint written by an ``Allocate`` that handed
  out devices instead rejects the pod with upstream's message (:func:`write_device_checkpoint`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from nrop.localcluster.kubelet.cm.devicemanager import CHECKPOINT_FILE

__all__ = [
    "CPU_MANAGER_STATE",
    "DEVICE_MANAGER_CHECKPOINT",
    "KUBELET_DIR",
    "MEMORY_MANAGER_STATE",
    "write_atomically",
    "write_checkpoints",
    "write_device_checkpoint",
]

log = logging.getLogger(__name__)

#: Relative to a node root.
KUBELET_DIR = Path("var/lib/kubelet")
CPU_MANAGER_STATE = KUBELET_DIR / "cpu_manager_state"
MEMORY_MANAGER_STATE = KUBELET_DIR / "memory_manager_state"
DEVICE_MANAGER_CHECKPOINT = KUBELET_DIR / "device-plugins" / CHECKPOINT_FILE


def write_atomically(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old or the new content, never a part.

    As upstream's checkpoint file store: a temporary file replaces the target once written in
    full; when the write fails (a full disk) the temporary file is removed and the target stays.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def _go_error(op: str, path: Path, err: OSError) -> str:
    """An OS error as Go's ``*PathError`` prints it (``write /path: no space left on device``)."""
    text = err.strerror or str(err)
    return f"{op} {path}: {text[:1].lower()}{text[1:]}"


def write_checkpoints(root: Path, files: Mapping[Path, bytes], node_name: str) -> None:
    """Write each checkpoint (path relative to ``root``); a failed write is logged and keeps the old file."""
    for relative, data in files.items():
        try:
            write_atomically(root / relative, data)
        except OSError as err:
            # As upstream's managers: the state in memory stands, the file keeps its last content.
            log.error("node %s: failed to write checkpoint file %s: %s", node_name, relative, err)


def write_device_checkpoint(root: Path, data: bytes) -> str:
    """Write the device manager's checkpoint as its ``Allocate`` does: ``""``, or the rejection message."""
    try:
        write_atomically(root / DEVICE_MANAGER_CHECKPOINT, data)
    except OSError as err:
        error = _go_error("write", "/" / DEVICE_MANAGER_CHECKPOINT, err)
        return (
            f'Allocate failed due to failed to write checkpoint file "{CHECKPOINT_FILE}": {error}, '
            "which is unexpected"
        )
    return ""
