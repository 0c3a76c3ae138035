"""Pods of the project's own image run as real processes on the emulated nodes, end to end.

A cluster on the shipped ``default`` profile runs as the suite's embedded target
(``nrop-cluster up``, fixture ``embedded``). The tests create pods
with ``spec.nodeName`` through the official client (and ``kubectl``), whose container is
``python3 -c AGENT`` in an image matching ``*numaresources-operator-tests*``: the agent
reads a hostPath file and a ConfigMap volume, reports its downward-API environment, calls
the API server with its service account, serves HTTP on its pod IP and reacts to
SIGTERM as told. They check what a user would: ``kubectl logs`` (also ``--previous``),
pod status (IPs, restarts, back-off, readiness, terminal states, termination messages),
events, ``pods/proxy``, and that no process outlives its pod or its cluster. A container
runs in a mount namespace of its own: it finds the node's sysfs at ``/sys``, its volumes
and its service account at their paths, read-only where they must be, and the machine's
mount table is left as it was; a cluster without ``CAP_SYS_ADMIN`` rewrites mount paths
instead and says so in a node event.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

import pytest
import yaml
from kubernetes import client, watch
from procstate import alive

from nrop.api.metatime import parse_time
from nrop.localcluster.apiserver.wire import spdy
from nrop.suite.e2e.wait import polling as waiting
from nrop.suite.plugin import target

pytestmark = pytest.mark.cluster_profile("default")

WORKER = "worker-0"
IMAGE = "quay.io/openshift-kni/numaresources-operator-tests:4.20"
TIMEOUT = 30.0
T = TypeVar("T")

AGENT = textwrap.dedent(
    """
    import http.server, json, os, signal, sys
    print("pid", os.getpid())
    print("env", os.environ.get("NODE_NAME"), os.environ.get("POD_IP"), os.environ.get("CPU_LIMIT"),
          os.environ.get("SECRET"))
    for path in sys.argv[1:]:
        print("file", path.rsplit("/", 1)[-1], open(path).read().strip())
    if os.environ.get("CALL_API"):
        from kubernetes import client, config
        config.load_incluster_config()
        api = client.CoreV1Api()
        print("pods", sorted(p.metadata.name for p in api.list_namespaced_pod(os.environ["NS"]).items))
        try:
            api.list_node()
            print("nodes allowed")
        except client.ApiException as exc:
            print("denied", exc.status, json.loads(exc.body)["message"])
    state = {"ready": True}
    def on_term(*_):
        print("terminating")
        if not os.environ.get("IGNORE_TERM"):
            os._exit(0)
    signal.signal(signal.SIGTERM, on_term)
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass
        def answer(self, code, body):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_GET(self):
            if self.path == "/healthz":
                self.answer(200 if state["ready"] else 503, b"ok\\n")
            else:
                self.answer(200, f"agent_up 1\\npath {self.path}\\n".encode())
        def do_POST(self):
            state["ready"] = not state["ready"]
            self.answer(200, json.dumps(state).encode())
    http.server.ThreadingHTTPServer((os.environ["POD_IP"], 8080), Handler).serve_forever()
    """
)


# -- helpers ------------------------------------------------------------------------------------


#: The suite's waiter with this module's default timeout.
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT, interval=0.1)


def agent_container(
    *, args: tuple[str, ...] = (), env: dict[str, str] | None = None, **fields: Any
) -> dict[str, Any]:
    variables = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
    ]
    variables += [{"name": k, "value": v} for k, v in (env or {}).items()]
    return {
        "name": "agent",
        "image": IMAGE,
        "command": ["python3", "-c", AGENT, *args],
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"limits": {"cpu": "1500m", "memory": "128Mi"}},
        "env": variables,
        **fields,
    }


def pod_body(name: str, *containers: dict[str, Any], restart: str = "Always", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": WORKER,
            "serviceAccountName": "reader",
            "restartPolicy": restart,
            "containers": list(containers),
            **spec,
        },
    }


def status_of(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    return core.api_client.sanitize_for_serialization(core.read_namespaced_pod(name, namespace))["status"]


def container_status(status: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return (status.get("containerStatuses") or [{}])[index]


def condition(status: dict[str, Any], kind: str) -> str:
    return next((c["status"] for c in status.get("conditions") or () if c["type"] == kind), "")


def logs(kubectl: Callable[..., Any], namespace: str, name: str, *extra: str) -> str:
    return str(kubectl("logs", "-n", namespace, name, *extra).stdout)


def wait_for_log(kubectl: Callable[..., Any], namespace: str, name: str, text: str) -> str:
    return wait_for(
        lambda: logs(kubectl, namespace, name), lambda out: text in out, f"{text!r} in the logs of {name}"
    )


def pid_in(log_text: str) -> int:
    return int(next(line.split()[1] for line in log_text.splitlines() if line.startswith("pid ")))


def seconds(stamp: str) -> float:
    return parse_time(stamp).timestamp()


# -- tests ----------------------------------------------------------------------------------------


def test_process_sees_host_path_config_and_downward_api_and_calls_the_api(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cfg"}, "data": {"greeting": "hello"}})
    core.create_namespaced_secret(namespace, {"metadata": {"name": "sec"}, "stringData": {"token": "s3cret"}})
    container = agent_container(
        args=("/host-node/online", "/etc/agent/greeting"),
        env={"CALL_API": "1"},
        volumeMounts=[
            {"name": "node", "mountPath": "/host-node", "readOnly": True},
            {"name": "cfg", "mountPath": "/etc/agent"},
        ],
    )
    container["env"].append(
        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "token"}}}
    )
    core.create_namespaced_pod(
        namespace,
        pod_body(
            "agent",
            container,
            volumes=[
                {"name": "node", "hostPath": {"path": "/sys/devices/system/node", "type": "Directory"}},
                {"name": "cfg", "configMap": {"name": "cfg"}},
            ],
        ),
    )
    out = wait_for_log(kubectl, namespace, "agent", "denied")
    status = status_of(core, namespace, "agent")
    pod_ip = status["podIP"]
    assert pod_ip.startswith("127.") and status["hostIP"].startswith("127.0.1.")
    assert status["phase"] == "Running"
    lines = out.splitlines()
    assert f"env {WORKER} {pod_ip} 2 s3cret" in lines  # 1500m rounds up to 2
    assert "file online 0-1" in lines  # the node's own sysfs: 2 NUMA nodes
    assert "file greeting hello" in lines
    assert "pods ['agent']" in lines
    assert (
        f'denied 403 nodes is forbidden: User "system:serviceaccount:{namespace}:reader" cannot list '
        'resource "nodes" in API group "" at the cluster scope'
    ) in lines

    # The node's own view, through nodes/proxy: its pods and the container's log.
    node = f"/api/v1/nodes/{WORKER}/proxy"
    listed = json.loads(kubectl("get", "--raw", f"{node}/pods").stdout)
    assert (namespace, "agent") in {
        (p["metadata"]["namespace"], p["metadata"]["name"]) for p in listed["items"]
    }
    tail = kubectl("get", "--raw", f"{node}/containerLogs/{namespace}/agent/agent?tailLines=1").stdout
    assert tail == lines[-1] + "\n"


def test_the_exporter_runs_as_a_pod_reading_its_nodes_files(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    """What the exporter's DaemonSet does on a real node: hostPath /sys and the podresources directory."""
    reference = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "REFERENCE_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "REFERENCE_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "REFERENCE_CONTAINER_NAME", "value": "rte"},
    ]
    container = {
        "name": "rte",
        "image": IMAGE,
        "command": ["/bin/resource-topology-exporter"],
        "args": [
            "--no-publish",
            "--oneshot",
            "--sysfs=/host-sys",
            "--podresources-socket=unix:///host-podresources/kubelet.sock",
            "--topology-manager-policy=single-numa-node",
            "--topology-manager-scope=pod",
        ],
        "env": reference,
        "volumeMounts": [
            {"name": "sys", "mountPath": "/host-sys", "readOnly": True},
            {"name": "podres", "mountPath": "/host-podresources"},
        ],
    }
    volumes = [
        {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}},
        {"name": "podres", "hostPath": {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"}},
    ]
    body = pod_body("rte", container, restart="Never", volumes=volumes)
    body["spec"]["nodeName"] = "worker-1"
    core.create_namespaced_pod(namespace, body)
    done = wait_for(
        lambda: status_of(core, namespace, "rte"),
        lambda s: s.get("phase") in ("Succeeded", "Failed"),
        "a final phase",
    )
    out = logs(kubectl, namespace, "rte")
    assert done["phase"] == "Succeeded", out
    (line,) = [line for line in out.splitlines() if line.startswith('{"apiVersion":"topology.node.k8s.io/')]
    nrt = json.loads(line)
    assert nrt["metadata"]["name"] == "worker-1"
    cpus = {
        zone["name"]: next(r["allocatable"] for r in zone["resources"] if r["name"] == "cpu")
        for zone in nrt["zones"]
    }
    assert cpus == {"node-0": "20", "node-1": "22"}  # reservedSystemCPUs 0,22 lie in NUMA node 0


def test_readiness_probe_and_pods_proxy(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    probe = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1, "failureThreshold": 1}
    core.create_namespaced_pod(namespace, pod_body("web", agent_container(readinessProbe=probe)))
    ready = wait_for(
        lambda: status_of(core, namespace, "web"), lambda s: condition(s, "Ready") == "True", "pod web Ready"
    )
    assert container_status(ready)["ready"] and container_status(ready)["started"]
    base = f"/api/v1/namespaces/{namespace}/pods"
    assert (
        kubectl("get", "--raw", f"{base}/web:8080/proxy/metrics?x=1").stdout
        == "agent_up 1\npath /metrics?x=1\n"
    )
    assert (
        "agent_up 1" in kubectl("get", "--raw", f"{base}/web/proxy/metrics").stdout
    )  # the first containerPort

    toggled = kubectl("create", "--raw", f"{base}/web:8080/proxy/toggle", "-f", "-", input="{}").stdout
    assert json.loads(toggled) == {"ready": False}
    unready = wait_for(
        lambda: status_of(core, namespace, "web"),
        lambda s: condition(s, "Ready") == "False",
        "pod web not Ready",
    )
    assert not container_status(unready)["ready"] and container_status(unready)["restartCount"] == 0
    assert (
        "Readiness probe failed: HTTP probe failed with statuscode: 503"
        in kubectl("get", "events", "-n", namespace, "-o", "jsonpath={.items[*].message}").stdout
    )
    kubectl("create", "--raw", f"{base}/web:8080/proxy/toggle", "-f", "-", input="{}")
    wait_for(
        lambda: status_of(core, namespace, "web"),
        lambda s: condition(s, "Ready") == "True",
        "pod web Ready again",
    )

    unreachable = kubectl("get", "--raw", f"{base}/web:9/proxy/", check=False)
    assert unreachable.returncode != 0 and "error trying to reach service" in unreachable.stderr


@pytest.mark.slow  # waits out the 10 s back-off
def test_kill_9_restarts_with_back_off_and_previous_logs(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    core.create_namespaced_pod(namespace, pod_body("crashy", agent_container()))
    first = pid_in(wait_for_log(kubectl, namespace, "crashy", "pid "))
    os.kill(first, signal.SIGKILL)
    restarted = wait_for(
        lambda: status_of(core, namespace, "crashy"),
        lambda s: container_status(s).get("restartCount") == 1 and "running" in container_status(s)["state"],
        "one restart, at once (the first restart has no back-off)",
        timeout=10,
    )
    terminated = container_status(restarted)["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
    assert f"pid {first}" in logs(kubectl, namespace, "crashy", "--previous")
    second = pid_in(wait_for_log(kubectl, namespace, "crashy", "pid "))
    assert second != first and not alive(first)

    os.kill(second, signal.SIGKILL)
    backing_off = wait_for(
        lambda: status_of(core, namespace, "crashy"),
        lambda s: "waiting" in container_status(s)["state"],
        "CrashLoopBackOff after the second kill",
    )
    waiting = container_status(backing_off)["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert waiting["message"].startswith("back-off 10s restarting failed container=agent pod=crashy_")
    assert not container_status(backing_off)["ready"] and condition(backing_off, "Ready") == "False"
    again = wait_for(
        lambda: status_of(core, namespace, "crashy"),
        lambda s: container_status(s).get("restartCount") == 2 and "running" in container_status(s)["state"],
        "the second restart after 10 s",
        timeout=25,
    )
    finished = seconds(container_status(again)["lastState"]["terminated"]["finishedAt"])
    started = seconds(container_status(again)["state"]["running"]["startedAt"])
    assert 9 <= started - finished <= 14
    assert f"pid {second}" in logs(kubectl, namespace, "crashy", "--previous")


def test_liveness_probe_failure_restarts_the_container(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    probe = {
        "exec": {"command": ["python3", "-c", "import sys; sys.exit(1)"]},
        "periodSeconds": 1,
        "failureThreshold": 1,
    }
    container = {
        "name": "sleeper",
        "image": IMAGE,
        "command": ["python3", "-c", "import time; print('up'); time.sleep(600)"],
        "livenessProbe": probe,
    }
    core.create_namespaced_pod(namespace, pod_body("unhealthy", container))
    restarted = wait_for(
        lambda: status_of(core, namespace, "unhealthy"),
        lambda s: container_status(s).get("restartCount", 0) >= 1,
        "a restart after the liveness probe failed",
    )
    assert container_status(restarted)["lastState"]["terminated"]["exitCode"] == 143  # SIGTERM, no handler
    messages = kubectl("get", "events", "-n", namespace, "-o", "jsonpath={.items[*].message}").stdout
    assert (
        "Liveness probe failed: command ['python3', '-c', 'import sys; sys.exit(1)'] exited with 1"
        in messages
    )
    assert "Container sleeper failed liveness probe, will be restarted" in messages


@pytest.mark.slow  # waits for the 10 s retry
def test_a_missing_configmap_waits_then_the_retry_starts_the_container(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    container = agent_container()
    container["env"].append(
        {"name": "SECRET", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "k"}}}
    )
    core.create_namespaced_pod(namespace, pod_body("patient", container))
    # the projected service-account volume may wait for the namespace's kube-root-ca.crt first
    # (ContainerCreating, "MountVolume.SetUp failed"), as on any cluster right after the namespace
    waiting = wait_for(
        lambda: status_of(core, namespace, "patient"),
        lambda s: (
            container_status(s).get("state", {}).get("waiting", {}).get("reason")
            == "CreateContainerConfigError"
        ),
        "a container waiting for its configuration",
    )
    assert container_status(waiting)["state"]["waiting"] == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "later" not found',
    }
    assert waiting["phase"] == "Pending"
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "later"}, "data": {"k": "now"}})
    out = wait_for_log(kubectl, namespace, "patient", "env ")  # retried within 10 s
    assert out.splitlines()[1].endswith(" 2 now")
    assert container_status(status_of(core, namespace, "patient"))["restartCount"] == 0


