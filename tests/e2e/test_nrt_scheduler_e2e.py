"""``nrop-scheduler`` end to end: real exporter, real scheduler process, real kubelets.

One embedded cluster on the shipped ``devices`` profile (two workers with two NUMA zones
each; static CPU and memory managers; topology manager ``single-numa-node`` with scope
``pod``) runs as the suite's embedded target. The NRT CRD is installed and one
``resource-topology-exporter`` per worker runs as a subprocess (periodic mode, 1s), so the
NodeResourceTopology objects are the exporter's own. Each test starts ``nrop-scheduler``
as a subprocess with a ``KubeSchedulerConfiguration`` file (profile
``topo-aware-scheduler``, ``NodeResourceTopologyMatch``, no leader election) and checks
what the API shows:

* a guaranteed pod that fits one zone is bound, admitted by the kubelet (Running) and has
  a ``Scheduled`` event from ``topo-aware-scheduler``;
* a pod that fits a worker in total but no single zone stays Pending with
  ``FailedScheduling`` ``cannot align pod`` (the profile's scope is ``pod``);
* a burst of pods created at once, faster than the exporters refresh, with the
  over-reserve cache: no zone is overbooked (no kubelet ``TopologyAffinityError``),
  exactly the pods that fit run and the rest stay Pending;
* SIGTERM ends the process with 0; an invalid configuration exits 1 naming the field.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from _helpers_e2e import (
    POLL_INTERVAL,
    Process,
    exporter_env,
    install_nrt_crd,
    program,
    start_exporter,
    stopped_cleanly,
)
from kubernetes import client

from nrop.api.nrt import NodeResourceTopology
from nrop.suite.e2e.kube import NRT, Kube
from nrop.suite.e2e.nrt.waiters import for_nrts
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.plugin.target import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("devices")]

SCHEDULER_NAME = "topo-aware-scheduler"
WORKERS = ("worker-0", "worker-1")
TIMEOUT = 30.0
#: The burst's pods: 6 exclusive CPUs each; a zone of the profile has 14 or 16 allocatable
#: CPUs, so K = 2 pods fit per zone, 4 per worker, 8 in the cluster.
BURST_CPU = 6
BURST_FITTING = 8
BURST_PODS = 12


def _args(cache: bool) -> dict[str, Any]:
    args: dict[str, Any] = {"scoringStrategy": {"type": "LeastAllocated"}}
    if cache:
        args["cacheResyncPeriodSeconds"] = 5
    return args


def scheduler_config(*, cache: bool) -> dict[str, Any]:
    """Passthrough (Reserve off, as upstream's "without cache" manifest) or OverReserve."""
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}
    if not cache:
        plugins["reserve"] = {"disabled": [{"name": "NodeResourceTopologyMatch"}]}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "plugins": plugins,
                "pluginConfig": [{"name": "NodeResourceTopologyMatch", "args": _args(cache)}],
            }
        ],
    }


# ----------------------------------------------------------------------------- fixtures


@dataclass
class Stack:
    kube: Kube
    core: client.CoreV1Api
    events: client.EventsV1Api
    kubeconfig: Path
    state_dir: Path
    env: dict[str, str]

    def start_scheduler(self, *, cache: bool) -> Process:
        name = "overreserve" if cache else "passthrough"
        path = self.state_dir / f"sched-{name}-{uuid.uuid4().hex[:4]}.yaml"
        path.write_text(yaml.safe_dump(scheduler_config(cache=cache)))
        command = [
            *program("nrop-scheduler", "nrop.sched.main"),
            "--config", str(path), "--kubeconfig", str(self.kubeconfig), "-v", "2",
        ]  # fmt: skip
        return Process(command, path.with_suffix(".log"), self.env)

    def pod(self, namespace: str, name: str) -> client.V1Pod:
        return self.core.read_namespaced_pod(name, namespace)

    def pod_events(self, namespace: str, name: str) -> list[tuple[str, str, str]]:
        """(reason, reporting controller, note) of the events about the pod."""
        # Raw JSON: the kubelet's core/v1 events have no eventTime, which the typed client refuses.
        raw = self.events.list_namespaced_event(namespace, _preload_content=False)
        return [
            (e["reason"], e.get("reportingController"), e.get("note") or "")
            for e in json.loads(raw.data)["items"]
            if (e.get("regarding") or {}).get("name") == name
        ]


