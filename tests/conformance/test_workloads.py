"""Workloads on the ``default`` profile end to end: controllers, the default scheduler, kubelets, processes.

A cluster on the shipped ``default`` profile (a tainted control plane and two workers with
2 NUMA nodes each, static CPU and memory managers, topology manager ``single-numa-node``,
pod scope) runs in this process with its ``default-scheduler``.  The tests only use what a
user has — ``kubectl``, the official Python client and the process table — and check that:

* a Deployment and a DaemonSet of our image run real processes that read a hostPath file
  of their node and call the API with their service account (a 403 for what RBAC does not
  grant), are placed by ``default-scheduler``, become Ready, come back after ``kill -9``,
  and ``kubectl rollout status`` completes;
* a guaranteed pod no worker can fit stays Pending, ``PodScheduled=False``/``Unschedulable``
  with the scheduler's ``0/3 nodes are available`` message;
* a guaranteed pod that fits a worker in total but no single NUMA zone is bound by the
  (NUMA-unaware) default scheduler and rejected by the kubelet with ``TopologyAffinityError``;
* ``nrop-cluster down`` stops an ``up`` process and leaves no pod process behind.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client
from procstate import alive

from nrop.localcluster.cluster import ClusterConfig
from nrop.suite.e2e.wait import polling as waiting

T = TypeVar("T")
IMAGE = "quay.io/x/numaresources-operator-tests:latest"
WORKERS = ("worker-0", "worker-1")
TIMEOUT = 30.0
NROP_CLUSTER = Path(sys.executable).parent / "nrop-cluster"
#: What every worker of the default profile has in ``/sys/devices/system/node/online``.
WORKER_NUMA_ONLINE = "0-1"
#: Allocatable CPUs of a default worker per NUMA zone (reservedSystemCPUs 0,22 lie in zone 0) and in total.
ZONE_CPUS = (20, 22)

# Reads the hostPath file given as its argument, asks the API for its namespace's pods and for
# the nodes (which RBAC denies), then serves /healthz on its pod IP for the readiness probe.
AGENT = textwrap.dedent(
    """
    import http.server, json, os, sys
    from kubernetes import client, config
    print("pid", os.getpid(), flush=True)
    print("online", open(sys.argv[1]).read().strip(), flush=True)
    config.load_incluster_config()
    api = client.CoreV1Api()
    names = sorted(p.metadata.name for p in api.list_namespaced_pod(os.environ["POD_NAMESPACE"]).items)
    print("sees itself", os.environ["POD_NAME"] in names, flush=True)
    try:
        api.list_node()
        print("nodes allowed", flush=True)
    except client.ApiException as exc:
        print("nodes denied", exc.status, json.loads(exc.body)["message"], flush=True)
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\\n")
    http.server.ThreadingHTTPServer((os.environ["POD_IP"], 8080), Handler).serve_forever()
    """
)


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """This module's cluster: the shipped ``default`` profile with its default scheduler."""
    return ClusterConfig(profile="default", history_size=20000)


@pytest.fixture(scope="module")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def apps(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


# -- helpers ------------------------------------------------------------------------------------


#: The suite's waiter with this module's default timeout.
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT, interval=0.1)


def agent_template(app: str) -> dict[str, Any]:
    """A pod template running :data:`AGENT` on the node's ``/sys/devices/system/node/online``."""
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    container = {
        "name": "agent",
        "image": IMAGE,
        "command": ["python3", "-c", AGENT, "/host-node/online"],
        "env": env,
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1},
        "volumeMounts": [{"name": "node", "mountPath": "/host-node", "readOnly": True}],
    }
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "serviceAccountName": "reader",
            "containers": [container],
            "volumes": [
                {"name": "node", "hostPath": {"path": "/sys/devices/system/node", "type": "Directory"}}
            ],
        },
    }


def workload_manifest(kind: str, name: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": agent_template(name), **spec},
        }
    )


def pods_of(core: client.CoreV1Api, namespace: str, app: str) -> list[client.V1Pod]:
    return [
        p
        for p in core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
        if not p.metadata.deletion_timestamp
    ]


def scheduler_events(api_client: client.ApiClient, namespace: str, pod: str) -> list[tuple[str, str, str]]:
    """(reporting component, reason, message) of the events about ``pod``.

    Read as core/v1 Events: the Python client refuses the events.k8s.io shape of the
    controllers' core events, which have no ``eventTime``.
    """
    return [
        (e.reporting_component, e.reason, e.message)
        for e in client.CoreV1Api(api_client).list_namespaced_event(namespace).items
        if e.involved_object.kind == "Pod" and e.involved_object.name == pod
    ]


