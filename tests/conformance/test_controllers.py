"""The controllers end to end, through public interfaces: kubectl, the Python client, and the kubelets.

A cluster on the shipped ``default`` profile (a tainted control plane and two workers) runs
in this process with its default scheduler: the controllers create pods without
``spec.nodeName`` (DaemonSet pods too, pinned by a ``metadata.name`` node affinity, as
upstream), ``default-scheduler`` binds them through ``pods/binding``, and the emulated
kubelets run them and report them Ready.  Node lifecycle runs on a second, node-less cluster with a 1 s grace period,
where the test itself plays a kubelet (a Node, its Lease, its Ready condition).
"""

from __future__ import annotations

import base64
import functools
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest

from nrop.api.metatime import rfc3339, rfc3339_micro
from nrop.localcluster.cluster import ClusterConfig, ClusterThread
from nrop.localcluster.controllers import ControllerSettings
from nrop.suite.e2e.wait import polling as waiting

T = TypeVar("T")
TIMEOUT = 30.0
WORKERS = ("worker-0", "worker-1")
GRACE = 1.0


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """This module's cluster: the ``default`` profile, with the Job back-off shortened."""
    settings = ControllerSettings(job_backoff_base=0.2, daemon_failed_backoff_base=0.2)
    return ClusterConfig(profile="default", history_size=20000, controllers=settings)


@pytest.fixture(scope="module")
def apis(api_client):  # type: ignore[no-untyped-def]
    from kubernetes import client

    return client.CoreV1Api(api_client), client.AppsV1Api(api_client), client.BatchV1Api(api_client)


# -- helpers ------------------------------------------------------------------------------------------


#: The suite's waiter with this module's default timeout.
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


def as_dict(api_client: Any, obj: Any) -> dict[str, Any]:
    return api_client.sanitize_for_serialization(obj)


def deployment_yaml(name: str, image: str, replicas: int = 3, strategy: str = "") -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                **({"strategy": {"type": strategy}} if strategy else {}),
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": image}]},
                },
            },
        }
    )


def events_of(core: Any, namespace: str, kind: str, name: str) -> list[tuple[str, str]]:
    return [
        (e.reason, e.message)
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.kind == kind and e.involved_object.name == name
    ]


def owned_pods(core: Any, namespace: str, owner_uid: str) -> list[Any]:
    return [
        p
        for p in core.list_namespaced_pod(namespace).items
        if any(r.uid == owner_uid for r in p.metadata.owner_references or ())
    ]


# -- Deployment -> ReplicaSet -> Pod ----------------------------------------------------------------------


