"""resource-topology-exporter, as a real process, against the embedded API server and a podresources server.

Each test runs ``resource-topology-exporter`` as a subprocess on a node root written by
the sysfs writer, with the kubelet's podresources v1 API served on a unix socket by a
scripted provider (what an emulated or real kubelet would report), and checks the NRT
object through the official client: zones and available amounts, reactive refresh on
the notify file, periodic refresh, the fingerprint following exactly the set of
exclusive pods, survival of the socket disappearing and coming back, ``--no-publish``.

(The embedded kubelets are not used yet: the provider stands in for them.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from nrop.api import crds, fingerprint
from nrop.api.nrt import GROUP, PLURAL, VERSION, NodeResourceTopology
from nrop.localcluster.kubelet.grpcservers.podresources import (
    AllocatableResources,
    ContainerDevice,
    ContainerMemory,
    ContainerResources,
    PodResources,
    PodResourcesServer,
)
from nrop.localcluster.kubelet.machine import Machine
from nrop.localcluster.kubelet.sysfs import sysfs_path, write_sysfs
from nrop.localcluster.profiles import load_profile
from nrop.suite.waiting import wait_for

pytestmark = pytest.mark.slow

GiB = 1024**3
MiB = 1024**2
DEVICE = "example.com/numacell"
RESERVED = (0, 16)  # one core of NUMA node 0
TIMEOUT = 20.0


def _exporter_command() -> list[str]:
    script = Path(sys.executable).with_name("resource-topology-exporter")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nrop.rte.main"]


# ----------------------------------------------------------------------------- the scripted kubelet


@dataclass
class ScriptedKubelet:
    """A ``PodResourcesProvider`` whose pods the test edits (static CPU + memory managers)."""

    machine: Machine
    pods: dict[tuple[str, str], PodResources] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def allocatable(self) -> AllocatableResources:
        cpus = tuple(c for c in self.machine.topology.details if c not in RESERVED)
        memory = []
        devices = []
        for node in self.machine.numa_nodes:
            reserved = GiB if node.id == 0 else 0
            memory.append(ContainerMemory("memory", node.memory_bytes - reserved, (node.id,)))
            for size, count in sorted(node.hugepages.items()):
                name = "hugepages-2Mi" if size == 2 * MiB else "hugepages-1Gi"
                memory.append(ContainerMemory(name, size * count, (node.id,)))
            devices += [ContainerDevice(DEVICE, (f"cell-{node.id}-{i}",), (node.id,)) for i in range(4)]
        devices += [ContainerDevice("example.com/anywhere", (f"any-{i}",)) for i in range(2)]  # no topology
        return AllocatableResources(cpu_ids=cpus, devices=tuple(devices), memory=tuple(memory))

    def list_pods(self) -> list[PodResources]:
        with self.lock:
            return list(self.pods.values())

    def get_pod(self, namespace: str, name: str) -> PodResources | None:
        with self.lock:
            return self.pods.get((namespace, name))

    def add(self, pod: PodResources) -> None:
        with self.lock:
            self.pods[(pod.namespace, pod.name)] = pod

    def remove(self, namespace: str, name: str) -> None:
        with self.lock:
            self.pods.pop((namespace, name), None)


def exclusive_pod(name: str, namespace: str = "e2e") -> PodResources:
    """A guaranteed pod on NUMA node 0: 2 exclusive CPUs, 1 device, 1 GiB memory, 512 Mi of 2Mi pages."""
    return PodResources(
        name,
        namespace,
        (
            ContainerResources(
                "app",
                cpu_ids=(2, 18),
                devices=(ContainerDevice(DEVICE, ("cell-0-1",), (0,)),),
                memory=(
                    ContainerMemory("memory", GiB, (0,)),
                    ContainerMemory("hugepages-2Mi", 512 * MiB, (0,)),
                ),
            ),
        ),
    )


def shared_pod(name: str, namespace: str = "e2e") -> PodResources:
    """A burstable pod: the kubelet reports no exclusive resources for it."""
    return PodResources(name, namespace, (ContainerResources("app"),))


INITIAL_NODE0 = {
    "cpu": ("16", "14", "14"),
    DEVICE: ("4", "4", "4"),
    "hugepages-1Gi": ("2147483648", "2147483648", "2147483648"),
    "hugepages-2Mi": ("1073741824", "1073741824", "1073741824"),
    "memory": ("17179869184", "16106127360", "16106127360"),
}
INITIAL_NODE1 = {
    "cpu": ("16", "16", "16"),
    DEVICE: ("4", "4", "4"),
    "hugepages-1Gi": ("2147483648", "2147483648", "2147483648"),
    "hugepages-2Mi": ("1073741824", "1073741824", "1073741824"),
    "memory": ("17179869184", "17179869184", "17179869184"),
}
WITH_EXCLUSIVE_NODE0 = {
    "cpu": ("16", "14", "12"),
    DEVICE: ("4", "4", "3"),
    "hugepages-1Gi": ("2147483648", "2147483648", "2147483648"),
    "hugepages-2Mi": ("1073741824", "1073741824", "536870912"),
    "memory": ("17179869184", "16106127360", "15032385536"),
}


def table(obj: dict[str, Any]) -> dict[str, dict[str, tuple[str, str, str]]]:
    nrt = NodeResourceTopology.from_dict(obj)
    return {
        z.name: {r.name: (str(r.capacity), str(r.allocatable), str(r.available)) for r in z.resources}
        for z in nrt.zones
    }


# ----------------------------------------------------------------------------- the exporter process


class ExporterProcess:
    """One ``resource-topology-exporter`` subprocess; its log goes to a file the test reads."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [*_exporter_command(), *args], stdout=subprocess.PIPE, stderr=self._log, text=True
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def cycles(self) -> int:
        """Completed scan+write cycles so far."""
        return len(re.findall(r"cycle \d+ \(\w+\): (?:published|printed)", self.log()))

    def wait_cycles(self, count: int, timeout: float = TIMEOUT) -> None:
        wait_for(self.cycles, lambda n: n >= count, f"{count} completed exporter cycles", timeout)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def custom(api_client: client.ApiClient) -> Iterator[client.CustomObjectsApi]:
    ext = client.ApiextensionsV1Api(api_client)
    crd = crds.load("noderesourcetopologies")
    ext.create_custom_resource_definition(crd)
    wait_for(
        lambda: ext.read_custom_resource_definition(crd["metadata"]["name"]).status.conditions or [],
        lambda conds: any(c.type == "Established" and c.status == "True" for c in conds),
        "the NodeResourceTopology CRD to be Established",
    )
    yield client.CustomObjectsApi(api_client)
    ext.delete_custom_resource_definition(crd["metadata"]["name"])


