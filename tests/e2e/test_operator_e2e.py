"""The operator end to end on the embedded ``default`` cluster, installed as a user would.

One embedded cluster (one control-plane node, two NUMA-aware workers) runs in this
process. The module installs the operator with ``numaresources-operator render | kubectl
apply -f -`` (CRDs, namespace, RBAC and the operator Deployment: ``numaresources-operator``
runs as a real process in a pod of the project's image, under its own ServiceAccount,
RBAC enforced), creates the two samples, and checks what a user and the suites see:

* within 60 s every worker has an NRT with its zones, both CRs are ``Available=True``
  with upstream's status fields, the exporter DaemonSet and the scheduler Deployment are
  ready;
* a guaranteed pod with ``schedulerName = status.schedulerName`` lands on a worker with a
  ``Scheduled`` event from that scheduler;
* invalid CRs give ``Degraded`` with upstream's reason and a message naming the field,
  leave the running exporters untouched, and recover when reverted;
* manual edits of the scheduler's ConfigMap and Deployment are reverted;
* ``kill -9`` of the operator's process: the kubelet restarts it and it reconciles again;
* SIGTERM ends the operator's process at once with exit code 0, as controller-runtime's
  manager does (not after the kubelet's SIGKILL at the end of the grace period);
* the exporters' ``--metrics-tls-*`` flags follow ``APIServer/cluster``'s TLS profile, whose
  change restarts the operator (where the cluster serves APIServer);
* an env change of the operator Deployment (the suite's ``SCHEDULER_IMAGE_VALIDATION=false``)
  rolls it out, the new pod takes the leader Lease once the old one expires and validation is off;
* deleting the CRs leaves none of their objects.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from nrop.api import tlsprofiles
from nrop.api.images import DEFAULT_IMAGE
from nrop.api.restclient import RestClient
from nrop.localcluster.cluster import ClusterConfig, ClusterThread
from nrop.operator import samples
from nrop.operator.decisions.manifests import install_manifests
from nrop.operator.decisions.naming import OPERATOR_NAME
from nrop.operator.kubeapi import Api, kind
from nrop.suite.e2e.wait.polling import WaitTimeout
from nrop.suite.e2e.wait.polling import wait_for as _wait_for

pytestmark = pytest.mark.slow

GROUP, VERSION = "nodetopology.openshift.io", "v1"
NS = "numaresources"
WORKERS = ("worker-0", "worker-1")
OWNER_NAME = "nodetopology.openshift.io/owner-name"
TIMEOUT = 60.0

#: Two cores are shared by the whole cluster: poll twice a second.
wait_for = functools.partial(_wait_for, interval=0.5)


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """This module's cluster (``tests/conftest.py``'s ``cluster_thread``): the shipped ``default`` profile."""
    return ClusterConfig(profile="default", bookmark_interval=1.0)


class Cluster:
    def __init__(self, api_client: client.ApiClient, rest_client: RestClient) -> None:
        self.api = Api(rest_client)
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    def cr(self, plural: str, name: str) -> dict[str, Any] | None:
        try:
            return self.custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def nrop(self) -> dict[str, Any]:
        obj = self.cr("numaresourcesoperators", "numaresourcesoperator")
        assert obj is not None
        return obj

    def nrs(self) -> dict[str, Any]:
        obj = self.cr("numaresourcesschedulers", "numaresourcesscheduler")
        assert obj is not None
        return obj

    def patch_cr(self, plural: str, name: str, patch: dict[str, Any]) -> None:
        self.custom.patch_cluster_custom_object(GROUP, VERSION, plural, name, patch)

    def dump(self) -> str:
        """The operator namespace's pods, their states and log tails (for failure messages)."""
        lines = []
        for pod in self.core.list_namespaced_pod(NS).items:
            states = [(c.name, c.ready, c.restart_count) for c in pod.status.container_statuses or []]
            lines.append(f"pod {pod.metadata.name} on {pod.spec.node_name}: {pod.status.phase} {states}")
            try:
                log = self.core.read_namespaced_pod_log(pod.metadata.name, NS, tail_lines=30)
            except client.ApiException as exc:
                log = f"(no log: {exc.reason})"
            lines.append(log)
        return "\n".join(lines)

    def nrts(self) -> dict[str, dict[str, Any]]:
        try:
            items = self.custom.list_cluster_custom_object(
                "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return {}
            raise
        return {o["metadata"]["name"]: o for o in items["items"]}


def conds(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def is_available(obj: dict[str, Any]) -> bool:
    c = conds(obj)
    return (
        c.get("Available", {}).get("status") == "True"
        and c["Available"].get("observedGeneration") == obj["metadata"]["generation"]
    )


def degraded_with(reason: str) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        c = conds(obj).get("Degraded", {})
        return c.get("status") == "True" and c.get("reason") == reason

    return check


def _install(cluster: Cluster, kube_env: dict[str, str]) -> None:
    """``numaresources-operator render | kubectl apply -f -`` (the manifests applied directly without kubectl)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        for manifest in install_manifests(NS, DEFAULT_IMAGE):
            cluster.api.apply(manifest)
        return
    script = Path(sys.executable).with_name("numaresources-operator")
    rendered = subprocess.run(
        [str(script), "render", "--namespace", NS, "--image", DEFAULT_IMAGE],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert len(list(yaml.safe_load_all(rendered.stdout))) == len(install_manifests(NS, DEFAULT_IMAGE))
    applied = subprocess.run(
        [kubectl, "apply", "-f", "-"], input=rendered.stdout, capture_output=True, text=True, env=kube_env, timeout=60,
        check=False,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert "deployment.apps/numaresources-controller-manager created" in applied.stdout, applied.stdout


@pytest.fixture(scope="module")
def stack(
    cluster_thread: ClusterThread,
    api_client: client.ApiClient,
    rest_client: RestClient,
    kube_env: dict[str, str],
) -> Cluster:
    cluster = Cluster(api_client, rest_client)
    _install(cluster, kube_env)
    wait_for(
        lambda: cluster.apps.read_namespaced_deployment("numaresources-controller-manager", NS).status,
        lambda s: (s.ready_replicas or 0) >= 1,
        "the operator Deployment to be ready",
        TIMEOUT,
    )
    for kind_name, plural in (("NUMAResourcesOperator", "numaresourcesoperators"),
                              ("NUMAResourcesScheduler", "numaresourcesschedulers")):  # fmt: skip
        cluster.custom.create_cluster_custom_object(GROUP, VERSION, plural, samples.load(kind_name))
    return cluster


def test_stack_is_available_with_an_nrt_per_worker(stack: Cluster) -> None:
    start = time.monotonic()
    try:
        nrts = wait_for(stack.nrts, lambda n: set(WORKERS) <= set(n), "an NRT for every worker", TIMEOUT)
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}\n{stack.dump()}") from None
    for node in WORKERS:
        zones = nrts[node]["zones"]
        assert len(zones) == 2 and all(z["name"].startswith("node-") and z["resources"] for z in zones)
        assert {a["name"]: a["value"] for a in nrts[node]["attributes"]}[
            "topologyManagerPolicy"
        ] == "single-numa-node"
    nrop = wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
    nrs = wait_for(stack.nrs, is_available, "the NUMAResourcesScheduler to be Available", TIMEOUT)
    assert time.monotonic() - start < TIMEOUT

    c = conds(nrop)
    assert (c["Upgradeable"]["status"], c["Degraded"]["status"], c["Progressing"]["status"]) == (
        "True",
        "False",
        "False",
    )
    assert c["Available"]["reason"] == "AsExpected"
    assert nrop["status"]["daemonsets"] == [{"name": "numaresourcesoperator-worker", "namespace": NS}]
    assert nrop["status"]["nodeGroups"] == [
        {
            "daemonsets": {"name": "numaresourcesoperator-worker", "namespace": NS},
            "config": {
                "podsFingerprinting": "EnabledExclusiveResources",
                "infoRefreshMode": "Periodic",
                "infoRefreshPeriod": "10s",
                "infoRefreshPause": "Disabled",
            },
            "selector": "worker",
        }
    ]
    assert {
        "group": "apps",
        "resource": "daemonsets",
        "namespace": NS,
        "name": "numaresourcesoperator-worker",
    } in nrop["status"]["relatedObjects"]

    c = conds(nrs)
    assert (c["Upgradeable"]["status"], c["Degraded"]["status"], c["Progressing"]["status"]) == (
        "True",
        "False",
        "False",
    )
    assert c["DedicatedInformerActive"]["status"] == "True"
    assert nrs["status"]["schedulerName"] == "topo-aware-scheduler"
    assert nrs["status"]["deployment"] == {"name": "secondary-scheduler", "namespace": NS}
    assert nrs["status"]["cacheResyncPeriod"] == "5s"

    ds = stack.apps.read_namespaced_daemon_set("numaresourcesoperator-worker", NS)
    assert ds.status.number_ready == ds.status.desired_number_scheduled == len(WORKERS)
    assert ds.metadata.owner_references[0].kind == "NUMAResourcesOperator"
    dp = stack.apps.read_namespaced_deployment("secondary-scheduler", NS)
    assert dp.status.ready_replicas == dp.spec.replicas == 1  # one control-plane node
    config = stack.core.read_namespaced_config_map("numaresourcesoperator-worker", NS).data["config.yaml"]
    assert "topologyManagerPolicy: single-numa-node" in config
    assert "topologyManagerScope: pod" in config
    # The operator itself runs in a pod of the project's image, as a real process.
    pods = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items
    assert len(pods) == 1 and pods[0].status.phase == "Running"
    assert pods[0].spec.service_account_name == "numaresources-controller-manager"


def _listener_env(ip: str, port: int) -> list[bytes] | None:
    """The environment of the process listening on ip:port (from /proc), None when there is none."""
    octets = [int(o) for o in ip.split(".")]
    local = "".join(f"{o:02X}" for o in reversed(octets)) + f":{port:04X}"
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[3] == "0A":  # LISTEN
            inode = fields[9]
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) == target for fd in (proc / "fd").iterdir()):
                return (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
    return None


def _exporter_metrics(stack: Cluster, pod_name: str) -> str:
    """The exporter's ``/metrics`` through the API server's pods/proxy; "" while nothing listens
    on the port yet (503: the exporter is Running before its metrics server binds)."""
    try:
        return str(
            stack.core.connect_get_namespaced_pod_proxy_with_path(f"https:{pod_name}:2112", NS, "metrics")
        )
    except client.ApiException as exc:
        if exc.status != 503:
            raise
        return ""


def test_exporter_metrics_are_https(stack: Cluster) -> None:
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
    pods = stack.core.list_namespaced_pod(NS, label_selector="name=resource-topology").items
    assert len(pods) == len(WORKERS)
    for pod in pods:
        args = pod.spec.containers[0].args
        assert "--metrics-mode=httptls" in args and "--metrics-port=2112" in args
        text = wait_for(
            functools.partial(_exporter_metrics, stack, pod.metadata.name),
            # the series appear with the exporter's first write, after its server is up
            lambda body, node=pod.spec.node_name: (
                "rte_noderesourcetopology_writes_total" in body and f'node="{node}"' in body
            ),
            f"the metrics of exporter {pod.metadata.name}",
            TIMEOUT,
        )
        assert f'node="{pod.spec.node_name}"' in text


def test_operator_metrics_are_https_with_work_queue_counters(stack: Cluster) -> None:
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
    pod = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items[0]
    env = wait_for(
        lambda: _listener_env(pod.status.pod_ip, 8080),
        lambda e: e is not None,
        "a listener on :8080",
        TIMEOUT,
    )
    if f"POD_NAME={pod.metadata.name}".encode() not in env:
        pytest.skip(
            f"{pod.status.pod_ip}:8080 is held by a process of another embedded cluster "
            "(pod IPs are not unique per cluster yet)"
        )
    text = stack.core.connect_get_namespaced_pod_proxy_with_path(
        f"https:{pod.metadata.name}:8080", NS, "metrics"
    )
    assert "nrop_operator_reconciliations_total" in text
    for controller in ("numaresourcesoperator", "numaresourcesscheduler"):
        assert f'workqueue_adds_total{{controller="{controller}",name="{controller}"}}' in text


def guaranteed(name: str, scheduler: str, cpu: int) -> dict[str, Any]:
    resources = {"cpu": str(cpu), "memory": "1Gi"}
    container = {"name": "c", "image": "quay.io/openshift-kni/pause:test-ci", "command": ["/pause"],
                 "resources": {"limits": resources, "requests": resources}}  # fmt: skip
    spec = {"schedulerName": scheduler, "containers": [container], "terminationGracePeriodSeconds": 0}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_guaranteed_pod_lands_through_the_secondary_scheduler(stack: Cluster, namespace: str) -> None:
    scheduler = wait_for(stack.nrs, is_available, "the scheduler to be Available", TIMEOUT)["status"][
        "schedulerName"
    ]
    stack.core.create_namespaced_pod(namespace, guaranteed("gu", scheduler, 8))
    pod = wait_for(
        lambda: stack.core.read_namespaced_pod("gu", namespace),
        lambda p: p.status.phase == "Running",
        f"pod {namespace}/gu to be Running",
        TIMEOUT,
        terminal=lambda p: p.status.phase == "Failed",
    )
    assert pod.spec.node_name in WORKERS
    events = wait_for(
        lambda: [
            e
            for e in stack.api.raw_get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
            if e["regarding"]["name"] == "gu"
        ],
        lambda evs: any(e["reason"] == "Scheduled" for e in evs),
        "a Scheduled event for the pod",
        TIMEOUT,
    )
    assert [e["reportingController"] for e in events if e["reason"] == "Scheduled"] == [scheduler]
    stack.core.delete_namespaced_pod("gu", namespace, grace_period_seconds=0)


@pytest.mark.parametrize(
    ("patch", "reason", "message"),
    [
        pytest.param({"spec": {"nodeGroups": [{"poolName": "worker"}, {"poolName": "worker"}]}},
                     "ValidationErrorUnderNodeGroups", 'the pool name "worker" has duplicates', id="duplicate-pools"),
        pytest.param({"spec": {"nodeGroups": [{"poolName": ""}]}},
                     "ValidationErrorUnderNodeGroups", "pool name for pool #0 cannot be empty", id="empty-pool"),
        pytest.param({"spec": {"nodeGroups": [{"poolName": "worker", "config": {"infoRefreshPeriod": "often"}}]}},
                     "ValidationErrorUnderNodeGroups", "spec.nodeGroups[0].config.infoRefreshPeriod", id="bad-duration"),
        pytest.param({"spec": {"nodeGroups": [{"poolName": "worker", "config": {"tolerations": [{"key": "k", "operator": "Sometimes"}]}}]}},
                     "InternalError", "Unsupported value", id="bad-toleration"),
        pytest.param({"spec": {"imageSpec": "quay.io/openshift-kni/resource-topology-exporter:test-ci"}},
                     "CustomUserImage", "custom operand image is not supported", id="custom-image"),
    ],
)  # fmt: skip
def test_invalid_nrop_is_degraded_and_leaves_the_exporters(
    stack: Cluster, patch: dict[str, Any], reason: str, message: str
) -> None:
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
    before = stack.apps.read_namespaced_daemon_set("numaresourcesoperator-worker", NS)
    original = stack.nrop()["spec"]
    stack.patch_cr("numaresourcesoperators", "numaresourcesoperator", patch)
    try:
        obj = wait_for(stack.nrop, degraded_with(reason), f"Degraded with reason {reason}", TIMEOUT)
        assert message in conds(obj)["Degraded"]["message"]
        assert conds(obj)["Available"]["status"] == "False"
        after = stack.apps.read_namespaced_daemon_set("numaresourcesoperator-worker", NS)
        assert (after.metadata.uid, after.metadata.generation) == (
            before.metadata.uid,
            before.metadata.generation,
        )
    finally:
        restore = {"spec": {k: original.get(k) for k in ("nodeGroups", "imageSpec")}}
        stack.patch_cr("numaresourcesoperators", "numaresourcesoperator", restore)
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to recover", TIMEOUT)


def test_scheduler_image_by_tag_is_degraded(stack: Cluster) -> None:
    original = stack.nrs()["spec"]["imageSpec"]
    stack.patch_cr("numaresourcesschedulers", "numaresourcesscheduler",
                   {"spec": {"imageSpec": "quay.io/openshift-kni/scheduler-plugins:4.12-snapshot"}})  # fmt: skip
    try:
        obj = wait_for(
            stack.nrs, degraded_with("InvalidSchedulerImage"), "Degraded InvalidSchedulerImage", TIMEOUT
        )
        assert "must be referenced by digest, not by tag" in conds(obj)["Degraded"]["message"]
        dp = stack.apps.read_namespaced_deployment("secondary-scheduler", NS)
        assert dp.spec.template.spec.containers[0].image == original
    finally:
        stack.patch_cr("numaresourcesschedulers", "numaresourcesscheduler", {"spec": {"imageSpec": original}})
    wait_for(stack.nrs, is_available, "the NUMAResourcesScheduler to recover", TIMEOUT)


def test_wrong_name_is_refused_or_degraded(stack: Cluster) -> None:
    body = samples.load("NUMAResourcesScheduler")
    body["metadata"]["name"] = "other"
    try:
        stack.custom.create_cluster_custom_object(GROUP, VERSION, "numaresourcesschedulers", body)
    except client.ApiException as exc:  # the CRD's CEL rule, where the API server evaluates it
        assert exc.status == 422
        assert "must be 'numaresourcesscheduler'" in exc.body
        return
    try:
        obj = wait_for(
            lambda: stack.cr("numaresourcesschedulers", "other"),
            lambda o: o is not None and degraded_with("IncorrectNUMAResourcesSchedulerResourceName")(o),
            "the misnamed scheduler to be Degraded",
            TIMEOUT,
        )
        assert conds(obj)["Degraded"]["message"] == "incorrect NUMAResourcesScheduler resource name: other"
    finally:
        stack.custom.delete_cluster_custom_object(GROUP, VERSION, "numaresourcesschedulers", "other")


def test_cache_resync_period_reaches_the_scheduler_config(stack: Cluster) -> None:
    stack.patch_cr("numaresourcesschedulers", "numaresourcesscheduler", {"spec": {"cacheResyncPeriod": "7s"}})
    wait_for(
        stack.nrs,
        lambda o: (o.get("status") or {}).get("cacheResyncPeriod") == "7s",
        "status.cacheResyncPeriod 7s",
        TIMEOUT,
    )
    config = stack.core.read_namespaced_config_map("topo-aware-scheduler-config", NS).data["config.yaml"]
    assert "cacheResyncPeriodSeconds: 7" in config
    stack.patch_cr("numaresourcesschedulers", "numaresourcesscheduler", {"spec": {"cacheResyncPeriod": "5s"}})
    wait_for(stack.nrs, is_available, "the NUMAResourcesScheduler to be Available again", TIMEOUT)


def test_manual_edits_of_owned_objects_are_reverted(stack: Cluster) -> None:
    wait_for(stack.nrs, is_available, "the NUMAResourcesScheduler to be Available", TIMEOUT)
    cm = stack.core.read_namespaced_config_map("topo-aware-scheduler-config", NS)
    original = cm.data["config.yaml"]
    stack.core.patch_namespaced_config_map(
        "topo-aware-scheduler-config", NS, {"data": {"config.yaml": "edited"}}
    )
    wait_for(
        lambda: stack.core.read_namespaced_config_map("topo-aware-scheduler-config", NS).data["config.yaml"],
        lambda data: data == original,
        "the scheduler ConfigMap to be reverted",
        TIMEOUT,
    )
    stack.apps.patch_namespaced_deployment(
        "secondary-scheduler",
        NS,
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "secondary-scheduler", "args": ["--config=/elsewhere.yaml"]}]
                    }
                }
            }
        },
    )
    wait_for(
        lambda: (
            stack.apps.read_namespaced_deployment("secondary-scheduler", NS)
            .spec.template.spec.containers[0]
            .args
        ),
        lambda args: args[0] == "--config=/etc/kubernetes/config.yaml",
        "the scheduler Deployment to be reverted",
        TIMEOUT,
    )
    wait_for(stack.nrs, is_available, "the NUMAResourcesScheduler to be Available again", TIMEOUT)


def test_node_group_with_tolerations_then_removed(stack: Cluster) -> None:
    """A second group on the tainted control plane: its tolerations let the exporter in; removal deletes it."""
    tolerations = [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    ]
    groups = [{"poolName": "worker"}, {"poolName": "control-plane", "config": {"tolerations": tolerations}}]
    stack.patch_cr("numaresourcesoperators", "numaresourcesoperator", {"spec": {"nodeGroups": groups}})
    wait_for(stack.nrts, lambda n: "control-plane" in n, "an NRT for the control-plane node", TIMEOUT)
    nrop = wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
    assert [g["selector"] for g in nrop["status"]["nodeGroups"]] == ["worker", "control-plane"]
    assert nrop["status"]["nodeGroups"][1]["config"]["tolerations"] == tolerations
    ds = stack.apps.read_namespaced_daemon_set("numaresourcesoperator-control-plane", NS)
    assert ds.spec.template.spec.node_selector == {"node-role.kubernetes.io/control-plane": ""}

    stack.patch_cr(
        "numaresourcesoperators", "numaresourcesoperator", {"spec": {"nodeGroups": [{"poolName": "worker"}]}}
    )
    wait_for(
        lambda: [d.metadata.name for d in stack.apps.list_namespaced_daemon_set(NS).items],
        lambda names: names == ["numaresourcesoperator-worker"],
        "the control-plane exporter DaemonSet to be deleted",
        TIMEOUT,
    )
    nrop = wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
    assert nrop["status"]["daemonsets"] == [{"name": "numaresourcesoperator-worker", "namespace": NS}]


def _operator_pid(pod_name: str) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"numaresources-operator" in cmdline and f"POD_NAME={pod_name}".encode() in environ:
            return int(entry.name)
    return None


def test_kill_9_restarts_the_operator_which_reconciles_again(stack: Cluster) -> None:
    pod = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items[0]
    restarts = pod.status.container_statuses[0].restart_count
    pid = _operator_pid(pod.metadata.name)
    assert pid is not None, "the operator's process was not found"
    os.kill(pid, signal.SIGKILL)
    wait_for(
        lambda: stack.core.read_namespaced_pod(pod.metadata.name, NS).status.container_statuses[0],
        lambda s: s.restart_count > restarts and s.ready,
        "the operator container to be restarted and ready",
        TIMEOUT,
    )
    stack.patch_cr("numaresourcesoperators", "numaresourcesoperator", {"spec": {"logLevel": "Debug"}})
    wait_for(
        lambda: (
            stack.apps.read_namespaced_daemon_set("numaresourcesoperator-worker", NS)
            .spec.template.spec.containers[0]
            .args
        ),
        lambda args: "-v=4" in args,
        "the restarted operator to roll the exporters to -v=4",
        TIMEOUT,
    )
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available again", TIMEOUT)


def test_sigterm_ends_the_operator_at_once_with_exit_code_0(stack: Cluster) -> None:
    """What the kubelet sends on every rollout and uninstall: an operator that only stops at the
    SIGKILL after the grace period (10 s) makes each of them wait that long."""
    pod = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items[0]

    def container() -> Any:
        return stack.core.read_namespaced_pod(pod.metadata.name, NS).status.container_statuses[0]

    before = container().last_state.terminated
    pid = _operator_pid(pod.metadata.name)
    assert pid is not None, "the operator's process was not found"
    os.kill(pid, signal.SIGTERM)
    status = wait_for(
        container,
        lambda s: s.last_state.terminated is not None and s.last_state.terminated != before,
        "the operator's process to end on SIGTERM (the grace period is 10s)",
        5.0,
    )
    assert status.last_state.terminated.exit_code == 0, status.last_state.terminated
    wait_for(container, lambda s: s.ready, "the restarted operator to be ready", TIMEOUT)
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available again", TIMEOUT)


APISERVER = kind("config.openshift.io/v1", "APIServer")


def _tls_args(stack: Cluster) -> list[str]:
    args = (
        stack.apps.read_namespaced_daemon_set("numaresourcesoperator-worker", NS)
        .spec.template.spec.containers[0]
        .args
    )
    return [a for a in args if a.startswith("--metrics-tls-")]


def test_exporter_tls_flags_follow_the_cluster_tls_profile(stack: Cluster) -> None:
    """[test_id:88383]'s mechanism: the exporters' metrics TLS flags come from APIServer/cluster's
    profile; a change makes the operator exit (graceful, status 0), the kubelet restarts it, and it
    re-renders the DaemonSets with the new profile; the exporters serve with it."""
    if not stack.api.serves(APISERVER):
        wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)
        assert _tls_args(stack) == []  # plain Kubernetes: no profile, no flags
        pytest.skip("the cluster does not serve config.openshift.io/v1 APIServer")
    intermediate = tlsprofiles.settings_from_profile(tlsprofiles.TLS_PROFILES["Intermediate"])
    original = stack.api.get(APISERVER, "cluster")
    assert original is not None
    profile = (original.get("spec") or {}).get("tlsSecurityProfile")
    if profile not in (None, {}) and profile.get("type") not in ("", "Intermediate"):
        pytest.skip(f"APIServer/cluster has the {profile.get('type')} profile, not the default")
    wait_for(
        lambda: _tls_args(stack),
        lambda args: (
            args
            == [
                f"--metrics-tls-min-version={intermediate.min_version}",
                f"--metrics-tls-cipher-suites={intermediate.cipher_suites}",
            ]
        ),
        "the exporters to carry the Intermediate profile's TLS flags",
        TIMEOUT,
    )
    pod = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items[0]
    restarts = pod.status.container_statuses[0].restart_count
    stack.api.patch(APISERVER, "cluster", {"spec": {"tlsSecurityProfile": {"type": "Modern", "modern": {}}}})
    try:
        wait_for(
            lambda: _tls_args(stack),
            lambda args: args == ["--metrics-tls-min-version=VersionTLS13"],
            "the restarted operator to render the Modern profile's TLS flags (no cipher list)",
            2 * TIMEOUT,
        )
        status = stack.core.read_namespaced_pod(pod.metadata.name, NS).status.container_statuses[0]
        assert status.restart_count > restarts, "the operator re-rendered without restarting"
        assert status.last_state.terminated is not None and status.last_state.terminated.exit_code == 0
    finally:
        stack.api.patch(APISERVER, "cluster", {"spec": {"tlsSecurityProfile": profile}})
    wait_for(
        lambda: _tls_args(stack),
        lambda args: args[:1] == [f"--metrics-tls-min-version={intermediate.min_version}"],
        "the exporters back on the Intermediate profile",
        2 * TIMEOUT,
    )
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available again", 2 * TIMEOUT)


def test_operator_env_rollout_hands_over_and_disables_image_validation(stack: Cluster) -> None:
    """What the suite's BeforeSuite does: SCHEDULER_IMAGE_VALIDATION=false in the manager's env."""
    old = {
        p.metadata.name
        for p in stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items
    }
    deployment = stack.api.get(kind("apps/v1", "Deployment"), "numaresources-controller-manager", NS)
    assert deployment is not None
    containers = deployment["spec"]["template"]["spec"]["containers"]
    containers[0]["env"].append({"name": "SCHEDULER_IMAGE_VALIDATION", "value": "false"})
    # a patch of the pod template (`kubectl set env` patches too): a replace of what was read
    # lost the race with the controllers' status writes after the previous test's restart (409)
    stack.api.patch(
        kind("apps/v1", "Deployment"),
        "numaresources-controller-manager",
        {"spec": {"template": {"spec": {"containers": containers}}}},
        NS,
    )

    def new_leader_ready() -> bool:
        pods = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items
        return (
            len(pods) == 1
            and pods[0].metadata.name not in old
            and all(c.ready for c in pods[0].status.container_statuses or [])
        )

    wait_for(new_leader_ready, bool, "the operator rollout to end with one new ready pod", TIMEOUT)
    image = "quay.io/openshift-kni/scheduler-plugins:4.19-snapshot"
    original = stack.nrs()["spec"]["imageSpec"]
    stack.patch_cr("numaresourcesschedulers", "numaresourcesscheduler", {"spec": {"imageSpec": image}})
    try:
        wait_for(
            lambda: stack.apps.read_namespaced_deployment(
                "secondary-scheduler", NS
            ).spec.template.spec.containers[0],
            lambda c: c.image == image and c.command == ["/bin/kube-scheduler"],
            "the new leader to roll the scheduler to the upstream image",
            TIMEOUT,
        )
        obj = wait_for(
            stack.nrs, is_available, "the NUMAResourcesScheduler Available with validation off", TIMEOUT
        )
        assert conds(obj)["Degraded"]["status"] == "False"
    finally:
        stack.patch_cr("numaresourcesschedulers", "numaresourcesscheduler", {"spec": {"imageSpec": original}})
    wait_for(stack.nrs, is_available, "the NUMAResourcesScheduler to be Available again", TIMEOUT)


def test_the_worker_kubeletconfig_controls_the_exporter_configmap(stack: Cluster) -> None:
    """The embedded cluster's KubeletConfig for the worker pool: the operator's KubeletConfig
    controller takes the pool's exporter ConfigMap over, and a scope change reaches the ConfigMap,
    the exporters (a new pod template hash) and the NRT attributes after the MCP roll-out."""
    mco = "machineconfiguration.openshift.io"
    kc_name, cm_name = "worker-numa-topology", "numaresourcesoperator-worker"

    def owner(cm: Any) -> str:
        refs = cm.metadata.owner_references or []
        return next((f"{r.kind}/{r.name}" for r in refs if r.controller), "")

    cm = wait_for(
        lambda: stack.core.read_namespaced_config_map(cm_name, NS),
        lambda cm: owner(cm) == f"KubeletConfig/{kc_name}",
        "the worker ConfigMap to be controlled by the KubeletConfig",
        TIMEOUT,
    )
    assert cm.metadata.labels == {
        "numaresourcesoperator.nodetopology.openshift.io/name": "numaresourcesoperator",
        "nodegroup.nodetopology.openshift.io/machineconfigpool": "worker",
    }
    ds_hash = stack.apps.read_namespaced_daemon_set(cm_name, NS).spec.template.metadata.annotations[
        "nodetopology.openshift.io/rte-config-hash"
    ]

    def set_scope(scope: str) -> None:
        stack.custom.patch_cluster_custom_object(
            mco, "v1", "kubeletconfigs", kc_name, {"spec": {"kubeletConfig": {"topologyManagerScope": scope}}}
        )

    def scope_everywhere(scope: str) -> None:
        wait_for(
            lambda: stack.core.read_namespaced_config_map(cm_name, NS).data["config.yaml"],
            lambda text: f"topologyManagerScope: {scope}" in text,
            f"the ConfigMap to carry scope {scope}",
            TIMEOUT,
        )
        wait_for(
            lambda: stack.custom.get_cluster_custom_object(mco, "v1", "machineconfigpools", "worker"),
            lambda mcp: (
                conds(mcp).get("Updated", {}).get("status") == "True"
                and mcp["status"]["updatedMachineCount"] == len(WORKERS)
            ),
            "the worker pool to be Updated",
            TIMEOUT,
        )
        wait_for(
            stack.nrts,
            lambda nrts: all(
                {a["name"]: a["value"] for a in nrts.get(w, {}).get("attributes") or []}.get(
                    "topologyManagerScope"
                )
                == scope
                for w in WORKERS
            ),
            f"the NRTs to report scope {scope}",
            TIMEOUT,
        )

    set_scope("container")
    try:
        scope_everywhere("container")
        new_hash = stack.apps.read_namespaced_daemon_set(cm_name, NS).spec.template.metadata.annotations[
            "nodetopology.openshift.io/rte-config-hash"
        ]
        assert new_hash != ds_hash
        assert owner(stack.core.read_namespaced_config_map(cm_name, NS)) == f"KubeletConfig/{kc_name}"
    finally:
        set_scope("pod")
    scope_everywhere("pod")
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available", TIMEOUT)


def _without_watch(rules: list[dict[str, Any]], plural: str) -> list[dict[str, Any]]:
    """``rules`` with ``watch`` on ``plural`` (core group) taken away, everything else kept."""
    out: list[dict[str, Any]] = []
    for rule in rules:
        if "" not in rule["apiGroups"] or plural not in rule["resources"]:
            out.append(rule)
            continue
        rest = [r for r in rule["resources"] if r != plural]
        if rest:
            out.append({**rule, "resources": rest})
        out.append({**rule, "resources": [plural], "verbs": [v for v in rule["verbs"] if v != "watch"]})
    return out


def test_a_forbidden_watch_ends_the_operator_with_exit_code_1(
    stack: Cluster, api_client: client.ApiClient
) -> None:
    """controller-runtime's manager stops and upstream's main exits 1 when a kind the operator
    watches cannot be watched: the pod restarts until its ClusterRole is fixed, instead of a
    process that stays up and never sees those objects change. Late in the module: the
    kubelet's restart back-off, grown by these exits, slows the restarts later tests wait for."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    role = rbac.read_cluster_role(OPERATOR_NAME)
    rules = api_client.sanitize_for_serialization(role.rules)
    pod = stack.core.list_namespaced_pod(NS, label_selector="app=numaresources-operator").items[0]

    def container() -> Any:
        return stack.core.read_namespaced_pod(pod.metadata.name, NS).status.container_statuses[0]

    before = container().last_state.terminated
    rbac.patch_cluster_role(OPERATOR_NAME, {"rules": _without_watch(rules, "serviceaccounts")})
    try:
        pid = _operator_pid(pod.metadata.name)
        assert pid is not None, "the operator's process was not found"
        os.kill(pid, signal.SIGTERM)  # the restarted process watches with the new ClusterRole
        wait_for(
            container,
            lambda s: (
                s.last_state.terminated is not None
                and s.last_state.terminated.exit_code == 1
                and s.last_state.terminated != before
            ),
            "the operator to exit 1 once it may not watch serviceaccounts (kopf retries 9 times, ~40s)",
            2 * TIMEOUT,
        )
    finally:
        rbac.patch_cluster_role(OPERATOR_NAME, {"rules": rules})
    wait_for(
        container,
        lambda s: s.ready,
        "the operator to be restarted and ready with its ClusterRole back",
        2 * TIMEOUT,
    )
    wait_for(stack.nrop, is_available, "the NUMAResourcesOperator to be Available again", TIMEOUT)


def test_deleting_the_crs_removes_their_objects(stack: Cluster) -> None:
    stack.custom.delete_cluster_custom_object(
        GROUP, VERSION, "numaresourcesschedulers", "numaresourcesscheduler"
    )
    stack.custom.delete_cluster_custom_object(
        GROUP, VERSION, "numaresourcesoperators", "numaresourcesoperator"
    )
    wait_for(
        lambda: (
            stack.cr("numaresourcesschedulers", "numaresourcesscheduler"),
            stack.cr("numaresourcesoperators", "numaresourcesoperator"),
        ),
        lambda both: both == (None, None),
        "both CRs to be gone",
        TIMEOUT,
    )
    kinds = [
        kind("apps/v1", "DaemonSet"), kind("apps/v1", "Deployment"), kind("v1", "ConfigMap"),
        kind("v1", "ServiceAccount"), kind("rbac.authorization.k8s.io/v1", "ClusterRole"),
        kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), kind("rbac.authorization.k8s.io/v1", "Role"),
        kind("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ]  # fmt: skip

    def leftovers() -> list[str]:
        found = []
        for k in kinds:
            for obj in stack.api.list(k, NS if k.namespaced else None):
                if OWNER_NAME in (obj["metadata"].get("labels") or {}):
                    found.append(f"{k.kind} {obj['metadata']['name']}")
        return found

    wait_for(leftovers, lambda found: not found, "no object of the deleted CRs", TIMEOUT)
    wait_for(
        lambda: stack.core.list_namespaced_pod(NS, label_selector="name=resource-topology").items,
        lambda pods: not pods,
        "the exporter pods to be gone",
        TIMEOUT,
    )
    # The operator stays, ready for new CRs.
    assert (
        stack.apps.read_namespaced_deployment("numaresources-controller-manager", NS).status.ready_replicas
        == 1
    )