def test_deployment_rolls_out_and_kubectl_rollout_status_succeeds(kubectl, apis, api_client, namespace):  # type: ignore[no-untyped-def]
    core, apps, _ = apis
    kubectl("apply", "-n", namespace, "-f", "-", input=deployment_yaml("web", "pause:1"))
    result = kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s", timeout=70)
    assert 'deployment "web" successfully rolled out' in result.stdout

    d = as_dict(api_client, apps.read_namespaced_deployment("web", namespace))
    assert d["metadata"]["generation"] == 1
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    status = d["status"]
    assert {
        k: status.get(k)
        for k in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    } == {
        "observedGeneration": 1,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
    }
    assert "unavailableReplicas" not in status
    reasons = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert reasons == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }

    (rs,) = [as_dict(api_client, r) for r in apps.list_namespaced_replica_set(namespace).items]
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": template_hash}
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
    }
    (ref,) = rs["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": d["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert rs["status"] == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    pods = owned_pods(core, namespace, rs["metadata"]["uid"])
    assert len(pods) == 3
    for pod in pods:
        assert pod.metadata.name.startswith(f"web-{template_hash}-")
        assert pod.metadata.labels == {"app": "web", "pod-template-hash": template_hash}
        assert (
            pod.metadata.owner_references[0].controller
            and pod.metadata.owner_references[0].block_owner_deletion
        )
        assert pod.status.phase == "Running" and pod.spec.node_name in WORKERS
    assert ("ScalingReplicaSet", f"Scaled up replica set web-{template_hash} from 0 to 3") in events_of(
        core, namespace, "Deployment", "web"
    )
    assert (
        sum(
            1
            for r, _ in events_of(core, namespace, "ReplicaSet", rs["metadata"]["name"])
            if r == "SuccessfulCreate"
        )
        == 3
    )


def test_rolling_update_scale_and_cascade(kubectl, apis, api_client, namespace):  # type: ignore[no-untyped-def]
    core, apps, _ = apis
    kubectl("apply", "-n", namespace, "-f", "-", input=deployment_yaml("web", "pause:1", replicas=4))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s", timeout=70)
    first = apps.list_namespaced_replica_set(namespace).items[0].metadata.name

    kubectl("apply", "-n", namespace, "-f", "-", input=deployment_yaml("web", "pause:2", replicas=4))
    result = kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s", timeout=70)
    assert 'deployment "web" successfully rolled out' in result.stdout
    sets = {r.metadata.name: r for r in apps.list_namespaced_replica_set(namespace).items}
    assert len(sets) == 2 and sets[first].spec.replicas == 0
    (second,) = [name for name in sets if name != first]
    assert sets[second].metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    assert sets[second].status.available_replicas == 4
    d = apps.read_namespaced_deployment("web", namespace)
    assert d.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    assert (d.status.observed_generation, d.status.updated_replicas, d.status.replicas) == (2, 4, 4)
    active = [p for p in core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp]
    assert {p.metadata.labels["pod-template-hash"] for p in active} == {
        sets[second].metadata.labels["pod-template-hash"]
    }
    # 25% of 4: one pod of surge and one unavailable, so the old set went down one pod at a time.
    scaled = events_of(core, namespace, "Deployment", "web")
    assert ("ScalingReplicaSet", f"Scaled up replica set {second} from 0 to 1") in scaled
    assert ("ScalingReplicaSet", f"Scaled down replica set {first} from 4 to 3") in scaled

    history = kubectl("rollout", "history", "-n", namespace, "deployment/web").stdout
    assert "1 " in history and "2 " in history

    kubectl("scale", "-n", namespace, "deployment/web", "--replicas=6")
    wait_for(
        lambda: apps.read_namespaced_deployment("web", namespace).status,
        lambda s: (s.replicas, s.available_replicas) == (6, 6),
        "deployment web scaled to 6 available replicas",
    )
    assert (
        apps.read_namespaced_replica_set(second, namespace).metadata.annotations[
            "deployment.kubernetes.io/desired-replicas"
        ]
        == "6"
    )

    kubectl("delete", "-n", namespace, "deployment/web", "--wait=true", "--timeout=30s", timeout=40)
    wait_for(
        lambda: (
            apps.list_namespaced_replica_set(namespace).items,
            core.list_namespaced_pod(namespace).items,
        ),
        lambda both: not both[0] and not both[1],
        "the deployment's replica sets and pods collected",
    )


def test_recreate_replaces_all_pods_and_replicaset_keeps_count(kubectl, apis, namespace):  # type: ignore[no-untyped-def]
    core, apps, _ = apis
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=deployment_yaml("db", "pause:1", replicas=2, strategy="Recreate"),
    )
    kubectl("rollout", "status", "-n", namespace, "deployment/db", "--timeout=60s", timeout=70)
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=deployment_yaml("db", "pause:2", replicas=2, strategy="Recreate"),
    )
    kubectl("rollout", "status", "-n", namespace, "deployment/db", "--timeout=60s", timeout=70)
    sets = apps.list_namespaced_replica_set(namespace).items
    assert sorted(r.spec.replicas for r in sets) == [0, 2]

    # The ReplicaSet controller replaces a pod that goes away.
    (current,) = [r for r in sets if r.spec.replicas == 2]
    victim = owned_pods(core, namespace, current.metadata.uid)[0].metadata.name
    core.delete_namespaced_pod(victim, namespace)
    wait_for(
        lambda: [
            p.metadata.name
            for p in owned_pods(core, namespace, current.metadata.uid)
            if p.status.phase == "Running" and not p.metadata.deletion_timestamp
        ],
        lambda names: len(names) == 2 and victim not in names,
        "a replacement pod running",
    )


