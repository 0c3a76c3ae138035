"""The one exponential back-off: its schedule, and the running count of a loop that retries."""

from __future__ import annotations

from nrop.api.backoff import Backoff


def test_backoff_doubles_to_the_cap_and_resets() -> None:
    backoff = Backoff(initial=0.8, factor=2, maximum=5)
    assert [backoff.delay(n) for n in range(5)] == [0.8, 1.6, 3.2, 5, 5]
    assert [backoff.next_delay() for _ in range(5)] == [0.8, 1.6, 3.2, 5, 5]
    backoff.reset()
    assert backoff.next_delay() == 0.8
