"""The emulated kubelets end to end, through public interfaces only.

A cluster on the shipped ``default`` profile (and, for devices, one on ``devices``) runs
in this process; the tests create pods with ``spec.nodeName`` through the official
client and check the outcome where a user or RTE would: pod status and events through
the API, exclusive CPUs / memory / devices through a real gRPC client on each node's
podresources socket, the node's sysfs tree and checkpoint files under
``<state dir>/nodes/<node>/``, and ``/api/v1/nodes/<n>/proxy/configz``.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from nrop.api.deviceplugin import Device
from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.localcluster.cluster import ClusterConfig, ClusterThread
from nrop.localcluster.kubelet.cm.cpumanagerstate import decode_checkpoint
from nrop.localcluster.kubelet.grpcservers import device_plugin_dir, kubelet_socket
from nrop.numacell.server import DevicePluginServer
from nrop.suite.e2e.wait import polling as waiting

WORKER = "worker-0"
TIMEOUT = 10.0
GI = 1024**3
MI = 1024**2
T = TypeVar("T")


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """This module's cluster: the shipped ``default`` profile (overrides the shared ``empty`` one)."""
    return ClusterConfig(profile="default", bookmark_interval=1.0, history_size=5000)


@pytest.fixture(scope="module")
def devices_cluster(start_cluster: Callable[[str, ClusterConfig], ClusterThread]) -> ClusterThread:
    return start_cluster("devices", ClusterConfig(profile="devices", history_size=5000))


def node_root(runner: ClusterThread, node: str) -> Path:
    return runner.cluster.state_dir / "nodes" / node


def core_api(runner: ClusterThread):  # type: ignore[no-untyped-def]
    from kubernetes import client, config

    return client.CoreV1Api(config.new_client_from_config(config_file=str(runner.cluster.kubeconfig_path)))


@pytest.fixture(scope="module")
def core(api_client):  # type: ignore[no-untyped-def]
    from kubernetes import client

    return client.CoreV1Api(api_client)


# -- helpers ------------------------------------------------------------------------------------


#: The suite's waiter with this module's default timeout.
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


def pod_body(
    name: str,
    *,
    node: str = WORKER,
    cpu: str | None = None,
    memory: str | None = None,
    requests_only: bool = False,
    extra: dict[str, str] | None = None,
    command: list[str] | None = None,
    restart_policy: str = "Always",
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    values = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    values.update(extra or {})
    if values:
        resources = {"requests": values} if requests_only else {"limits": values}
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": resources}
    if command:
        container["command"] = command
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [container], "restartPolicy": restart_policy},
    }


