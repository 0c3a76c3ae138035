"""``write_atomically``, the kubelet's checkpoint writes: the old or the new file, never a part.

Whichever step fails (the temporary file's data on a full disk, or the rename), the target keeps
its previous bytes, the error reaches the caller with its errno, and no temporary file is left
(upstream's checkpoint file store removes it too).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from nrop.localcluster.kubelet.checkpointfiles import write_atomically

OLD = b'{"policyName":"static","defaultCpuSet":"0-3","checksum":1}'
NEW = b'{"policyName":"static","defaultCpuSet":"0-1","checksum":2}'


def _full(path: Path, data: Any) -> int:
    """A write that gets half the data on disk, then the filesystem is full."""
    with open(path, "wb") as fh:
        fh.write(bytes(data)[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _rename_fails(src: Any, dst: Any) -> None:
    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(src))


@pytest.mark.parametrize(
    ("target", "attribute", "replacement", "code"),
    [
        pytest.param(Path, "write_bytes", _full, errno.ENOSPC, id="data write on a full disk"),
        pytest.param(os, "replace", _rename_fails, errno.EXDEV, id="rename"),
    ],
)
def test_a_failed_write_keeps_the_previous_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: Any, attribute: str, replacement: Any, code: int
) -> None:
    path = tmp_path / "var/lib/kubelet/cpu_manager_state"
    write_atomically(path, OLD)
    monkeypatch.setattr(target, attribute, replacement)
    with pytest.raises(OSError) as failure:
        write_atomically(path, NEW)
    monkeypatch.undo()
    assert failure.value.errno == code
    assert path.read_bytes() == OLD
    assert sorted(p.name for p in path.parent.iterdir()) == ["cpu_manager_state"]


def test_a_write_replaces_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "device-plugins/kubelet_internal_checkpoint"
    write_atomically(path, OLD)
    write_atomically(path, NEW)
    assert path.read_bytes() == NEW
    assert sorted(p.name for p in path.parent.iterdir()) == ["kubelet_internal_checkpoint"]
