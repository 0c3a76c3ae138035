"""The generic waiter: returns the satisfying value, times out with a dump, stops early on terminal states."""

from __future__ import annotations

import pytest

from nrop.suite.e2e.wait.polling import WaitTimeout, wait_for


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_returns_the_value_that_satisfied_the_predicate() -> None:
    values = iter(["Pending", "Pending", "Running"])
    clock = FakeClock()
    got = wait_for(
        lambda: next(values), lambda v: v == "Running", "pod to be Running", clock=clock, sleep=clock.sleep
    )
    assert got == "Running"
    assert clock.now == pytest.approx(0.1)


def test_timeout_says_what_was_expected_and_what_was_seen() -> None:
    clock = FakeClock()
    with pytest.raises(WaitTimeout) as caught:
        wait_for(
            lambda: {"phase": "Pending"},
            lambda v: False,
            "pod ns/x to be Running",
            1.0,
            clock=clock,
            sleep=clock.sleep,
        )
    assert str(caught.value).startswith(
        "expected pod ns/x to be Running within 1s, got instead:\n{'phase': 'Pending'}"
    )
    assert clock.now >= 1.0


def test_terminal_state_stops_the_wait_early() -> None:
    clock = FakeClock()
    with pytest.raises(WaitTimeout, match="can no longer happen") as caught:
        wait_for(
            lambda: "Failed",
            lambda v: v == "Running",
            "pod to be Running",
            60,
            terminal=lambda v: v == "Failed",
            clock=clock,
            sleep=clock.sleep,
        )
    assert "Failed" in str(caught.value)
    assert clock.now == 0.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.looks: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(("immediate", "first_look"), [(True, 0.0), (False, 2.0)])
def test_first_look_immediate_or_after_one_interval(immediate: bool, first_look: float) -> None:
    clock = Clock()

    def getter() -> float:
        clock.looks.append(clock.now)
        return clock.now

    wait_for(getter, lambda now: now >= 4.0, "4s", 10.0, interval=2.0, immediate=immediate,
             clock=lambda: clock.now, sleep=clock.sleep)  # fmt: skip
    assert clock.looks[0] == first_look
    assert clock.looks[-1] == 4.0


def test_timeout_message_names_expectation_and_last_value() -> None:
    clock = Clock()
    with pytest.raises(WaitTimeout, match=r"expected the answer within 3s, got instead:\n41"):
        wait_for(lambda: 41, lambda v: v == 42, "the answer", 3.0, interval=1.0, immediate=False,
                 clock=lambda: clock.now, sleep=clock.sleep)  # fmt: skip
