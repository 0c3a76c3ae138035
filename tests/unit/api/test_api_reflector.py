"""client-go's reflector rule, as tables: what comes after a list, an event, a bookmark, a closed
watch or a failure; the back-off; the watch timeout; the store's keys, events and re-lists."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.backoff import Backoff
from nrop.api.reflector import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    Cursor,
    Step,
    apply_event,
    backoff_schedule,
    closed,
    expired,
    failed,
    listed,
    object_key,
    observed,
    relist_changes,
    watch_timeout,
)

LIST, WATCH = Step.LIST, Step.WATCH


def obj(name: str, rv: str = "1", namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


# ------------------------------------------------------------------------------ what comes next

SCHEDULE = Backoff(initial=1.0, factor=2.0, maximum=5.0)
Outcome = tuple[Any, ...]


def step(cursor: Cursor, outcome: Outcome) -> Cursor:
    """Feed one outcome of a request to the rule, as a loop does."""
    match outcome:
        case ("listed", rv):
            return listed(cursor, {"metadata": {"resourceVersion": rv}, "items": []})
        case ("event", rv):
            return observed(cursor, obj("a", rv))
        case ("bookmark", rv):
            return observed(cursor, {"metadata": {"resourceVersion": rv}})
        case ("closed",):
            return closed(cursor)
        case ("failed", code, reason):
            return failed(cursor, code, reason, SCHEDULE)
    raise AssertionError(outcome)


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        pytest.param([], Cursor(LIST, ""), id="starts-with-a-list"),
        pytest.param([("listed", "10")], Cursor(WATCH, "10"), id="list-then-watch-from-its-rv"),
        pytest.param([("listed", "10"), ("event", "12")], Cursor(WATCH, "12"), id="an-event-moves-the-rv-on"),
        pytest.param(
            [("listed", "10"), ("event", "12"), ("bookmark", "30")],
            Cursor(WATCH, "30"),
            id="a-bookmark-moves-the-rv-on",
        ),
        pytest.param(
            [("listed", "10"), ("bookmark", "")], Cursor(WATCH, "10"), id="an-object-without-rv-keeps-it"
        ),
        pytest.param(
            [("listed", "10"), ("event", "12"), ("closed",)],
            Cursor(WATCH, "12"),
            id="closed-watch-rewatches-from-the-last-rv",
        ),
        pytest.param(
            [("listed", "10"), ("failed", 410, "Expired")],
            Cursor(LIST, "10", expired=True),
            id="expired-watch-relists-at-once",
        ),
        pytest.param(
            [("listed", "10"), ("failed", 410, "")],
            Cursor(LIST, "10", expired=True),
            id="410-without-reason-is-expired",
        ),
        pytest.param(
            [("listed", "10"), ("failed", 0, "Gone")],
            Cursor(LIST, "10", expired=True),
            id="reason-gone-is-expired",
        ),
        pytest.param(
            [("listed", "10"), ("failed", 500, "InternalError")],
            Cursor(LIST, "10", delay=1.0, failures=1),
            id="failed-watch-relists-after-the-backoff",
        ),
        pytest.param(
            [("failed", 0, "")],
            Cursor(LIST, "", delay=1.0, failures=1),
            id="no-response-backs-off",
        ),
        pytest.param(
            [("failed", 410, "Expired")],
            Cursor(LIST, "", delay=1.0, failures=1),
            id="an-expired-list-backs-off",
        ),
        pytest.param(
            [("failed", 500, "InternalError")] * 5,
            Cursor(LIST, "", delay=5.0, failures=5),
            id="backoff-doubles-to-its-cap",
        ),
        pytest.param(
            [("failed", 500, "InternalError"), ("listed", "10"), ("failed", 500, "InternalError")],
            Cursor(LIST, "10", delay=2.0, failures=2),
            id="a-list-alone-does-not-reset-the-backoff",
        ),
        pytest.param(
            [("failed", 500, "x"), ("listed", "10"), ("failed", 410, "Expired")],
            Cursor(LIST, "10", failures=1, expired=True),
            id="expiry-keeps-the-failure-count",
        ),
        pytest.param(
            [("failed", 500, "x"), ("listed", "10"), ("bookmark", "11"), ("failed", 500, "x")],
            Cursor(LIST, "11", delay=1.0, failures=1),
            id="a-watch-event-resets-the-backoff",
        ),
        pytest.param(
            [("failed", 500, "x"), ("listed", "10"), ("closed",), ("failed", 500, "x")],
            Cursor(LIST, "10", delay=1.0, failures=1),
            id="a-normal-close-resets-the-backoff",
        ),
    ],
)
def test_what_comes_next(outcomes: list[Outcome], expected: Cursor) -> None:
    cursor = Cursor()
    for outcome in outcomes:
        cursor = step(cursor, outcome)
    assert cursor == expected


@pytest.mark.parametrize(
    ("code", "reason", "is_expired"),
    [
        pytest.param(410, "Expired", True, id="410-expired"),
        pytest.param(410, "Expired: too old resource version: 3 (9)", True, id="python-client-reason"),
        pytest.param(0, "Expired", True, id="reason-expired"),
        pytest.param(0, "Gone", True, id="reason-gone"),
        pytest.param(404, "NotFound", False, id="not-found"),
        pytest.param(0, "ConnectionError", False, id="no-response"),
    ],
)
def test_expired(code: int, reason: str, is_expired: bool) -> None:
    assert expired(code, reason) is is_expired


def test_client_gos_backoff_schedule() -> None:
    schedule = backoff_schedule()
    assert [schedule.delay(n) for n in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


@pytest.mark.parametrize(
    ("rand", "minimum", "seconds"),
    [
        pytest.param(0.0, 300.0, 300, id="five-minutes-at-least"),
        pytest.param(0.999, 300.0, 599, id="under-ten-minutes"),
        pytest.param(0.5, 2.0, 3, id="a-short-minimum"),
        pytest.param(0.0, 0.1, 1, id="at-least-one-second"),
    ],
)
def test_watch_timeout(rand: float, minimum: float, seconds: int) -> None:
    assert watch_timeout(rand, minimum) == seconds


# ------------------------------------------------------------------------------ the store


@pytest.mark.parametrize(
    ("item", "key"),
    [
        pytest.param(obj("p"), "ns/p", id="namespaced"),
        pytest.param(obj("n1", namespace=None), "n1", id="cluster-scoped"),
    ],
)
def test_object_key(item: dict[str, Any], key: str) -> None:
    assert object_key(item) == key


@pytest.mark.parametrize(
    ("events", "store", "calls"),
    [
        pytest.param([(ADDED, "a", "1")], {"ns/a": "1"}, [(ADDED, "a", None)], id="added"),
        pytest.param(
            [(ADDED, "a", "1"), (MODIFIED, "a", "2")],
            {"ns/a": "2"},
            [(ADDED, "a", None), (MODIFIED, "a", "1")],
            id="modified-carries-the-old",
        ),
        pytest.param(
            [(MODIFIED, "b", "2")], {"ns/b": "2"}, [(ADDED, "b", None)], id="modified-unknown-is-added"
        ),
        pytest.param(
            [(ADDED, "a", "1"), (ADDED, "a", "3")],
            {"ns/a": "3"},
            [(ADDED, "a", None), (MODIFIED, "a", "1")],
            id="added-known-is-modified",
        ),
        pytest.param(
            [(ADDED, "a", "1"), (DELETED, "a", "4")],
            {},
            [(ADDED, "a", None), (DELETED, "a", "1")],
            id="deleted-or-left-the-selection",
        ),
        pytest.param([(DELETED, "never", "4")], {}, [(DELETED, "never", None)], id="deleted-unknown"),
        pytest.param(
            [(ADDED, "a", "1"), (BOOKMARK, "a", "9"), ("ERROR", "b", "9")],
            {"ns/a": "1"},
            [(ADDED, "a", None)],
            id="bookmarks-and-others-change-nothing",
        ),
    ],
)
def test_apply_event(
    events: list[tuple[str, str, str]],
    store: dict[str, str],
    calls: list[tuple[str, str, str | None]],
) -> None:
    got: dict[str, dict[str, Any]] = {}
    made = []
    for event_type, name, rv in events:
        change = apply_event(got, event_type, obj(name, rv))
        if change is not None:
            kind, new, old = change
            made.append((kind, new["metadata"]["name"], old["metadata"]["resourceVersion"] if old else None))
    assert {key: o["metadata"]["resourceVersion"] for key, o in got.items()} == store
    assert made == calls


@pytest.mark.parametrize(
    ("before", "listed_items", "expected"),
    [
        pytest.param({}, [obj("a", "1")], [(ADDED, "ns/a", None)], id="first-list-adds"),
        pytest.param({"ns/a": obj("a", "1")}, [obj("a", "1")], [], id="unchanged-is-silent"),
        pytest.param(
            {"ns/a": obj("a", "1")}, [obj("a", "5")], [(MODIFIED, "ns/a", "1")], id="new-rv-modifies"
        ),
        pytest.param({"ns/a": obj("a", "1")}, [], [(DELETED, "ns/a", "1")], id="missing-deletes"),
        pytest.param(
            {"ns/a": obj("a", "1"), "ns/b": obj("b", "2")},
            [obj("b", "7"), obj("c", "8")],
            [(MODIFIED, "ns/b", "2"), (ADDED, "ns/c", None), (DELETED, "ns/a", "1")],
            id="mixed",
        ),
    ],
)
def test_relist_changes(
    before: dict[str, dict[str, Any]],
    listed_items: list[dict[str, Any]],
    expected: list[tuple[str, str, str | None]],
) -> None:
    store, changes = relist_changes(before, listed_items)
    assert store == {object_key(o): o for o in listed_items}
    got = [
        (kind, object_key(new), old["metadata"]["resourceVersion"] if old is not None else None)
        for kind, new, old in changes
    ]
    assert got == expected
