"""Waiting for cluster state: ``wait_for`` (Gomega's ``Eventually``) and ``consistently`` (its
``Consistently``), the two polls every specific waiter and spec check is built on.

A wait polls a getter until a predicate holds, stops early when a terminal
predicate says the state can no longer come, and on failure says what was
expected and what was seen instead ("expected pod ns/x to be Running, got
instead: …"), so a failed test shows what to look at. A consistency check polls
a getter for a whole window and fails at the first value the predicate rejects,
in the same words. Both take their clock and sleep as arguments, so their timing
is tested without sleeping.
"""

from __future__ import annotations

import math
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


def next_tick(interval: float, consumed: float, now: float) -> tuple[float, float]:
    """When the next look of a fixed-rate poll comes: ``(seconds to sleep, the tick it takes)``.

    A Go ``time.Ticker`` fires every ``interval`` from its start and keeps at most one tick
    waiting: ``consumed`` is the time of the tick the last look took. When a tick fell due
    while that look ran, the next look comes at once and the ticks it missed are dropped (the
    one after it is the first one past ``now``); otherwise it comes on the next tick. With no
    interval (tests), the next look comes at once.
    """
    if interval <= 0:
        return 0.0, now
    due = consumed + interval
    if now >= due:
        return 0.0, consumed + math.floor((now - consumed) / interval) * interval
    return due - now, due


def wait_for(
    getter: Callable[[], T],
    predicate: Callable[[T], bool],
    description: str,
    timeout: float = 20.0,
    *,
    interval: float = 0.05,
    terminal: Callable[[T], bool] | None = None,
    immediate: bool = True,
    fixed_rate: bool = False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Poll ``getter`` until ``predicate`` holds; return the value that satisfied it.

    ``terminal`` stops the wait at once when the value shows the state can no longer be
    reached (a pod that ended Failed will never become Running). ``immediate=False`` first
    waits one ``interval`` (upstream's ``PollUntilContextTimeout(..., immediate=false)``:
    the first look comes after the change being waited for had a chance to show).

    By default the next look comes ``interval`` after a look ends, as Gomega's ``Eventually``
    polls. ``fixed_rate=True`` is apimachinery's ``PollUntilContextTimeout``, which every
    waiter of upstream's ``internal/wait`` and test helpers uses: a ticker started with the
    wait sets the looks ``interval`` apart however long each takes (:func:`next_tick`), and
    no look comes once ``timeout`` has passed; the wait fails then. Under load, where a look
    takes a good part of a second, the difference decides whether a state that lasts about
    one interval (a pod Running for a second) is seen at all.
    """
    started = clock()
    deadline = started + timeout
    consumed = started
    if not immediate:
        sleep(interval)
        consumed += interval
    value = getter()
    while not predicate(value):
        if terminal is not None and terminal(value):
            raise WaitTimeout(
                f"expected {description}, but it can no longer happen; got instead:\n{_dump(value)}"
            )
        now = clock()
        delay, consumed = next_tick(interval, consumed, now) if fixed_rate else (interval, now)
        if now >= deadline or (fixed_rate and consumed > deadline):
            if deadline > now:  # no tick before the deadline: the wait lasts its whole timeout
                sleep(deadline - now)
            raise WaitTimeout(f"expected {description} within {timeout:g}s, got instead:\n{_dump(value)}")
        if delay > 0:
            sleep(delay)
        value = getter()
    return value


def consistently(
    getter: Callable[[], T],
    predicate: Callable[[T], bool],
    description: str,
    duration: float | None = None,
    *,
    interval: float,
    steps: int | None = None,
    last_look: bool = False,
    failure: Callable[[T], str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``predicate`` must hold for every value ``getter`` returns over a window; return the last.

    Three windows, each an upstream one:

    * ``duration``: Gomega's ``Consistently(...).WithTimeout(duration).WithPolling(interval)``. A
      first poll at once, the next ``interval`` after each poll ends, none once the window has
      ended; success when ``duration`` has elapsed (the wait lasts the whole window).
    * ``duration`` with ``last_look=True``: upstream's hand-written deadline loops
      (``ensurePodsNotEvicted``: poll, return if that poll came after the deadline, else sleep
      ``interval``). The polls go on until one comes once the window has ended; that one is
      checked too, and the wait ends right after it.
    * ``steps``: upstream's ``PollSteps`` loops (``WhileInPodPhase``, the specs'
      ``for step < maxStep { time.Sleep(interval); ... }``): ``steps`` polls, each after sleeping
      ``interval``.

    The first value the predicate rejects raises :class:`WaitTimeout` at once, with
    ``failure(value)`` as its text when given (a spec's upstream message), else what was expected
    and what was seen. An error of the getter ends the check as it is.
    """
    if (duration is None) == (steps is None):
        raise ValueError("consistently: give exactly one of duration and steps")
    if steps is not None and steps < 1:
        raise ValueError(f"consistently: steps must be at least 1, got {steps}")
    started = clock()

    def check(value: T, polled: int) -> None:
        if predicate(value):
            return
        if failure is not None:
            raise WaitTimeout(failure(value))
        if steps is not None:
            window = f"for {steps} polls {interval:g}s apart, got instead at poll {polled}"
        else:
            window = f"for {duration:g}s, got instead after {clock() - started:.1f}s"
        raise WaitTimeout(f"expected {description} {window}:\n{_dump(value)}")

    if steps is not None:
        for polled in range(1, steps + 1):
            sleep(interval)
            value = getter()
            check(value, polled)
        return value

    assert duration is not None
    deadline = started + duration
    polled = 1
    value = getter()
    while True:
        check(value, polled)
        remaining = deadline - clock()
        if last_look:
            if remaining <= 0:  # this poll came once the window had ended: it was the last
                return value
        elif remaining <= interval:  # the window ends before the next poll would come
            if remaining > 0:
                sleep(remaining)
            return value
        sleep(interval)
        polled += 1
        value = getter()
