"""Static pods on the embedded kubelets, and the once-documented limitation that was a mis-indented manifest.

Upstream numaresources-operator once documented (PR #313, reverted by #314; see also
kubernetes/kubernetes#110944) that a static pod whose containers have request == limit is
BestEffort in its mirror pod and is not accounted in the NodeResourceTopology.  The cause
was the manifest: ``limits:``/``requests:`` indented as siblings of ``resources:`` are
unknown container fields, which the kubelet's decoder drops, so that pod really is
BestEffort.  These tests show both truths through the real interfaces: manifests written
into the node's ``staticPodPath`` (read from ``/configz`` through the API server), the
mirror pods through kubectl and the official client, exclusive CPUs through a gRPC client
on the node's podresources socket, and the NRT object that ``resource-topology-exporter``
(a subprocess in periodic mode on ``worker-0``) publishes from them.

The cluster is the suite's ``default`` profile (static CPU and memory managers,
single-numa-node, pod scope), started as the suite starts its embedded target.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _helpers_e2e import (
    POLL_INTERVAL,
    Process,
    exporter_env,
    install_nrt_crd,
    node_root,
    pod_resources,
    start_exporter,
    stopped_cleanly,
)
from kubernetes import client

from nrop.api.nrt import NodeResourceTopology
from nrop.suite.e2e.kube import NRT, Kube
from nrop.suite.e2e.nrt.waiters import for_nrts
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install import nodetopology
from nrop.suite.plugin.target import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("default")]

NODE = "worker-0"
NAMESPACE = "default"
TIMEOUT = 20.0
HASH, SOURCE, SEEN, MIRROR = (
    "kubernetes.io/config.hash",
    "kubernetes.io/config.source",
    "kubernetes.io/config.seen",
    "kubernetes.io/config.mirror",
)

#: request == limit, integral CPUs: Guaranteed, exclusive CPUs from the static CPU manager.
WELL_FORMED = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: busybox
    command: [sleep, "3600"]
    resources:
      limits:
        cpu: 2
        memory: 256Mi
      requests:
        cpu: 2
        memory: 256Mi
"""

#: The manifest of kubernetes/kubernetes#110944: ``limits``/``requests`` are not under ``resources``.
MIS_INDENTED = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: busybox
    command: [sleep, "3600"]
    resources:
    limits:
      cpu: 2
      memory: 256Mi
    requests:
      cpu: 2
      memory: 256Mi
"""


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def manifests(embedded: EmbeddedCluster, kube: Kube) -> Path:
    """The node's ``staticPodPath``, as its kubelet reports it in ``/configz``."""
    config = nodetopology.kubelet_configuration(kube, NODE)
    assert config is not None
    path = Path(config["staticPodPath"])
    assert path == node_root(embedded, NODE) / "etc/kubernetes/manifests"
    assert path.is_dir()
    return path


@pytest.fixture(scope="module")
def exporter(embedded: EmbeddedCluster, kube: Kube, state_dir: Path) -> Iterator[Process]:
    """``resource-topology-exporter`` on ``worker-0``: podresources every second → its NRT."""
    install_nrt_crd(kube)
    process = start_exporter(
        embedded, kube, NODE, state_dir, "--sleep-interval", "1s", "--podreadiness=false", env=exporter_env()
    )
    with stopped_cleanly({NODE: process}):
        for_nrts(kube, [NODE], lambda _: True, "to exist", TIMEOUT, interval=POLL_INTERVAL)
        yield process


@pytest.fixture
def drop(manifests: Path, core: client.CoreV1Api) -> Iterator[Any]:
    """``drop(file, text)`` writes a manifest as editors and installers should (a dot-file, then a
    rename); every manifest written is removed afterwards and its mirror pod waited away."""
    written: list[Path] = []

    def write(file: str, text: str) -> Path:
        path = manifests / file
        temporary = manifests / f".{file}.tmp"
        temporary.write_text(text)
        os.replace(temporary, path)
        written.append(path)
        return path

    yield write
    names = {_manifest_name(path) for path in written}
    for path in written:
        path.unlink(missing_ok=True)
    for name in names - {None}:
        wait_for(
            lambda name=name: _mirror_or_none(core, name),
            lambda pod: pod is None,
            f"mirror pod {NAMESPACE}/{name} to be gone",
            TIMEOUT,
        )


def _manifest_name(path: Path) -> str | None:
    try:
        doc = yaml.safe_load(path.read_text())
        return f"{doc['metadata']['name']}-{NODE}"
    except Exception:  # a corrupt manifest has no pod
        return None


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# ----------------------------------------------------------------------------- reading