def test_a_deployment_whose_pods_the_kubelet_rejects_still_shows_its_replica(kubectl, apis, namespace):  # type: ignore[no-untyped-def]
    """Upstream's 47619 on a real cluster: the ReplicaSet replaces each pod the kubelet rejects
    (TopologyAffinityError), and the Deployment's ``status.replicas`` shows the Pending one
    between two rejections. The kubelet learns of a binding one watch hop after it is written,
    so the ReplicaSet counts the pod before it fails."""
    core, apps, _ = apis
    manifest = json.loads(deployment_yaml("wide", "pause:1", replicas=1))
    # More CPUs than one NUMA zone of a worker holds, fewer than the node: single-numa-node rejects.
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "30", "memory": "1Gi"}
    }
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(manifest))
    failed = wait_for(
        lambda: [p for p in core.list_namespaced_pod(namespace).items if p.status.phase == "Failed"],
        lambda pods: len(pods) >= 2,
        "pods rejected by the kubelet",
    )
    assert {p.status.reason for p in failed} == {"TopologyAffinityError"}
    seen: set[int] = set()
    deadline = time.monotonic() + 10
    while 1 not in seen and time.monotonic() < deadline:
        seen.add(apps.read_namespaced_deployment("wide", namespace).status.replicas or 0)
        time.sleep(0.05)
    kubectl("delete", "-n", namespace, "deployment/wide", "--wait=false")
    assert 1 in seen, f"the Deployment's status.replicas only showed {sorted(seen)} in 10 s"


# -- DaemonSet ---------------------------------------------------------------------------------------------


def daemonset_yaml(
    image: str, tolerations: list[dict[str, str]] | None = None, node_selector: dict[str, str] | None = None
) -> str:
    spec: dict[str, Any] = {"containers": [{"name": "agent", "image": image}]}
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec},
            },
        }
    )


def test_daemonset_places_updates_and_reports(kubectl, apis, api_client, namespace):  # type: ignore[no-untyped-def]
    core, apps, _ = apis
    kubectl("apply", "-n", namespace, "-f", "-", input=daemonset_yaml("agent:1"))
    result = kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s", timeout=70)
    assert 'daemon set "agent" successfully rolled out' in result.stdout
    ds = as_dict(api_client, apps.read_namespaced_daemon_set("agent", namespace))
    assert ds["status"] == {
        "currentNumberScheduled": 2,
        "desiredNumberScheduled": 2,
        "numberMisscheduled": 0,
        "numberReady": 2,
        "numberAvailable": 2,
        "updatedNumberScheduled": 2,
        "observedGeneration": 1,
    }
    pods = owned_pods(core, namespace, ds["metadata"]["uid"])
    assert sorted(p.spec.node_name for p in pods) == list(WORKERS)  # the tainted control plane is left out
    pod = as_dict(api_client, pods[0])
    assert pod["metadata"]["name"].startswith("agent-")
    assert pod["metadata"]["labels"]["controller-revision-hash"]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]}
    ]
    # Created unbound, as upstream: the default scheduler placed it on the node of its affinity.
    assigned = (
        "Scheduled",
        f"Successfully assigned {namespace}/{pod['metadata']['name']} to {pod['spec']['nodeName']}",
    )
    wait_for(
        lambda: events_of(core, namespace, "Pod", pod["metadata"]["name"]),
        lambda events: assigned in events,
        f"a Scheduled event for pod {pod['metadata']['name']}",
    )
    tolerations = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert {
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    } <= tolerations

    # Tolerating the control-plane taint adds its node; a new template rolls one node at a time.
    control_plane = [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    ]
    kubectl("apply", "-n", namespace, "-f", "-", input=daemonset_yaml("agent:2", tolerations=control_plane))
    kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s", timeout=70)
    ds = apps.read_namespaced_daemon_set("agent", namespace)
    assert (
        ds.status.desired_number_scheduled,
        ds.status.updated_number_scheduled,
        ds.status.number_available,
    ) == (3, 3, 3)
    live = [p for p in owned_pods(core, namespace, ds.metadata.uid) if not p.metadata.deletion_timestamp]
    assert sorted(p.spec.node_name for p in live) == ["control-plane", *WORKERS]
    assert {p.spec.containers[0].image for p in live} == {"agent:2"}

    # A node selector for one worker: the other pods are deleted, the status follows.
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=daemonset_yaml(
            "agent:2", tolerations=control_plane, node_selector={"kubernetes.io/hostname": "worker-1"}
        ),
    )
    kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s", timeout=70)
    wait_for(
        lambda: sorted(p.spec.node_name for p in owned_pods(core, namespace, ds.metadata.uid)),
        lambda nodes: nodes == ["worker-1"],
        "only worker-1 runs the daemon pod",
    )
    status = apps.read_namespaced_daemon_set("agent", namespace).status
    assert (status.desired_number_scheduled, status.current_number_scheduled, status.number_misscheduled) == (
        1,
        1,
        0,
    )