@pytest.fixture(scope="module")
def stack(
    embedded: EmbeddedCluster, kube: Kube, api_client: client.ApiClient, state_dir: Path
) -> Iterator[Stack]:
    install_nrt_crd(kube)
    stack = Stack(
        kube,
        client.CoreV1Api(api_client),
        client.EventsV1Api(api_client),
        embedded.kubeconfig,
        state_dir,
        exporter_env(),
    )
    periodic = ("--sleep-interval", "1s", "--podreadiness=false")
    exporters = {node: start_exporter(embedded, kube, node, state_dir, *periodic) for node in WORKERS}
    with stopped_cleanly(exporters):
        for_nrts(kube, WORKERS, lambda _: True, "to exist", 20.0, interval=POLL_INTERVAL)
        yield stack


def zone_cpus(stack: Stack, node: str) -> dict[str, int]:
    """Available CPUs per zone of the node's NRT, as the exporter published them."""
    nrt = NodeResourceTopology.from_dict(stack.kube.get(NRT, node))
    return {z.name: int(str(r.available)) for z in nrt.zones for r in z.resources if r.name == "cpu"}


@pytest.fixture
def passthrough(stack: Stack) -> Iterator[Process]:
    proc = stack.start_scheduler(cache=False)
    yield proc
    assert proc.stop() == 0, proc.log()


@pytest.fixture
def overreserve(stack: Stack) -> Iterator[Process]:
    proc = stack.start_scheduler(cache=True)
    yield proc
    assert proc.stop() == 0, proc.log()


