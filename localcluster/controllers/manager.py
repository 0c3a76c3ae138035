"""The controller manager: starts and stops the in-process controllers of the embedded cluster.

Plays ``kube-controller-manager``: one :class:`ControllerManager` per cluster runs the
ReplicaSet, Deployment, DaemonSet, Job, node lifecycle and service-account controllers, and
the embedded OLM (:mod:`.olmoperator`, whose kinds :func:`.olmoperator.install` serves first;
garbage collection and namespace deletion run in :mod:`..apiserver.lifecycle`).
:class:`ControllerSettings` carries the upstream flags that tests want short, each with
the upstream default.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.daemonsets import DaemonSetController
from nrop.localcluster.controllers.deployments import DeploymentController
from nrop.localcluster.controllers.jobs import JobController
from nrop.localcluster.controllers.nodelifecycle import NodeLifecycleController
from nrop.localcluster.controllers.olmoperator import OLMOperator
from nrop.localcluster.controllers.reconciling import Controller
from nrop.localcluster.controllers.replicasets import ReplicaSetController
from nrop.localcluster.controllers.serviceaccounts import ServiceAccountsController

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["CONTROLLERS", "ControllerManager", "ControllerSettings"]

log = logging.getLogger(__name__)

#: Names accepted in :attr:`ControllerSettings.controllers` (``--controllers``).
CONTROLLERS = ("replicaset", "deployment", "daemonset", "job", "nodelifecycle", "serviceaccount", "olm")


@dataclass(frozen=True)
class ControllerSettings:
    """Timing knobs of the controllers, with kube-controller-manager's defaults."""

    #: ``--node-monitor-grace-period``: a node whose Lease is older is marked Unknown.
    node_monitor_grace_period: float = 40.0
    #: ``--node-startup-grace-period``: the same for a node that never posted Ready.
    node_startup_grace_period: float = 60.0
    #: ``--node-monitor-period``: how often node health is checked.
    node_monitor_period: float = 5.0
    #: The Job controller's pod failure back-off: 10 s, doubling, at most 6 minutes.
    job_backoff_base: float = 10.0
    job_backoff_max: float = 360.0
    #: The DaemonSet controller's back-off before deleting a failed daemon pod: 1 s doubling to 15 min.
    daemon_failed_backoff_base: float = 1.0
    daemon_failed_backoff_max: float = 900.0
    #: OLM's install timeout: a CSV ``Installing`` this long (e.g. its Deployment was deleted
    #: meanwhile) fails, then installs again; 5 minutes in OLM.
    olm_install_timeout: float = 300.0
    #: Which controllers run (``--controllers``).
    controllers: tuple[str, ...] = field(default=CONTROLLERS)

    def __post_init__(self) -> None:
        for name in (
            "node_monitor_grace_period",
            "node_startup_grace_period",
            "node_monitor_period",
            "olm_install_timeout",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"controllers.{name}: must be positive, got {getattr(self, name)!r}")
        unknown = sorted(set(self.controllers) - set(CONTROLLERS))
        if unknown:
            raise ValueError(f"controllers.controllers: unknown {unknown}; known: {list(CONTROLLERS)}")


class ControllerManager:
    """Every enabled controller of one cluster, started and stopped together."""

    def __init__(
        self,
        server: InProcessAPI,
        settings: ControllerSettings | None = None,
        *,
        clock: Clock | None = None,
        ca_pem: bytes = b"",
    ) -> None:
        self.settings = settings or ControllerSettings()
        clock = clock or server.clock
        s = self.settings
        factories = {
            "replicaset": lambda: ReplicaSetController(server, clock),
            "deployment": lambda: DeploymentController(server, clock),
            "daemonset": lambda: DaemonSetController(
                server,
                clock,
                backoff_base=s.daemon_failed_backoff_base,
                backoff_max=s.daemon_failed_backoff_max,
            ),
            "job": lambda: JobController(
                server, clock, backoff_base=s.job_backoff_base, backoff_max=s.job_backoff_max
            ),
            "nodelifecycle": lambda: NodeLifecycleController(
                server,
                clock,
                grace_period=s.node_monitor_grace_period,
                startup_grace_period=s.node_startup_grace_period,
                monitor_period=s.node_monitor_period,
            ),
            "serviceaccount": lambda: ServiceAccountsController(server, clock, ca_pem=ca_pem),
            "olm": lambda: OLMOperator(server, clock, install_timeout=s.olm_install_timeout),
        }
        self.controllers: dict[str, Controller] = {
            name: factories[name]() for name in CONTROLLERS if name in s.controllers
        }

    def start(self) -> None:
        for name, controller in self.controllers.items():
            controller.start()
            log.debug("controller %s started", name)

    async def stop(self) -> None:
        for controller in self.controllers.values():
            await controller.stop()
