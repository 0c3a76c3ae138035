"""How the xdist workers of a spread run start: the first before the run loop, the others while it runs.

xdist's ``DSession`` starts every worker (a gateway: a Python process bootstrapped over a pipe, a
second or more each while clusters start on the same cores) before its loop handles any worker's
event, so no worker got its first spec before the last one was up: with 28 workers on 2 cores
every lane's first spec waited until 35 s in, while the first lane's cluster was ready at 11 s,
and the lane of the longest spec, which sets the run's end, lost those seconds whole.

:class:`LaneSession` is that ``DSession`` with its start split: the first worker's gateway is
made before the loop (which needs a worker to run), the others' one after the other on a thread
(:data:`THREAD_NAME`) that does nothing but make them; each gateway made comes to the loop as
an event, and the loop sets its worker up as xdist does (the ``pytest_xdist_newgateway`` and
``pytest_configure_node`` hooks, the worker's start), so every hook and every scheduling
decision stays on the main thread, and a worker gets its first spec as soon as it has collected.
A gateway that cannot be made stops the run with the reason, as it did when xdist made them all
first; a run that ends or shuts down stops making them (one being made is closed with the rest).
"""

from __future__ import annotations

import logging
import threading

import execnet
import pytest
from xdist.dsession import DSession
from xdist.workermanage import NodeManager, WorkerController

__all__ = ["THREAD_NAME", "LaneSession"]

log = logging.getLogger(__name__)

#: The name of the thread that makes the workers' gateways after the first one's.
THREAD_NAME = "nrop-xdist-gateways"
#: The events the gateway thread puts on the loop's queue (the loop calls ``worker_<event>``).
GATEWAY_MADE = "nrop_gateway_made"
GATEWAY_FAILED = "nrop_gateway_failed"
GATEWAYS_DONE = "nrop_gateways_done"
#: Stands in ``DSession._active_nodes`` for the workers still to start, while the thread makes
#: their gateways: xdist's loop stops with "no active workers" when the set is empty, and ends
#: the session when it is empty and shutting down, yet the first lanes may be done by then.
STARTING = "workers still starting"


class LaneSession(DSession):
    """xdist's ``DSession``, whose workers after the first start while its loop already runs."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(config)
        self._gateways: threading.Thread | None = None
        self._stop_making = threading.Event()

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Make the first worker's gateway and set it up; the others' on :data:`THREAD_NAME`."""
        self.nodemanager = NodeManager(self.config)
        self._session = session
        specs = list(self.nodemanager.specs)
        self.config.hook.pytest_xdist_setupnodes(config=self.config, specs=specs)
        first, rest = specs[0], specs[1:]
        self._set_up(self.nodemanager.group.makegateway(first))
        if rest:
            self._active_nodes.add(STARTING)  # type: ignore[arg-type]
            self._gateways = threading.Thread(target=self._make, args=(rest,), name=THREAD_NAME, daemon=True)
            self._gateways.start()

    def _make(self, specs: list[execnet.XSpec]) -> None:
        try:
            for spec in specs:
                if self._stop_making.is_set():
                    return
                try:
                    gateway = self.nodemanager.group.makegateway(spec)
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    self.queue.put((GATEWAY_FAILED, {"spec_id": spec.id, "error": error}))
                    return
                self.queue.put((GATEWAY_MADE, {"gateway": gateway}))
        finally:
            self.queue.put((GATEWAYS_DONE, {}))

    def _set_up(self, gateway: execnet.Gateway) -> None:
        """What xdist's ``NodeManager.setup_node`` does once it has the gateway."""
        self.config.hook.pytest_xdist_newgateway(gateway=gateway)
        self.nodemanager.rsync_roots(gateway)
        node = WorkerController(self.nodemanager, gateway, self.config, self.queue.put)
        gateway.node = node  # type: ignore[attr-defined]  # keeps the node alive, as xdist does
        node.setup()
        self._active_nodes.add(node)

    def worker_nrop_gateway_made(self, gateway: execnet.Gateway) -> None:
        """The loop's side of a gateway the thread made: its worker starts, unless the run is ending."""
        if self.shuttingdown:
            gateway.exit()
            return
        self._set_up(gateway)

    def worker_nrop_gateway_failed(self, spec_id: str, error: str) -> None:
        """A gateway could not be made: the run stops (what the others ran is reported)."""
        self._stop_making.set()
        log.error("could not start xdist worker %s: %s", spec_id, error)
        if not self.shouldstop:
            self.shouldstop = f"could not start xdist worker {spec_id}: {error}"

    def worker_nrop_gateways_done(self) -> None:
        """The thread is through: the workers it started are in the loop's hands."""
        self._active_nodes.discard(STARTING)  # type: ignore[arg-type]

    def triggershutdown(self) -> None:
        self._stop_making.set()
        super().triggershutdown()

    @pytest.hookimpl
    def pytest_sessionfinish(self) -> None:
        """Stop making gateways (one being made ends first), then xdist's teardown of them all."""
        self._stop_making.set()
        if self._gateways is not None:
            self._gateways.join()
        super().pytest_sessionfinish()
