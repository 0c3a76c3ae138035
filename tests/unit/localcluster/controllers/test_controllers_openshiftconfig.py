"""The cluster type the embedded cluster states in Infrastructure/cluster and Scheduler/cluster:
upstream's getClusterType reads compact, mno-masters-schedulable or mno from them."""

from __future__ import annotations

import pytest

from nrop.localcluster.controllers import openshiftconfig as oc
from nrop.localcluster.kubelet.machine import NodeSpec, Taint
from nrop.localcluster.profiles import load_profile

MASTER_LABELS = {"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}


def _node(
    name: str, *, control_plane: bool = False, labels: dict[str, str] | None = None, taint: str = ""
) -> NodeSpec:
    taints = (Taint("node-role.kubernetes.io/control-plane", taint),) if taint else ()
    return NodeSpec(name, None, None, labels=labels or {}, taints=taints, control_plane=control_plane)  # type: ignore[arg-type]


def _cluster_type(nodes: list[NodeSpec]) -> str:
    """Upstream's ``getClusterType`` over the two objects (configuration.go)."""
    infra = oc.infrastructure(nodes, "https://127.0.0.1:6443")
    sched = oc.scheduler(nodes)
    if infra["status"]["controlPlaneTopology"] == oc.HIGHLY_AVAILABLE and sched["spec"]["mastersSchedulable"]:
        return "compact" if len(nodes) == 3 else "mno-masters-schedulable"
    return "mno"


@pytest.mark.parametrize(
    ("nodes", "control_plane", "infrastructure", "schedulable"),
    [
        ([], oc.HIGHLY_AVAILABLE, oc.SINGLE_REPLICA, False),
        (
            [_node("cp", control_plane=True, taint="NoSchedule"), _node("w0"), _node("w1")],
            oc.SINGLE_REPLICA,
            oc.HIGHLY_AVAILABLE,
            False,
        ),
        (
            [_node(f"m{i}", control_plane=True, labels=MASTER_LABELS) for i in range(3)],
            oc.HIGHLY_AVAILABLE,
            oc.HIGHLY_AVAILABLE,
            True,
        ),
        (
            [_node("sno", control_plane=True, labels=MASTER_LABELS)],
            oc.SINGLE_REPLICA,
            oc.SINGLE_REPLICA,
            True,
        ),
        # a worker role with a NoSchedule taint left on is not schedulable
        (
            [_node(f"m{i}", control_plane=True, labels=MASTER_LABELS, taint="NoSchedule") for i in range(3)],
            oc.HIGHLY_AVAILABLE,
            oc.HIGHLY_AVAILABLE,
            False,
        ),
        # one untainted master without the worker role is enough to say no
        (
            [
                _node("m0", control_plane=True, labels=MASTER_LABELS),
                _node("m1", control_plane=True),
                _node("m2", control_plane=True, labels=MASTER_LABELS),
            ],
            oc.HIGHLY_AVAILABLE,
            oc.HIGHLY_AVAILABLE,
            False,
        ),
        ([_node("cp", control_plane=True), _node("w0")], oc.SINGLE_REPLICA, oc.SINGLE_REPLICA, False),
    ],
)
def test_topologies_and_masters_schedulable(
    nodes: list[NodeSpec], control_plane: str, infrastructure: str, schedulable: bool
) -> None:
    assert oc.control_plane_topology(nodes) == control_plane
    assert oc.infrastructure_topology(nodes) == infrastructure
    assert oc.masters_schedulable(nodes) is schedulable


@pytest.mark.parametrize(
    ("profile", "cluster_type"),
    [
        ("default", "mno"),
        ("mno", "mno"),
        ("container-scope", "mno"),
        ("compact", "compact"),
        ("mno-masters-schedulable", "mno-masters-schedulable"),
        ("openshift", "mno"),
    ],
)
def test_shipped_profiles_state_their_cluster_type(profile: str, cluster_type: str) -> None:
    assert _cluster_type(load_profile(profile).nodes()) == cluster_type


def test_the_objects_are_what_the_installer_writes() -> None:
    nodes = load_profile("mno-masters-schedulable").nodes()
    infra = oc.infrastructure(nodes, "https://127.0.0.1:6443")
    assert infra["metadata"] == {"name": "cluster"}
    assert infra["apiVersion"] == "config.openshift.io/v1"
    assert infra["status"]["platformStatus"] == {"type": "None"}
    assert infra["status"]["apiServerURL"] == "https://127.0.0.1:6443"
    assert oc.scheduler(nodes)["spec"]["mastersSchedulable"] is True
    assert [crd["metadata"]["name"] for crd in oc.CRDS] == [
        "infrastructures.config.openshift.io",
        "schedulers.config.openshift.io",
        "apiservers.config.openshift.io",
    ]
    assert "tlsSecurityProfile" not in oc.apiserver()["spec"]  # unset: Intermediate


def test_the_platform_objects_are_what_an_installed_cluster_reports() -> None:
    now = "2026-11-29T10:00:00Z"
    cv = oc.cluster_version("4.22.0", "11111111-2222-3333-4444-555555555555", now)
    assert (cv["kind"], cv["metadata"]["name"]) == ("ClusterVersion", "version")
    assert cv["spec"] == {"channel": "stable-4.22", "clusterID": "11111111-2222-3333-4444-555555555555"}
    assert cv["status"]["desired"]["version"] == "4.22.0"
    assert [(h["state"], h["version"]) for h in cv["status"]["history"]] == [("Completed", "4.22.0")]
    assert {c["type"]: c["status"] for c in cv["status"]["conditions"]} == {
        "Available": "True",
        "Failing": "False",
        "Progressing": "False",
    }
    co = oc.cluster_operator("4.22.0", now)
    assert (co["kind"], co["metadata"]["name"]) == ("ClusterOperator", "openshift-apiserver")
    # upstream's OpenshiftVersionFromEnv reads status.versions[0]
    assert co["status"]["versions"][0] == {"name": "operator", "version": "4.22.0"}
    assert [crd["metadata"]["name"] for crd in oc.PLATFORM_CRDS] == [
        "clusterversions.config.openshift.io",
        "clusteroperators.config.openshift.io",
    ]
