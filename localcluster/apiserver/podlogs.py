"""Container logs as the API server serves them through ``pods/log``.

Whoever runs a container (the emulated kubelet) appends its output here; the
log endpoint reads it with the upstream options (``tailLines``, ``limitBytes``,
``timestamps``, ``sinceSeconds``, ``previous``) and can follow new lines.

Per container the current instance and the previous one (``rotate`` at a restart)
are kept; each keeps at most :data:`MAX_CHARS` characters of its latest lines, like the kubelet's
``containerLogMaxSize`` (10 MiB) rotation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from nrop.api.metatime import rfc3339_micro

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


@dataclass(frozen=True)
class LogQuery:
    container: str
    previous: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    timestamps: bool = False
    since_seconds: int | None = None


class PodLogs:
    """Per (namespace, pod, container, instance) log buffers; ``rotate`` starts a new instance."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, str, str], list[_Log]] = {}

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