def _mirror_or_none(core: client.CoreV1Api, name: str) -> client.V1Pod | None:
    try:
        return core.read_namespaced_pod(name, NAMESPACE)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def wait_mirror_running(core: client.CoreV1Api, name: str, *, not_uid: str = "") -> client.V1Pod:
    return wait_for(
        lambda: _mirror_or_none(core, name),
        lambda pod: pod is not None and pod.metadata.uid != not_uid and pod.status.phase == "Running",
        f"mirror pod {NAMESPACE}/{name} to be Running",
        TIMEOUT,
        interval=0.1,
    )


def exclusive_cpus(embedded: EmbeddedCluster, name: str) -> list[int]:
    """The pod's exclusive CPUs as the kubelet reports them on its podresources socket."""
    pod = pod_resources(node_root(embedded, NODE), NAMESPACE, name)
    return sorted(cpu for container in pod.containers for cpu in container.cpu_ids)


def listed_in_podresources(embedded: EmbeddedCluster, name: str) -> bool:
    try:
        pod_resources(node_root(embedded, NODE), NAMESPACE, name)
    except ValueError:  # no such pod in the List response
        return False
    return True


def available_cpus(kube: Kube) -> dict[str, int]:
    nrt = NodeResourceTopology.from_dict(kube.get(NRT, NODE))
    return {z.name: int(str(r.available)) for z in nrt.zones for r in z.resources if r.name == "cpu"}


def numa_allocated_cpus(core: client.CoreV1Api) -> int:
    """Exclusive CPUs of the node summed over its zones (``nodes/<node>/proxy/numa``)."""
    body = json.loads(core.connect_get_node_proxy_with_path(NODE, "numa", _preload_content=False).data)
    return sum(zone["cpus_allocated"] for zone in body["zones"])


# ----------------------------------------------------------------------------- tests


def test_guaranteed_static_pod_gets_exclusive_cpus_and_is_accounted(
    embedded: EmbeddedCluster, core: client.CoreV1Api, kube: Kube, exporter: Process, drop: Any, kubectl: Any
) -> None:
    before = available_cpus(kube)
    name = _unique("gu")
    drop(f"{name}.yaml", WELL_FORMED.format(name=name))
    mirror = wait_mirror_running(core, f"{name}-{NODE}")

    annotations = mirror.metadata.annotations
    assert annotations[SOURCE] == "file" and annotations[SEEN]
    assert annotations[MIRROR] == annotations[HASH] and len(annotations[HASH]) == 32
    node_uid = core.read_node(NODE).metadata.uid
    (owner,) = mirror.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Node", NODE, node_uid, True)
    assert mirror.spec.node_name == NODE
    assert mirror.status.qos_class == "Guaranteed"
    # No service-account token volume in a mirror pod, and the static toleration.
    assert not mirror.spec.volumes and not mirror.spec.service_account_name
    assert any(
        t.operator == "Exists" and t.effect == "NoExecute" and not t.key for t in mirror.spec.tolerations
    )
    shown = kubectl("get", "pod", "-n", NAMESPACE, mirror.metadata.name, "-o", "jsonpath={.status.qosClass}")
    assert shown.stdout == "Guaranteed"

    cpus = exclusive_cpus(embedded, mirror.metadata.name)
    assert len(cpus) == 2, cpus
    assert numa_allocated_cpus(core) >= 2
    after = for_nrts(
        kube,
        [NODE],
        lambda _: sum(available_cpus(kube).values()) == sum(before.values()) - 2,
        "to account 2 CPUs",
        20.0,
        interval=POLL_INTERVAL,
    )[NODE]
    assert after is not None
    taken = {zone: before[zone] - left for zone, left in available_cpus(kube).items() if left != before[zone]}
    assert list(taken.values()) == [2], taken  # single-numa-node: both from one zone


def test_mis_indented_manifest_of_kubernetes_110944_is_best_effort_and_not_accounted(
    embedded: EmbeddedCluster, core: client.CoreV1Api, kube: Kube, exporter: Process, drop: Any
) -> None:
    before_nrt = available_cpus(kube)
    before_numa = numa_allocated_cpus(core)
    name = _unique("be")
    drop(f"{name}.yml", MIS_INDENTED.format(name=name))
    mirror = wait_mirror_running(core, f"{name}-{NODE}")

    assert mirror.status.qos_class == "BestEffort"
    (container,) = mirror.spec.containers
    assert not (container.resources and (container.resources.limits or container.resources.requests))
    assert listed_in_podresources(embedded, mirror.metadata.name)
    assert exclusive_cpus(embedded, mirror.metadata.name) == []  # shared pool
    assert numa_allocated_cpus(core) == before_numa
    time.sleep(2.5)  # two exporter periods after the pod started
    assert available_cpus(kube) == before_nrt


