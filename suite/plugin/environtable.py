"""The process environment, safe for any code to walk while pytest changes it on another thread.

pytest sets and removes ``PYTEST_CURRENT_TEST`` at every test phase on the main thread, while
the session prepares the next cluster on a background thread (:mod:`nrop.suite.plugin.session`).
``os.environ.items()`` lists the keys, then reads each one: a key removed in between raises
``KeyError``. The official client walks the environment that way for its proxies
(``urllib.request.getproxies``) each time it sets its host, so a cluster being prepared while
a spec started failed its stack installation with ``KeyError: 'PYTEST_CURRENT_TEST'`` (once
in a whole-suite run, after the lanes began preparing clusters a minute ahead).
:func:`guard` gives ``os.environ`` the same class with ``items()``, ``values()`` and ``copy()``
built from one copy of its data (one C-level copy: atomic under the GIL), as
:func:`nrop.suite.plugin.target.environment_copy` reads it for the suite's own code.
"""

from __future__ import annotations

import os
from collections.abc import ItemsView, ValuesView

__all__ = ["guard"]


class _Environ(os._Environ):  # type: ignore[type-arg]
    """``os.environ`` whose walks read one snapshot of the environment."""

    def _snapshot(self) -> dict[str, str]:
        data = self._data.copy()
        return {self.decodekey(key): self.decodevalue(value) for key, value in data.items()}

    def items(self) -> ItemsView[str, str]:  # type: ignore[override]
        return self._snapshot().items()

    def values(self) -> ValuesView[str]:  # type: ignore[override]
        return self._snapshot().values()

    def copy(self) -> dict[str, str]:
        return self._snapshot()


def guard() -> None:
    """Give ``os.environ`` the safe class; call it before the suite starts a thread (pytest_configure)."""
    if type(os.environ) is os._Environ:
        os.environ.__class__ = _Environ
