"""The per-test fixture (upstream ``test/internal/fixture``): a namespace per test and the NRT cooldown.

:meth:`Fixture.setup` creates namespace ``<base>-<0..9999>`` with the pod-security
labels, re-lists the NRTs (a difference from the suite's reference is only a warning;
the fresh list becomes ``initial_nrts``) and fails when every node is unschedulable.
:meth:`Fixture.teardown` deletes the namespace and waits until it is gone (which
removes every test and padding pod), then — unless the test was skipped through
:meth:`Fixture.skip` — cools down: waits until every NRT equals ``initial_nrts`` again,
failing with "cooldown failed, the NRT data did not settle back to the initial state"
and the NRT diff. :meth:`Fixture.settle_nrts` is ``MustSettleNRT``; its window of
identical observations always spans one exporter refresh period.
"""

from __future__ import annotations

import logging
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pytest

from nrop.api.gomaps import GoMap
from nrop.suite.e2e import kube as k
from nrop.suite.e2e import objects
from nrop.suite.e2e.config import SuiteConfig
from nrop.suite.e2e.nrt import waiters as nrtwaiters
from nrop.suite.e2e.nrt.compare import equal_nrt_lists_items, list_to_string
from nrop.suite.e2e.nrt.updates import exporter_refresh_period, scheduler_resync_period
from nrop.suite.e2e.timeouts import settle_interval_covering
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import WaitTimeout, wait_for

__all__ = [
    "COOLDOWN_FAILED",
    "Fixture",
    "pick_node_index",
    "pop_any",
    "pop_node_name",
]

log = logging.getLogger(__name__)

COOLDOWN_FAILED = "cooldown failed, the NRT data did not settle back to the initial state"
TARGET_NODE_VAR = "E2E_NROP_TARGET_NODE"


@dataclass
class Fixture:
    kube: k.Kube
    namespace: str
    initial_nrts: list[dict[str, Any]]
    config: SuiteConfig
    skipped: bool = False
    is_reboot_test: bool = False
    avoid_cooldown: bool = False
    #: The namespace manifest as created (labels, uid).
    namespace_obj: dict[str, Any] = field(default_factory=dict)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def setup(
        cls,
        config: SuiteConfig,
        base_name: str,
        *,
        randomize: bool = True,
        avoid_cooldown: bool = False,
        static_cluster_data: bool = False,
        rng: random.Random | None = None,
    ) -> Fixture:
        """``SetupWithOptions``: namespace, fresh NRT list, schedulable-node check."""
        kube, timeouts = config.kube, config.timeouts
        name = objects.randomize_name(base_name, rng) if randomize else base_name
        kube.create(objects.new_namespace(name))
        ns_obj = wait_for(
            lambda: kube.get_or_none(k.NAMESPACE, name),
            lambda obj: obj is not None,
            f"namespace {name} to be readable",
            30.0,
            interval=timeouts.namespace_interval,
            fixed_rate=True,
        )
        log.info("test namespace %r was set up", name)
        nrts = list(config.nrt_reference)
        if not static_cluster_data:
            current = wait_for(
                lambda: _list_or_none(kube, k.NRT),
                lambda items: items is not None,
                "the NRT list to be readable",
                30.0,
                interval=10.0,
                fixed_rate=True,
            )
            assert current is not None
            same, why = equal_nrt_lists_items(current, config.nrt_reference)
            if not same:
                log.warning(
                    "WARNING! NRT MISMATCH: %s\n%s%s",
                    why,
                    list_to_string(config.nrt_reference, "-----NRT at Suite Setup"),
                    list_to_string(current, "-----NRT at Test Setup"),
                )
            nrts = current
        _log_mcps_not_updated(kube)
        nodes = kube.list(k.NODE)
        unschedulable = [n["metadata"]["name"] for n in nodes if (n.get("spec") or {}).get("unschedulable")]
        for node in unschedulable:
            log.warning("node %r is unschedulable", node)
        if nodes and len(unschedulable) == len(nodes):
            kube.delete(k.NAMESPACE, name)
            raise AssertionError(f"all nodes unschedulable: {unschedulable}")
        return cls(
            kube=kube,
            namespace=name,
            initial_nrts=nrts,
            config=config,
            avoid_cooldown=avoid_cooldown,
            namespace_obj=ns_obj or {},
        )

    def skip(self, reason: str) -> NoReturn:
        """Skip the test; the teardown then does not cool down (``e2efixture.Skipf``)."""
        self.skipped = True
        pytest.skip(reason)

    def teardown(self) -> None:
        """Delete the namespace and wait for it to go, then cool down (see the module docstring)."""
        started = time.monotonic()
        timeouts = self.config.timeouts
        try:
            if self.kube.delete(k.NAMESPACE, self.namespace):
                waiters.for_namespace_deleted(
                    self.kube, self.namespace, interval=timeouts.namespace_interval, timeout=timeouts.teardown
                )
        finally:
            log.info("tore down the test namespace %r in %.1fs", self.namespace, time.monotonic() - started)
        if self.skipped:
            self.skipped = False
            log.info("skipped - nothing to cool down")
            return
        if self.avoid_cooldown:
            log.info("skipped - cool down disabled")
            return
        self.cooldown()

    def cooldown(self) -> None:
        """Wait until the NRTs equal ``initial_nrts`` (or sleep ``cooldown`` without a list)."""
        timeouts = self.config.timeouts
        if not self.initial_nrts:
            log.warning("cooling down for %gs", timeouts.cooldown)
            time.sleep(timeouts.cooldown)
            return
        reboot, self.is_reboot_test = self.is_reboot_test, False
        try:
            nrtwaiters.for_nrts_equal_to(
                self.kube,
                self.initial_nrts,
                is_reboot_test=reboot,
                device_names=self.config.device_names,
                interval=timeouts.cooldown_interval,
                timeout=timeouts.settle_timeout,
            )
        except WaitTimeout as err:
            raise AssertionError(f"{COOLDOWN_FAILED}\n{err}") from None

    def settle_nrts(self) -> list[dict[str, Any]]:
        """``MustSettleNRT``: poll until every NRT's pod fingerprint is stable; returns the NRTs."""
        timeouts = self.config.timeouts
        interval = settle_interval_covering(
            timeouts.settle_interval,
            timeouts.cooldown_threshold,
            exporter_refresh_period(self.kube),
            scheduler_resync_period(self.kube),
        )
        log.info(
            "cooldown by verifying NRTs data is settled (interval=%gs timeout=%gs)",
            interval,
            timeouts.settle_timeout,
        )
        try:
            return nrtwaiters.for_nrts_settled(
                self.kube,
                timeouts.cooldown_threshold,
                interval=interval,
                timeout=timeouts.settle_timeout,
            )
        except WaitTimeout as err:
            raise AssertionError(f"NRTs have not settled during the provided cooldown time: {err}") from None


