"""resource-topology-exporter end to end: real processes against the embedded cluster's real kubelets.

One cluster on the shipped ``devices`` profile (two 2-NUMA workers with static CPU and
memory managers, hugepages and ``example.com/deviceA`` devices per NUMA node) runs as
the suite's embedded target (``nrop-cluster up``). Per worker, ``resource-topology-exporter`` runs as a plain subprocess
against that node's root — its sysfs tree, the kubelet's podresources socket, a
KubeletConfiguration file written from ``/configz`` — and the API server:

* ``worker-0`` in reactive mode (the kubelet's notify file, no timer), with metrics;
* ``worker-1`` in periodic mode (``--sleep-interval 1s``, no notify file), with
  ``--exclude-terminal-pods``.

Tests create guaranteed, burstable and best-effort pods with ``spec.nodeName`` through
the official client and read the NRT objects through the API: exclusive CPUs, memory,
hugepages and devices come off the zone the kubelet allocated from (read on its
podresources socket), shared-pool pods change nothing, the fingerprint changes exactly
when the set of exclusive pods does, and deleting the pods restores the initial objects.

``--podreadiness`` is on, as by default: the exporters' own pods (``REFERENCE_*``) run
on the control-plane node, because a pod started on a worker before its exporter makes
the kubelet write the notify file, and the exporter (as upstream's) refuses to take
over a notify file that is not empty.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _helpers_e2e import (
    POLL_INTERVAL,
    Process,
    install_nrt_crd,
    node_root,
    pod_resources,
    podresources_socket,
    program,
    start_exporter,
    stopped_cleanly,
    write_kubelet_config,
)
from kubernetes import client, config, watch

from nrop.api import crds, fingerprint
from nrop.api.nrt import GROUP, PLURAL, VERSION, NodeResourceTopology
from nrop.api.restclient import RestClient
from nrop.rte.terminalpods import TerminalPods
from nrop.suite.e2e.kube import NRT, POD, Kube
from nrop.suite.e2e.nrt.waiters import for_nrts
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.plugin.target import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("devices")]

GiB = 1024**3
MiB = 1024**2
DEVICE = "example.com/deviceA"
REACTIVE, PERIODIC = "worker-0", "worker-1"
WORKERS = (REACTIVE, PERIODIC)
OWN_PODS_NAMESPACE = "rte"
TIMEOUT = 20.0

#: Zone -> resource -> (capacity, allocatable, available) of an idle worker of the profile:
#: 16 CPUs per NUMA node (reservedSystemCPUs 0,16 are on node 0); 16Gi MemTotal per node, of
#: which 1Gi in 2Mi pages and 2Gi in 1Gi pages, and 1100Mi reserved on node 0; 2 devices.
IDLE_ZONES = {
    "node-0": {
        "cpu": (16, 14, 14),
        DEVICE: (2, 2, 2),
        "hugepages-1Gi": (2 * GiB, 2 * GiB, 2 * GiB),
        "hugepages-2Mi": (GiB, GiB, GiB),
        "memory": (16 * GiB, 13 * GiB - 1100 * MiB, 13 * GiB - 1100 * MiB),
    },
    "node-1": {
        "cpu": (16, 16, 16),
        DEVICE: (2, 2, 2),
        "hugepages-1Gi": (2 * GiB, 2 * GiB, 2 * GiB),
        "hugepages-2Mi": (GiB, GiB, GiB),
        "memory": (16 * GiB, 13 * GiB, 13 * GiB),
    },
}
NO_PODS = fingerprint.compute([])


# ----------------------------------------------------------------------------- NRT reading


def table(obj: dict[str, Any]) -> dict[str, dict[str, tuple[int, int, int]]]:
    nrt = NodeResourceTopology.from_dict(obj)
    return {
        z.name: {
            r.name: (int(str(r.capacity)), int(str(r.allocatable)), int(str(r.available)))
            for r in z.resources
        }
        for z in nrt.zones
    }


def minus(
    zones: dict[str, dict[str, tuple[int, int, int]]], zone: str, used: dict[str, int]
) -> dict[str, Any]:
    """``zones`` with ``used`` taken off the ``available`` of ``zone``."""
    out = {name: dict(resources) for name, resources in zones.items()}
    for resource, amount in used.items():
        cap, alloc, avail = out[zone][resource]
        out[zone][resource] = (cap, alloc, avail - amount)
    return out


def fingerprint_of(obj: dict[str, Any]) -> str | None:
    return NodeResourceTopology.from_dict(obj).pods_fingerprint


def annotation(obj: dict[str, Any], key: str) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(key)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ----------------------------------------------------------------------------- fixtures


def pod_body(
    name: str,
    node: str,
    *,
    limits: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    command: list[str] | None = None,
    tolerate_control_plane: bool = False,
) -> dict[str, Any]:
    resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": resources}
    if command:
        container["command"] = command
    spec: dict[str, Any] = {"nodeName": node, "containers": [container], "restartPolicy": "Never"}
    if tolerate_control_plane:
        spec["tolerations"] = [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@dataclass
class Stack:
    cluster: EmbeddedCluster
    kube: Kube
    core: client.CoreV1Api
    exporters: dict[str, Process]
    initial: dict[str, dict[str, Any]]
    metrics_port: int
    env: dict[str, str]
    kubelet_configs: dict[str, Path] = field(default_factory=dict)

    def root(self, node: str) -> Path:
        return node_root(self.cluster, node)

    def nrt(self, node: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(NRT, node)

    def wait_nrt(
        self, node: str, predicate: Callable[[dict[str, Any]], bool], description: str
    ) -> dict[str, Any]:
        return for_nrts(self.kube, [node], predicate, description, TIMEOUT, interval=POLL_INTERVAL)[node]

    def run_pod(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self.kube.create({**body, "metadata": {**body["metadata"], "namespace": namespace}})
        return waiters.for_pod_phase(
            self.kube, namespace, body["metadata"]["name"], "Running", interval=0.05, timeout=TIMEOUT
        )

    def delete_pods(self, namespace: str, *names: str) -> None:
        for name in names:
            self.kube.delete(POD, name, namespace)
        for name in names:
            waiters.for_pod_deleted(self.kube, namespace, name, interval=0.05, timeout=TIMEOUT)

    def zone_of(self, node: str, namespace: str, name: str) -> str:
        """The NUMA zone the kubelet allocated the pod's exclusive resources from (podresources API)."""
        pod = pod_resources(self.root(node), namespace, name)
        numa = {n.ID for c in pod.containers for m in c.memory for n in m.topology.nodes}
        numa |= {n.ID for c in pod.containers for d in c.devices for n in d.topology.nodes}
        assert len(numa) == 1, pod
        return f"node-{numa.pop()}"