# -- Job -----------------------------------------------------------------------------------------------------


def job_yaml(name: str, command: list[str], completions: int, backoff_limit: int = 6) -> str:
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "completions": completions,
                "parallelism": 2,
                "backoffLimit": backoff_limit,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox", "command": command}],
                    }
                },
            },
        }
    )


def test_job_completes_and_a_failing_job_stops_at_its_backoff_limit(kubectl, apis, api_client, namespace):  # type: ignore[no-untyped-def]
    core, _, batch = apis
    kubectl(
        "apply", "-n", namespace, "-f", "-", input=job_yaml("ok", ["sh", "-c", "sleep 0.2"], completions=3)
    )
    kubectl("wait", "-n", namespace, "--for=condition=Complete", "job/ok", "--timeout=60s", timeout=70)
    job = as_dict(api_client, batch.read_namespaced_job("ok", namespace))
    status = job["status"]
    assert status["succeeded"] == 3 and "failed" not in status and "active" not in status
    assert (status["ready"], status["terminating"], status["uncountedTerminatedPods"]) == (0, 0, {})
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "CompletionsReached"),
        ("Complete", "CompletionsReached"),
    ]
    assert status["completionTime"] and status["startTime"]
    pods = owned_pods(core, namespace, job["metadata"]["uid"])
    assert len(pods) == 3 and all(p.status.phase == "Succeeded" for p in pods)
    assert all(not p.metadata.finalizers for p in pods)  # counted, then released
    assert ("Completed", "Job completed") in events_of(core, namespace, "Job", "ok")

    kubectl(
        "apply", "-n", namespace, "-f", "-", input=job_yaml("bad", ["false"], completions=1, backoff_limit=1)
    )
    kubectl("wait", "-n", namespace, "--for=condition=Failed", "job/bad", "--timeout=60s", timeout=70)
    status = as_dict(api_client, batch.read_namespaced_job("bad", namespace))["status"]
    assert status["failed"] == 2 and "succeeded" not in status
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]
    assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in events_of(
        core, namespace, "Job", "bad"
    )

    kubectl("delete", "-n", namespace, "job/ok", "job/bad", "--timeout=30s", timeout=40)
    wait_for(
        lambda: core.list_namespaced_pod(namespace).items, lambda pods: not pods, "the jobs' pods collected"
    )


# -- service accounts -----------------------------------------------------------------------------------------


