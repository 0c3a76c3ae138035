"""PrioritySort: the queue order — higher ``spec.priority`` first, then the earlier enqueue time."""

from __future__ import annotations

from typing import Any, Protocol

from nrop.sched.framework.interface import Handle

NAME = "PrioritySort"


class Queued(Protocol):
    """What the queue sort compares: the pod's priority and when it was (re)queued."""

    @property
    def priority(self) -> int: ...

    @property
    def timestamp(self) -> float: ...


class PrioritySort:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def less(self, a: Queued, b: Queued) -> bool:
        pa, pb = a.priority, b.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)