def phase_of(core, namespace: str, name: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return core.api_client.sanitize_for_serialization(core.read_namespaced_pod(name, namespace))


def wait_phase(core, namespace: str, name: str, phases: tuple[str, ...]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return wait_for(
        lambda: phase_of(core, namespace, name),
        lambda pod: (pod.get("status") or {}).get("phase") in phases,
        f"pod {namespace}/{name} to be {'/'.join(phases)}",
    )


def wait_gone(core, namespace: str, name: str) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client

    def exists() -> bool:
        try:
            core.read_namespaced_pod(name, namespace)
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    wait_for(exists, lambda present: not present, f"pod {namespace}/{name} to be gone")


class PodResources:
    """A real podresources v1 client on a node's socket."""

    def __init__(self, root: Path) -> None:
        self.channel = grpc.insecure_channel(f"unix://{root / 'var/lib/kubelet/pod-resources/kubelet.sock'}")
        self.stub = api_pb2_grpc.PodResourcesListerStub(self.channel)

    def pod(self, namespace: str, name: str) -> api_pb2.PodResources | None:
        response = self.stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
        return next((p for p in response.pod_resources if (p.namespace, p.name) == (namespace, name)), None)

    def allocatable(self) -> api_pb2.AllocatableResourcesResponse:
        return self.stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=5)

    def close(self) -> None:
        self.channel.close()


@pytest.fixture
def podresources(cluster_thread: ClusterThread) -> Iterator[Callable[[str], PodResources]]:
    clients: list[PodResources] = []

    def open_for(node: str) -> PodResources:
        clients.append(PodResources(node_root(cluster_thread, node)))
        return clients[-1]

    yield open_for
    for one in clients:
        one.close()


def parse_cpulist(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def numa_cpus(root: Path) -> dict[int, set[int]]:
    """NUMA node -> CPUs, read from the node's sysfs tree."""
    base = root / "sys/devices/system/node"
    nodes = parse_cpulist((base / "online").read_text())
    return {n: parse_cpulist((base / f"node{n}" / "cpulist").read_text()) for n in nodes}


def zone_of(cpus: set[int], zones: dict[int, set[int]]) -> int:
    (zone,) = [n for n, members in zones.items() if cpus <= members]
    return zone


# -- nodes --------------------------------------------------------------------------------------


def test_nodes_register_ready_with_capacity_labels_taints_and_leases(core) -> None:  # type: ignore[no-untyped-def]
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert sorted(nodes) == ["control-plane", "worker-0", "worker-1"]
    for node in nodes.values():
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert [(c.status, c.reason) for c in ready] == [("True", "KubeletReady")], node.metadata.name
        assert node.metadata.labels["kubernetes.io/hostname"] == node.metadata.name
        assert node.metadata.labels["kubernetes.io/os"] == "linux"
        internal = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        assert len(internal) == 1 and internal[0].startswith("127."), node.status.addresses
        assert node.status.node_info.kubelet_version.startswith("v1.")
    control = nodes["control-plane"]
    assert "node-role.kubernetes.io/control-plane" in control.metadata.labels
    assert [(t.key, t.effect) for t in control.spec.taints] == [
        ("node-role.kubernetes.io/control-plane", "NoSchedule")
    ]
    worker = nodes[WORKER]
    assert "node-role.kubernetes.io/worker" in worker.metadata.labels and not worker.spec.taints
    capacity, allocatable = worker.status.capacity, worker.status.allocatable
    # 2 x 11 cores x 2 threads; 2 x 40Gi with 512 x 2Mi and 2 x 1Gi pages per NUMA node.
    assert {k: capacity[k] for k in ("cpu", "memory", "hugepages-2Mi", "hugepages-1Gi", "pods")} == {
        "cpu": "44",
        "memory": "80Gi",
        "hugepages-2Mi": "2Gi",
        "hugepages-1Gi": "4Gi",
        "pods": "110",
    }
    # reservedSystemCPUs 0,22; memory: 500Mi + 500Mi + 100Mi eviction, and every hugepage off.
    assert {k: allocatable[k] for k in ("cpu", "memory", "hugepages-2Mi", "hugepages-1Gi")} == {
        "cpu": "42",
        "memory": f"{80 * 1024 - 1100 - 6 * 1024}Mi",
        "hugepages-2Mi": "2Gi",
        "hugepages-1Gi": "4Gi",
    }
    from kubernetes import client

    leases = client.CoordinationV1Api(core.api_client).list_namespaced_lease("kube-node-lease").items
    assert {(lease.metadata.name, lease.spec.holder_identity) for lease in leases} == {
        (name, name) for name in nodes
    }


def test_configz_through_the_api_server_proxy(kubectl) -> None:  # type: ignore[no-untyped-def]
    result = kubectl("get", "--raw", f"/api/v1/nodes/{WORKER}/proxy/configz")
    config = json.loads(result.stdout)["kubeletconfig"]
    assert config["cpuManagerPolicy"] == "static"
    assert config["cpuManagerPolicyOptions"] == {}
    assert config["reservedSystemCPUs"] == "0,22"
    assert config["topologyManagerPolicy"] == "single-numa-node"
    assert config["topologyManagerScope"] == "pod"
    assert config["memoryManagerPolicy"] == "Static"
    assert config["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1100Mi"}}]
    missing = kubectl("get", "--raw", "/api/v1/nodes/nosuch/proxy/configz", check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr


def test_sysfs_matches_the_node_capacity(cluster_thread: ClusterThread) -> None:
    zones = numa_cpus(node_root(cluster_thread, WORKER))
    assert zones == {0: set(range(0, 11)) | set(range(22, 33)), 1: set(range(11, 22)) | set(range(33, 44))}


# -- pods ---------------------------------------------------------------------------------------


def test_guaranteed_pod_gets_exclusive_cpus_and_memory_from_one_numa_zone(
    core,
    namespace: str,
    podresources,
    cluster_thread: ClusterThread,  # type: ignore[no-untyped-def]
) -> None:
    core.create_namespaced_pod(
        namespace, pod_body("gu", cpu="4", memory="1Gi", extra={"hugepages-2Mi": "64Mi"})
    )
    pod = wait_phase(core, namespace, "gu", ("Running", "Failed"))
    status = pod["status"]
    assert status["phase"] == "Running", status
    assert status["podIP"].startswith("127.") and status["hostIP"].startswith("127.")
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
        "PodReadyToStartContainers": "True",
    }
    (container,) = status["containerStatuses"]
    assert container["ready"] and container["started"] and container["restartCount"] == 0
    assert container["containerID"] and container["imageID"] and "running" in container["state"]

    resources = podresources(WORKER).pod(namespace, "gu")
    assert resources is not None
    (ctr,) = resources.containers
    cpus = set(ctr.cpu_ids)
    assert len(cpus) == 4
    zone = zone_of(cpus, numa_cpus(node_root(cluster_thread, WORKER)))
    memory = {(m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in ctr.memory}
    assert memory == {("memory", GI, (zone,)), ("hugepages-2Mi", 64 * MI, (zone,))}


@pytest.mark.parametrize(
    ("cpu", "memory", "requests_only"),
    [
        pytest.param("1500m", "1Gi", False, id="guaranteed-fractional-cpu"),
        pytest.param("2", "1Gi", True, id="burstable"),
        pytest.param(None, None, False, id="best-effort"),
    ],
)
def test_shared_pool_pods_get_no_exclusive_cpus(
    core,
    namespace: str,
    podresources,
    cpu: str | None,
    memory: str | None,
    requests_only: bool,  # type: ignore[no-untyped-def]
) -> None:
    core.create_namespaced_pod(
        namespace, pod_body("shared", cpu=cpu, memory=memory, requests_only=requests_only)
    )
    assert wait_phase(core, namespace, "shared", ("Running", "Failed"))["status"]["phase"] == "Running"
    resources = podresources(WORKER).pod(namespace, "shared")
    assert resources is not None, "an active pod is listed even without exclusive resources"
    assert [list(c.cpu_ids) for c in resources.containers] == [[]]


def test_pod_fitting_only_across_zones_is_rejected_with_an_event(core, namespace: str, podresources) -> None:  # type: ignore[no-untyped-def]
    # 24 exclusive CPUs: the node has 42, but no NUMA zone has more than 22.
    core.create_namespaced_pod(namespace, pod_body("wide", cpu="24", memory="1Gi"))
    status = wait_phase(core, namespace, "wide", ("Running", "Failed"))["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "TopologyAffinityError",
        "Pod was rejected: Resources cannot be allocated with Topology locality",
    )
    assert not status.get("containerStatuses")

    def events() -> list[Any]:
        return core.list_namespaced_event(namespace, field_selector="involvedObject.name=wide").items

    (event,) = wait_for(events, lambda items: len(items) == 1, "one event for pod wide")
    assert (event.type, event.reason) == ("Warning", "TopologyAffinityError")
    assert (event.source.component, event.source.host) == ("kubelet", WORKER)
    assert event.involved_object.kind == "Pod" and event.involved_object.uid
    assert podresources(WORKER).pod(namespace, "wide") is None


def read_cpu_state(root: Path) -> Any:
    raw = (root / "var/lib/kubelet/cpu_manager_state").read_bytes()
    return json.loads(raw), decode_checkpoint(raw, "static")


def test_deleting_pods_releases_resources_and_rewrites_checkpoints(
    core,
    namespace: str,
    podresources,
    cluster_thread: ClusterThread,  # type: ignore[no-untyped-def]
) -> None:
    root = node_root(cluster_thread, "worker-1")
    client = podresources("worker-1")
    allocatable = set(client.allocatable().cpu_ids)
    assert allocatable == set(range(44)) - {0, 22}
    _, before = read_cpu_state(root)
    created = [
        core.create_namespaced_pod(namespace, pod_body(f"g{i}", node="worker-1", cpu="2", memory="512Mi"))
        for i in range(2)
    ]
    for i in range(2):
        wait_phase(core, namespace, f"g{i}", ("Running",))
    raw, state = read_cpu_state(root)
    uids = {p.metadata.uid for p in created}
    assert uids <= set(state.entries), raw
    taken = set().union(*(set(c.to_list()) for per in state.entries.values() for c in per.values()))
    assert len(taken) == 4 and not taken & set(state.default_cpuset.to_list())
    listed = {
        p.name: set(p.containers[0].cpu_ids) for p in (client.pod(namespace, f"g{i}") for i in range(2)) if p
    }
    assert set().union(*listed.values()) == taken
    memory_state = json.loads((root / "var/lib/kubelet/memory_manager_state").read_text())
    assert uids <= set(memory_state.get("entries") or {})

    for i in range(2):
        core.delete_namespaced_pod(f"g{i}", namespace)  # default grace: the kubelet finishes the deletion
    for i in range(2):
        wait_gone(core, namespace, f"g{i}")
    assert client.pod(namespace, "g0") is None and client.pod(namespace, "g1") is None
    assert set(client.allocatable().cpu_ids) == allocatable
    _, after = read_cpu_state(root)  # decode_checkpoint verified the checksum
    assert not uids & set(after.entries)
    assert after.default_cpuset == before.default_cpuset
    memory_state = json.loads((root / "var/lib/kubelet/memory_manager_state").read_text())
    assert not uids & set(memory_state.get("entries") or {})


def test_completed_pod_releases_its_cpus(core, namespace: str, podresources) -> None:  # type: ignore[no-untyped-def]
    body = pod_body("done", cpu="2", memory="256Mi", command=["sleep", "0.3"], restart_policy="Never")
    core.create_namespaced_pod(namespace, body)
    pod = wait_phase(core, namespace, "done", ("Succeeded", "Failed"))
    assert pod["status"]["phase"] == "Succeeded"
    (container,) = pod["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 0
    assert podresources(WORKER).pod(namespace, "done") is None


def test_notify_file_changes_when_containers_start(
    core, namespace: str, cluster_thread: ClusterThread
) -> None:  # type: ignore[no-untyped-def]
    notify = node_root(cluster_thread, WORKER) / "run/rte/notify"
    before = notify.stat().st_mtime_ns if notify.exists() else 0
    core.create_namespaced_pod(namespace, pod_body("n"))
    wait_phase(core, namespace, "n", ("Running",))
    assert notify.stat().st_mtime_ns > before


def test_nrop_cluster_nodes_prints_every_numa_zone(kubeconfig: Path) -> None:
    cli = Path(sys.executable).parent / "nrop-cluster"
    result = subprocess.run(
        [str(cli), "nodes", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0][:4] == ["NODE", "NUMA", "CPUS", "MEMORY"]
    assert sorted((r[0], r[1]) for r in rows[1:]) == [
        ("control-plane", "0"),
        ("worker-0", "0"),
        ("worker-0", "1"),
        ("worker-1", "0"),
        ("worker-1", "1"),
    ]
    worker_zone_1 = next(r for r in rows[1:] if r[:2] == ["worker-1", "1"])
    assert worker_zone_1[2].endswith("/22")


# -- devices --------------------------------------------------------------------------------------


def test_device_plugin_registers_and_its_devices_are_allocated_numa_aligned(
    devices_cluster: ClusterThread,
) -> None:
    from kubernetes import client

    core = core_api(devices_cluster)
    root = node_root(devices_cluster, WORKER)
    plugin = DevicePluginServer(
        "example.com/gpu",
        [Device(f"gpu{i}", True, (i // 2,)) for i in range(4)],
        device_plugin_dir(root),
    )
    plugin.start()
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    podres = PodResources(root)
    try:
        plugin.register(kubelet_socket(root))
        node = wait_for(
            lambda: core.read_node(WORKER),
            lambda n: n.status.allocatable.get("example.com/gpu") == "4",
            "example.com/gpu allocatable 4 on worker-0",
        )
        assert node.status.capacity["example.com/deviceA"] == "4"  # the profile's own devices
        allocatable = podres.allocatable()
        assert {d.device_ids[0] for d in allocatable.devices if d.resource_name == "example.com/gpu"} == {
            "gpu0",
            "gpu1",
            "gpu2",
            "gpu3",
        }

        body = pod_body(
            "dev", cpu="2", memory="1Gi", extra={"example.com/gpu": "2", "example.com/deviceA": "1"}
        )
        core.create_namespaced_pod(namespace, body)
        status = wait_phase(core, namespace, "dev", ("Running", "Failed"))["status"]
        assert status["phase"] == "Running", status

        resources = podres.pod(namespace, "dev")
        assert resources is not None
        (ctr,) = resources.containers
        zone = zone_of(set(ctr.cpu_ids), numa_cpus(root))
        devices = {
            (d.resource_name, d.device_ids[0], tuple(n.ID for n in d.topology.nodes)) for d in ctr.devices
        }
        assert {(r, nodes) for r, _, nodes in devices} == {
            ("example.com/gpu", (zone,)),
            ("example.com/deviceA", (zone,)),
        }
        gpus = sorted(i for r, i, _ in devices if r == "example.com/gpu")
        assert len(gpus) == 2
        assert [sorted(r.devices_ids) for a in plugin.allocate_requests for r in a.container_requests] == [
            gpus
        ]

        checkpoint = json.loads(
            (root / "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint").read_text()
        )
        entries = {
            (e["ResourceName"], tuple(sorted(i for ids in e["DeviceIDs"].values() for i in ids)))
            for e in checkpoint["Data"]["PodDeviceEntries"] or ()
        }
        assert ("example.com/gpu", tuple(gpus)) in entries

        plugin.stop()  # the plugin dies: its devices stay in capacity but become unallocatable
        wait_for(
            lambda: core.read_node(WORKER),
            lambda n: (
                n.status.allocatable.get("example.com/gpu") == "0"
                and n.status.capacity["example.com/gpu"] == "4"
            ),
            "example.com/gpu allocatable 0 after the plugin stopped",
        )
    finally:
        podres.close()
        plugin.stop()
        core.delete_namespace(namespace)
        core.api_client.close()


def test_graceful_deletion_writes_the_terminal_status_before_removing_the_pod(core, namespace: str) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import watch

    created = core.create_namespaced_pod(namespace, pod_body("graceful", command=["sleep", "3600"]))
    wait_phase(core, namespace, "graceful", ("Running",))
    core.delete_namespaced_pod("graceful", namespace)
    seen: list[tuple[str, str, list[Any]]] = []
    stream = watch.Watch().stream(
        core.list_namespaced_pod,
        namespace,
        field_selector="metadata.name=graceful",
        resource_version=created.metadata.resource_version,
        timeout_seconds=10,
    )
    for event in stream:
        pod = event["object"]
        states = [s.state for s in pod.status.container_statuses or ()]
        seen.append((event["type"], pod.status.phase, states))
        if event["type"] == "DELETED":
            break
    assert seen[-1][0] == "DELETED", seen
    terminal = [s for s in seen if s[0] == "MODIFIED" and s[1] in ("Succeeded", "Failed")]
    assert terminal, seen
    _, phase, states = terminal[0]
    # ``sleep`` as PID 1 ignores SIGTERM: killed, exit code 137, so the pod failed.
    assert phase == "Failed" and [s.terminated.exit_code for s in states] == [137]


def test_a_state_dir_too_long_for_node_sockets_is_refused_with_a_reason(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "nrop-cluster"
    state = tmp_path / ("x" * 80)
    result = subprocess.run(
        [str(cli), "up", "--state-dir", str(state)], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 1, result.stderr
    assert "shorter --state-dir" in result.stderr and "Traceback" not in result.stderr


# -- runtime classes ------------------------------------------------------------------------------


def test_nodes_report_runtime_handlers(core) -> None:  # type: ignore[no-untyped-def]
    node = core.api_client.sanitize_for_serialization(core.read_node(WORKER))
    assert [h["name"] for h in node["status"]["runtimeHandlers"]] == ["runc", "crun"]


def test_runtime_class_overhead_is_set_by_admission_and_counted_by_the_node(core, namespace: str) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client

    node_api = client.NodeV1Api(core.api_client)
    name = f"crun-{namespace}"
    node_api.create_runtime_class(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": "crun",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        }
    )
    try:
        body = pod_body("rc", cpu="1", memory="256Mi")
        body["spec"]["runtimeClassName"] = name
        created = core.create_namespaced_pod(namespace, body)
        assert created.spec.overhead == {"cpu": "250m", "memory": "64Mi"}
        assert wait_phase(core, namespace, "rc", ("Running", "Failed"))["status"]["phase"] == "Running"
        mismatched = pod_body("rc-bad")
        mismatched["spec"].update(runtimeClassName=name, overhead={"cpu": "1"})
        with pytest.raises(client.ApiException) as refused:
            core.create_namespaced_pod(namespace, mismatched)
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"] == (
            'pods "rc-bad" is forbidden: pod rejected: '
            "Pod's Overhead doesn't match RuntimeClass's defined Overhead"
        )
    finally:
        node_api.delete_runtime_class(name)


def test_unknown_runtime_class_is_refused_and_unknown_handler_fails_the_sandbox(core, namespace: str) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client

    body = pod_body("norc")
    body["spec"]["runtimeClassName"] = "nosuch"
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod(namespace, body)
    assert refused.value.status == 403
    assert json.loads(refused.value.body)["message"] == (
        'pods "norc" is forbidden: pod rejected: RuntimeClass "nosuch" not found'
    )
    node_api = client.NodeV1Api(core.api_client)
    name = f"kata-{namespace}"
    node_api.create_runtime_class(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": "kata",
        }
    )
    try:
        body = pod_body("kata")
        body["spec"]["runtimeClassName"] = name
        core.create_namespaced_pod(namespace, body)

        def events() -> list[Any]:
            return core.list_namespaced_event(namespace, field_selector="involvedObject.name=kata").items

        (event,) = wait_for(events, lambda items: len(items) == 1, "a FailedCreatePodSandBox event")
        assert (event.type, event.reason) == ("Warning", "FailedCreatePodSandBox")
        assert event.message == (
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox "
            'runtime: no runtime for "kata" is configured'
        )
        assert phase_of(core, namespace, "kata")["status"]["phase"] == "Pending"
    finally:
        node_api.delete_runtime_class(name)


# -- events -----------------------------------------------------------------------------------------


def event_list(core, namespace: str, name: str) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    items = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    items.sort(key=lambda e: int(e.metadata.resource_version))
    return [(e.reason, e.message, e.involved_object.field_path or "") for e in items]


def test_kubelet_records_container_events_in_upstream_order(core, namespace: str) -> None:  # type: ignore[no-untyped-def]
    body = pod_body("ev")
    body["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    always = {"name": "always", "image": "registry.example/app:latest"}  # :latest pulls Always
    body["spec"]["containers"].append(always)
    core.create_namespaced_pod(namespace, body)
    wait_phase(core, namespace, "ev", ("Running",))

    # upstream's kubelet events, without the embedded kubelet's own note that an image is simulated
    def kubelet_events() -> list:  # type: ignore[type-arg]
        return [event for event in event_list(core, namespace, "ev") if event[0] != "SimulatedImage"]

    started = wait_for(kubelet_events, lambda e: len(e) >= 7, "seven events for pod ev")
    simulated = [event[2] for event in event_list(core, namespace, "ev") if event[0] == "SimulatedImage"]
    assert sorted(simulated) == ["spec.containers{always}", "spec.containers{c}"]
    assert started == [
        ("Pulled", 'Container image "busybox" already present on machine', "spec.containers{c}"),
        ("Created", "Created container: c", "spec.containers{c}"),
        ("Started", "Started container c", "spec.containers{c}"),
        ("Pulling", 'Pulling image "registry.example/app:latest"', "spec.containers{always}"),
        (
            "Pulled",
            'Successfully pulled image "registry.example/app:latest" in 0s (0s including waiting). Image size: 0 bytes.',
            "spec.containers{always}",
        ),
        ("Created", "Created container: always", "spec.containers{always}"),
        ("Started", "Started container always", "spec.containers{always}"),
    ]
    core.delete_namespaced_pod("ev", namespace)
    wait_gone(core, namespace, "ev")
    assert kubelet_events()[7:] == [
        ("Killing", "Stopping container c", "spec.containers{c}"),
        ("Killing", "Stopping container always", "spec.containers{always}"),
    ]


def test_crash_looping_container_gets_a_back_off_event(core, namespace: str) -> None:  # type: ignore[no-untyped-def]
    core.create_namespaced_pod(namespace, pod_body("crash", command=["false"]))
    uid = core.read_namespaced_pod("crash", namespace).metadata.uid
    events = wait_for(
        lambda: event_list(core, namespace, "crash"),
        lambda e: any(reason == "BackOff" for reason, _, _ in e),
        "a BackOff event for pod crash",
    )
    # busybox (no tag) is pulled Always
    assert [reason for reason, _, _ in events[:4]] == ["Pulling", "Pulled", "Created", "Started"]
    assert (
        "BackOff",
        f"Back-off restarting failed container c in pod crash_{namespace}({uid})",
        "spec.containers{c}",
    ) in events


def test_kubelet_records_node_events_when_it_starts(core) -> None:  # type: ignore[no-untyped-def]
    events = event_list(core, "default", WORKER)
    assert [reason for reason, _, _ in events][:6] == [
        "Starting",
        "NodeHasSufficientMemory",
        "NodeHasNoDiskPressure",
        "NodeHasSufficientPID",
        "NodeAllocatableEnforced",
        "NodeReady",
    ]
    assert events[5][1] == f"Node {WORKER} status is now: NodeReady"


def test_simulated_echo_output_is_the_container_log(core, namespace: str) -> None:  # type: ignore[no-untyped-def]
    body = pod_body("hello", command=["sh", "-c", "echo hello world; exit 3"], restart_policy="OnFailure")
    core.create_namespaced_pod(namespace, body)
    wait_for(
        lambda: core.read_namespaced_pod("hello", namespace).status.container_statuses or [],
        lambda statuses: bool(statuses) and statuses[0].restart_count >= 1,
        "pod hello to restart once",
    )
    assert core.read_namespaced_pod_log("hello", namespace) == "hello world\n"
    assert core.read_namespaced_pod_log("hello", namespace, previous=True) == "hello world\n"


def test_node_controller_records_registered_node(core) -> None:  # type: ignore[no-untyped-def]
    events = wait_for(
        lambda: event_list(core, "default", WORKER),
        lambda e: any(reason == "RegisteredNode" for reason, _, _ in e),
        "a RegisteredNode event",
    )
    assert ("RegisteredNode", f"Node {WORKER} event: Registered Node {WORKER} in Controller", "") in events