@dataclass
class Node:
    name: str
    uid: str
    root: Path
    kubelet: ScriptedKubelet
    server: PodResourcesServer

    @property
    def sysfs(self) -> Path:
        return sysfs_path(self.root)

    @property
    def socket(self) -> Path:
        return self.root / "kubelet.sock"

    @property
    def notify(self) -> Path:
        return self.root / "run/rte/notify"


@pytest.fixture
def node(api_client: client.ApiClient, custom: client.CustomObjectsApi) -> Iterator[Node]:
    """A Node object, its root (sysfs tree), and a podresources server (not started)."""
    name = f"rte-e2e-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api_client)
    created = core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    root = Path(tempfile.mkdtemp(prefix="rte-", dir="/tmp"))  # unix socket paths must be short
    machine = load_profile("default").nodes()[1].machine
    write_sysfs(root, machine)
    kubelet = ScriptedKubelet(machine)
    server = PodResourcesServer(kubelet, root / "kubelet.sock", rate_limit=None)
    yield Node(name, created.metadata.uid, root, kubelet, server)
    server.stop()
    for delete in (
        lambda: custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name),
        lambda: core.delete_node(name),
    ):
        try:
            delete()
        except client.ApiException as exc:
            if exc.status != 404:
                raise
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def run_exporter(kubeconfig: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[ExporterProcess] = []

    def start(node: Node, *extra: str, notify: bool = True) -> ExporterProcess:
        args = [
            "--kubeconfig",
            str(kubeconfig),
            "--hostname",
            node.name,
            "--sysfs",
            str(node.sysfs),
            "--podresources-socket",
            f"unix://{node.socket}",
            "--topology-manager-policy",
            "single-numa-node",
            "--topology-manager-scope",
            "container",
            "--max-events-per-second",
            "20",
            *(["--notify-file", str(node.notify)] if notify else []),
            *extra,
        ]
        proc = ExporterProcess(args, tmp_path / f"exporter-{len(started)}.log")
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


def get_nrt(custom: client.CustomObjectsApi, name: str) -> dict[str, Any] | None:
    try:
        return custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def wait_nrt(custom: client.CustomObjectsApi, name: str, predicate, description: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return wait_for(
        lambda: get_nrt(custom, name),
        lambda o: o is not None and predicate(o),
        f"NRT {name} {description}",
        TIMEOUT,
    )


def fingerprint_of(obj: dict[str, Any]) -> str | None:
    return NodeResourceTopology.from_dict(obj).pods_fingerprint


def annotation(obj: dict[str, Any], key: str) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(key)


def touch(path: Path) -> None:
    """What the OCI hook's ``touch`` does to an existing file: one timestamp update."""
    os.utime(path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ----------------------------------------------------------------------------- tests


def test_initial_nrt_describes_the_node(node: Node, custom: client.CustomObjectsApi, run_exporter) -> None:  # type: ignore[no-untyped-def]
    node.server.start()
    port = free_port()
    exporter = run_exporter(node, "--sleep-interval", "1h", "--metrics-mode", "http", "--metrics-ip", "127.0.0.1",
                            "--metrics-port", str(port))  # fmt: skip
    obj = wait_nrt(custom, node.name, lambda o: True, "to exist")
    assert table(obj) == {"node-0": INITIAL_NODE0, "node-1": INITIAL_NODE1}
    nrt = NodeResourceTopology.from_dict(obj)
    assert [(z.name, z.type, [(c.name, c.value) for c in z.costs]) for z in nrt.zones] == [
        ("node-0", "Node", [("node-0", 10), ("node-1", 21)]),
        ("node-1", "Node", [("node-0", 21), ("node-1", 10)]),
    ]
    empty = fingerprint.compute([])
    assert [(a.name, a.value) for a in nrt.attributes] == [
        ("nodeTopologyPodsFingerprint", empty),
        ("nodeTopologyPodsFingerprintMethod", "with-exclusive-resources"),
        ("topologyManagerScope", "container"),
        ("topologyManagerPolicy", "single-numa-node"),
    ]
    assert annotation(obj, "topology.node.k8s.io/fingerprint") == empty
    assert annotation(obj, "k8stopoawareschedwg/rte-update") == "reactive"  # the initial scan
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid}
    ]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    assert (
        f'rte_noderesourcetopology_writes_total{{node="{node.name}",operation="create",trigger="reactive"}} 1.0'
        in metrics
    )
    assert "rte_operation_delay_milliseconds" in metrics
    assert exporter.alive()


def test_reactive_refresh_follows_exclusive_allocations(  # type: ignore[no-untyped-def]
    node: Node, custom: client.CustomObjectsApi, run_exporter
) -> None:
    node.server.start()
    exporter = run_exporter(node, "--sleep-interval", "1h")  # only the notify file can trigger a scan
    initial = wait_nrt(custom, node.name, lambda o: True, "to exist")
    initial_fp = fingerprint_of(initial)
    exporter.wait_cycles(1)  # with a 1h interval, every further cycle is one touch of the notify file

    # A guaranteed pod with exclusive CPUs, a device, memory and hugepages on NUMA node 0.
    node.kubelet.add(exclusive_pod("guaranteed"))
    touch(node.notify)
    obj = wait_nrt(custom, node.name, lambda o: table(o)["node-0"] == WITH_EXCLUSIVE_NODE0, "to show the pod")
    assert table(obj)["node-1"] == INITIAL_NODE1
    assert annotation(obj, "k8stopoawareschedwg/rte-update") == "reactive"
    with_pod_fp = fingerprint.compute([("e2e", "guaranteed")])
    assert fingerprint_of(obj) == with_pod_fp != initial_fp
    exporter.wait_cycles(2)

    # A shared-pool pod changes neither the zones nor the fingerprint.
    node.kubelet.add(shared_pod("burstable"))
    touch(node.notify)
    exporter.wait_cycles(3)
    obj = get_nrt(custom, node.name)
    assert obj is not None
    assert table(obj)["node-0"] == WITH_EXCLUSIVE_NODE0
    assert fingerprint_of(obj) == with_pod_fp

    # Removing the exclusive pod restores the initial object (and fingerprint).
    node.kubelet.remove("e2e", "guaranteed")
    touch(node.notify)
    obj = wait_nrt(
        custom, node.name, lambda o: table(o)["node-0"] == INITIAL_NODE0, "to be back to its start"
    )
    assert fingerprint_of(obj) == initial_fp
    exporter.wait_cycles(4)
    assert exporter.cycles() == 4
    assert exporter.alive()


def test_periodic_refresh(node: Node, custom: client.CustomObjectsApi, run_exporter) -> None:  # type: ignore[no-untyped-def]
    node.server.start()
    run_exporter(node, "--sleep-interval", "500ms", notify=False)
    wait_nrt(custom, node.name, lambda o: True, "to exist")
    node.kubelet.add(exclusive_pod("ticked"))
    obj = wait_nrt(custom, node.name, lambda o: table(o)["node-0"] == WITH_EXCLUSIVE_NODE0, "to show the pod")
    assert annotation(obj, "k8stopoawareschedwg/rte-update") == "periodic"
    assert fingerprint_of(obj) == fingerprint.compute([("e2e", "ticked")])


def test_all_pods_fingerprint_method(node: Node, custom: client.CustomObjectsApi, run_exporter) -> None:  # type: ignore[no-untyped-def]
    node.kubelet.add(shared_pod("burstable"))
    node.kubelet.add(exclusive_pod("guaranteed"))
    node.server.start()
    run_exporter(node, "--sleep-interval", "1h", "--pods-fingerprint-method", "all")
    obj = wait_nrt(custom, node.name, lambda o: True, "to exist")
    assert fingerprint_of(obj) == fingerprint.compute([("e2e", "burstable"), ("e2e", "guaranteed")])
    assert NodeResourceTopology.from_dict(obj).pods_fingerprint_method == "all"


def test_survives_a_late_and_a_vanishing_socket(  # type: ignore[no-untyped-def]
    node: Node, custom: client.CustomObjectsApi, run_exporter
) -> None:
    # Late: the exporter starts before the kubelet serves the socket.
    exporter = run_exporter(node, "--sleep-interval", "1s")
    wait_for(
        exporter.log,
        lambda text: "does not exist (is the kubelet running?)" in text,
        "a missing-socket log line",
    )
    assert get_nrt(custom, node.name) is None
    node.server.start()
    wait_nrt(
        custom, node.name, lambda o: table(o)["node-0"] == INITIAL_NODE0, "to appear once the socket does"
    )

    # Vanishing: the kubelet stops (its socket goes away), the node changes meanwhile, the kubelet comes back.
    node.server.stop()
    assert not node.socket.exists()
    failures = exporter.log().count("socket")
    touch(node.notify)
    wait_for(
        lambda: exporter.log().count("socket"),
        lambda n: n > failures,
        "the exporter to notice the socket is gone",
    )
    assert exporter.alive()
    node.kubelet.add(exclusive_pod("while-down"))
    restarted = PodResourcesServer(node.kubelet, node.socket, rate_limit=None)
    node.server = restarted
    restarted.start()
    touch(node.notify)
    obj = wait_nrt(
        custom, node.name, lambda o: table(o)["node-0"] == WITH_EXCLUSIVE_NODE0, "to follow the new kubelet"
    )
    assert fingerprint_of(obj) == fingerprint.compute([("e2e", "while-down")])
    assert exporter.alive()
    assert "Traceback" not in exporter.log()


def test_no_publish_prints_the_object(node: Node, custom: client.CustomObjectsApi, run_exporter) -> None:  # type: ignore[no-untyped-def]
    node.server.start()
    exporter = run_exporter(node, "--no-publish", "--oneshot")
    assert exporter.proc.wait(timeout=TIMEOUT) == 0
    assert exporter.proc.stdout is not None
    lines = exporter.proc.stdout.read().splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["metadata"]["name"] == node.name
    assert table(obj) == {"node-0": INITIAL_NODE0, "node-1": INITIAL_NODE1}
    assert get_nrt(custom, node.name) is None
