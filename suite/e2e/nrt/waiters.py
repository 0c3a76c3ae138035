"""Waiting for NodeResourceTopology objects (upstream ``internal/wait`` NRT waiters), on :func:`wait_for`.

Three waits: :func:`for_nrts` (each node's NRT once a predicate holds for it),
:func:`for_nrts_equal_to` (the cooldown: every reference NRT equal to the current one) and
:func:`for_nrts_settled` (``ForNodeResourceTopologiesSettled``: each NRT's pod fingerprint
seen unchanged a number of times in a row, counted by :class:`PFPState`). Like the other
waiters (:mod:`nrop.suite.e2e.wait.waiters`) they take the :class:`~nrop.suite.e2e.kube.Kube` and plain
values and raise :class:`~nrop.suite.e2e.wait.polling.WaitTimeout` saying what was seen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.suite.e2e.kube import NRT, Kube, Manifest
from nrop.suite.e2e.nrt.compare import is_nrt_equal, list_to_string, nrt_diff
from nrop.suite.e2e.nrt.topologies import pod_fingerprint
from nrop.suite.e2e.wait.polling import WaitTimeout, wait_for
from nrop.suite.e2e.wait.waiters import DEFAULT_INTERVAL, DEFAULT_TIMEOUT

__all__ = ["PFPState", "for_nrts", "for_nrts_equal_to", "for_nrts_settled"]


def for_nrts(
    kube: Kube,
    nodes: Iterable[str],
    predicate: Callable[[Manifest], bool],
    description: str,
    timeout: float,
    *,
    interval: float,
) -> dict[str, Manifest]:
    """The NRT of every node once ``predicate`` holds for it, by node name.

    The nodes are awaited one after the other, each up to ``timeout``; a missing NRT
    counts as not yet. The failure names the node: ``NRT <node> <description>``.
    """
    return {
        node: wait_for(
            lambda node=node: kube.get_or_none(NRT, node),
            lambda nrt: nrt is not None and predicate(nrt),
            f"NRT {node} {description}",
            timeout,
            interval=interval,
            fixed_rate=True,
        )
        for node in nodes
    }


@dataclass
class _NRTComparison:
    """The NRT list seen, and why it does not match the reference (kept short in messages)."""

    nrts: list[Manifest]
    mismatched: list[str]
    missing: list[str]
    diff: str = ""

    def to_dict(self) -> str:
        return f"missing={self.missing} mismatched={self.mismatched}\n{self.diff}"


def for_nrts_equal_to(
    kube: Kube,
    reference: Sequence[Mapping[str, Any]],
    *,
    ignore: Callable[[Mapping[str, Any]], bool] | None = None,
    is_reboot_test: bool = False,
    device_names: Sequence[str] = (),
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Manifest]:
    """Until every reference NRT (not ``ignore``-d) is equal to the current one (``is_nrt_equal``).

    A reference NRT that disappeared ends the wait at once. The failure shows the
    ``available`` diff from the reference to the current data.
    """
    wanted = [ref for ref in reference if not (ignore and ignore(ref))]

    def compare() -> _NRTComparison:
        current = kube.list(NRT)
        by_name = {nrt["metadata"]["name"]: nrt for nrt in current}
        missing = [ref["metadata"]["name"] for ref in wanted if ref["metadata"]["name"] not in by_name]
        mismatched = [
            ref["metadata"]["name"]
            for ref in wanted
            if ref["metadata"]["name"] in by_name
            and not is_nrt_equal(ref, by_name[ref["metadata"]["name"]], is_reboot_test, device_names)
        ]
        return _NRTComparison(current, mismatched, missing)

    try:
        return wait_for(
            compare,
            lambda c: not c.missing and not c.mismatched,
            f"{len(wanted)} NRTs to be equal to the reference",
            timeout,
            interval=interval,
            fixed_rate=True,
            terminal=lambda c: bool(c.missing),
            immediate=False,
        ).nrts
    except WaitTimeout:
        last = compare()
        raise WaitTimeout(
            f"expected {len(wanted)} NRTs to be equal to the reference within {timeout:g}s; "
            f"missing: {last.missing}, different: {last.mismatched}\n"
            f"available, reference -> current:\n{nrt_diff(wanted, last.nrts)}\n"
            f"{list_to_string(wanted, ' reference')}{list_to_string(last.nrts, ' current')}"
        ) from None


@dataclass
class PFPState:
    """Per node, the last pod fingerprint seen and how many times in a row (upstream ``PFPState``)."""

    counts: dict[str, tuple[str, int]] = field(default_factory=dict)

    def observe(self, node: str, value: str) -> int:
        last, count = self.counts.get(node, ("", 0))
        count = count + 1 if node in self.counts and last == value else 1
        self.counts[node] = (value, count)
        return count

    def count_ready(self, threshold: int) -> int:
        return sum(count >= threshold for _, count in self.counts.values())

    def all_ready(self, threshold: int) -> bool:
        return all(count >= threshold for _, count in self.counts.values())

    def describe(self) -> str:
        return ", ".join(
            f"{node}: PFP={value} count={count}" for node, (value, count) in sorted(self.counts.items())
        )


@dataclass
class _Settling:
    nrts: list[Manifest]
    state: PFPState
    missing_pfp: list[str]
    threshold: int

    def to_dict(self) -> str:
        return f"threshold={self.threshold} {self.state.describe()} missing PFP: {self.missing_pfp}"


def for_nrts_settled(
    kube: Kube,
    threshold: int,
    *,
    ignore: Callable[[Mapping[str, Any]], bool] | None = None,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Manifest]:
    """Until each NRT's pod fingerprint was seen unchanged ``threshold`` times in a row.

    (``ForNodeResourceTopologiesSettled``.) An NRT without the fingerprint attribute ends
    the wait at once: settling cannot be observed without it.
    """
    state = PFPState()

    def observe() -> _Settling:
        nrts = kube.list(NRT)
        missing = []
        for nrt in nrts:
            if ignore and ignore(nrt):
                continue
            value = pod_fingerprint(nrt)
            if value is None:
                missing.append(nrt["metadata"]["name"])
                continue
            state.observe(nrt["metadata"]["name"], value)
        return _Settling(nrts, state, missing, threshold)

    return wait_for(
        observe,
        lambda s: not s.missing_pfp and s.state.all_ready(threshold),
        f"NRTs to settle ({threshold} identical pod fingerprints in a row)",
        timeout,
        interval=interval,
        fixed_rate=True,
        terminal=lambda s: bool(s.missing_pfp),
    ).nrts
