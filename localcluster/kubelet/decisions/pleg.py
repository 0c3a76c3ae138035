"""When the kubelet sees a simulated container exit: its PLEG relist.

Owns the timing rule of upstream's generic pod lifecycle event generator (``GenericPLEG``)
as it applies to containers the embedded cluster simulates. The kubelet does not watch
its containers: it lists them from the runtime once a second (``genericPlegRelistPeriod``),
and a pod's sync acts on what the list shows. So a container's exit is seen at the first
relist after it, and what the kubelet does about it (start the next init container or the
app containers, restart it, give the pod its terminal phase) happens at that relist.

One consequence the specs feel: a ``sleep 1s`` app container started at one relist ends
just after the next one begins (its process starts after the sync that created it), so it
is seen ended one relist later and its pod shows ``Running`` for about two seconds here.
A real node shows it from the relist after its start (the simulated start is shown by the
sync that made it: pods start a little sooner here) until its sandbox is stopped after the
relist that saw the exit: more than a second either way, which a one-second poll such as
upstream's ``ForPodPhase`` is sure to see.

Pure: the node's relists are a grid of one-second steps from the kubelet's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["RELIST_PERIOD", "Relists"]

#: ``genericPlegRelistPeriod`` of the kubelet.
RELIST_PERIOD = timedelta(seconds=1)


@dataclass(frozen=True)
class Relists:
    """The relists of one node's PLEG: ``start``, then every ``period``."""

    start: datetime
    period: timedelta = RELIST_PERIOD

    def after(self, moment: datetime) -> datetime:
        """The first relist strictly after ``moment``: a relist lists what had happened when it began."""
        if moment < self.start:
            return self.start
        return self.start + ((moment - self.start) // self.period + 1) * self.period
