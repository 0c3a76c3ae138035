"""Waiting for cluster state: one generic ``wait_for`` that every specific waiter is built on.

A wait polls a getter until a predicate holds, stops early when a terminal
predicate says the state can no longer come, and on failure says what was
expected and what was seen instead ("expected pod ns/x to be Running, got
instead: …"), so a failed test shows what to look at.
"""

from __future__ import annotations

import pprint
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The awaited state did not come in time (or became impossible)."""


def _dump(value: object) -> str:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
    return pprint.pformat(value, width=110)


def wait_for(
    getter: Callable[[], T],
    predicate: Callable[[T], bool],
    description: str,
    timeout: float = 20.0,
    *,
    interval: float = 0.05,
    terminal: Callable[[T], bool] | None = None,
    immediate: bool = True,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Poll ``getter`` until ``predicate`` holds; return the value that satisfied it.

    ``terminal`` stops the wait at once when the value shows the state can no longer be
    reached (a pod that ended Failed will never become Running). ``immediate=False`` first
    waits one ``interval`` (upstream's ``PollUntilContextTimeout(..., immediate=false)``:
    the first look comes after the change being waited for had a chance to show).
    """
    deadline = clock() + timeout
    if not immediate:
        sleep(interval)
    value = getter()
    while not predicate(value):
        if terminal is not None and terminal(value):
            raise WaitTimeout(
                f"expected {description}, but it can no longer happen; got instead:\n{_dump(value)}"
            )
        if clock() >= deadline:
            raise WaitTimeout(f"expected {description} within {timeout:g}s, got instead:\n{_dump(value)}")
        sleep(interval)
        value = getter()
    return value
