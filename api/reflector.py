"""client-go's Reflector (``tools/cache/reflector.go``) as pure decisions: the one list-watch-relist rule.

Two loops follow it, each doing its own I/O and logging: the scheduler's informers
(:mod:`nrop.sched.informers`, asyncio) and the exporter's terminal-pod watch
(:mod:`nrop.rte.terminalpods`, a thread). This module owns what they decide:

* where a reflector stands (:class:`Cursor`): its next request (list or watch), the
  resourceVersion to watch from, how long to wait first, how many failures in a row;
* a list is followed by a watch from the list's resourceVersion (:func:`listed`);
* every watch event moves the resourceVersion on to its object's, a bookmark included,
  which changes nothing else (:func:`observed`);
* a watch the server ends (its ``timeoutSeconds``, :func:`watch_timeout`: 5 to 10 minutes)
  is opened again from the last resourceVersion seen (:func:`closed`);
* a failure (an error response, an ``ERROR`` event, a broken connection) makes it list
  again (:func:`failed`): at once when a watch's resourceVersion expired (:func:`expired`:
  410, after a compaction), else after the back-off (:func:`backoff_schedule`: 0.8 s doubling to
  30 s), which starts over once a watch works again (an event, or a normal end);
* the local store, keyed ``namespace/name`` (:func:`object_key`): :func:`apply_event` folds
  one watch event into it and :func:`relist_changes` replaces it by a list's items, both
  returning the ADDED / MODIFIED / DELETED calls a handler is told.

Both loops differ from client-go in the same ways, kept on purpose: a list asks for the
latest state (no resourceVersion, a quorum read), not ``0`` or the last one seen; after a
410 the list comes at once, where client-go's ``BackoffUntil`` pauses between two
``ListAndWatch`` calls; the back-off has no jitter and starts over when a watch works, not
after two minutes without a failure; a refused connection or a 429 when opening a watch
lists again (client-go retries the watch), and a watch that ends within a second without
an event counts as a normal end (client-go's ``VeryShortWatchError`` backs off and lists).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

from nrop.api.backoff import Backoff

__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "MIN_WATCH_TIMEOUT",
    "MODIFIED",
    "Change",
    "Cursor",
    "Step",
    "apply_event",
    "backoff_schedule",
    "closed",
    "expired",
    "failed",
    "listed",
    "object_key",
    "observed",
    "relist_changes",
    "watch_timeout",
]

Obj = dict[str, Any]
#: A handler call: the event type, the object, its previous state in the store (None if new).
Change = tuple[str, Obj, "Obj | None"]

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"
BOOKMARK: Final = "BOOKMARK"

#: client-go's reflector asks for watches of 5 to 10 minutes (``defaultMinWatchTimeout``).
MIN_WATCH_TIMEOUT: Final = 300.0


class Step(enum.StrEnum):
    """A reflector's next request."""

    LIST = "list"
    WATCH = "watch"


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a reflector stands; a new one starts with a list."""

    step: Step = Step.LIST
    #: Watch from here: the last list's, then the last event's resourceVersion.
    resource_version: str = ""
    #: Seconds to wait before the step.
    delay: float = 0.0
    #: Failures in a row since a watch last worked: the back-off's exponent.
    failures: int = 0
    #: The step is a relist because the resourceVersion expired (a 410), not a failure.
    expired: bool = False


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def backoff_schedule() -> Backoff:
    """client-go's reflector back-off: 0.8 s doubling to 30 s (read through ``Backoff.delay``)."""
    return Backoff(initial=0.8, maximum=30.0)


def watch_timeout(rand: float, minimum: float = MIN_WATCH_TIMEOUT) -> int:
    """The ``timeoutSeconds`` of a watch: ``minimum`` to twice that, ``rand`` in [0, 1) (at least 1)."""
    return max(1, int(minimum * (1 + rand)))


def expired(code: int, reason: str) -> bool:
    """The resourceVersion asked for is compacted away (client-go's ``isExpiredError``): list again."""
    return code == 410 or reason in ("Expired", "Gone")


def listed(cursor: Cursor, list_obj: Mapping[str, Any]) -> Cursor:
    """After a list: watch from the list's resourceVersion."""
    return Cursor(Step.WATCH, _rv(list_obj), failures=cursor.failures)


def observed(cursor: Cursor, obj: Mapping[str, Any]) -> Cursor:
    """After a watch event (a bookmark too): its resourceVersion is the one to resume from."""
    return Cursor(Step.WATCH, _rv(obj) or cursor.resource_version)


def closed(cursor: Cursor) -> Cursor:
    """After the server ended a watch: watch again from the last resourceVersion seen."""
    return Cursor(Step.WATCH, cursor.resource_version)


def failed(cursor: Cursor, code: int, reason: str, schedule: Backoff) -> Cursor:
    """After a failed list or watch (``code`` 0 without a response): list again, when says ``schedule``.

    Only an expired watch lists at once: a list asks for the latest state, so a list that
    fails (410 included) backs off, as client-go's does after its one retry.
    """
    if cursor.step is Step.WATCH and expired(code, reason):
        return Cursor(Step.LIST, cursor.resource_version, failures=cursor.failures, expired=True)
    return Cursor(Step.LIST, cursor.resource_version, schedule.delay(cursor.failures), cursor.failures + 1)


def apply_event(store: MutableMapping[str, Obj], event_type: str, obj: Obj) -> Change | None:
    """Fold one watch event into ``store``; the handler call it makes, None for a bookmark.

    Whether an object is ADDED or MODIFIED is the store's call, as in client-go's shared
    informers; DELETED carries the store's last state of the object as the old one.
    """
    if event_type not in (ADDED, MODIFIED, DELETED):
        return None
    key = object_key(obj)
    if event_type == DELETED:
        return DELETED, obj, store.pop(key, None)
    old = store.get(key)
    store[key] = obj
    return (ADDED if old is None else MODIFIED), obj, old


def relist_changes(store: Mapping[str, Obj], items: Iterable[Obj]) -> tuple[dict[str, Obj], list[Change]]:
    """The new store after a list, and the handler calls that lead from ``store`` to it.

    New keys are ADDED, keys whose resourceVersion changed are MODIFIED (with the old
    object), keys no longer listed are DELETED (with their last known state).  Unchanged
    objects cause no call.
    """
    fresh = {object_key(obj): obj for obj in items}
    changes: list[Change] = []
    for key, obj in fresh.items():
        old = store.get(key)
        if old is None:
            changes.append((ADDED, obj, None))
        elif _rv(old) != _rv(obj):
            changes.append((MODIFIED, obj, old))
    changes.extend((DELETED, old, old) for key, old in store.items() if key not in fresh)
    return fresh, changes