def test_removing_the_manifest_stops_the_pod_and_removes_the_mirror(
    embedded: EmbeddedCluster, core: client.CoreV1Api, manifests: Path, drop: Any
) -> None:
    name = _unique("rm")
    path = drop(f"{name}.json", json.dumps(yaml.safe_load(WELL_FORMED.format(name=name))))
    mirror = wait_mirror_running(core, f"{name}-{NODE}")
    assert len(exclusive_cpus(embedded, mirror.metadata.name)) == 2

    path.unlink()
    wait_for(
        lambda: _mirror_or_none(core, mirror.metadata.name),
        lambda pod: pod is None,
        f"mirror pod {NAMESPACE}/{mirror.metadata.name} to be deleted",
        TIMEOUT,
        interval=0.1,
    )
    wait_for(
        lambda: listed_in_podresources(embedded, mirror.metadata.name),
        lambda listed: not listed,
        "the static pod to leave podresources",
        TIMEOUT,
    )


def test_deleting_the_mirror_pod_recreates_it_and_the_static_pod_keeps_running(
    embedded: EmbeddedCluster, core: client.CoreV1Api, drop: Any, kubectl: Any
) -> None:
    name = _unique("mp")
    drop(f"{name}.yaml", WELL_FORMED.format(name=name))
    first = wait_mirror_running(core, f"{name}-{NODE}")
    cpus = exclusive_cpus(embedded, first.metadata.name)
    (status,) = first.status.container_statuses

    kubectl("delete", "pod", "-n", NAMESPACE, first.metadata.name, "--wait=true", timeout=TIMEOUT)
    second = wait_mirror_running(core, first.metadata.name, not_uid=first.metadata.uid)

    assert second.metadata.annotations[MIRROR] == first.metadata.annotations[MIRROR]
    (again,) = second.status.container_statuses
    # The same static pod: its container neither restarted nor replaced, its CPUs kept.
    assert (again.container_id, again.restart_count) == (status.container_id, 0)
    assert second.status.start_time == first.status.start_time
    assert exclusive_cpus(embedded, second.metadata.name) == cpus


def test_editing_the_manifest_replaces_the_static_pod(
    embedded: EmbeddedCluster, core: client.CoreV1Api, drop: Any
) -> None:
    name = _unique("ed")
    drop(f"{name}.yaml", WELL_FORMED.format(name=name))
    first = wait_mirror_running(core, f"{name}-{NODE}")
    drop(f"{name}.yaml", WELL_FORMED.format(name=name).replace("cpu: 2", "cpu: 4"))
    second = wait_for(
        lambda: _mirror_or_none(core, first.metadata.name),
        lambda pod: (
            pod is not None
            and pod.metadata.annotations[MIRROR] != first.metadata.annotations[MIRROR]
            and pod.status.phase == "Running"
        ),
        "a mirror pod of the edited manifest",
        TIMEOUT,
        interval=0.1,
    )
    # A new static pod (the hash is its UID): new container, its own exclusive CPUs.
    assert second.status.container_statuses[0].container_id != first.status.container_statuses[0].container_id
    assert len(exclusive_cpus(embedded, second.metadata.name)) == 4


def test_static_pod_naming_a_service_account_runs_without_a_mirror_pod(
    embedded: EmbeddedCluster, core: client.CoreV1Api, drop: Any
) -> None:
    name = _unique("sa")
    text = WELL_FORMED.format(name=name).replace("spec:\n", "spec:\n  serviceAccountName: default\n", 1)
    drop(f"{name}.yaml", text)
    full = f"{name}-{NODE}"
    refusal = f"Failed creating a mirror pod {NAMESPACE}/{full}"
    log = wait_for(
        lambda: embedded.log_path.read_text(errors="replace"),
        lambda log: refusal in log,
        "the kubelet's warning about the refused mirror pod",
        TIMEOUT,
    )
    assert "a mirror pod may not reference service accounts" in log
    assert _mirror_or_none(core, full) is None
    assert len(exclusive_cpus(embedded, full)) == 2  # the static pod itself runs


def test_corrupt_manifest_is_a_warning_and_other_static_pods_still_run(
    embedded: EmbeddedCluster, core: client.CoreV1Api, drop: Any, manifests: Path
) -> None:
    broken = drop("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: broken\nspec: [\n")
    ignored = manifests / "notes.txt"
    ignored.write_text("not a manifest")
    try:
        name = _unique("ok")
        drop(f"{name}.yaml", WELL_FORMED.format(name=name))
        wait_mirror_running(core, f"{name}-{NODE}")
        warning = f"Could not process manifest file {broken}"
        text = wait_for(
            lambda: embedded.log_path.read_text(errors="replace"),
            lambda log: warning in log,
            "the kubelet's warning about the corrupt manifest",
            TIMEOUT,
        )
        line = next(line for line in text.splitlines() if warning in line)
        assert "WARNING" in line and "couldn't parse as pod" in line
        time.sleep(2.5)  # more polls: the file is read again, the same warning is not repeated
        assert embedded.log_path.read_text(errors="replace").count(warning) == 1
        log = embedded.log_path.read_text(errors="replace")
        assert "notes.txt" not in log and "Traceback" not in log
    finally:
        ignored.unlink(missing_ok=True)
