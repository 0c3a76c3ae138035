"""Golden tests of what the emulated kubelet shows: API objects, podresources snapshots, ``nrop-cluster nodes``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.api.podresources import ContainerDevices, ContainerMemory
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.decisions import nodeobjects
from nrop.localcluster.kubelet.decisions.admission import (
    Allocatable,
    ContainerAllocation,
    ContainerKind,
    DeviceAllocation,
    MemoryAllocation,
    PodAllocation,
    ZoneSummary,
)
from nrop.localcluster.kubelet.decisions.nodenetwork import NodeNetwork
from nrop.localcluster.kubelet.resourceviews import ResourceViews, snapshot
from nrop.localcluster.nodereport import format_reports, human_bytes
from nrop.localcluster.profiles import load_profile

NOW = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
GI = 1024**3
MI = 1024**2


def default_nodes() -> dict:
    return {spec.name: spec for spec in load_profile("default").nodes()}


def test_node_object_of_the_control_plane() -> None:
    spec = default_nodes()["control-plane"]
    node = nodeobjects.node_object(
        spec,
        address="127.0.1.1",
        pod_cidr="127.16.0.0/16",
        capacity={"cpu": "4"},
        allocatable={"cpu": "4"},
        now=NOW,
    )
    assert node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] == ""
    assert node["spec"] == {
        "podCIDR": "127.16.0.0/16",
        "podCIDRs": ["127.16.0.0/16"],
        "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
    }
    status = node["status"]
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("MemoryPressure", "False"),
        ("DiskPressure", "False"),
        ("PIDPressure", "False"),
        ("Ready", "True"),
    ]
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "127.0.1.1"},
        {"type": "Hostname", "address": "control-plane"},
    ]
    assert status["nodeInfo"]["kubeletVersion"] == nodeobjects.KUBELET_VERSION
    assert (status["nodeInfo"]["operatingSystem"], status["nodeInfo"]["architecture"]) == ("linux", "amd64")


def test_lease_and_rejection_event() -> None:
    lease = nodeobjects.lease_object("worker-0", "uid-1", NOW)
    assert lease["metadata"]["namespace"] == "kube-node-lease"
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "worker-0", "uid": "uid-1"}
    ]
    assert lease["spec"] == {
        "holderIdentity": "worker-0",
        "leaseDurationSeconds": 40,
        "renewTime": "2030-01-02T03:04:05.678901Z",
    }
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7"}}
    event = nodeobjects.rejection_event(pod, "TopologyAffinityError", "msg", "worker-0", NOW, unique="abc")
    assert event["metadata"] == {"name": "p.abc", "namespace": "ns"}
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "p",
        "uid": "u",
        "resourceVersion": "7",
    }
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "TopologyAffinityError", "msg")
    assert event["source"] == {"component": "kubelet", "host": "worker-0"}


def test_configz_uses_upstream_field_names() -> None:
    config = nodeobjects.configz(default_nodes()["worker-0"])["kubeletconfig"]
    assert {
        k: config[k]
        for k in (
            "cpuManagerPolicy",
            "reservedSystemCPUs",
            "memoryManagerPolicy",
            "reservedMemory",
            "topologyManagerPolicy",
            "topologyManagerScope",
            "systemReserved",
            "kubeReserved",
            "evictionHard",
        )
    } == {
        "cpuManagerPolicy": "static",
        "reservedSystemCPUs": "0,22",
        "memoryManagerPolicy": "Static",
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1100Mi"}}],
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
        "systemReserved": {"memory": "500Mi"},
        "kubeReserved": {"memory": "500Mi"},
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
    }
    assert "reservedSystemCPUs" not in nodeobjects.configz(default_nodes()["control-plane"])["kubeletconfig"]


@pytest.mark.parametrize(
    ("index", "address", "first_pod_ip", "cidr"),
    [(0, "127.0.1.1", "127.16.0.2", "127.16.0.0/16"), (2, "127.0.1.3", "127.18.0.2", "127.18.0.0/16")],
)
def test_node_network(index: int, address: str, first_pod_ip: str, cidr: str) -> None:
    network = NodeNetwork.for_index(index)
    assert (network.address, network.pod_ip(1), network.pod_cidr) == (address, first_pod_ip, cidr)
    assert network.pod_ip(254) == f"127.{16 + index}.1.1"


def test_snapshot_lists_sidecars_then_apps_and_expands_devices_per_numa_node() -> None:
    allocation = PodAllocation(
        "uid",
        "p",
        "ns",
        (
            ContainerAllocation("init", ContainerKind.INIT, CPUSet.of(1, 17)),
            ContainerAllocation(
                "app",
                ContainerKind.APP,
                CPUSet.of(3, 2),
                (MemoryAllocation("memory", GI, (0,)),),
                (DeviceAllocation("x.io/d", "d1", 0), DeviceAllocation("x.io/n", "n1", None)),
            ),
            ContainerAllocation("side", ContainerKind.SIDECAR, CPUSet()),
        ),
    )
    views = ResourceViews()
    views.current = snapshot(
        [allocation],
        Allocatable(CPUSet.of(1, 2, 3), (MemoryAllocation("memory", 2 * GI, (0,)),), ()),
    )
    (pod,) = views.list_pods()
    assert [c.name for c in pod.containers] == ["side", "app"]
    app = pod.containers[1]
    assert app.cpu_ids == (2, 3)
    assert app.memory == (ContainerMemory("memory", GI, (0,)),)
    assert app.devices == (
        ContainerDevices("x.io/d", ("d1",), (0,)),
        ContainerDevices("x.io/n", ("n1",), None),
    )
    assert views.get_pod("ns", "p") == pod and views.get_pod("ns", "q") is None
    assert views.allocatable().cpu_ids == (1, 2, 3)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (GI, "1Gi"), (100 * MI, "100Mi"), (12805210112, "11.9Gi"), (1536, "1.5Ki"), (12, "12")],
)
def test_human_bytes(value: int, text: str) -> None:
    assert human_bytes(value) == text


def test_format_reports() -> None:
    zone = ZoneSummary(
        numa=0,
        cpus_allocatable=14,
        cpus_allocated=4,
        memory_allocatable=12805210112,
        memory_allocated=GI,
        hugepages_allocatable={"hugepages-1Gi": 2 * GI, "hugepages-2Mi": GI},
        hugepages_allocated={"hugepages-1Gi": 0, "hugepages-2Mi": 100 * MI},
        devices_allocatable={"example.com/deviceA": 2},
        devices_allocated={"example.com/deviceA": 1},
    )
    reports = [nodeobjects.numa_report("worker-0", [zone]), {"node": "real-node"}]
    assert format_reports(reports) == (
        "NODE        NUMA   CPUS   MEMORY       HUGEPAGES-2Mi   HUGEPAGES-1Gi   DEVICES\n"
        "worker-0    0      4/14   1Gi/11.9Gi   100Mi/1Gi       0/2Gi           example.com/deviceA 1/2\n"
        "real-node   -      -      -            -               -               -\n"
    )
