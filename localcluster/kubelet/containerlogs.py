"""Container logs as a node keeps them: what its containers printed, for ``pods/log``.

The pod workers of a node append their containers' output here. Upstream keeps container logs
in files on the node and the API server's ``pods/log`` asks the pod's node's kubelet for them;
here the fleet registers each node's :class:`ContainerLogs` in the API server's
``log_sources`` (:class:`~nrop.localcluster.apiserver.clients.LogSource`), which ``pods/log``
reads with the upstream options (``tailLines``, ``limitBytes``, ``timestamps``,
``sinceSeconds``, ``previous``, a :class:`~nrop.localcluster.apiserver.clients.LogQuery`) and
can follow new lines. The kubelet's own ``containerLogs`` endpoint (``nodes/proxy``) reads them
too. A node's logs outlive a kubelet restart (a reboot), as files on the node do.

Per container the current instance and the previous one (``rotate`` at a restart)
are kept; each keeps at most :data:`MAX_CHARS` characters of its latest lines, like the kubelet's
``containerLogMaxSize`` (10 MiB) rotation. The restart count of each container's latest instance
is kept too (:meth:`ContainerLogs.started`), as upstream's log file names (``<restartCount>.log``)
keep it: after a reboot, whose container runtime no longer knows the old containers, the kubelet
starts a container again at the next count (:meth:`ContainerLogs.next_restart_count`, upstream's
``calcRestartCountByLogDir``), so it gets a new container ID.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from nrop.api.metatime import rfc3339_micro
from nrop.localcluster.apiserver.clients import LogQuery

#: Characters of log text kept per container instance (the oldest lines go first).
MAX_CHARS = 10 * 1024 * 1024


@dataclass
class _Log:
    lines: list[tuple[datetime, str]] = field(default_factory=list)
    partial: str = ""
    waiters: list[asyncio.Event] = field(default_factory=list)
    closed: bool = False
    size: int = 0
    dropped: int = 0  # lines forgotten from the front (followers count from here)


class ContainerLogs:
    """Per (namespace, pod, container, instance) log buffers; ``rotate`` starts a new instance."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, str, str], list[_Log]] = {}
        #: (namespace, pod, pod UID, container) -> restart count of its latest instance
        self._counts: dict[tuple[str, str, str, str], int] = {}

    def started(self, namespace: str, pod: str, uid: str, container: str, restart_count: int) -> None:
        """An instance of the container started with ``restart_count`` (its log file's name): after
        the first, the last instance becomes ``previous`` (:meth:`rotate`)."""
        if restart_count > 0:
            self.rotate(namespace, pod, container)
        self._counts[(namespace, pod, uid, container)] = restart_count

    def next_restart_count(self, namespace: str, pod: str, uid: str, container: str) -> int:
        """Where a new kubelet starts the container's count: 0 when it never ran on this node,
        else one more than its latest instance's."""
        latest = self._counts.get((namespace, pod, uid, container))
        return 0 if latest is None else latest + 1

    def _instances(self, namespace: str, pod: str, container: str) -> list[_Log]:
        return self._logs.setdefault((namespace, pod, container), [_Log()])

    def append(
        self, namespace: str, pod: str, container: str, text: str, when: datetime | None = None
    ) -> None:
        log = self._instances(namespace, pod, container)[-1]
        stamp = when or datetime.now(UTC)
        data = log.partial + text
        *complete, log.partial = data.split("\n")
        for line in complete:
            log.lines.append((stamp, line))
            log.size += len(line) + 1
        drop = 0
        while log.size > MAX_CHARS and drop < len(log.lines):
            log.size -= len(log.lines[drop][1]) + 1
            drop += 1
        if drop:
            del log.lines[:drop]
            log.dropped += drop
        for waiter in log.waiters:
            waiter.set()

    def rotate(self, namespace: str, pod: str, container: str) -> None:
        """The container restarted: keep the last instance as ``previous`` and start a fresh one."""
        instances = self._instances(namespace, pod, container)
        self.close(namespace, pod, container)
        instances.append(_Log())
        del instances[:-2]

    def close(self, namespace: str, pod: str, container: str) -> None:
        log = self._instances(namespace, pod, container)[-1]
        log.closed = True
        for waiter in log.waiters:
            waiter.set()

    def forget(self, namespace: str, pod: str) -> None:
        for count in [k for k in self._counts if k[:2] == (namespace, pod)]:
            del self._counts[count]
        for key in [k for k in self._logs if k[:2] == (namespace, pod)]:
            for log in self._logs.pop(key):
                log.closed = True
                for waiter in log.waiters:
                    waiter.set()

    def has_previous(self, namespace: str, pod: str, container: str) -> bool:
        return len(self._logs.get((namespace, pod, container), ())) > 1

    def _select(self, namespace: str, pod: str, query: LogQuery) -> _Log:
        instances = self._instances(namespace, pod, query.container)
        return instances[-2] if query.previous and len(instances) > 1 else instances[-1]

    def read(self, namespace: str, pod: str, query: LogQuery, now: datetime | None = None) -> bytes:
        log = self._select(namespace, pod, query)
        lines = list(log.lines)
        if query.since_seconds is not None:
            floor = (now or datetime.now(UTC)).timestamp() - query.since_seconds
            lines = [(t, s) for t, s in lines if t.timestamp() >= floor]
        if query.tail_lines is not None:
            lines = lines[-query.tail_lines :] if query.tail_lines > 0 else []
        out = "".join(_format(t, s, query.timestamps) for t, s in lines).encode()
        if query.limit_bytes is not None:
            out = out[: query.limit_bytes]
        return out

    async def follow(self, namespace: str, pod: str, query: LogQuery) -> AsyncIterator[bytes]:
        """What ``read`` gives, then new lines as they come, until the container's log closes."""
        log = self._select(namespace, pod, query)
        first = self.read(namespace, pod, query)
        if first:
            yield first
        sent = log.dropped + len(log.lines)  # lines ever appended that have been sent
        while not log.closed:
            waiter = asyncio.Event()
            log.waiters.append(waiter)
            try:
                await waiter.wait()
            finally:
                log.waiters.remove(waiter)
            fresh = log.lines[max(0, sent - log.dropped) :]
            sent = log.dropped + len(log.lines)
            if fresh:
                yield "".join(_format(t, s, query.timestamps) for t, s in fresh).encode()


def _format(when: datetime, line: str, timestamps: bool) -> str:
    if timestamps:
        return f"{rfc3339_micro(when)} {line}\n"
    return line + "\n"
