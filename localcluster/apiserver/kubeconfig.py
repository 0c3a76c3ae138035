"""Kubeconfig files for the embedded cluster: what kubectl, kopf and client-python are pointed at.

One cluster (server URL and the CA inline as ``certificate-authority-data``), one user
(a bearer token) and one context joining them. Files are written atomically with mode
0600 because they hold a token, and because pods and tools may read them while the
cluster rewrites them.
"""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml


def render_kubeconfig(
    server: str,
    ca_pem: bytes,
    token: str,
    *,
    user: str = "admin",
    cluster: str = "nrop-local",
    namespace: str = "default",
) -> dict[str, Any]:
    """A ``kind: Config`` v1 document whose current context is named after ``cluster``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii"),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": cluster,
                "context": {"cluster": cluster, "user": user, "namespace": namespace},
            }
        ],
        "current-context": cluster,
    }


def write_kubeconfig(path: str | os.PathLike[str], config: dict[str, Any]) -> Path:
    """Write ``config`` as YAML to ``path`` atomically, mode 0600.

    Readers see either the old file or the complete new one: the text goes to a temporary
    file in the same directory, is fsynced, and replaces the target with ``os.replace``.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_dump(config, sort_keys=False, default_flow_style=False).encode()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o600)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(target.parent)
    return target


def _fsync_dir(directory: Path) -> None:
    # Persist the rename itself; not every platform lets a directory be opened for this.
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


__all__ = ["render_kubeconfig", "write_kubeconfig"]
