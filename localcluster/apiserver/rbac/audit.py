"""The audit of denied requests: every 403 the authorizer answers, kept in memory for tests to read.

kube-apiserver writes such denials to its audit log (``responseStatus.code: 403`` with the
user and the request's object reference); the embedded server keeps the same facts in a
bounded ring and serves them, to the admin only, on ``GET /debug/nrop/denials``. A test
takes the sequence number it starts from (``?since=N``) and reads what was denied while
its workload ran: a denial of an operand's service account is a permission the operand
needed and its role lacks.

Pure bookkeeping: no I/O, the time of a denial is passed in.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from nrop.localcluster.apiserver.rbac import Attributes, UserInfo

__all__ = ["DEFAULT_CAPACITY", "Denial", "DenialLog"]

#: Denials kept; the oldest go first (a test reads a window, never the whole history).
DEFAULT_CAPACITY = 10_000


@dataclass(frozen=True)
class Denial:
    """One request the authorizer refused, as the audit log would reference it."""

    seq: int
    timestamp: str
    user: str
    groups: tuple[str, ...]
    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    #: Non-resource requests (``/metrics``, ``/debug/...``) have a path and no resource.
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["groups"] = list(self.groups)
        return out


class DenialLog:
    """A bounded, thread-safe ring of :class:`Denial` with increasing sequence numbers (from 1)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._entries: deque[Denial] = deque(maxlen=capacity)
        self._last = 0
        # The API server records from its loop; tests in other threads read through the server.
        self._lock = threading.Lock()

    @property
    def last(self) -> int:
        """The sequence number of the latest denial (0 before any)."""
        return self._last

    def record(self, user: UserInfo, attrs: Attributes, timestamp: str) -> Denial:
        with self._lock:
            self._last += 1
            denial = Denial(
                seq=self._last,
                timestamp=timestamp,
                user=user.name,
                groups=tuple(user.groups),
                verb=attrs.verb,
                api_group=attrs.api_group if attrs.resource_request else "",
                resource=attrs.resource if attrs.resource_request else "",
                subresource=attrs.subresource,
                namespace=attrs.namespace,
                name=attrs.name,
                path="" if attrs.resource_request else attrs.path,
            )
            self._entries.append(denial)
            return denial

    def since(self, seq: int = 0) -> list[Denial]:
        """The denials recorded after sequence number ``seq``, oldest first."""
        with self._lock:
            return [d for d in self._entries if d.seq > seq]

    def document(self, seq: int = 0) -> dict[str, Any]:
        """The body of ``GET /debug/nrop/denials?since=seq``: the window and where it ends."""
        items = self.since(seq)
        return {"last": self._last, "items": [d.to_json() for d in items]}
