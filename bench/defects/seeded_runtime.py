"""The emulated container runtime's default environment, for defect runs (``catalog.yaml``'s ``runtime``).

The kubelet gives a container only its image's and its pod's environment, nothing of the cluster
process (:mod:`nrop.localcluster.kubelet.processes`), so the defect the run names cannot reach the
stack's processes by inheritance. On a real node the place for a variable every container gets is
the container runtime (CRI-O's ``default_env``); this wraps the emulated runtime's process spec the
same way: every container process also gets the defect, its log and this directory on its
``PYTHONPATH`` (first, so that this ``sitecustomize`` runs and chains to any other).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Any

import seeding

Fn = Callable[..., Any]


def default_env(original: Fn) -> Fn:
    extra = {name: os.environ[name] for name in (seeding.ENV_DEFECT, seeding.ENV_LOG) if name in os.environ}

    @functools.wraps(original)
    def _process(self: Any, name: str, command: Any, args: Any) -> Any:
        spec = original(self, name, command, args)
        if isinstance(spec, str):  # why the container cannot run
            return spec
        env = {**spec.env, **extra}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(seeding.HERE), env.get("PYTHONPATH"))))
        return dataclasses.replace(spec, env=env)

    return _process