@pytest.fixture(scope="module")
def stack(embedded: EmbeddedCluster, kube: Kube, core: client.CoreV1Api, state_dir: Path) -> Iterator[Stack]:
    install_nrt_crd(kube)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=OWN_PODS_NAMESPACE)))
    for node in WORKERS:
        own_pod = pod_body(f"rte-{node}", "control-plane", tolerate_control_plane=True)
        own_pod["spec"]["restartPolicy"] = "Always"
        core.create_namespaced_pod(OWN_PODS_NAMESPACE, own_pod)

    stack = Stack(embedded, kube, core, {}, {}, free_port(), env=dict(os.environ))
    for node in WORKERS:
        wait_for(
            lambda node=node: core.read_namespaced_pod(f"rte-{node}", OWN_PODS_NAMESPACE).status.phase,
            lambda phase: phase == "Running",
            f"pod {OWN_PODS_NAMESPACE}/rte-{node} to be Running",
        )
        stack.kubelet_configs[node] = write_kubelet_config(kube, node, state_dir / f"{node}-kubelet.yaml")
    stack.env.pop("REFERENCE_CONTAINER_NAME", None)
    stack.env["REFERENCE_NAMESPACE"] = OWN_PODS_NAMESPACE
    mode = {
        REACTIVE: ["--notify-file", str(stack.root(REACTIVE) / "run/rte/notify"), "--sleep-interval", "0",
                   "--metrics-mode", "http", "--metrics-ip", "127.0.0.1", "--metrics-port", str(stack.metrics_port)],
        PERIODIC: ["--sleep-interval", "1s", "--exclude-terminal-pods"],
    }  # fmt: skip
    for node in WORKERS:
        env = {**stack.env, "REFERENCE_POD_NAME": f"rte-{node}"}
        stack.exporters[node] = start_exporter(
            embedded, kube, node, state_dir, *mode[node], env=env, kubelet_config=stack.kubelet_configs[node]
        )
    with stopped_cleanly(stack.exporters):
        stack.initial = for_nrts(kube, WORKERS, lambda _: True, "to exist", TIMEOUT, interval=POLL_INTERVAL)
        yield stack
    logs = {node: proc.log() for node, proc in stack.exporters.items()}
    assert not any("Traceback" in text for text in logs.values()), logs


