"""The embedded cluster's controllers: ReplicaSet, Deployment, DaemonSet, Job, node lifecycle, service accounts, OLM.

Code outside this package imports only what ``__all__`` lists (the controller manager, the machine
config controllers the cluster wires by hand, the OLM kinds, the OpenShift cluster-type objects it
serves at start and the OpenShift flavour's monitoring workload); every other
module here is internal.
"""

from __future__ import annotations

from nrop.localcluster.controllers.manager import CONTROLLERS, ControllerManager, ControllerSettings

__all__ = [
    "CONTROLLERS",
    "ControllerManager",
    "ControllerSettings",
    "clustermonitoring",
    "decisions",
    "machineconfigoperator",
    "olmoperator",
    "openshiftconfig",
]
