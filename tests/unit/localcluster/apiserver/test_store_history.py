"""The store's watch history: bounded in size and in time, with 410 for what it no longer holds."""

from __future__ import annotations

import pytest

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.store import Store

CMS = ("", "configmaps")


def _cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("writes_at", "resume_from", "expected"),
    [
        pytest.param([0, 10, 20], 1, [2, 3, 4], id="all-within-window"),
        pytest.param([0, 10, 400], 3, [4], id="resume-at-the-floor"),
        pytest.param([0, 10, 400], 2, None, id="resume-before-the-floor-is-gone"),
        pytest.param([0, 350, 400], 2, [3, 4], id="only-the-old-event-trimmed"),
        pytest.param([0, 350, 400], 1, None, id="resume-before-it-is-gone"),
    ],
)
def test_history_keeps_the_window(
    writes_at: list[float], resume_from: int, expected: list[int] | None
) -> None:
    clock = Clock()
    store = Store(history_window=300.0, clock=clock)
    for index, at in enumerate(writes_at):
        clock.now = at
        store.create(CMS, _cm(f"cm-{index}"))
    if expected is None:
        with pytest.raises(errors.Gone):
            list(store.events_since(CMS, resume_from))
    else:
        assert [e.rv for e in store.events_since(CMS, resume_from)] == expected


def test_history_keeps_its_size_bound() -> None:
    store = Store(history_size=2, history_window=1e9)
    for index in range(4):
        store.create(CMS, _cm(f"cm-{index}"))
    assert [e.rv for e in store.events_since(CMS, 3)] == [4, 5]
    with pytest.raises(errors.Gone):
        store.events_since(CMS, 2)
