"""When the scheduler queues a pod again: after a failed binding cycle only if it still exists
unbound (handleSchedulingFailure); on an event only if it is neither being bound nor unchanged
(updatePodInSchedulingQueue)."""

from __future__ import annotations

import time

import pytest

from nrop.api.clientconfig import ClientConfig
from nrop.sched.framework.interface import PodInfo
from nrop.sched.framework.queue import QueuedPodInfo
from nrop.sched.kubeclient import KubeClient
from nrop.sched.main import default_configuration
from nrop.sched.scheduler import Scheduler


def pod(name: str, node: str = "", version: str = "1") -> dict:
    spec = {"containers": [{"name": "c"}], "schedulerName": "default-scheduler"}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": version},
        "spec": spec,
    }


def scheduler_with(*cached: dict) -> Scheduler:
    sched = Scheduler(
        default_configuration(), KubeClient(ClientConfig(server="http://127.0.0.1:1"), rate_limit=None)
    )
    sched.queue = sched._build_profiles()  # what start() does once the caches are synced
    for obj in cached:
        sched.pods._store[f"ns/{obj['metadata']['name']}"] = obj
    return sched


def queued(name: str) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo.of(pod(name)), time.monotonic())


def test_a_pod_deleted_while_it_was_being_bound_is_not_requeued() -> None:
    sched = scheduler_with()
    sched._requeue_after_failure(queued("gone"))
    assert sum(sched.queue.pending_counts().values()) == 0


def test_a_pod_bound_meanwhile_is_not_requeued() -> None:
    sched = scheduler_with(pod("bound", node="worker-0"))
    sched._requeue_after_failure(queued("bound"))
    assert sum(sched.queue.pending_counts().values()) == 0


def test_a_pod_still_pending_is_requeued_with_its_cached_version() -> None:
    newer = pod("pending")
    newer["metadata"]["labels"] = {"seen": "later"}
    sched = scheduler_with(newer)
    item = queued("pending")
    sched._requeue_after_failure(item)
    assert sum(sched.queue.pending_counts().values()) == 1
    assert item.pod["metadata"]["labels"] == {"seen": "later"}


@pytest.mark.parametrize(
    ("assumed", "old_version", "new_version", "queued_after"),
    [
        pytest.param(False, "1", "2", 1, id="changed"),
        pytest.param(False, "2", "2", 0, id="same-object"),
        pytest.param(True, "1", "2", 0, id="being-bound"),
    ],
)
def test_an_update_event_queues_a_pod_unless_it_is_being_bound_or_unchanged(
    assumed: bool, old_version: str, new_version: str, queued_after: int
) -> None:
    sched = scheduler_with()
    if assumed:
        sched.cache.assume(pod("p", node="worker-0"), "worker-0")
    sched._on_pod("MODIFIED", pod("p", version=new_version), pod("p", version=old_version))
    assert sum(sched.queue.pending_counts().values()) == queued_after