def _list_or_none(kube: k.Kube, kind: k.Kind) -> list[dict[str, Any]] | None:
    try:
        return kube.list(kind)
    except k.ApiError as err:
        log.warning("cannot list %s: %s", kind, err)
        return None


def _log_mcps_not_updated(kube: k.Kube) -> None:
    """Log the MachineConfigPools that are not ``Updated`` (OpenShift only; nothing elsewhere)."""
    try:
        pools = kube.list(k.MCP)
    except (k.UnknownKindError, k.ApiError):
        return
    for pool in pools:
        for cond in (pool.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "Updated":
                if cond.get("status") != "True":
                    log.info("MCP not updated: %s %s", pool["metadata"]["name"], cond)
                break


# ------------------------------------------------------------------------------- node choice


def pop_node_name(
    names: set[str], environ: dict[str, str] | None = None, rng: random.Random | None = None
) -> str | None:
    """``PopNodeName``: remove and return ``E2E_NROP_TARGET_NODE`` if it is in ``names``, else
    what upstream's ``sets.Set.PopAny`` would take (None if empty).

    The pick is :func:`pop_any`.
    """
    target = (environ if environ is not None else os.environ).get(TARGET_NODE_VAR)
    if target is not None and target in names:
        names.discard(target)
        return target
    if target is not None:
        log.info("node %r not found among candidates, fall back to random one", target)
    return pop_any(names, rng)


def pop_any(names: set[str], rng: random.Random | None = None) -> str | None:
    """``sets.Set.PopAny`` of a set upstream fills in NRT-list (name) order: one Go map
    iteration (:class:`~nrop.api.gomaps.GoMap`) over the sorted names, from ``rng``; the
    name is removed from ``names`` (None when empty)."""
    if not names:
        return None
    source = rng if rng is not None else random.Random()
    name = GoMap(sorted(names), source).pop_any(source)
    names.discard(name)
    return name


def pick_node_index(nodes: list[dict[str, Any]], environ: dict[str, str] | None = None) -> tuple[int, bool]:
    """The index of ``E2E_NROP_TARGET_NODE`` in ``nodes``; ``(0, True)`` when unset, ``(0, False)`` if absent."""
    target = (environ if environ is not None else os.environ).get(TARGET_NODE_VAR)
    if target is None:
        return 0, True
    for idx, node in enumerate(nodes):
        if node["metadata"]["name"] == target:
            return idx, True
    log.info("node %r not found among candidates, fall back to random one", target)
    return 0, False
