"""Retrying without crashing or flooding the log: exponential back-off and deduplicated failure lines.

Shared by the podresources client and the NRT writer, whose faults are usually
transient (a kubelet restart, an API server hiccup): the exporter keeps going, waits a
little longer after each consecutive failure, and logs a failure once when it starts
or changes, then a reminder now and then, and once more when it is over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from nrop.api.backoff import Backoff

__all__ = ["Backoff", "FailureLog"]


class FailureLog:
    """Logs a failure when its text changes, then a reminder every ``remind`` seconds."""

    def __init__(
        self, logger: logging.Logger, *, remind: float = 30.0, clock: Callable[[], float] = time.monotonic
    ):
        self._log = logger
        self._remind = remind
        self._clock = clock
        self._last_text = ""
        self._last_at = 0.0
        self._count = 0

    def failed(self, text: str, retry_in: float | None = None) -> None:
        self._count += 1
        now = self._clock()
        suffix = f"; retrying in {retry_in:.1f}s" if retry_in is not None else ""
        if text != self._last_text:
            self._log.warning("%s%s", text, suffix)
        elif now - self._last_at >= self._remind:
            self._log.warning("%s (still failing after %d attempts)%s", text, self._count, suffix)
        else:
            self._log.debug("%s%s", text, suffix)
            return
        self._last_text, self._last_at = text, now

    def recovered(self, what: str) -> None:
        if self._last_text:
            self._log.info("%s recovered after %d failed attempts", what, self._count)
        self._last_text, self._count = "", 0