def guaranteed(name: str, cpu: int, memory: str = "1Gi") -> dict[str, Any]:
    resources = {"cpu": str(cpu), "memory": memory}
    container = {"name": "c", "image": "pause", "resources": {"limits": resources, "requests": resources}}
    spec = {"schedulerName": SCHEDULER_NAME, "containers": [container], "restartPolicy": "Never"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _delete_all(stack: Stack, namespace: str) -> None:
    """Free the workers for the next test (the namespace fixture does not wait for it)."""
    stack.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for(
        lambda: stack.core.list_namespaced_pod(namespace).items,
        lambda items: not items,
        f"the pods of {namespace} to be gone",
        TIMEOUT,
    )


# ----------------------------------------------------------------------------- tests


def test_fitting_pod_is_bound_and_admitted(stack: Stack, passthrough: Process, namespace: str) -> None:
    stack.core.create_namespaced_pod(namespace, guaranteed("fits", 8))
    pod = waiters.for_pod_phase(stack.kube, namespace, "fits", "Running", interval=0.05, timeout=TIMEOUT)
    node = pod["spec"]["nodeName"]
    assert node in WORKERS
    events = wait_for(
        lambda: stack.pod_events(namespace, "fits"),
        lambda evs: any(reason == "Scheduled" for reason, _, _ in evs),
        f"a Scheduled event for {namespace}/fits",
    )
    scheduled = [(ctl, note) for reason, ctl, note in events if reason == "Scheduled"]
    assert scheduled[0][0] == SCHEDULER_NAME
    assert node in scheduled[0][1]
    # The exporter then shows the 8 exclusive CPUs gone from one zone of that node.
    wait_for(
        lambda: zone_cpus(stack, node),
        lambda zones: sorted(zones.values()) in ([6, 16], [8, 14]),
        f"NRT {node} to show 8 CPUs taken from one zone",
    )
    _delete_all(stack, namespace)


def test_pod_fitting_no_single_zone_stays_pending(stack: Stack, passthrough: Process, namespace: str) -> None:
    # 20 CPUs: a worker has 30 allocatable, but no zone more than 16.
    stack.core.create_namespaced_pod(namespace, guaranteed("too-wide", 20))
    events = wait_for(
        lambda: stack.pod_events(namespace, "too-wide"),
        lambda evs: any(reason == "FailedScheduling" for reason, _, _ in evs),
        f"a FailedScheduling event for {namespace}/too-wide",
        TIMEOUT,
    )
    failed = [(ctl, note) for reason, ctl, note in events if reason == "FailedScheduling"]
    assert failed[0][0] == SCHEDULER_NAME
    assert "cannot align pod" in failed[0][1], failed
    pod = stack.pod(namespace, "too-wide")
    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None
    _delete_all(stack, namespace)


def _phases(stack: Stack, namespace: str) -> dict[str, tuple[str, str | None]]:
    return {
        p.metadata.name: (p.status.phase, p.status.reason)
        for p in stack.core.list_namespaced_pod(namespace).items
    }


def _running(phases: dict[str, tuple[str, str | None]]) -> int:
    return sum(phase == "Running" for phase, _ in phases.values())


def _failed(phases: dict[str, tuple[str, str | None]]) -> bool:
    return any(phase == "Failed" for phase, _ in phases.values())


def _burst_phases(stack: Stack, namespace: str) -> dict[str, tuple[str, str | None]]:
    return {n: v for n, v in _phases(stack, namespace).items() if n.startswith("burst-")}


def test_burst_with_overreserve_never_overbooks_a_zone(
    stack: Stack, overreserve: Process, namespace: str
) -> None:
    for i in range(BURST_PODS):
        stack.core.create_namespaced_pod(namespace, guaranteed(f"burst-{i}", BURST_CPU))
    # The first wave: over-reserve takes each bound pod's requests off every zone of its
    # worker, so 2 pods per worker (12 CPUs) fit before a resync, although 4 would.
    first = wait_for(
        lambda: _burst_phases(stack, namespace),
        lambda ph: _running(ph) >= 2 * len(WORKERS),
        "the first wave of burst pods to be Running",
        TIMEOUT,
        terminal=_failed,
        interval=0.2,
    )
    assert _running(first) == 2 * len(WORKERS), first

    # Then a resync sees the exporter's fingerprint of the running pods, flushes the
    # workers and re-queues the pending pods, which lets the rest in: never more than fit.
    def burst() -> dict[str, tuple[str, str | None]]:
        return _burst_phases(stack, namespace)

    wait_for(
        burst,
        lambda ph: _running(ph) >= BURST_FITTING,
        f"{BURST_FITTING} burst pods to be Running",
        45.0,
        terminal=_failed,
        interval=2.0,
    )
    # One more resync period, with its re-queue: nothing else is bound.
    for _ in range(4):
        time.sleep(2.0)
        phases = burst()
    counts = {
        phase: sum(p == phase for p, _ in phases.values()) for phase in ("Running", "Pending", "Failed")
    }
    assert counts == {"Running": BURST_FITTING, "Pending": BURST_PODS - BURST_FITTING, "Failed": 0}, phases
    assert not any(reason == "TopologyAffinityError" for _, reason in phases.values())
    pending = [n for n, (phase, _) in phases.items() if phase == "Pending"]
    assert all(stack.pod(namespace, n).spec.node_name is None for n in pending)
    for node in WORKERS:
        assert all(cpus < BURST_CPU for cpus in zone_cpus(stack, node).values()), zone_cpus(stack, node)
    _delete_all(stack, namespace)


def test_invalid_configuration_exits_1_naming_the_field(state_dir: Path) -> None:
    doc = scheduler_config(cache=True)
    doc["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]["type"] = "Fastest"
    path = state_dir / "invalid.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = subprocess.run(
        [*program("nrop-scheduler", "nrop.sched.main"), "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1, result
    assert "scoringStrategy.type" in result.stderr, result.stderr