@pytest.mark.parametrize(
    ("container", "phase", "exit_code", "reason", "message"),
    [
        pytest.param(
            {"image": "busybox", "command": ["sleep", "1"]},
            "Succeeded",
            0,
            "Completed",
            None,
            id="simulated-sleep-1",
        ),
        pytest.param(
            {"image": "busybox", "command": ["false"]}, "Failed", 1, "Error", None, id="simulated-false"
        ),
        pytest.param(
            {
                "image": IMAGE,
                "command": ["python3", "-c", "import sys; print('it went wrong'); sys.exit(3)"],
                "terminationMessagePolicy": "FallbackToLogsOnError",
            },
            "Failed",
            3,
            "Error",
            "it went wrong\n",
            id="process-exit-3-message-from-logs",
        ),
        pytest.param(
            {
                "image": IMAGE,
                "command": [
                    "python3",
                    "-c",
                    "import sys; open(sys.argv[1], 'w').write('done right'); print('ok')",
                    "/dev/termination-log",
                ],
            },
            "Succeeded",
            0,
            "Completed",
            "done right",
            id="process-termination-message-file",
        ),
        pytest.param(
            {"image": IMAGE, "command": ["bash", "-c", "true"]},
            "Failed",
            128,
            "StartError",
            'exec: "bash": executable file not found in $PATH',
            id="process-not-in-the-image",
        ),
        pytest.param(
            {"image": IMAGE, "command": ["sh", "-c", "exit 4"]},
            "Failed",
            4,
            "Error",
            None,
            id="process-the-images-shell",
        ),
    ],
)
def test_terminal_states_of_never_pods(
    core: client.CoreV1Api,
    namespace: str,
    reader: str,
    container: dict[str, Any],
    phase: str,
    exit_code: int,
    reason: str,
    message: str | None,
) -> None:
    core.create_namespaced_pod(namespace, pod_body("once", {"name": "c", **container}, restart="Never"))
    done = wait_for(
        lambda: status_of(core, namespace, "once"),
        lambda s: s.get("phase") in ("Succeeded", "Failed"),
        "a final phase",
    )
    terminated = container_status(done)["state"]["terminated"]
    assert (done["phase"], terminated["exitCode"], terminated["reason"]) == (phase, exit_code, reason)
    if message is None:
        assert "message" not in terminated
    else:
        assert terminated["message"].startswith(message)


