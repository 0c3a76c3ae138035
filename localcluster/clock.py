"""Time for the embedded cluster: an injectable clock (the timestamp formats are ``nrop.api.metatime``).

Shared by the API server, the controllers and the emulated kubelets, so it lives
above all three; the ``Clock`` protocol is what tests replace to move time by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