def test_initial_nrt_describes_each_worker(stack: Stack) -> None:
    for node in WORKERS:
        obj = stack.initial[node]
        assert table(obj) == IDLE_ZONES, node
        nrt = NodeResourceTopology.from_dict(obj)
        assert [(z.name, z.type, [(c.name, c.value) for c in z.costs]) for z in nrt.zones] == [
            ("node-0", "Node", [("node-0", 10), ("node-1", 21)]),
            ("node-1", "Node", [("node-0", 21), ("node-1", 10)]),
        ]
        # The topology manager settings come from the kubelet configuration file, verbatim.
        assert [(a.name, a.value) for a in nrt.attributes] == [
            ("nodeTopologyPodsFingerprint", NO_PODS),
            ("nodeTopologyPodsFingerprintMethod", "with-exclusive-resources"),
            # single-numa-node and the fingerprint on: the numaplacement metadata (no pinned container yet).
            ("topology.node.k8s.io/numaplacement-metadata", "npv0v001::ve=leb89::cc=0::nn=2::bn=0"),
            ("topologyManagerScope", "pod"),
            ("topologyManagerPolicy", "single-numa-node"),
        ]
        assert annotation(obj, "topology.node.k8s.io/fingerprint") == NO_PODS
        uid = stack.core.read_node(node).metadata.uid
        assert obj["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
        ]
        assert stack.exporters[node].alive()
    initial_scan = annotation(stack.initial[REACTIVE], "k8stopoawareschedwg/rte-update")
    assert initial_scan == "reactive"
    with urllib.request.urlopen(f"http://127.0.0.1:{stack.metrics_port}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    created = (
        'rte_noderesourcetopology_writes_total{node="worker-0",operation="create",trigger="reactive"} 1.0'
    )
    assert created in metrics
    assert 'rte_operation_delay_milliseconds{node="worker-0",operation_name="podresources_scan"' in metrics