@pytest.mark.parametrize(
    ("env", "grace", "exit_code", "at_least"),
    [
        pytest.param({}, 30, 0, 0.0, id="sigterm-handled"),
        pytest.param({"IGNORE_TERM": "1"}, 2, 137, 1.5, id="sigkill-after-the-grace-period"),
    ],
)
def test_graceful_deletion(
    core: client.CoreV1Api,
    kubectl: Callable[..., Any],
    namespace: str,
    reader: str,
    env: dict[str, str],
    grace: int,
    exit_code: int,
    at_least: float,
) -> None:
    core.create_namespaced_pod(
        namespace, pod_body("leaving", agent_container(env=env), terminationGracePeriodSeconds=grace)
    )
    pid = pid_in(wait_for_log(kubectl, namespace, "leaving", "pid "))
    pod = core.read_namespaced_pod("leaving", namespace)
    began = time.monotonic()
    core.delete_namespaced_pod("leaving", namespace)
    last: dict[str, Any] = {}
    stream = watch.Watch().stream(
        core.list_namespaced_pod,
        namespace,
        field_selector="metadata.name=leaving",
        resource_version=pod.metadata.resource_version,
        timeout_seconds=int(TIMEOUT),
    )
    for event in stream:
        if event["type"] == "DELETED":
            break
        last = core.api_client.sanitize_for_serialization(event["object"])
    took = time.monotonic() - began
    terminated = container_status(last["status"])["state"]["terminated"]
    assert terminated["exitCode"] == exit_code
    assert last["status"]["phase"] == ("Succeeded" if exit_code == 0 else "Failed")
    assert took >= at_least
    assert wait_for(lambda: alive(pid), lambda up: not up, f"process {pid} gone", timeout=5) is False


