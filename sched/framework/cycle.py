"""What one scheduling cycle shares and produces, apart from the framework that runs it.

Owns the data of a cycle of :class:`nrop.sched.framework.runtime.Profile`: the :class:`ScheduleResult`,
the :class:`FitError` of a pod that fits no node (its :meth:`FitError.message` is upstream's
event text), the errors that abort a cycle (:class:`SchedulingCycleError`,
:class:`NoNodesAvailableError`), the :class:`CycleView` PostFilter plugins read under
:data:`FRAMEWORK_KEY` and the :data:`VICTIMS_KEY` where they leave the pods to evict.  Also
the cycle's two pure decisions: how many feasible nodes are enough
(:func:`num_feasible_nodes_to_find`) and the pick among the best-scored nodes
(:func:`select_host`).  No I/O.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nrop.sched.errors import SchedulerError
from nrop.sched.framework.interface import Code, CycleState, NodeInfo, Obj, PodInfo, Status

#: CycleState key of the :class:`CycleView` of the running cycle.
FRAMEWORK_KEY = "framework/cycle"
#: CycleState key where a PostFilter plugin leaves the pods to evict (a sequence of pod bodies).
VICTIMS_KEY = "framework/victims"

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class SchedulingCycleError(SchedulerError):
    """A plugin failed (an Error status): raised inside the cycle, reported in ``ScheduleResult.message``."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


class NoNodesAvailableError(SchedulingCycleError):
    """The snapshot has no node at all (upstream ``ErrNoNodesAvailable``)."""


@dataclass(slots=True)
class FitError:
    """Why a pod fits no node (upstream ``framework.FitError`` with its ``Diagnosis``).

    ``statuses`` holds the nodes that were evaluated; the other nodes count with
    ``absent_status`` (for instance those a PreFilter excluded).
    """

    num_all_nodes: int
    statuses: dict[str, Status]
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    unschedulable_plugins: set[str] = field(default_factory=set)
    absent_status: Status | None = None

    def message(self) -> str:
        """Upstream ``FitError.Error()``: "0/N nodes are available: <histogram>. <post filter>."."""
        text = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            text += f" {self.pre_filter_msg}."
        else:
            counts: Counter[str] = Counter()
            for status in self.statuses.values():
                counts.update(status.reasons)
            absent = self.num_all_nodes - len(self.statuses)
            if absent > 0 and self.absent_status is not None:
                for reason in self.absent_status.reasons:
                    counts[reason] += absent
            histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
            if histogram:
                text += " " + ", ".join(histogram) + "."
        if self.post_filter_msg:
            text += f" {self.post_filter_msg}."
        return text

    def all_statuses(self, nodes: Sequence[NodeInfo]) -> dict[str, Status]:
        """Every node's status, absent nodes included (what PostFilter plugins see)."""
        absent = self.absent_status or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return {n.name: self.statuses.get(n.name, absent) for n in nodes}


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """The outcome of one scheduling cycle.

    ``node`` is the chosen node, or None with ``error`` set.  ``nominated_node`` is what
    PostFilter decided for ``status.nominatedNodeName``: None leaves it, "" clears it, a
    name sets it; ``victims`` are the pods to evict for that nomination.  When a plugin
    failed (an Error status, or no node at all) ``node`` and ``error`` are None and
    ``message`` says why.
    """

    node: str | None
    evaluated: int
    feasible: int
    error: FitError | None = None
    nominated_node: str | None = None
    victims: tuple[Obj, ...] = ()
    message: str = ""


@dataclass(frozen=True, slots=True)
class CycleView:
    """What PostFilter plugins may use of the running cycle (upstream reaches it through the handle)."""

    nodes: Sequence[NodeInfo]
    run_filters: Callable[[CycleState, Obj, NodeInfo], Status]
    add_pod: Callable[[CycleState, Obj, PodInfo, NodeInfo], Status]
    remove_pod: Callable[[CycleState, Obj, PodInfo, NodeInfo], Status]
    rng: random.Random


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes are enough (upstream ``numFeasibleNodesToFind``).

    Below 100 nodes, all of them; else ``percentage`` of them, where 0 means adaptive:
    ``50 - nodes/125`` percent, at least 5%; never fewer than 100.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(scores: Sequence[tuple[str, int]], rng: random.Random) -> str:
    """The node with the highest total, ties broken uniformly at random (reservoir sampling)."""
    best, best_score, ties = "", -1, 0
    for name, score in scores:
        if score > best_score:
            best, best_score, ties = name, score, 1
        elif score == best_score:
            ties += 1
            if rng.randrange(ties) == 0:
                best = name
    return best