def test_namespace_gets_default_service_account_root_ca_and_token_secrets(apis, cluster, namespace):  # type: ignore[no-untyped-def]
    from kubernetes import client

    core = apis[0]
    wait_for(
        lambda: [s.metadata.name for s in core.list_namespaced_service_account(namespace).items],
        lambda n: "default" in n,
        "a default service account",
    )
    cm = wait_for(
        lambda: core.list_namespaced_config_map(namespace).items,
        bool,
        "kube-root-ca.crt",
    )
    assert cm[0].metadata.name == "kube-root-ca.crt" and cm[0].data["ca.crt"] == cluster.ca_pem.decode()

    core.create_namespaced_service_account(namespace, {"metadata": {"name": "robot"}})
    core.create_namespaced_secret(
        namespace,
        {
            "metadata": {
                "name": "robot-token",
                "annotations": {"kubernetes.io/service-account.name": "robot"},
            },
            "type": "kubernetes.io/service-account-token",
        },
    )
    secret = wait_for(
        lambda: core.read_namespaced_secret("robot-token", namespace),
        lambda s: bool(s.data and s.data.get("token")),
        "a populated token secret",
    )
    assert base64.b64decode(secret.data["namespace"]).decode() == namespace
    token = base64.b64decode(secret.data["token"]).decode()
    configuration = client.Configuration()
    configuration.host = cluster.url
    configuration.ssl_ca_cert = str(cluster.state_dir / "pki" / "ca.crt")
    configuration.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(configuration) as robot_client:
        review = client.AuthorizationV1Api(robot_client).create_self_subject_access_review(
            {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": namespace}}}
        )
    assert review.status.allowed is False  # authenticated as the robot, which RBAC grants nothing

    core.delete_namespaced_service_account("robot", namespace)
    wait_for(
        lambda: [s.metadata.name for s in core.list_namespaced_secret(namespace).items],
        lambda names: "robot-token" not in names,
        "the token secret of the deleted account deleted",
    )


# -- node lifecycle ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lifecycle_cluster(start_cluster: Callable[[str, ClusterConfig], ClusterThread]) -> ClusterThread:
    settings = ControllerSettings(
        node_monitor_grace_period=GRACE, node_monitor_period=0.2, node_startup_grace_period=GRACE
    )
    return start_cluster("nl", ClusterConfig(profile="empty", controllers=settings))


def test_lease_expiry_marks_node_unknown_and_tainted_until_it_recovers(lifecycle_cluster):  # type: ignore[no-untyped-def]
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(lifecycle_cluster.cluster.kubeconfig_path))
    core, leases = client.CoreV1Api(api), client.CoordinationV1Api(api)
    name = f"n-{uuid.uuid4().hex[:6]}"
    now = datetime.now(UTC)
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
        "lastHeartbeatTime": rfc3339(now),
        "lastTransitionTime": rfc3339(now),
    }
    core.create_node({"metadata": {"name": name}, "status": {"conditions": [ready]}})
    lease_body = {
        "metadata": {"name": name},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": rfc3339_micro(now)},
    }
    leases.create_namespaced_lease("kube-node-lease", lease_body)

    def state() -> tuple[str, set[tuple[str, str]]]:
        node = core.read_node(name)
        cond = next(c for c in node.status.conditions if c.type == "Ready")
        return cond.status, {(t.key, t.effect) for t in node.spec.taints or ()}

    # Renewed faster than the grace period, the node stays Ready.
    for _ in range(8):
        lease = leases.read_namespaced_lease(name, "kube-node-lease")
        lease.spec.renew_time = datetime.now(UTC)
        leases.replace_namespaced_lease(name, "kube-node-lease", lease)
        time.sleep(GRACE / 4)
    assert state() == ("True", set())

    unreachable = {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    wait_for(
        state, lambda s: s == ("Unknown", unreachable), "node Unknown with the unreachable taints", timeout=10
    )
    node = core.read_node(name)
    cond = next(c for c in node.status.conditions if c.type == "Ready")
    assert (cond.reason, cond.message) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert all(t.time_added is not None for t in node.spec.taints)
    assert {c.type for c in node.status.conditions if c.status == "Unknown"} == {
        "Ready",
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
    }

    # The kubelet comes back: renews its lease and posts Ready.
    lease = leases.read_namespaced_lease(name, "kube-node-lease")
    lease.spec.renew_time = datetime.now(UTC)
    leases.replace_namespaced_lease(name, "kube-node-lease", lease)
    stamp = rfc3339(datetime.now(UTC))
    core.patch_node_status(
        name, {"status": {"conditions": [{**ready, "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}}
    )
    wait_for(state, lambda s: s == ("True", set()), "node Ready with no taints", timeout=10)


def test_kubelet_nodes_stay_ready(apis):  # type: ignore[no-untyped-def]
    core = apis[0]
    for node in core.list_node().items:
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert ready.status == "True", node.metadata.name
        assert not any(t.key.startswith("node.kubernetes.io/") for t in node.spec.taints or ())


def test_kubectl_describe_shows_controller_events(kubectl, namespace):  # type: ignore[no-untyped-def]
    kubectl("apply", "-n", namespace, "-f", "-", input=deployment_yaml("shown", "pause:1", replicas=1))
    kubectl("rollout", "status", "-n", namespace, "deployment/shown", "--timeout=60s", timeout=70)
    out = kubectl("describe", "-n", namespace, "deployment/shown").stdout
    assert "ScalingReplicaSet" in out and "deployment-controller" in out