NOTICE = textwrap.dedent(
    """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("pids", os.getpid(), child.pid, flush=True)
    time.sleep(600)
    """
)


def _cluster_with_a_process(state: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """``nrop-cluster up`` with a pod whose process forked a child; returns the cluster and both PIDs."""
    cluster = target.start("default", state)
    from kubernetes import config

    core = client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
    core.create_namespaced_service_account("default", {"metadata": {"name": "reader"}})
    core.create_namespaced_pod(
        "default",
        pod_body("forker", {"name": "c", "image": IMAGE, "command": ["python3", "-c", NOTICE]}),
    )
    text = wait_for(
        lambda: core.read_namespaced_pod_log("forker", "default"),
        lambda t: "pids" in t,
        "the pids in the log",
    )
    pids = [int(word) for word in text.split()[1:3]]
    assert all(alive(pid) for pid in pids)
    return cluster.process, pids


@pytest.mark.slow
def test_stopping_the_cluster_leaves_no_process_behind(state_dir: Path) -> None:
    process, pids = _cluster_with_a_process(state_dir / "up-term")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert not any(alive(pid) for pid in pids), "a process outlived nrop-cluster (SIGTERM)"

    # Even a cluster killed outright takes its containers' main processes along (PR_SET_PDEATHSIG).
    process, pids = _cluster_with_a_process(state_dir / "up-kill")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert wait_for(lambda: alive(pids[0]), lambda up: not up, f"process {pids[0]} gone", timeout=5) is False
    os.kill(pids[1], signal.SIGKILL)  # its own child is beyond reach of a killed cluster: clean up


# -- in-cluster configuration ------------------------------------------------------------------------

INCLUSTER = textwrap.dedent(
    """
    import os
    from kubernetes import client, config
    config.load_incluster_config()
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    print("host", os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
    print("namespace", open(sa + "/namespace").read())
    print("ca", open(sa + "/ca.crt").read().startswith("-----BEGIN CERTIFICATE-----"))
    api = client.CoreV1Api()
    print("pods", sorted(p.metadata.name for p in api.list_namespaced_pod(open(sa + "/namespace").read()).items))
    try:
        api.list_node()
    except client.ApiException as exc:
        print("nodes", exc.status)
    """
)


def test_load_incluster_config_works_in_a_pod_of_the_own_image(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    service = core.read_namespaced_service("kubernetes", "default")
    endpoints = core.read_namespaced_endpoints("kubernetes", "default")
    (port,) = service.spec.ports
    assert (port.name, service.metadata.labels) == (
        "https",
        {"component": "apiserver", "provider": "kubernetes"},
    )
    address = endpoints.subsets[0].addresses[0].ip
    container = {"name": "c", "image": IMAGE, "command": ["python3", "-c", INCLUSTER]}
    core.create_namespaced_pod(namespace, pod_body("incluster", container, restart="Never"))
    done = wait_for(
        lambda: status_of(core, namespace, "incluster"),
        lambda s: s.get("phase") in ("Succeeded", "Failed"),
        "pod incluster to finish",
    )
    out = logs(kubectl, namespace, "incluster")
    assert done["phase"] == "Succeeded", out
    assert out.splitlines() == [
        f"host {address} {port.port}",
        f"namespace {namespace}",
        "ca True",
        "pods ['incluster']",
        "nodes 403",
    ]
    pod = core.read_namespaced_pod("incluster", namespace)
    (volume,) = [v for v in pod.spec.volumes if v.name.startswith("kube-api-access-")]
    assert [m.mount_path for m in pod.spec.containers[0].volume_mounts] == [
        "/var/run/secrets/kubernetes.io/serviceaccount"
    ]
    assert {(t.key, t.effect, t.toleration_seconds) for t in pod.spec.tolerations} == {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }
    assert volume.projected.sources[0].service_account_token.expiration_seconds == 3607


# -- the container's own mount namespace --------------------------------------------------------

VIEWER = textwrap.dedent(
    """
    import base64, errno, json, os
    from kubernetes import client, config
    from kubernetes.config import incluster_config
    print("kubeconfig", os.environ.get("KUBECONFIG"))
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    def write(path):
        try:
            with open(path, "w") as out:
                out.write("from the container")
            return "written"
        except OSError as exc:
            return errno.errorcode[exc.errno]
    print("numa", open("/sys/devices/system/node/online").read().strip())
    print("sysfs", write("/sys/devices/system/node/online"))
    print("plugins", "kubelet.sock" in os.listdir("/var/lib/kubelet/device-plugins"))
    print("hostpath", open("/data/hello").read(), write("/data/reply"))
    print("configmap", open("/etc/viewer/greeting").read(), write("/etc/viewer/greeting"))
    token = open(sa + "/token").read()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    print("token", claims["sub"], claims["kubernetes.io"]["pod"]["name"], write(sa + "/token"))
    print("files", incluster_config.SERVICE_TOKEN_FILENAME, incluster_config.SERVICE_CERT_FILENAME)
    config.load_incluster_config()
    namespace = open(sa + "/namespace").read()
    print("pods", sorted(p.metadata.name for p in client.CoreV1Api().list_namespaced_pod(namespace).items))
    """
)


def test_a_container_sees_its_volumes_in_its_own_mount_namespace(
    core: client.CoreV1Api,
    kubectl: Callable[..., Any],
    namespace: str,
    reader: str,
    embedded: target.EmbeddedCluster,
) -> None:
    """What upstream's numacell DaemonSet relies on: ``/sys`` and a hostPath at the paths it
    reads by default, and the pod's own service account where clients look for it."""
    node_root = embedded.state_dir / "nodes" / WORKER
    (node_root / "srv/viewer").mkdir(parents=True)
    (node_root / "srv/viewer/hello").write_text("from the node")
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cfg"}, "data": {"greeting": "hi"}})
    host_paths = ("/var/lib/kubelet", "/run/secrets", "/data", "/etc/viewer")
    existed = {path: os.path.lexists(path) for path in host_paths}
    mounts_before = Path("/proc/self/mountinfo").read_text()
    container = {
        "name": "c",
        "image": IMAGE,
        "command": ["python3", "-c", VIEWER],
        "volumeMounts": [
            {"name": "plugins", "mountPath": "/var/lib/kubelet/device-plugins"},
            {"name": "data", "mountPath": "/data"},
            {"name": "cfg", "mountPath": "/etc/viewer"},
        ],
    }
    volumes = [
        {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}},
        {"name": "data", "hostPath": {"path": "/srv/viewer", "type": "Directory"}},
        {"name": "cfg", "configMap": {"name": "cfg"}},
    ]
    core.create_namespaced_pod(namespace, pod_body("viewer", container, restart="Never", volumes=volumes))
    done = wait_for(
        lambda: status_of(core, namespace, "viewer"),
        lambda s: s.get("phase") in ("Succeeded", "Failed"),
        "pod viewer to finish",
    )
    out = logs(kubectl, namespace, "viewer")
    assert done["phase"] == "Succeeded", out
    account = "/var/run/secrets/kubernetes.io/serviceaccount"
    assert out.splitlines() == [
        "kubeconfig None",  # as on a real node: in-cluster configuration only
        "numa 0-1",  # the emulated node's two NUMA nodes, not the machine's
        "sysfs EROFS",  # not privileged: sysfs is read-only
        "plugins True",
        "hostpath from the node written",
        "configmap hi EROFS",  # ConfigMap volumes are read-only whatever the volumeMount says
        f"token system:serviceaccount:{namespace}:reader viewer EROFS",
        f"files {account}/token {account}/ca.crt",
        "pods ['viewer']",
    ]
    assert (node_root / "srv/viewer/reply").read_text() == "from the container"
    assert Path("/proc/self/mountinfo").read_text() == mounts_before
    assert {path: os.path.lexists(path) for path in host_paths} == existed


REWRITTEN = textwrap.dedent(
    """
    import os, sys
    from kubernetes import client, config
    from kubernetes.config import incluster_config
    print("file", open(sys.argv[1]).read().strip())
    print("kubeconfig", os.path.isfile(os.environ["KUBECONFIG"]))
    print("token-file", incluster_config.SERVICE_TOKEN_FILENAME)
    config.load_incluster_config()
    print("pods", [p.metadata.name for p in client.CoreV1Api().list_namespaced_pod("default").items])
    """
)


@pytest.mark.slow  # starts a cluster of its own
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to drop CAP_SYS_ADMIN",
)
def test_without_cap_sys_admin_mount_paths_are_rewritten_and_the_node_says_so(state_dir: Path) -> None:
    """A cluster without ``CAP_SYS_ADMIN`` gets no mount namespaces: today's path rewriting, with a warning."""
    command = ["setpriv", "--bounding-set", "-sys_admin", "--", *target.cluster_command()]
    cluster = target.start("default", state_dir / "no-cap-sys-admin", command=command)
    try:
        from kubernetes import config

        core = client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
        core.create_namespaced_service_account("default", {"metadata": {"name": "reader"}})
        rbac = client.RbacAuthorizationV1Api(core.api_client)
        rbac.create_namespaced_role(
            "default",
            {
                "metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
            },
        )
        rbac.create_namespaced_role_binding(
            "default",
            {
                "metadata": {"name": "r"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}],
            },
        )
        container = {
            "name": "c",
            "image": IMAGE,
            "command": ["python3", "-c", REWRITTEN, "/host-node/online"],
            "volumeMounts": [{"name": "node", "mountPath": "/host-node", "readOnly": True}],
        }
        volumes = [{"name": "node", "hostPath": {"path": "/sys/devices/system/node", "type": "Directory"}}]
        core.create_namespaced_pod(
            "default", pod_body("rewritten", container, restart="Never", volumes=volumes)
        )
        done = wait_for(
            lambda: status_of(core, "default", "rewritten"),
            lambda s: s.get("phase") in ("Succeeded", "Failed"),
            "pod rewritten to finish",
        )
        out = core.read_namespaced_pod_log("rewritten", "default")
        assert done["phase"] == "Succeeded", out
        # The argument was rewritten to the node's file; the client reads its token from the
        # volume's host directory (the pod's sitecustomize), not from the machine's.
        uid = core.read_namespaced_pod("rewritten", "default").metadata.uid
        volume = (
            cluster.state_dir / f"nodes/{WORKER}/var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~projected"
        )
        file, kubeconfig, token_file, pods = out.splitlines()
        assert (file, kubeconfig, pods) == ("file 0-1", "kubeconfig True", "pods ['rewritten']")
        assert Path(token_file.removeprefix("token-file ")).parent.parent == volume
        warnings = [
            (e.reason, e.message)
            for e in core.list_namespaced_event(
                "default", field_selector=f"involvedObject.name={WORKER}"
            ).items
            if e.type == "Warning"
        ]
        assert warnings == [
            (
                "MountNamespacesUnavailable",
                "containers cannot get a mount namespace of their own (unshare(CLONE_NEWNS): Operation not "
                "permitted): their volumes are reached by rewriting mount paths in their command, args and env",
            )
        ]
        # The image's shell finds the image's curl first on its PATH without a namespace too.
        shell = {
            "name": "c",
            "image": IMAGE,
            "command": [
                "sh",
                "-c",
                "command -v curl; curl --connect-timeout 2 http://127.0.0.1:1/; echo rc=$?",
            ],
        }
        core.create_namespaced_pod("default", pod_body("shell", shell, restart="Never"))
        wait_for(
            lambda: status_of(core, "default", "shell"),
            lambda s: s.get("phase") == "Succeeded",
            "pod shell to succeed",
        )
        found, failed, code = core.read_namespaced_pod_log("shell", "default").splitlines()
        assert found.endswith("/containers/c/bin/curl")
        assert (failed, code) == (
            "curl: (7) Failed to connect to 127.0.0.1 port 1: Connection refused",
            "rc=7",
        )
        # Upstream's numacell container reads /sys and the device-plugin directory at their
        # defaults: the kubelet passes the node's paths as flags, and the cells register.
        plugins = "/var/lib/kubelet/device-plugins"
        numacell = {
            "name": "numacell",
            "image": "quay.io/openshift-kni/numacell-device-plugin:test-ci",
            "command": ["/bin/numacell"],
            "args": ["-alsologtostderr", "-v", "3"],
            "securityContext": {"privileged": True},
            "volumeMounts": [{"name": "kubeletsockets", "mountPath": plugins}],
        }
        volumes = [{"name": "kubeletsockets", "hostPath": {"path": plugins, "type": "Directory"}}]
        core.create_namespaced_pod("default", pod_body("numacell", numacell, volumes=volumes))
        allocatable = wait_for(
            lambda: core.read_node(WORKER).status.allocatable,
            lambda found: found.get("kni.node/numacell01") == "15",
            "the numacell cells in the node's allocatable",
        )
        assert allocatable.get("kni.node/numacell00") == "15"
    finally:
        cluster.stop()


