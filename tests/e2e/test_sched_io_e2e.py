"""The scheduler's I/O layer against the embedded API server over HTTPS.

Informers list (in pages) and watch, see creations, updates and deletions, re-list
after a forced compaction, and pick up the NodeResourceTopology CRD once it is
installed; ``bind()`` assigns a pod; the event recorder writes events.k8s.io/v1 Events
that kubectl shows; two leader electors share one Lease; the metrics endpoint is scraped; a
scheduler prepared but not yet running queues pods without binding, and ``nrop-scheduler``'s run
does that while another instance holds the lease (nothing until it leads with
``delayCacheUntilActive``).
Each test drives the asyncio code with ``asyncio.run`` in the test thread, while the
cluster runs in its own thread.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes import client

from nrop.api import crds
from nrop.api.clientconfig import load_kubeconfig
from nrop.api.nrt import NodeResourceTopology
from nrop.api.restapi import LEASES, NRTS, PODS, ConflictError, NotFoundError, Resource
from nrop.sched import main as sched_main
from nrop.sched.config import configuration as schedconfig
from nrop.sched.config.election import ElectionTiming
from nrop.sched.events import EventBroadcaster
from nrop.sched.framework import registry
from nrop.sched.informers import ADDED, DELETED, MODIFIED, Informer, InformerFactory
from nrop.sched.kubeclient import KubeClient
from nrop.sched.leaderelection import LeaderElectionConfig, LeaderElector
from nrop.sched.metrics import SchedulerMetrics
from nrop.sched.scheduler import Scheduler

CONFIGMAPS = Resource("", "v1", "configmaps")
TIMEOUT = 15.0


def run(coro: Awaitable[Any], timeout: float = 60.0) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def eventually(predicate: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {what} within {timeout}s")
        await asyncio.sleep(0.05)


def kube(kubeconfig: Path) -> KubeClient:
    return KubeClient(load_kubeconfig(kubeconfig), rate_limit=None)


#: The test's own ConfigMaps carry this label (controllers add others, e.g. kube-root-ca.crt).
MINE = "nrop.test/sched-io=yes"


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "labels": {"nrop.test/sched-io": "yes"}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulerName": "nrop-scheduler", "containers": [{"name": "c", "image": "pause"}]},
    }


@pytest.fixture
def node(api_client):  # type: ignore[no-untyped-def]
    core = client.CoreV1Api(api_client)
    name = f"n-{uuid.uuid4().hex[:6]}"
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels={"nrop.test": "true"})))
    yield name
    core.delete_node(name)


# ------------------------------------------------------------------------------ informers


def test_informer_lists_in_pages_and_sees_create_update_delete(kubeconfig: Path, namespace: str) -> None:
    seen: list[tuple[str, str, str | None]] = []

    def handler(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        seen.append((event_type, obj["metadata"]["name"], (old or {}).get("data", {}).get("v")))

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            for i in range(5):
                await api.create(CONFIGMAPS, configmap(f"pre-{i}", namespace, v="0"))
            informer = Informer(api, CONFIGMAPS, namespace=namespace, label_selector=MINE, page_size=2)
            informer.add_handler(handler)
            informer.start()
            try:
                await informer.wait_synced(TIMEOUT)
                assert sorted(o["metadata"]["name"] for o in informer.list()) == [
                    f"pre-{i}" for i in range(5)
                ]
                assert sorted(seen) == [(ADDED, f"pre-{i}", None) for i in range(5)]
                seen.clear()

                await api.create(CONFIGMAPS, configmap("cm", namespace, v="1"))
                await api.patch(CONFIGMAPS, "cm", {"data": {"v": "2"}}, namespace)
                await api.delete(CONFIGMAPS, "cm", namespace)
                await eventually(lambda: len(seen) >= 3, "three events for cm")
                assert seen == [(ADDED, "cm", None), (MODIFIED, "cm", "1"), (DELETED, "cm", "2")]
                assert informer.get(f"{namespace}/cm") is None
                assert informer.get(f"{namespace}/pre-0")["data"] == {"v": "0"}  # type: ignore[index]
                assert informer.lists == 1

                # A handler added late is told about what is already there.
                late: list[str] = []
                informer.add_handler(lambda t, o, _old: late.append(f"{t} {o['metadata']['name']}"))
                assert sorted(late) == [f"ADDED pre-{i}" for i in range(5)]
            finally:
                await informer.close()

    run(scenario())


def test_informer_relists_after_compaction(
    kubeconfig: Path, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, str]] = []

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            await api.create(CONFIGMAPS, configmap("before", namespace))
            informer = Informer(api, CONFIGMAPS, namespace=namespace, label_selector=MINE)
            informer.add_handler(lambda t, o, _old: seen.append((t, o["metadata"]["name"])))
            informer.start()
            try:
                await informer.wait_synced(TIMEOUT)
                first_rv = informer.resource_version
                compacted = await api.request("POST", "/debug/nrop/compact")
                assert int(compacted["compactedResourceVersion"]) >= int(first_rv)
                await eventually(lambda: informer.lists == 2, "a second list after compaction")
                # Re-listing an unchanged object tells the handlers nothing new.
                assert seen == [(ADDED, "before")]
                await api.create(CONFIGMAPS, configmap("after", namespace))
                await eventually(
                    lambda: informer.get(f"{namespace}/after"), "the watch to resume after re-listing"
                )
                assert seen == [(ADDED, "before"), (ADDED, "after")]
            finally:
                await informer.close()

    with caplog.at_level(logging.INFO, logger="nrop.sched.informers"):
        run(scenario())
    assert any(
        "watch expired (too old resource version" in r.getMessage() and "re-listing" in r.getMessage()
        for r in caplog.records
    )


def test_factory_shares_informers_and_waits_for_the_nrt_crd(
    kubeconfig: Path, api_client, namespace: str, node: str
) -> None:  # type: ignore[no-untyped-def]
    ext = client.ApiextensionsV1Api(api_client)
    crd = crds.load("noderesourcetopologies")

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            factory = InformerFactory(api, absent_poll=0.2)
            pods, nodes, nrts = factory.pods(), factory.nodes(), factory.nrts()
            assert factory.pods() is pods and factory.nrts() is nrts
            await api.create(PODS, pod("p", namespace))
            factory.start()
            try:
                await factory.wait_synced(TIMEOUT)
                assert nrts.absent and nrts.has_synced and nrts.list() == []
                assert pods.get(f"{namespace}/p") is not None
                assert nodes.get(node) is not None
                await asyncio.to_thread(ext.create_custom_resource_definition, crd)
                nrt = NodeResourceTopology(
                    name=node, topology_policies=["SingleNUMANodeContainerLevel"]
                ).to_dict()
                await eventually(lambda: not nrts.absent, "the NRT informer to notice the CRD")
                await api.create(NRTS, nrt)
                await eventually(lambda: nrts.get(node), "the NRT object in the informer")
                # A pod that terminates leaves the pod informer (kube-scheduler's field selector).
                await api.patch_status(PODS, "p", {"status": {"phase": "Succeeded"}}, namespace)
                await eventually(
                    lambda: pods.get(f"{namespace}/p") is None, "the succeeded pod to leave the cache"
                )
            finally:
                await factory.close()

    try:
        run(scenario())
    finally:
        ext.delete_custom_resource_definition(crd["metadata"]["name"])


# ------------------------------------------------------------------------------ binding


def test_bind_sets_node_name(kubeconfig: Path, api_client, namespace: str, node: str) -> None:  # type: ignore[no-untyped-def]
    core = client.CoreV1Api(api_client)

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            created = await api.create(PODS, pod("p", namespace))
            await api.bind(created, node)
            with pytest.raises(ConflictError, match="already assigned"):
                await api.bind(created, node)
            with pytest.raises(NotFoundError) as missing:
                await api.get(PODS, "absent", namespace)
            assert missing.value.reason == "NotFound" and missing.value.body["kind"] == "Status"

    run(scenario())
    bound = core.read_namespaced_pod("p", namespace)
    assert bound.spec.node_name == node
    assert [(c.type, c.status) for c in bound.status.conditions or []] == [("PodScheduled", "True")]


# ------------------------------------------------------------------------------ events


def test_events_are_written_and_shown_by_kubectl(
    kubeconfig: Path, api_client, namespace: str, node: str, kubectl
) -> None:  # type: ignore[no-untyped-def]
    events_api = client.EventsV1Api(api_client)

    async def scenario() -> str:
        async with kube(kubeconfig) as api:
            created = await api.create(PODS, pod("p", namespace))
            broadcaster = EventBroadcaster(api.with_rate_limit(None), hostname="host-1", finish_interval=0.5)
            recorder = broadcaster.recorder("nrop-scheduler")
            broadcaster.start()
            try:
                for _ in range(3):
                    recorder.failed_scheduling(created, "0/1 nodes are available: 1 Insufficient cpu.")
                await api.bind(created, node)
                recorder.scheduled(created, node)

                def failed_count() -> int:
                    found = [
                        e
                        for e in events_api.list_namespaced_event(namespace).items
                        if e.reason == "FailedScheduling"
                    ]
                    return found[0].series.count if found and found[0].series else 0

                # The second occurrence patches count 2; the third is written when the series ends.
                await eventually(lambda: failed_count() == 3, "the FailedScheduling series to reach 3")
            finally:
                await broadcaster.close()
            return str(created["metadata"]["uid"])

    uid = run(scenario())
    events = {e.reason: e for e in events_api.list_namespaced_event(namespace).items}
    assert set(events) == {"FailedScheduling", "Scheduled"}
    scheduled, failed = events["Scheduled"], events["FailedScheduling"]
    assert (scheduled.type, scheduled.action, failed.type, failed.action) == (
        "Normal",
        "Binding",
        "Warning",
        "Scheduling",
    )
    assert scheduled.reporting_controller == "nrop-scheduler"
    assert scheduled.reporting_instance == "nrop-scheduler-host-1"
    assert scheduled.note == f"Successfully assigned {namespace}/p to {node}"
    assert (scheduled.regarding.kind, scheduled.regarding.name, scheduled.regarding.uid) == ("Pod", "p", uid)
    assert scheduled.metadata.name.startswith("p.") and scheduled.event_time is not None

    listed = kubectl("get", "events", "-n", namespace, "-o", "wide").stdout
    assert "FailedScheduling" in listed and "Successfully assigned" in listed
    assert "nrop-scheduler, nrop-scheduler-host-1" in listed
    described = kubectl("describe", "pod", "p", "-n", namespace).stdout
    assert "Scheduled" in described and f"Successfully assigned {namespace}/p to {node}" in described
    assert "nrop-scheduler" in described


# ------------------------------------------------------------------------------ leader election


def test_one_leader_and_takeover_after_it_stops_renewing(
    kubeconfig: Path, api_client, namespace: str
) -> None:  # type: ignore[no-untyped-def]
    coordination = client.CoordinationV1Api(api_client)
    config = LeaderElectionConfig(namespace=namespace, name="sched", timing=ElectionTiming(2.0, 1.5, 0.25))
    log: list[str] = []

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            electors = [LeaderElector(api, config, identity=f"cand-{i}") for i in (0, 1)]

            def callbacks(i: int) -> tuple[Callable[[], Awaitable[None]], Callable[[], None]]:
                async def started() -> None:
                    log.append(f"started {i}")
                    await asyncio.Event().wait()  # lead until cancelled

                return started, lambda: log.append(f"stopped {i}")

            tasks = [asyncio.create_task(e.run(*callbacks(i))) for i, e in enumerate(electors)]
            try:
                await eventually(lambda: any(e.is_leader for e in electors), "a leader")
                for _ in range(20):  # 1 s: never two leaders
                    assert sum(e.is_leader for e in electors) == 1
                    await asyncio.sleep(0.05)
                leader = next(i for i, e in enumerate(electors) if e.is_leader)
                other = 1 - leader
                assert log == [f"started {leader}"]
                lease = await api.get(LEASES, "sched", namespace)
                assert lease["spec"]["holderIdentity"] == f"cand-{leader}"
                assert lease["spec"]["leaseDurationSeconds"] == 2 and lease["spec"]["leaseTransitions"] == 0

                # The leader stops renewing without releasing: the other waits for the lease to expire.
                stopped_at = time.monotonic()
                tasks[leader].cancel()
                await asyncio.gather(tasks[leader], return_exceptions=True)
                assert log[-1] == f"stopped {leader}"
                await eventually(lambda: electors[other].is_leader, "the other candidate to take over")
                took = time.monotonic() - stopped_at
                assert 1.0 <= took <= 6.0, took
                lease = await api.get(LEASES, "sched", namespace)
                assert lease["spec"]["holderIdentity"] == f"cand-{other}"
                assert lease["spec"]["leaseTransitions"] == 1
                assert log[-1] == f"started {other}"

                # Someone else writes the lease: the leader notices at its next renewal and steps down.
                await asyncio.to_thread(
                    coordination.patch_namespaced_lease,
                    "sched",
                    namespace,
                    {"spec": {"holderIdentity": "intruder"}},
                )
                await asyncio.wait_for(tasks[other], TIMEOUT)  # run() returns when leadership is lost
                assert log[-1] == f"stopped {other}" and not electors[other].is_leader
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    run(scenario())


def test_release_on_cancel_hands_over_at_once(kubeconfig: Path, namespace: str) -> None:
    config = LeaderElectionConfig(
        namespace=namespace, name="sched", timing=ElectionTiming(30.0, 10.0, 0.25), release_on_cancel=True
    )

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            first, second = LeaderElector(api, config), LeaderElector(api, config)
            assert first.identity.startswith(socket.gethostname() + "_") and first.identity != second.identity

            async def idle() -> None:
                await asyncio.Event().wait()

            task_first = asyncio.create_task(first.run(idle, lambda: None))
            await eventually(lambda: first.is_leader, "the first candidate to lead")
            task_second = asyncio.create_task(second.run(idle, lambda: None))
            try:
                await asyncio.sleep(0.6)
                assert not second.is_leader and second.observed_holder == first.identity
                stopped_at = time.monotonic()
                task_first.cancel()
                await asyncio.gather(task_first, return_exceptions=True)
                lease = await api.get(LEASES, "sched", namespace)
                assert lease["spec"]["holderIdentity"] == "" and lease["spec"]["leaseDurationSeconds"] == 1
                await eventually(lambda: second.is_leader, "the second candidate to take the released lease")
                assert time.monotonic() - stopped_at < 5.0  # far less than the 30 s lease
            finally:
                task_second.cancel()
                await asyncio.gather(task_second, return_exceptions=True)

    run(scenario())


# ------------------------------------------------------------------------------ metrics


def test_metrics_endpoint_is_scraped() -> None:
    metrics = SchedulerMetrics()
    metrics.observe_attempt("unschedulable", "nrop-scheduler", 0.0005, attempts=1)
    metrics.observe_attempt("scheduled", "nrop-scheduler", 0.003, attempts=2)
    metrics.set_pending({"active": 3, "backoff": 1})
    with pytest.raises(ValueError, match="result: Unsupported value"):
        metrics.observe_attempt("maybe", "nrop-scheduler", 0.1)
    with pytest.raises(ValueError, match="queue: Unsupported value"):
        metrics.set_pending({"waiting": 1})

    async def scrape() -> tuple[str, str, str]:
        port = await metrics.serve("127.0.0.1:0")
        try:
            assert port > 0
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                    content_type = response.headers["Content-Type"]
                    body = await response.text()
                async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                    health = await response.text()
            return content_type, body, health
        finally:
            await metrics.close()

    content_type, body, health = run(scrape())
    assert content_type.startswith("text/plain") and health == "ok"
    lines = set(body.splitlines())
    assert 'scheduler_schedule_attempts_total{profile="nrop-scheduler",result="scheduled"} 1.0' in lines
    assert 'scheduler_schedule_attempts_total{profile="nrop-scheduler",result="unschedulable"} 1.0' in lines
    duration = "scheduler_scheduling_attempt_duration_seconds_bucket"
    assert f'{duration}{{le="0.002",profile="nrop-scheduler",result="scheduled"}} 0.0' in lines
    assert f'{duration}{{le="0.004",profile="nrop-scheduler",result="scheduled"}} 1.0' in lines
    assert f'{duration}{{le="16.384",profile="nrop-scheduler",result="scheduled"}} 1.0' in lines
    assert 'scheduler_pending_pods{queue="active"} 3.0' in lines
    assert 'scheduler_pending_pods{queue="backoff"} 1.0' in lines
    assert 'scheduler_pending_pods{queue="gated"} 0.0' in lines
    assert "scheduler_pod_scheduling_attempts_count 1.0" in lines  # only the scheduled attempt counts
    assert 'scheduler_pod_scheduling_attempts_bucket{le="1.0"} 0.0' in lines
    assert 'scheduler_pod_scheduling_attempts_bucket{le="2.0"} 1.0' in lines
    assert 'scheduler_pod_scheduling_attempts_bucket{le="16.0"} 1.0' in lines


# ------------------------------------------------------------------------------ before leading


def _attempt(pod: dict[str, Any]) -> str | None:
    """What a scheduling attempt left on a pod: its node, or its PodScheduled reason; None before any."""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"]
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c.get("reason") or "" for c in conditions if c.get("type") == "PodScheduled"), None)


async def attempts(api: KubeClient, namespace: str, names: tuple[str, ...]) -> list[str | None]:
    return [_attempt(await api.get(PODS, name, namespace)) for name in names]


async def until_attempted(api: KubeClient, namespace: str, names: tuple[str, ...], what: str) -> None:
    """Wait until a scheduling attempt shows on every pod named."""
    deadline = time.monotonic() + TIMEOUT
    while None in await attempts(api, namespace, names):
        assert time.monotonic() < deadline, f"expected {what} within {TIMEOUT}s"
        await asyncio.sleep(0.1)


def test_prepared_scheduler_queues_pods_and_binds_them_only_once_running(
    kubeconfig: Path, namespace: str
) -> None:
    """As a kube-scheduler candidate: caches synced and pods queued while another instance leads."""
    doc = {
        "apiVersion": schedconfig.API_VERSION,
        "kind": schedconfig.KIND,
        "profiles": [{"schedulerName": "nrop-scheduler"}],
    }
    cfg = schedconfig.parse(doc, registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT)

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            scheduler = Scheduler(cfg, api)
            try:
                await scheduler.prepare()
                for name in ("first", "second"):
                    await api.create(PODS, pod(name, namespace))
                await eventually(lambda: scheduler.queue.pending_counts()["active"] == 2, "both pods queued")
                await asyncio.sleep(1.0)
                assert await attempts(api, namespace, ("first", "second")) == [None, None]
                scheduler.run()
                await until_attempted(
                    api, namespace, ("first", "second"), "a scheduling attempt for both pods once running"
                )
            finally:
                await scheduler.stop()

    run(scenario())


@pytest.mark.parametrize("delay", [False, True], ids=["default", "delayCacheUntilActive"])
def test_candidate_prepares_before_the_election_unless_delayed(
    kubeconfig: Path, namespace: str, delay: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nrop-scheduler's run: while another instance holds the lease, a candidate has its profiles
    built and the pod queued (kube-scheduler's default) or nothing yet (``delayCacheUntilActive``);
    once the holder lets go, it schedules."""
    doc = {
        "apiVersion": schedconfig.API_VERSION,
        "kind": schedconfig.KIND,
        "delayCacheUntilActive": delay,
        "leaderElection": {
            "leaderElect": True,
            "resourceNamespace": namespace,
            "resourceName": "sched-candidate",
            "leaseDuration": "30s",
            "renewDeadline": "10s",
            "retryPeriod": "250ms",
        },
        "profiles": [{"schedulerName": "nrop-scheduler"}],
    }
    cfg = schedconfig.parse(doc, registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT)
    made: list[Scheduler] = []

    class Recorded(Scheduler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(sched_main, "Scheduler", Recorded)
    args = sched_main._parser().parse_args(["--kubeconfig", str(kubeconfig)])
    holder_config = LeaderElectionConfig(
        namespace=namespace,
        name="sched-candidate",
        timing=ElectionTiming(30.0, 10.0, 0.25),
        release_on_cancel=True,
    )

    async def scenario() -> None:
        async with kube(kubeconfig) as api:
            holder = LeaderElector(api, holder_config)

            async def idle() -> None:
                await asyncio.Event().wait()

            holding = asyncio.create_task(holder.run(idle, lambda: None))
            await eventually(lambda: holder.is_leader, "the other instance to lead")
            candidate = asyncio.create_task(sched_main.run(args, cfg))
            try:
                await api.create(PODS, pod("waiting", namespace))
                await eventually(lambda: made, "the scheduler to be built")
                scheduler = made[0]
                if delay:
                    await asyncio.sleep(1.5)
                    assert scheduler.profiles == {}
                else:
                    await eventually(
                        lambda: scheduler.profiles and scheduler.queue.pending_counts()["active"] == 1,
                        "the candidate to queue the pod",
                    )
                await asyncio.sleep(0.5)
                assert await attempts(api, namespace, ("waiting",)) == [None]
                holding.cancel()
                await asyncio.gather(holding, return_exceptions=True)
                await until_attempted(api, namespace, ("waiting",), "the new leader to schedule the pod")
            finally:
                for task in (candidate, holding):
                    task.cancel()
                await asyncio.gather(candidate, holding, return_exceptions=True)

    run(scenario())
