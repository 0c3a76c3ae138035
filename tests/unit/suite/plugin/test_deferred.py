"""``run_deferred``: a spec's deferred cleanups run as Ginkgo runs them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nrop.suite.plugin.targeting import run_deferred


def _callbacks(spec: str, ran: list[str]) -> list[Callable[[], None]]:
    """One callback per letter, in registration order; an upper-case letter fails."""

    def make(letter: str) -> Callable[[], None]:
        def callback() -> None:
            ran.append(letter.lower())
            if letter.isupper():
                raise RuntimeError(f"cleanup {letter.lower()} failed")

        return callback

    return [make(letter) for letter in spec]


@pytest.mark.parametrize(
    "registered,ran,error,notes",
    [
        ("", "", None, []),
        ("abc", "cba", None, []),
        ("aBc", "cba", "cleanup b failed", []),
        ("AbC", "cba", "cleanup c failed", ["deferred cleanup failed too: RuntimeError: cleanup a failed"]),
    ],
    ids=["none", "last-first", "one-fails-the-rest-run", "first-failure-raised-later-noted"],
)
def test_run_deferred(registered: str, ran: str, error: str | None, notes: list[str]) -> None:
    seen: list[str] = []
    callbacks = _callbacks(registered, seen)
    if error is None:
        run_deferred(callbacks)
    else:
        with pytest.raises(RuntimeError, match=error) as info:
            run_deferred(callbacks)
        assert getattr(info.value, "__notes__", []) == notes
    assert "".join(seen) == ran
    assert callbacks == []