def test_kubectl_exec_runs_a_command_in_a_process_container(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    container = agent_container()
    sidecar = {"name": "pause", "image": "quay.io/openshift-kni/pause:test-ci", "command": ["/pause"]}
    core.create_namespaced_pod(namespace, pod_body("ex", container, sidecar))
    wait_for_log(kubectl, namespace, "ex", "pid")
    script = "import os, sys; print(os.environ['NS'], sys.stdin.read().strip()); sys.exit(3)"
    result = kubectl(
        "exec",
        "-i",
        "-n",
        namespace,
        "ex",
        "-c",
        "agent",
        "--",
        "python3",
        "-c",
        script,
        input="from stdin",
        check=False,
    )
    assert result.stdout == f"{namespace} from stdin\n"
    assert result.returncode == 3, result.stderr
    assert "command terminated with exit code 3" in result.stderr
    ok = kubectl("exec", "-n", namespace, "ex", "-c", "agent", "--", "python3", "-c", "print('hi')")
    assert ok.stdout == "hi\n"
    simulated = kubectl("exec", "-n", namespace, "ex", "-c", "pause", "--", "ls", check=False)
    assert simulated.returncode == 1
    assert (
        'container "pause" (image "quay.io/openshift-kni/pause:test-ci") is simulated by the embedded cluster'
        in simulated.stderr
    ), simulated.stderr


def test_exec_of_the_images_curl_and_shell(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    """The image's curl by path and through ``sh -c`` (``PATH`` starts with the image's
    executables); the container's loopback is its pod; a program the image lacks still fails."""
    core.create_namespaced_pod(namespace, pod_body("curls", agent_container()))
    wait_for_log(kubectl, namespace, "curls", "pid")
    exec_ = functools.partial(kubectl, "exec", "-n", namespace, "curls", "-c", "agent", "--")
    fetched = exec_("/bin/curl", "-s", "http://127.0.0.1:8080/metrics")
    assert fetched.stdout == "agent_up 1\npath /metrics\n"
    script = "command -v curl; curl -sS http://localhost:8080/x; curl --connect-timeout 5 http://$POD_IP:1/"
    shell = exec_("sh", "-c", script, check=False)
    pod_ip = core.read_namespaced_pod("curls", namespace).status.pod_ip
    lines = shell.stdout.splitlines()
    assert lines[0].endswith("/containers/agent/bin/curl"), shell.stdout
    assert lines[1:3] == ["agent_up 1", "path /x"], shell.stdout
    assert shell.returncode == 7, shell.stderr
    assert f"curl: (7) Failed to connect to {pod_ip} port 1: Connection refused" in shell.stderr
    missing = exec_("bash", "-c", "true", check=False)
    assert missing.returncode == 1
    assert 'exec: "bash": executable file not found in $PATH (the image provides ' in missing.stderr, (
        missing.stderr
    )


def _spdy_exec(
    kubeconfig: Path, namespace: str, pod: str, command: list[str], *, stdin: bytes, tty: bool
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """``pods/exec`` as client-go's SPDY executor does it: the upgrade, one stream per channel,
    stdin sent and closed; each channel's bytes and the error stream's Status."""
    config = yaml.safe_load(kubeconfig.read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    context = ssl.create_default_context(
        cadata=base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    )
    assert server.hostname and server.port
    query = urlencode(
        [("command", word) for word in command]
        + [("container", "agent"), ("stdin", "true"), ("stdout", "true"), ("stderr", "true")]
        + ([("tty", "true")] if tty else [])
    )
    channels = ["error", "stdin", "stdout", "resize" if tty else "stderr"]
    writer, reader = spdy.Writer(), spdy.Reader()
    with (
        socket.create_connection((server.hostname, server.port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw, server_hostname=server.hostname) as conn,
    ):
        conn.sendall(
            (
                f"POST /api/v1/namespaces/{namespace}/pods/{pod}/exec?{query} HTTP/1.1\r\n"
                f"Host: {server.netloc}\r\nAuthorization: Bearer {config['users'][0]['user']['token']}\r\n"
                "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v5.channel.k8s.io\r\n"
                "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(1)
        assert head.startswith(b"HTTP/1.1 101 "), head
        assert b"X-Stream-Protocol-Version: v4.channel.k8s.io" in head, head
        ids = {name: 1 + 2 * index for index, name in enumerate(channels)}
        conn.sendall(b"".join(writer.syn_stream(ids[name], {"streamType": [name]}) for name in channels))
        conn.sendall(spdy.Writer.data(ids["stdin"], stdin) + spdy.Writer.data(ids["stdin"], b"", fin=True))
        conn.sendall(spdy.Writer.ping(1))
        names = {stream: name for name, stream in ids.items()}
        received: dict[str, bytes] = dict.fromkeys(channels, b"")
        replied, finished, pinged = set(), set(), False
        while "error" not in finished:
            for frame in reader.feed(conn.recv(65536)):
                if isinstance(frame, spdy.SynReply):
                    replied.add(names[frame.stream_id])
                elif isinstance(frame, spdy.Data):
                    received[names[frame.stream_id]] += frame.data
                    if frame.fin:
                        finished.add(names[frame.stream_id])
                elif isinstance(frame, spdy.Ping):
                    pinged = True
        conn.sendall(spdy.Writer.goaway(0))
    assert replied == set(channels)
    assert pinged
    return received, json.loads(received.pop("error"))


@pytest.mark.parametrize("tty", [False, True], ids=["pipes", "tty"])
def test_exec_over_spdy_as_client_go_does(
    core: client.CoreV1Api,
    kubectl: Callable[..., Any],
    kubeconfig: Path,
    namespace: str,
    reader: str,
    tty: bool,
) -> None:
    """Upstream's e2e binary execs with remotecommand.NewSPDYExecutor (stdin and a TTY)."""
    core.create_namespaced_pod(namespace, pod_body("spdy", agent_container()))
    wait_for_log(kubectl, namespace, "spdy", "pid")
    script = "cat; echo out; echo err >&2; curl -s http://127.0.0.1:8080/x; exit 3"
    streams, status = _spdy_exec(kubeconfig, namespace, "spdy", ["sh", "-c", script], stdin=b"in\n", tty=tty)
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    body = b"in\nout\nagent_up 1\npath /x\n"
    if tty:  # a terminal joins stderr to stdout
        assert sorted(streams["stdout"].splitlines()) == sorted(
            b"in\nout\nerr\nagent_up 1\npath /x\n".splitlines()
        )
    else:
        assert (streams["stdout"], streams["stderr"]) == (body, b"err\n")
    ok, status = _spdy_exec(
        kubeconfig, namespace, "spdy", ["/bin/curl", "-k", "http://localhost:8080/y"], stdin=b"", tty=tty
    )
    assert (ok["stdout"], status) == (b"agent_up 1\npath /y\n", {"metadata": {}, "status": "Success"})


def test_an_image_whose_program_is_unknown_says_so_once(
    core: client.CoreV1Api, namespace: str, reader: str
) -> None:
    """An image the runtime does not know runs like pause, and one pod event says so."""
    unknown = {"name": "web", "image": "docker.io/library/nginx:1.27"}
    known = {"name": "pause", "image": "quay.io/openshift-kni/pause:test-ci"}  # its /pause entrypoint
    core.create_namespaced_pod(namespace, pod_body("unknown", unknown, known))
    wait_for(
        lambda: status_of(core, namespace, "unknown"),
        lambda s: s.get("phase") == "Running",
        "pod unknown Running",
    )

    def events() -> list[tuple[str, str, str, str]]:
        return [
            (e.type, e.reason, e.involved_object.field_path, e.message)
            for e in core.list_namespaced_event(namespace, field_selector="involvedObject.name=unknown").items
        ]

    listed = wait_for(events, lambda found: any(e[1] == "SimulatedImage" for e in found), "SimulatedImage")
    time.sleep(1.0)  # nothing more comes
    simulated = [e for e in events() if e[1] == "SimulatedImage"]
    assert simulated == [
        (
            "Normal",
            "SimulatedImage",
            "spec.containers{web}",
            'Image "docker.io/library/nginx:1.27" is simulated by the embedded cluster: its program is not run; '
            "container web stands in for it like pause (runs until stopped)",
        )
    ], listed
    assert {e[1] for e in events() if e[2] == "spec.containers{web}"} >= {"Pulled", "Created", "Started"}


KOPF_LOGIN = textwrap.dedent(
    """
    import logging
    import kopf
    info = kopf.login_via_client(logger=logging.getLogger("login"), settings=kopf.OperatorSettings())
    print("server", info.server)
    print("token", bool(info.token), "ca", info.ca_path.endswith("/ca.crt"))
    """
)


def test_kopf_logs_in_with_the_service_account_of_its_pod(
    core: client.CoreV1Api, kubectl: Callable[..., Any], namespace: str, reader: str
) -> None:
    container = {"name": "c", "image": IMAGE, "command": ["python3", "-c", KOPF_LOGIN]}
    core.create_namespaced_pod(namespace, pod_body("kopf", container, restart="Never"))
    done = wait_for(
        lambda: status_of(core, namespace, "kopf"),
        lambda s: s.get("phase") in ("Succeeded", "Failed"),
        "pod kopf to finish",
    )
    out = logs(kubectl, namespace, "kopf")
    assert done["phase"] == "Succeeded", out
    service = core.read_namespaced_service("kubernetes", "default")
    host = core.read_namespaced_endpoints("kubernetes", "default").subsets[0].addresses[0].ip
    assert out.splitlines()[:2] == [
        f"server https://{host}:{service.spec.ports[0].port}",
        "token True ca True",
    ]
