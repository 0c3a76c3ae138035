"""A target prepared ahead with a delay (nrop.suite.plugin.session.Targets.prepare): wanted sooner,
it starts at once; never wanted, it is never opened."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from nrop.suite.plugin import session


class Recorded(session.Targets):
    """Targets whose contexts are plain objects: what was opened, on which thread, and what closed."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        options: Any = SimpleNamespace(embedded=True, emulated=True)
        super().__init__(options, self.lines.append, "gw0")
        self.opened: list[tuple[str, str]] = []
        self.closed: list[str] = []

    def _open(self, key: str, say: Any) -> session.Context:
        self.opened.append((key, threading.current_thread().name))
        return session.Context(key=key, kube=f"kube-of-{key}", timeouts=self.timeouts)

    def _before_suite(self, context: session.Context, say: Any) -> None:
        context.config = f"config-of-{context.key}"  # type: ignore[assignment]

    def _close(self, context: session.Context, say: Any) -> None:
        self.closed.append(context.key)


@pytest.fixture
def targets() -> Recorded:
    return Recorded()


def test_a_delayed_target_wanted_sooner_is_opened_at_once_on_its_thread(targets: Recorded) -> None:
    targets.prepare("container-scope", after=600)
    assert targets.lines == ["[container-scope@gw0] preparing the target in the background in 600s"]
    context = targets.get("container-scope")  # would hang for ten minutes if the delay held
    assert context.kube == "kube-of-container-scope"
    assert context.config == "config-of-container-scope"
    assert targets.opened == [("container-scope", "nrop-container-scope")]
    assert targets.lines[-1].startswith("[container-scope@gw0] prepared in the background in ")


def test_a_delayed_target_never_wanted_is_never_opened(targets: Recorded) -> None:
    targets.prepare("mno", after=600)
    targets.close_all()  # would hang for ten minutes if the delay held
    assert targets.opened == []
    assert targets.closed == []


def test_a_target_prepared_without_delay_is_opened_now(targets: Recorded) -> None:
    targets.prepare("default")
    assert targets.lines == ["[default@gw0] preparing the target in the background"]
    targets.close_all()
    assert targets.opened == [("default", "nrop-default")]
    assert targets.closed == ["default"]
