"""Table tests of nrop.suite.e2e.timeouts: E2E_NROP_* variables (Go durations), local intervals."""

from __future__ import annotations

import pytest

from nrop.suite.e2e.timeouts import ENV_VARS, Timeouts, settle_interval_covering, spec_poll


def test_upstream_defaults() -> None:
    t = Timeouts.from_env({})
    assert (t.teardown, t.cooldown, t.settle_interval, t.settle_timeout, t.cooldown_threshold) == (
        180.0,
        30.0,
        9.0,
        120.0,
        5,
    )
    assert (t.cooldown_interval, t.poll_interval, t.poll_timeout) == (5.0, 1.0, 180.0)
    assert (t.mcp_update_timeout, t.mcp_update_interval) == (3600.0, 30.0)


@pytest.mark.parametrize(
    ("env", "local", "field", "value"),
    [
        ({"E2E_NROP_TEST_TEARDOWN": "1m"}, False, "teardown", 60.0),
        ({"E2E_NROP_TEST_COOLDOWN": "5s"}, False, "cooldown", 5.0),
        ({"E2E_NROP_TEST_SETTLE_INTERVAL": "3s"}, False, "settle_interval", 3.0),
        ({"E2E_NROP_TEST_SETTLE_TIMEOUT": "4m"}, False, "settle_timeout", 240.0),
        ({"E2E_NROP_COOLDOWN_THRESHOLD": "7"}, False, "cooldown_threshold", 7),
        ({"E2E_NROP_COOLDOWN_THRESHOLD": "x"}, False, "cooldown_threshold", 5),
        ({"E2E_NROP_TEST_TEARDOWN": "soon"}, False, "teardown", 180.0),
        ({}, True, "settle_interval", 0.5),
        ({}, True, "cooldown_interval", 0.5),
        ({}, True, "settle_timeout", 120.0),
        ({}, True, "cooldown_threshold", 5),
        ({"E2E_NROP_TEST_SETTLE_INTERVAL": "9s"}, True, "settle_interval", 9.0),
        ({}, True, "mcp_update_interval", 1.0),
        ({}, True, "mcp_update_timeout", 3600.0),
        ({"E2E_NROP_MCP_UPDATE_INTERVAL": "30s"}, True, "mcp_update_interval", 30.0),
    ],
)
def test_from_env(env: dict[str, str], local: bool, field: str, value: float) -> None:
    assert getattr(Timeouts.from_env(env, local=local), field) == value


def test_as_env_round_trips() -> None:
    t = Timeouts.from_env({"E2E_NROP_TEST_SETTLE_TIMEOUT": "90s", "E2E_NROP_COOLDOWN_THRESHOLD": "3"})
    env = t.as_env()
    assert set(env) == set(ENV_VARS.values())
    assert Timeouts.from_env(env) == t


@pytest.mark.parametrize(
    ("interval", "threshold", "period", "want"),
    [
        (9.0, 5, 10.0, 9.0),  # upstream: 4 x 9s = 36s already spans a 10s refresh
        (1.0, 5, 10.0, 2.75),  # local: stretched to (10s + 1s) / 4
        (1.0, 5, 1.0, 1.0),
        (0.5, 5, 2.0, 0.75),  # local with the embedded target's 2s refresh period: a 3s window
        (1.0, 1, 10.0, 1.0),  # a single observation has no window
        (0.5, 3, 3.0, 2.0),
    ],
)
def test_settle_interval_covering(interval: float, threshold: int, period: float, want: float) -> None:
    assert settle_interval_covering(interval, threshold, period) == pytest.approx(want)


@pytest.mark.parametrize(
    ("interval", "threshold", "refresh", "resync", "want"),
    [
        (9.0, 5, 10.0, 5.0, 9.0),  # upstream: 36s spans its 10s refresh and 5s resync
        (0.5, 5, 2.0, 5.0, 2.0),  # embedded: 2s refresh + 5s resync + 1s = an 8s window
        (0.5, 5, 2.0, 0.0, 0.75),  # the scheduler's cache off: the refresh alone
    ],
)
def test_settle_window_spans_the_scheduler_cache_resync(
    interval: float, threshold: int, refresh: float, resync: float, want: float
) -> None:
    assert settle_interval_covering(interval, threshold, refresh, resync) == pytest.approx(want)


@pytest.mark.parametrize(
    ("local", "upstream", "expected"),
    [(False, 5.0, 5.0), (False, 0.5, 0.5), (True, 5.0, 1.0), (True, 30.0, 1.0), (True, 0.5, 0.5)],
)
def test_spec_poll_is_upstreams_on_a_real_cluster_and_capped_on_the_embedded_one(
    local: bool, upstream: float, expected: float
) -> None:
    assert spec_poll(upstream, local=local) == expected
    assert Timeouts.from_env({}, local=local).poll(upstream) == expected
