"""Every timeout and poll interval of the suite, in one dataclass with its ``E2E_NROP_*`` twins.

Defaults are upstream's (``test/internal/fixture``, ``test/internal/configuration``,
``internal/wait``). :meth:`Timeouts.from_env` reads the environment variables the way
upstream's fixture does: a Go duration (``30s``, ``2m``, ``1m30s``, ``500ms``); a value that
does not parse is logged and the default is kept.

``local=True`` (the embedded cluster, whose exporters publish within a second) shortens
the *poll intervals* of the NRT settle and cooldown checks and of the waiters; timeouts,
thresholds and what is checked stay the same. A variable set explicitly always wins.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields

from nrop.api.durations import parse_duration

__all__ = ["ENV_VARS", "LOCAL_SPEC_POLL", "Timeouts", "settle_interval_covering", "spec_poll"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timeouts:
    """Seconds (floats) and counts; field comments name the upstream variable and default."""

    #: E2E_NROP_TEST_TEARDOWN (180s): max wait for the per-test namespace to be gone.
    teardown: float = 180.0
    #: E2E_NROP_TEST_COOLDOWN (30s): sleep after a test when there is no initial NRT list.
    cooldown: float = 30.0
    #: E2E_NROP_TEST_SETTLE_INTERVAL (9s): poll interval of ``settle_nrts`` (MustSettleNRT).
    settle_interval: float = 9.0
    #: E2E_NROP_TEST_SETTLE_TIMEOUT (2m): timeout of ``settle_nrts`` and of the post-test cooldown.
    settle_timeout: float = 120.0
    #: E2E_NROP_COOLDOWN_THRESHOLD (5): consecutive identical pod fingerprints per NRT = settled.
    cooldown_threshold: int = 5
    #: Poll interval of the post-test cooldown (upstream: a constant 5s).
    cooldown_interval: float = 5.0
    #: Defaults of the waiters (upstream ``internal/wait``: 1s / 3m).
    poll_interval: float = 1.0
    poll_timeout: float = 180.0
    #: Namespace creation/deletion polling (1s).
    namespace_interval: float = 1.0
    #: Padding pods must be Running within this (3m).
    padding_pods_running: float = 180.0
    #: Poll interval of ``nrt.get_updated``/``get_updated_for_node`` (5s).
    nrt_update_interval: float = 5.0
    #: E2E_NROP_MCP_UPDATE_TIMEOUT (60m) / E2E_NROP_MCP_UPDATE_INTERVAL (30s).
    mcp_update_timeout: float = 3600.0
    mcp_update_interval: float = 30.0
    #: Specs poll faster than upstream (the embedded cluster); see :func:`spec_poll`.
    fast_spec_polls: bool = False

    def poll(self, upstream: float) -> float:
        """The interval a spec polls at where upstream polls every ``upstream`` seconds."""
        return spec_poll(upstream, local=self.fast_spec_polls)

    @classmethod
    def from_env(cls, environ: Mapping[str, str], local: bool = False) -> Timeouts:
        values: dict[str, float | int] = {}
        if local:
            values.update(_LOCAL_INTERVALS)
        for name, var in ENV_VARS.items():
            raw = environ.get(var)
            if raw is None:
                continue
            default = getattr(cls, name)
            try:
                values[name] = int(raw, 10) if isinstance(default, int) else parse_duration(raw)
            except ValueError:
                log.error("cannot parse %s=%r (falling back to the default %s)", var, raw, default)
        return cls(**values)  # type: ignore[arg-type]

    def as_env(self) -> dict[str, str]:
        """The ``E2E_NROP_*`` variables that reproduce these values (for child processes)."""
        out = {}
        for name, var in ENV_VARS.items():
            value = getattr(self, name)
            out[var] = str(value) if isinstance(value, int) else f"{value:g}s"
        return out

    def describe(self) -> str:
        return ", ".join(f"{f.name}={getattr(self, f.name):g}" for f in fields(self))


#: On the embedded cluster a spec polls at most this often: what it waits for happens within
#: one exporter period (2s) there. Timeouts, and consistency windows (``Consistently``, N steps
#: of an interval), stay upstream's.
LOCAL_SPEC_POLL = 1.0


def spec_poll(upstream: float, *, local: bool) -> float:
    """A spec's ``Eventually`` poll interval: upstream's on a real cluster, capped on the embedded one."""
    return min(upstream, LOCAL_SPEC_POLL) if local else upstream


def settle_interval_covering(
    interval: float, threshold: int, refresh_period: float, resync_period: float = 0.0
) -> float:
    """A settle poll interval whose window (``threshold - 1`` intervals) spans what a change takes
    to reach the scheduler: one exporter refresh, then one resync of the scheduler's cache.

    Settling means "the pod fingerprint did not change for the whole window"; a window
    shorter than the exporter's refresh period could end before the exporter reports a
    change, and one shorter than refresh + resync before the scheduler's over-reserve cache
    has taken it (a preemption attempted on a node the cache has not flushed finds no
    placement data and is "not helpful", and nothing re-queues it for five minutes).
    Upstream's 9s x 4 = 36s spans its 10s refresh and 5s resync; a shorter local interval is
    stretched to cover both plus one second.
    """
    if threshold <= 1:
        return interval
    return max(interval, (refresh_period + resync_period + 1.0) / (threshold - 1))


#: Field -> environment variable (upstream's names; README.tests.md lists them).
ENV_VARS: Mapping[str, str] = {
    "teardown": "E2E_NROP_TEST_TEARDOWN",
    "cooldown": "E2E_NROP_TEST_COOLDOWN",
    "settle_interval": "E2E_NROP_TEST_SETTLE_INTERVAL",
    "settle_timeout": "E2E_NROP_TEST_SETTLE_TIMEOUT",
    "cooldown_threshold": "E2E_NROP_COOLDOWN_THRESHOLD",
    "mcp_update_timeout": "E2E_NROP_MCP_UPDATE_TIMEOUT",
    "mcp_update_interval": "E2E_NROP_MCP_UPDATE_INTERVAL",
}

#: The embedded cluster's exporters publish within a second of their refresh period (2s, see
#: ``nrop.suite.plugin.session.EMBEDDED_REFRESH_PERIOD``): poll faster, wait as long. The settle window
#: is stretched to span one refresh period and one scheduler cache resync anyway
#: (:func:`settle_interval_covering`: 2s x 4 with the 2s refresh and the 5s resync).
_LOCAL_INTERVALS: Mapping[str, float] = {
    "settle_interval": 0.5,
    "cooldown_interval": 0.5,
    "poll_interval": 0.25,
    "namespace_interval": 0.25,
    "nrt_update_interval": 0.5,
    # a pool roll-out takes seconds there (2s per node): upstream's binary gets the same
    # E2E_NROP_MCP_UPDATE_INTERVAL the port's capped polls use
    "mcp_update_interval": LOCAL_SPEC_POLL,
    "fast_spec_polls": True,
}
