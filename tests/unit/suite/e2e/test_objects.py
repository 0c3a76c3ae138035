"""Tests of nrop.suite.e2e.objects: the shapes of test objects and pinning."""

from __future__ import annotations

import random

import pytest

from nrop.suite.e2e import objects as o


def test_pause_pod() -> None:
    pod = o.new_test_pod_pause("ns", "p", containers=2)
    assert pod["metadata"] == {"name": "p", "namespace": "ns"}
    spec = pod["spec"]
    assert spec["terminationGracePeriodSeconds"] == 0
    assert [(c["name"], c["image"], c["command"]) for c in spec["containers"]] == [
        ("p-cnt-0", "quay.io/openshift-kni/pause:test-ci", ["/pause"]),
        ("p-cnt-1", "quay.io/openshift-kni/pause:test-ci", ["/pause"]),
    ]


@pytest.mark.parametrize(
    ("zone", "resource"),
    [(0, "kni.node/numacell00"), (1, "kni.node/numacell01"), ("node-12", "kni.node/numacell12")],
)
def test_pin_pod_to(zone, resource) -> None:
    pod = o.set_resources(o.new_test_pod_pause("ns", "p"), limits={"cpu": 2, "memory": "1Gi"})
    o.pin_pod_to(pod, "worker-1", zone)
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "worker-1"}
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "2", "memory": "1Gi", resource: "1"}


def test_workloads() -> None:
    dp = o.new_test_deployment(3, {"app": "x"}, {"kubernetes.io/hostname": "w"}, "ns", "dp")
    assert dp["kind"] == "Deployment" and dp["spec"]["replicas"] == 3
    assert dp["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    tmpl = dp["spec"]["template"]
    assert tmpl["metadata"]["labels"] == {"app": "x"}
    assert tmpl["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "w"}
    assert tmpl["spec"]["containers"][0] == {
        "name": "dp-cnt",
        "image": "quay.io/openshift-kni/pause:test-ci",
        "command": ["/pause"],
    }
    spec = o.pause_pod_spec("rs")
    rs = o.new_test_replicaset_with_pod_spec(2, {"a": "b"}, None, "ns", "rs", spec)
    assert rs["kind"] == "ReplicaSet" and "nodeSelector" not in rs["spec"]["template"]["spec"]
    ds = o.new_test_daemonset({"a": "b"}, None, "ns", "ds")
    assert ds["kind"] == "DaemonSet" and "replicas" not in ds["spec"]
    job = o.new_test_job("ns", "j", spec, parallelism=2, completions=4, pod_labels={"j": "1"})
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (2, 4)
    set_on_template = o.set_resources(dp, requests={"cpu": "500m"})
    assert set_on_template["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "500m"}
    }


def test_names_and_namespace() -> None:
    name = o.randomize_name("e2e-test-workload-placement", random.Random(7))
    base, _, suffix = name.rpartition("-")
    assert base == "e2e-test-workload-placement" and 0 <= int(suffix) < 10000
    ns = o.new_namespace("x")
    assert ns["metadata"]["labels"] == {
        "pod-security.kubernetes.io/audit": "privileged",
        "pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/warn": "privileged",
        "security.openshift.io/scc.podSecurityLabelSync": "false",
    }
    assert o.zone_id_from_name("node-3") == 3 and o.zone_id_from_name("2") == 2


def test_dump_pod_resource_requirements() -> None:
    pod = o.set_resources(o.new_test_pod_pause("ns", "p"), limits={"cpu": 2})
    assert o.dump_pod_resource_requirements(pod).splitlines() == [
        "resource requirements for pod ns/p:",
        "+- container 'p-cnt-0': cpu=2",
        "---",
    ]


def _qos_pod(limits=None, requests=None, status=None):
    pod = o.set_resources(o.new_test_pod_pause("ns", "p"), limits=limits, requests=requests)
    if status is not None:
        pod["status"] = status
    return pod


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (_qos_pod(limits={"cpu": 1, "memory": "1Gi"}, requests={"cpu": 1, "memory": "1Gi"}), "Guaranteed"),
        (_qos_pod(limits={"cpu": 1, "memory": "1Gi"}), "Burstable"),  # requests not defaulted yet
        (_qos_pod(requests={"cpu": 1}), "Burstable"),
        (_qos_pod(), "BestEffort"),
        (_qos_pod(requests={"cpu": 1}, status={"qosClass": "Guaranteed"}), "Guaranteed"),
        (_qos_pod(requests={"cpu": 1}, status={"phase": "Pending"}), "Burstable"),
    ],
)
def test_pod_qos(pod, want: str) -> None:
    assert o.pod_qos(pod) == want
