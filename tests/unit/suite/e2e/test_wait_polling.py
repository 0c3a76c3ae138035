"""The generic polls: wait_for returns the satisfying value, times out with a dump, stops early on
terminal states; consistently holds for a window (Gomega's timing, or upstream's PollSteps) and fails
at the first value that breaks it. A fake clock: nothing sleeps."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nrop.suite.e2e.wait.polling import WaitTimeout, consistently, next_tick, wait_for


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


# ---------------------------------------------------------------------------------- consistently


class PollClock:
    """A fake clock whose getter takes ``poll_cost`` seconds, recording when each poll began."""

    def __init__(self, poll_cost: float = 0.0) -> None:
        self.now = 0.0
        self.poll_cost = poll_cost
        self.looks: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds

    def getter(self, values: list[str] | None = None) -> Callable[[], str]:
        def get() -> str:
            self.looks.append(self.now)
            self.now += self.poll_cost
            return values[len(self.looks) - 1] if values else "Pending"

        return get


@pytest.mark.parametrize(
    ("duration", "interval", "poll_cost", "looks"),
    [
        pytest.param(60, 5, 0.0, [5.0 * n for n in range(12)], id="no-poll-at-the-deadline"),
        pytest.param(30, 10, 0.0, [0.0, 10.0, 20.0], id="30s-window-10s-polls"),
        pytest.param(25, 10, 0.0, [0.0, 10.0, 20.0], id="window-not-a-multiple"),
        pytest.param(20, 10, 1.0, [0.0, 11.0], id="next-poll-after-the-last-one-ends"),
        pytest.param(5, 10, 0.0, [0.0], id="window-shorter-than-interval"),
    ],
)
def test_consistently_polls_like_gomega_and_lasts_the_window(
    duration: float, interval: float, poll_cost: float, looks: list[float]
) -> None:
    clock = PollClock(poll_cost)
    got = consistently(
        clock.getter(),
        lambda v: v == "Pending",
        "pod to stay Pending",
        duration,
        interval=interval,
        clock=clock,
        sleep=clock.sleep,
    )
    assert got == "Pending"
    assert clock.looks == looks
    assert clock.now == pytest.approx(duration)


@pytest.mark.parametrize(
    ("steps", "interval", "looks"),
    [
        pytest.param(3, 10, [10.0, 20.0, 30.0], id="WhileInPodPhase-3x10s"),
        pytest.param(1, 5, [5.0], id="one-step"),
    ],
)
def test_consistently_steps_sleep_before_each_poll(steps: int, interval: float, looks: list[float]) -> None:
    clock = PollClock()
    consistently(
        clock.getter(), lambda v: v == "Pending", "pod to stay Pending", interval=interval, steps=steps,
        clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert clock.looks == looks


@pytest.mark.parametrize(
    ("window", "message"),
    [
        pytest.param(
            {"duration": 60.0},
            "expected pod ns/x to stay Pending for 60s, got instead after 10.0s:\n'Running'",
            id="duration",
        ),
        pytest.param(
            {"steps": 3},
            "expected pod ns/x to stay Pending for 3 polls 10s apart, got instead at poll 2:\n'Running'",
            id="steps",
        ),
    ],
)
def test_consistently_fails_at_the_first_rejected_value(window: dict[str, float], message: str) -> None:
    clock = PollClock()
    values = ["Pending", "Running", "Pending", "Pending"]
    with pytest.raises(WaitTimeout) as caught:
        consistently(
            clock.getter(values), lambda v: v == "Pending", "pod ns/x to stay Pending", interval=10.0,
            clock=clock, sleep=clock.sleep, **window,
        )  # fmt: skip
    assert str(caught.value) == message
    assert len(clock.looks) == 2


def test_consistently_failure_text_is_the_callers_when_given() -> None:
    clock = PollClock()
    with pytest.raises(WaitTimeout) as caught:
        consistently(
            clock.getter(["Running"]), lambda v: v == "Pending", "pod to stay Pending", 60.0, interval=10.0,
            failure=lambda v: f"pod unexpected phase {v!r}", clock=clock, sleep=clock.sleep,
        )  # fmt: skip
    assert str(caught.value) == "pod unexpected phase 'Running'"
    assert clock.now == 0.0


@pytest.mark.parametrize(
    "window",
    [
        pytest.param({}, id="neither"),
        pytest.param({"duration": 10.0, "steps": 2}, id="both"),
        pytest.param({"steps": 0}, id="no-steps"),
    ],
)
def test_consistently_needs_one_window(window: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="consistently"):
        consistently(lambda: 1, lambda v: True, "x", interval=1.0, sleep=lambda s: None, **window)


def test_a_getter_error_ends_consistently_as_it_is() -> None:
    def getter() -> str:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        consistently(getter, lambda v: True, "x", 10.0, interval=1.0, sleep=lambda s: None)


@pytest.mark.parametrize(
    ("duration", "interval", "poll_cost", "looks", "ends"),
    [
        pytest.param(60, 10, 0.0, [10.0 * n for n in range(7)], 60.0, id="ensurePodsNotEvicted-1m/10s"),
        pytest.param(25, 10, 0.0, [0.0, 10.0, 20.0, 30.0], 30.0, id="a-look-past-the-window"),
        pytest.param(20, 10, 1.0, [0.0, 11.0, 22.0], 23.0, id="slow-polls"),
    ],
)
def test_consistently_last_look_polls_once_the_window_has_ended(
    duration: float, interval: float, poll_cost: float, looks: list[float], ends: float
) -> None:
    clock = PollClock(poll_cost)
    consistently(
        clock.getter(), lambda v: v == "Pending", "pod to stay Pending", duration, interval=interval,
        last_look=True, clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert clock.looks == looks
    assert clock.now == pytest.approx(ends)


@pytest.mark.parametrize(
    ("interval", "consumed", "now", "expected"),
    [
        (1.0, 0.0, 0.3, (0.7, 1.0)),  # a short look: the next one on the next tick
        (1.0, 0.0, 0.0, (1.0, 1.0)),
        (1.0, 0.0, 1.0, (0.0, 1.0)),  # the tick fell due as the look ended: at once
        (1.0, 0.0, 1.4, (0.0, 1.0)),  # one tick waiting: at once, and it is the 1.0 tick
        (1.0, 0.0, 3.6, (0.0, 3.0)),  # ticks 2.0 and 3.0 dropped: at once, the next look on 4.0
        (1.0, 3.0, 3.2, (0.8, 4.0)),
        (5.0, 10.0, 24.0, (0.0, 20.0)),
        (0.0, 3.0, 3.5, (0.0, 3.5)),  # no interval: at once
    ],
)
def test_next_tick_is_a_go_ticker(
    interval: float, consumed: float, now: float, expected: tuple[float, float]
) -> None:
    delay, tick = next_tick(interval, consumed, now)
    assert (delay, tick) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("fixed_rate", "looks"),
    [
        # each look takes 0.4s: Eventually's polls drift, PollUntilContextTimeout's stay 1s apart
        (False, [0.0, 1.4, 2.8, 4.2, 5.6]),
        (True, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    ],
)
def test_fixed_rate_keeps_the_looks_one_interval_apart(fixed_rate: bool, looks: list[float]) -> None:
    clock = FakeClock()
    seen: list[float] = []

    def look() -> str:
        seen.append(clock.now)
        clock.now += 0.4
        return "Pending"

    with pytest.raises(WaitTimeout, match=r"within 5\.5s"):
        wait_for(
            look,
            lambda v: False,
            "pod to be Running",
            5.5,
            interval=1.0,
            fixed_rate=fixed_rate,
            clock=clock,
            sleep=clock.sleep,
        )
    assert seen == pytest.approx(looks)


def test_fixed_rate_look_that_overruns_a_tick_is_followed_at_once() -> None:
    clock = FakeClock()
    seen: list[float] = []
    durations = iter([2.5, 0.1, 0.1])

    def look() -> int:
        seen.append(clock.now)
        clock.now += next(durations)
        return len(seen)

    wait_for(
        look,
        lambda n: n == 3,
        "three looks",
        60,
        interval=1.0,
        fixed_rate=True,
        clock=clock,
        sleep=clock.sleep,
    )
    assert seen == pytest.approx([0.0, 2.5, 3.0])


def test_fixed_rate_fails_at_the_deadline_without_a_late_look() -> None:
    clock = FakeClock()
    seen: list[float] = []

    def look() -> str:
        seen.append(clock.now)
        return "Pending"

    with pytest.raises(WaitTimeout):
        wait_for(
            look, lambda v: False, "x", 25, interval=10.0, fixed_rate=True, clock=clock, sleep=clock.sleep
        )
    assert seen == [0.0, 10.0, 20.0]
    assert clock.now == pytest.approx(25.0)