def by_name(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The zones with each zone's resources sorted by name (the exporter writes them in Go map order)."""
    return [
        {**z, "resources": sorted(z.get("resources") or (), key=lambda r: r["name"])} for z in obj["zones"]
    ]


def resource_orders(obj: dict[str, Any]) -> list[list[str]]:
    return [[r["name"] for r in z.get("resources") or ()] for z in obj["zones"]]


def assert_initial(stack: Stack, node: str, obj: dict[str, Any]) -> None:
    """The object is back to what the exporter published before any pod ran."""
    assert table(obj) == IDLE_ZONES
    assert by_name(obj) == by_name(stack.initial[node])
    assert obj["attributes"] == stack.initial[node]["attributes"]


def test_periodic_refreshes_of_an_idle_node_write_new_resource_versions(stack: Stack) -> None:
    """As upstream's exporter (a ``range`` over a Go map), each refresh writes a zone's resources
    from a random start: an idle node's NRT gets new resourceVersions differing in order only,
    which is what the tests' ``GetUpdated`` takes for an update."""
    first = stack.nrt(PERIODIC)
    assert first is not None
    versions = {first["metadata"]["resourceVersion"]}
    orders = {json.dumps(resource_orders(first))}

    def look() -> dict[str, Any]:
        obj = stack.nrt(PERIODIC)
        assert obj is not None
        assert by_name(obj) == by_name(first) and obj["attributes"] == first["attributes"]
        versions.add(obj["metadata"]["resourceVersion"])
        orders.add(json.dumps(resource_orders(obj)))
        return obj

    wait_for(
        look, lambda _: len(versions) >= 4, "4 resourceVersions of the idle node's NRT", TIMEOUT, interval=0.2
    )
    assert len(orders) >= 2, orders


def own_conditions(stack: Stack, node: str) -> dict[str, tuple[str, str | None, str | None]]:
    pod = stack.core.read_namespaced_pod(f"rte-{node}", OWN_PODS_NAMESPACE)
    return {c.type: (c.status, c.reason, c.message) for c in pod.status.conditions or ()}


def test_podreadiness_sets_the_conditions_of_the_exporters_pods(stack: Stack) -> None:
    for node in WORKERS:
        conditions = wait_for(
            lambda node=node: own_conditions(stack, node),
            lambda c: "NodeTopologyUpdated" in c,
            f"pod rte-{node} to carry the exporter's conditions",
        )
        assert conditions["PodresourcesFetched"] == ("True", None, None)
        assert conditions["NodeTopologyUpdated"] == ("True", None, None)
        assert conditions["Ready"][0] == "True"  # the kubelet's own conditions are kept


GUARANTEED = {"cpu": "4", "memory": "1Gi", "hugepages-2Mi": "64Mi", DEVICE: "1"}
GUARANTEED_USES = {"cpu": 4, "memory": GiB, "hugepages-2Mi": 64 * MiB, DEVICE: 1}


def test_exclusive_resources_come_off_the_zone_the_kubelet_allocated(stack: Stack, namespace: str) -> None:
    shared = {
        "burstable": pod_body("burstable", REACTIVE, requests={"cpu": "2", "memory": "1Gi"}),
        "best-effort": pod_body("best-effort", REACTIVE),
    }
    for body in shared.values():
        stack.run_pod(namespace, body)
    stack.run_pod(namespace, pod_body("gu", REACTIVE, limits=GUARANTEED))
    zone = stack.zone_of(REACTIVE, namespace, "gu")

    # The first object that shows the guaranteed pod comes from a scan that listed the
    # shared-pool pods too (they ran first): they take nothing and are not fingerprinted.
    expected_fp = fingerprint.compute([(namespace, "gu")])
    obj = stack.wait_nrt(REACTIVE, lambda o: fingerprint_of(o) == expected_fp, "to show pod gu")
    assert table(obj) == minus(IDLE_ZONES, zone, GUARANTEED_USES)
    assert annotation(obj, "k8stopoawareschedwg/rte-update") == "reactive"
    assert annotation(obj, "topology.node.k8s.io/fingerprint") == expected_fp
    peer = stack.nrt(PERIODIC)
    assert peer is not None and table(peer) == IDLE_ZONES and fingerprint_of(peer) == NO_PODS

    stack.delete_pods(namespace, "gu", *shared)
    obj = stack.wait_nrt(REACTIVE, lambda o: fingerprint_of(o) == NO_PODS, "to forget pod gu")
    assert_initial(stack, REACTIVE, obj)


class FingerprintRecorder:
    """Every fingerprint an NRT object carried, in order, as a watch delivers them."""

    def __init__(self, kubeconfig: Path, name: str, resource_version: str) -> None:
        self.name = name
        self.seen: list[str | None] = []
        self._lock = threading.Lock()
        self._watch = watch.Watch()
        self._api = config.new_client_from_config(config_file=str(kubeconfig))
        self._custom = client.CustomObjectsApi(self._api)
        self._thread = threading.Thread(target=self._run, args=(resource_version,), daemon=True)
        self._thread.start()

    def _run(self, resource_version: str) -> None:
        stream = self._watch.stream(
            self._custom.list_cluster_custom_object, GROUP, VERSION, PLURAL,
            field_selector=f"metadata.name={self.name}", resource_version=resource_version, timeout_seconds=60,
        )  # fmt: skip
        try:
            for event in stream:
                with self._lock:
                    self.seen.append(fingerprint_of(event["object"]))
        except Exception:  # the cluster went away under a forgotten recorder: nothing to record
            return

    def distinct(self) -> list[str | None]:
        with self._lock:
            values = list(self.seen)
        return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]

    def close(self) -> None:
        self._watch.stop()
        self._api.close()


