"""Tests of nrop.suite.waiting.wait_for's polling schedule (on a fake clock: no real waiting)."""

from __future__ import annotations

import pytest

from nrop.suite.waiting import WaitTimeout, wait_for


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
