"""The scheduler's leader-election timing (client-go's NewLeaderElector checks); the Lease rule is tests/unit/api/test_api_leases.py."""

from __future__ import annotations

import pytest

from nrop.sched.config.election import ElectionTiming
from nrop.sched.errors import ConfigError


@pytest.mark.parametrize(
    ("timing", "field", "text"),
    [
        pytest.param(
            (15, 15, 2),
            "leaderElection.leaseDuration",
            "must be greater than renewDeadline",
            id="lease-not-above-renew",
        ),
        pytest.param(
            (15, 10, 9),
            "leaderElection.renewDeadline",
            "must be greater than retryPeriod*1.2",
            id="renew-not-above-jittered-retry",
        ),
        pytest.param((15, 10, 0), "leaderElection.retryPeriod", "must be greater than zero", id="zero-retry"),
        pytest.param(
            (-1, 10, 2), "leaderElection.leaseDuration", "must be greater than zero", id="negative-lease"
        ),
    ],
)
def test_timing_validation(timing: tuple[float, float, float], field: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        ElectionTiming(*timing)
    assert info.value.field == field and text in str(info.value)


def test_timing_defaults_are_kube_schedulers() -> None:
    timing = ElectionTiming()
    assert (timing.lease_duration, timing.renew_deadline, timing.retry_period) == (15.0, 10.0, 2.0)
    assert timing.lease_duration_seconds == 15
    assert ElectionTiming(0.5, 0.4, 0.1).lease_duration_seconds == 1
