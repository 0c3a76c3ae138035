"""In-cluster configuration for Python processes of pods that run without a mount namespace of
their own (where the machine refuses one: :mod:`.launching`).

Kubernetes clients find their in-cluster credentials at fixed paths under
``/var/run/secrets/kubernetes.io/serviceaccount`` that no argument can redirect, so the
kubelet's rewriting of mount paths in command, arguments and environment cannot reach
them. The kubelet therefore puts a two-line ``sitecustomize.py`` on the process's
``PYTHONPATH`` (:func:`write_site`) that calls :func:`install` with the container's
mount of that directory; :func:`install` points the official client's
``kubernetes.config.incluster_config`` constants at the host path when (and if) the
process imports it, so ``load_incluster_config()`` (and kopf's in-cluster login through
it) works unchanged.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["SERVICE_ACCOUNT_DIR", "install", "write_site"]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_TARGET = "kubernetes.config.incluster_config"
_CONSTANTS = {"SERVICE_TOKEN_FILENAME": "token", "SERVICE_CERT_FILENAME": "ca.crt"}


def write_site(directory: Path, host_dir: str) -> Path:
    """Write ``<directory>/sitecustomize.py`` mapping the service-account directory to ``host_dir``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sitecustomize.py"
    path.write_text(
        "# Written by the nrop-cluster kubelet: in-cluster paths of this container on the host.\n"
        f"from nrop.localcluster.kubelet.podsite import install\ninstall({host_dir!r})\n"
    )
    return path


def install(host_dir: str) -> None:
    """Point the official client's in-cluster file names into ``host_dir`` (now or at import)."""
    module = sys.modules.get(_TARGET)
    if module is not None:
        _patch(module, host_dir)
        return
    sys.meta_path.insert(0, _Finder(host_dir))


def _patch(module: ModuleType, host_dir: str) -> None:
    for constant, name in _CONSTANTS.items():
        setattr(module, constant, str(Path(host_dir) / name))


class _Loader(importlib.abc.Loader):
    """The real loader, then the patch."""

    def __init__(self, inner: importlib.abc.Loader, host_dir: str) -> None:
        self.inner = inner
        self.host_dir = host_dir

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _patch(module, self.host_dir)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, host_dir: str) -> None:
        self.host_dir = host_dir

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader, self.host_dir)
        return spec
