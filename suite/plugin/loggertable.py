"""Logging's table of loggers, safe for pytest to walk while the suite's own threads add to it.

At every test phase pytest's log capture (``catching_logs.__enter__``) walks
``logging.Logger.manager.loggerDict.values()``, without logging's lock, to attach its handler
to the loggers that do not propagate. The session prepares the next cluster in a background
thread (:mod:`nrop.suite.plugin.session`), and the modules it imports add their loggers to
that table; a walk that sees the table grow fails the phase with ``RuntimeError: dictionary
changed size during iteration`` (it failed a spec's setup once in a whole kill-table run).
:func:`guard` makes the table hand out its values as a list copied in one step, which no
other thread can interleave with: the walk sees the loggers of that moment.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["guard"]


class _Table(dict[str, Any]):
    """``Manager.loggerDict`` whose ``values()`` is a copy (one C-level copy: atomic under the GIL)."""

    def values(self) -> list[Any]:  # type: ignore[override]
        return list(super().values())


def guard() -> None:
    """Install the table; call it before the suite starts a thread (pytest_configure)."""
    manager = logging.Logger.manager
    if not isinstance(manager.loggerDict, _Table):
        manager.loggerDict = _Table(manager.loggerDict)
