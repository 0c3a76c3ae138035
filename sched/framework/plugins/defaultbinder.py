"""DefaultBinder: binds the pod through the handle's ``bind_pod`` (upstream ``defaultbinder``).

The handle given to the plugin must have an attribute ``bind_pod``: an async callable
``await bind_pod(pod, node_name)`` that creates the ``pods/binding`` subresource (the
scheduler's I/O layer provides it).  Any exception it raises becomes an Error status, as
upstream turns the client's error into ``framework.AsStatus(err)``.
"""

from __future__ import annotations

import logging
from typing import Any

from nrop.sched.framework.interface import CycleState, Handle, Obj, Status, pod_key

NAME = "DefaultBinder"
log = logging.getLogger(__name__)


class DefaultBinder:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._bind = getattr(handle, "bind_pod", None)

    async def bind(self, state: CycleState, pod: Obj, node_name: str) -> Status:
        if self._bind is None:
            return Status.error("DefaultBinder: the scheduler handle has no bind_pod")
        log.debug("binding pod %s to node %s", pod_key(pod), node_name)
        try:
            await self._bind(pod, node_name)
        except Exception as exc:  # every client failure is the cycle's Error status
            return Status.error(str(exc) or type(exc).__name__)
        return Status.success()