def pid_of(namespace: str, pod: str) -> int:
    """The PID of the pod's container process, found in the process table by its downward-API env."""
    wanted = {f"POD_NAMESPACE={namespace}".encode(), f"POD_NAME={pod}".encode()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = set((entry / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if wanted <= environ and alive(int(entry.name)):
            found.append(int(entry.name))
    assert len(found) == 1, f"expected one process of pod {namespace}/{pod}, found {found}"
    return found[0]


def check_agent_log(text: str, namespace: str) -> None:
    lines = text.splitlines()
    assert f"online {WORKER_NUMA_ONLINE}" in lines, text
    assert "sees itself True" in lines, text
    assert (
        f'nodes denied 403 nodes is forbidden: User "system:serviceaccount:{namespace}:reader" cannot '
        'list resource "nodes" in API group "" at the cluster scope'
    ) in lines, text


def check_scheduled_by_default_scheduler(
    api_client: client.ApiClient, namespace: str, pod: client.V1Pod
) -> None:
    name, node = pod.metadata.name, pod.spec.node_name
    assert pod.spec.scheduler_name == "default-scheduler"
    expected = ("default-scheduler", "Scheduled", f"Successfully assigned {namespace}/{name} to {node}")
    wait_for(
        lambda: scheduler_events(api_client, namespace, name),
        lambda events: expected in events,
        f"a Scheduled event from default-scheduler for pod {name}",
    )


def condition(pod: client.V1Pod, kind: str) -> client.V1PodCondition | None:
    return next((c for c in pod.status.conditions or () if c.type == kind), None)


def guaranteed_pod(name: str, cpus: int) -> dict[str, Any]:
    resources = {"cpu": str(cpus), "memory": "1Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "pause:3.9", "resources": {"requests": resources, "limits": resources}}
            ],
        },
    }


# -- Deployment and DaemonSet of our image ------------------------------------------------------------------


def test_deployment_of_our_image_runs_processes_placed_by_the_default_scheduler(
    kubectl: Callable[..., Any],
    core: client.CoreV1Api,
    apps: client.AppsV1Api,
    api_client: client.ApiClient,
    namespace: str,
    reader: str,
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=workload_manifest("Deployment", "agents", replicas=2))
    result = kubectl("rollout", "status", "-n", namespace, "deployment/agents", "--timeout=60s", timeout=70)
    assert 'deployment "agents" successfully rolled out' in result.stdout

    pods = pods_of(core, namespace, "agents")
    assert len(pods) == 2
    for pod in pods:
        assert pod.status.phase == "Running" and pod.spec.node_name in WORKERS
        assert condition(pod, "Ready").status == "True"
        assert condition(pod, "PodScheduled").status == "True"
        check_scheduled_by_default_scheduler(api_client, namespace, pod)
        check_agent_log(kubectl("logs", "-n", namespace, pod.metadata.name).stdout, namespace)

    # kill -9 of one agent: the kubelet restarts the container in place, the Deployment recovers.
    victim = pods[0].metadata.name
    first = pid_of(namespace, victim)
    assert f"pid {first}" in kubectl("logs", "-n", namespace, victim).stdout
    os.kill(first, signal.SIGKILL)
    restarted = wait_for(
        lambda: core.read_namespaced_pod(victim, namespace),
        lambda p: (
            p.status.container_statuses[0].restart_count == 1 and condition(p, "Ready").status == "True"
        ),
        f"pod {victim} restarted once and Ready again",
    )
    last = restarted.status.container_statuses[0].last_state.terminated
    assert (last.exit_code, last.reason) == (137, "Error")
    assert wait_for(lambda: alive(first), lambda up: not up, f"process {first} gone", timeout=5) is False
    second = pid_of(namespace, victim)
    assert second != first
    assert f"pid {first}" in kubectl("logs", "-n", namespace, victim, "--previous").stdout
    check_agent_log(
        wait_for(
            lambda: kubectl("logs", "-n", namespace, victim).stdout,
            lambda out: "nodes denied" in out,
            "the restarted agent's API calls in its log",
        ),
        namespace,
    )
    result = kubectl("rollout", "status", "-n", namespace, "deployment/agents", "--timeout=60s", timeout=70)
    assert 'deployment "agents" successfully rolled out' in result.stdout
    assert apps.read_namespaced_deployment("agents", namespace).status.ready_replicas == 2


def test_daemonset_of_our_image_runs_one_process_per_worker(
    kubectl: Callable[..., Any],
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    namespace: str,
    reader: str,
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=workload_manifest("DaemonSet", "agent"))
    result = kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s", timeout=70)
    assert 'daemon set "agent" successfully rolled out' in result.stdout

    pods = pods_of(core, namespace, "agent")
    assert sorted(p.spec.node_name for p in pods) == list(WORKERS)  # the tainted control plane is left out
    pids = set()
    for pod in pods:
        assert pod.status.phase == "Running" and condition(pod, "Ready").status == "True"
        check_scheduled_by_default_scheduler(api_client, namespace, pod)
        check_agent_log(kubectl("logs", "-n", namespace, pod.metadata.name).stdout, namespace)
        pids.add(pid_of(namespace, pod.metadata.name))
    assert len(pids) == 2

    kubectl("delete", "-n", namespace, "daemonset/agent", "--wait=true", "--timeout=30s", timeout=40)
    wait_for(lambda: pods_of(core, namespace, "agent"), lambda left: not left, "the daemon pods deleted")
    assert (
        wait_for(lambda: {p for p in pids if alive(p)}, lambda up: not up, "the agent processes gone")
        == set()
    )


# -- what the default scheduler cannot place, and what it places wrongly --------------------------------------


def test_pod_no_worker_can_fit_stays_pending_unschedulable(
    core: client.CoreV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, guaranteed_pod("huge", cpus=sum(ZONE_CPUS) + 2))
    pod = wait_for(
        lambda: core.read_namespaced_pod("huge", namespace),
        lambda p: condition(p, "PodScheduled") is not None,
        "a PodScheduled condition on pod huge",
    )
    scheduled = condition(pod, "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert re.match(r"0/3 nodes are available: .*2 Insufficient cpu\b", scheduled.message), scheduled.message
    assert scheduled.message.startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    ), scheduled.message
    events = wait_for(
        lambda: [e for e in scheduler_events(api_client, namespace, "huge") if e[1] == "FailedScheduling"],
        bool,
        "a FailedScheduling event for pod huge",
    )
    (controller, _, note) = events[0]
    assert controller == "default-scheduler" and note == scheduled.message
    time.sleep(1)  # nothing changes: still Pending, unbound
    pod = core.read_namespaced_pod("huge", namespace)
    assert (pod.status.phase, pod.spec.node_name) == ("Pending", None)


def test_pod_fitting_no_single_numa_zone_is_bound_and_rejected_by_the_kubelet(
    core: client.CoreV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    # More CPUs than either NUMA zone of a worker holds, fewer than the worker: the default
    # scheduler's NodeResourcesFit accepts both workers; single-numa-node admission cannot.
    cpus = max(ZONE_CPUS) + 4
    assert cpus <= sum(ZONE_CPUS)
    core.create_namespaced_pod(namespace, guaranteed_pod("wide", cpus=cpus))
    pod = wait_for(
        lambda: core.read_namespaced_pod("wide", namespace),
        lambda p: p.status.phase in ("Failed", "Running", "Succeeded"),
        "a verdict of the kubelet on pod wide",
    )
    assert pod.spec.node_name in WORKERS
    check_scheduled_by_default_scheduler(api_client, namespace, pod)
    assert (pod.status.phase, pod.status.reason) == ("Failed", "TopologyAffinityError")
    assert pod.status.message == "Pod was rejected: Resources cannot be allocated with Topology locality"
    rejections = [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.name == "wide" and e.reason == "TopologyAffinityError"
    ]
    assert rejections and rejections[0].type == "Warning" and rejections[0].source.component == "kubelet"


# -- nrop-cluster down ---------------------------------------------------------------------------------------


SLEEPER = textwrap.dedent(
    """
    import os, time
    print("pid", os.getpid(), flush=True)
    time.sleep(600)
    """
)


@pytest.mark.slow
def test_nrop_cluster_down_stops_up_and_leaves_no_process_behind(state_dir: Path) -> None:
    state = state_dir / "down"
    up = subprocess.Popen(
        [str(NROP_CLUSTER), "up", "--profile", "default", "--state-dir", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert up.stdout is not None
        assert up.stdout.readline() == f"ready: kubeconfig={state / 'kubeconfig'}\n"
        assert (state / "nrop-cluster.pid").read_text().split()[0] == str(up.pid)
        from kubernetes import config

        core = client.CoreV1Api(config.new_client_from_config(config_file=str(state / "kubeconfig")))
        body = {
            "metadata": {"name": "sleeper"},
            "spec": {"containers": [{"name": "c", "image": IMAGE, "command": ["python3", "-c", SLEEPER]}]},
        }
        core.create_namespaced_pod("default", body)
        text = wait_for(
            lambda: core.read_namespaced_pod_log("sleeper", "default"),
            lambda t: "pid" in t,
            "the pid in the log",
        )
        pid = int(text.split()[1])
        assert alive(pid) and core.read_namespaced_pod("sleeper", "default").spec.node_name in WORKERS

        down = subprocess.run(
            [str(NROP_CLUSTER), "down", "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert down.returncode == 0, down.stderr
        assert not alive(up.pid), "nrop-cluster down returned before the cluster exited"
        assert up.wait(timeout=5) == 0
        assert not alive(pid), "a pod process outlived nrop-cluster down"
        assert not (state / "nrop-cluster.pid").exists()

        again = subprocess.run(
            [str(NROP_CLUSTER), "down", "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert again.returncode == 1
        assert f"no cluster is running in {state}" in again.stderr
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(timeout=10)