def test_fingerprint_changes_exactly_when_the_exclusive_pods_do(
    stack: Stack, namespace: str, kubeconfig: Path
) -> None:
    start = stack.wait_nrt(REACTIVE, lambda o: fingerprint_of(o) == NO_PODS, "to show no pod")
    recorder = FingerprintRecorder(kubeconfig, REACTIVE, start["metadata"]["resourceVersion"])
    exclusive = {"cpu": "2", "memory": "256Mi"}

    def fp(*names: str) -> str:
        return fingerprint.compute([(namespace, n) for n in names])

    def expect(*names: str) -> None:
        stack.wait_nrt(REACTIVE, lambda o: fingerprint_of(o) == fp(*names), f"to fingerprint {list(names)}")

    try:
        stack.run_pod(namespace, pod_body("a", REACTIVE, limits=exclusive))
        expect("a")
        stack.run_pod(namespace, pod_body("shared", REACTIVE, requests={"cpu": "1"}))
        stack.run_pod(namespace, pod_body("b", REACTIVE, limits=exclusive))
        expect("a", "b")  # a scan after "shared" started: it is not in the set
        stack.delete_pods(namespace, "shared")
        stack.delete_pods(namespace, "a")
        expect("b")
        stack.delete_pods(namespace, "b")
        expect()
        final = stack.nrt(REACTIVE)
        assert final is not None
        assert_initial(stack, REACTIVE, final)
        assert recorder.distinct() == [fp("a"), fp("a", "b"), fp("b"), fp()]
    finally:
        recorder.close()


def test_periodic_refresh_follows_pods_without_the_notify_file(stack: Stack, namespace: str) -> None:
    both_devices = {"cpu": "2", "memory": "512Mi", "hugepages-1Gi": "1Gi", DEVICE: "2"}
    stack.run_pod(namespace, pod_body("ticked", PERIODIC, limits=both_devices))
    zone = stack.zone_of(PERIODIC, namespace, "ticked")
    expected_fp = fingerprint.compute([(namespace, "ticked")])
    obj = stack.wait_nrt(PERIODIC, lambda o: fingerprint_of(o) == expected_fp, "to show pod ticked")
    assert table(obj) == minus(
        IDLE_ZONES, zone, {"cpu": 2, "memory": 512 * MiB, "hugepages-1Gi": GiB, DEVICE: 2}
    )
    assert table(obj)[zone][DEVICE][2] == 0
    assert annotation(obj, "k8stopoawareschedwg/rte-update") == "periodic"
    stack.delete_pods(namespace, "ticked")
    obj = stack.wait_nrt(PERIODIC, lambda o: fingerprint_of(o) == NO_PODS, "to forget pod ticked")
    assert_initial(stack, PERIODIC, obj)
    assert "terminal pods of node worker-1: 0 at start" in stack.exporters[PERIODIC].log()


