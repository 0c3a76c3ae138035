"""The embedded cluster's controllers: ReplicaSet, Deployment, DaemonSet, Job, node lifecycle, service accounts."""

from __future__ import annotations

from .manager import CONTROLLERS, ControllerManager, ControllerSettings

__all__ = ["CONTROLLERS", "ControllerManager", "ControllerSettings"]
