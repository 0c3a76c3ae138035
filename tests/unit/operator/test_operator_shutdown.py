"""How long the operator may take to stop (``operator/running.py``): controller-runtime's grace
period, past which the process exits 1 instead of lingering without handlers."""

from __future__ import annotations

import threading
from typing import Any
from unittest import mock

import kopf

from nrop.api.platform import Platform
from nrop.operator import running
from nrop.operator.reconciling import Context


def _exiting(grace: float) -> tuple[threading.Event, threading.Thread, list[int]]:
    stop = threading.Event()
    codes: list[int] = []
    thread = threading.Thread(target=running.exit_when_stuck, args=(stop, grace, codes.append), daemon=True)
    thread.start()
    return stop, thread, codes


def test_a_process_still_stopping_after_the_grace_period_exits_1() -> None:
    stop, thread, codes = _exiting(0.05)
    stop.set()
    thread.join(timeout=5)
    assert codes == [1]


def test_a_running_operator_is_left_alone() -> None:
    _, thread, codes = _exiting(0.0)
    thread.join(timeout=0.2)
    assert thread.is_alive() and codes == []


def test_kopf_stopping_on_its_own_is_bounded_by_the_same_grace_period() -> None:
    """A failed root task or a signal stops kopf without the flag: its own last resort applies."""
    ctx = Context(api=mock.Mock(), namespace="ns", image="img", environ={}, platform=Platform.KUBERNETES)
    registry = running.build_registry(ctx, None)
    settings = kopf.OperatorSettings()
    startup: list[Any] = [h for h in registry._activities.get_all_handlers() if h.activity.value == "startup"]
    for handler in startup:
        handler.fn(settings=settings)
    assert settings.process.ultimate_exiting_timeout == running.GRACEFUL_SHUTDOWN_SECONDS == 30.0