def test_no_publish_waits_for_a_late_socket_then_prints_once(stack: Stack, state_dir: Path) -> None:
    late = state_dir / "late.sock"
    args = [
        "--no-publish", "--oneshot", "--podreadiness=false", "--hostname", REACTIVE,
        "--sysfs", str(stack.root(REACTIVE) / "sys"), "--podresources-socket", f"unix://{late}",
        "--kubelet-config-file", str(stack.kubelet_configs[REACTIVE]),
    ]  # fmt: skip
    command = [*program("resource-topology-exporter", "nrop.rte.main"), *args]
    proc = Process(command, state_dir / "no-publish.log", stack.env, pipe_stdout=True)
    try:
        wait_for(
            proc.log, lambda text: "does not exist (is the kubelet running?)" in text, "a missing-socket line"
        )
        late.symlink_to(podresources_socket(stack.root(REACTIVE)))  # the kubelet "starts"
        assert proc.proc.wait(timeout=TIMEOUT) == 0, proc.log()
        assert proc.proc.stdout is not None
        (line,) = proc.proc.stdout.read().splitlines()
    finally:
        proc.stop()
    obj = json.loads(line)
    assert obj["metadata"]["name"] == REACTIVE
    assert table(obj) == IDLE_ZONES
    assert "Traceback" not in proc.log()


def test_terminal_pods_watch_follows_the_api(stack: Stack, rest_client: RestClient, namespace: str) -> None:
    """The --exclude-terminal-pods watcher against the API server, on nodes no kubelet serves."""
    node, other = f"ghost-{uuid.uuid4().hex[:6]}", f"ghost-{uuid.uuid4().hex[:6]}"
    # Watches of 2 to 4 s instead of 5 to 10 min: the test crosses a re-watch from the last resourceVersion.
    watcher = TerminalPods(rest_client, node, min_watch_timeout=2.0)
    watcher.start()

    def make(name: str, on: str, phase: str | None) -> None:
        stack.core.create_namespaced_pod(namespace, pod_body(name, on))
        if phase is not None:
            pod = stack.core.read_namespaced_pod(name, namespace)
            pod.status.phase = phase
            stack.core.replace_namespaced_pod_status(name, namespace, pod)

    try:
        make("done-before", node, "Succeeded")
        assert watcher.synced.wait(TIMEOUT)
        make("running", node, "Running")
        make("pending", node, None)
        make("failed", node, "Failed")
        make("elsewhere", other, "Succeeded")
        wait_for(
            watcher.current,
            lambda pods: pods == {(namespace, "done-before"), (namespace, "failed")},
            "the terminal pods of the node",
        )
        stack.core.delete_namespaced_pod("done-before", namespace, grace_period_seconds=0)
        wait_for(
            watcher.current, lambda pods: pods == {(namespace, "failed")}, "a deleted pod to leave the set"
        )
    finally:
        watcher.stop()
        for name in ("running", "pending", "failed", "elsewhere"):
            stack.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)


def test_failed_writes_turn_node_topology_updated_false_until_they_succeed(
    stack: Stack, api_client: client.ApiClient
) -> None:
    """Last: removes the NRT API for a while (upstream's e2e does the same)."""
    ext = client.ApiextensionsV1Api(api_client)
    ext.delete_custom_resource_definition(crds.load("noderesourcetopologies")["metadata"]["name"])
    failed = ("False", "UpdateFailed", "failed to update noderesourcetopology object")
    conditions = wait_for(
        lambda: own_conditions(stack, PERIODIC),
        lambda c: c.get("NodeTopologyUpdated") == failed,
        "the periodic exporter's pod to report failed updates",
    )
    assert conditions["PodresourcesFetched"] == ("True", None, None)  # scanning still works
    install_nrt_crd(stack.kube)
    wait_for(
        lambda: own_conditions(stack, PERIODIC),
        lambda c: c.get("NodeTopologyUpdated") == ("True", None, None),
        "the condition to recover once the API is back",
    )
    obj = stack.wait_nrt(PERIODIC, lambda o: True, "to be created again")
    assert table(obj) == IDLE_ZONES
    assert stack.exporters[PERIODIC].alive() and stack.exporters[REACTIVE].alive()
