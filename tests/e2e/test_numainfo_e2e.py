"""numainfo-exporter, as a real process, against the nodes of an embedded cluster.

A cluster on the shipped ``devices`` profile (two 2-NUMA workers, static CPU and memory
managers) runs as the suite's embedded target (``nrop-cluster up``). ``numainfo-exporter`` runs as a subprocess on a worker's
node root (``-Y <root>/sys -K <root>/var/lib/kubelet``) and is scraped over HTTP. Pods are
created with ``spec.nodeName`` through the official client; which NUMA node they landed
on is read independently, from the kubelet's podresources API and the sysfs cpulists.
Corruption is done on a copy of a node root, never on the kubelet's own files.
"""

from __future__ import annotations

import functools
import json
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers_e2e import node_root, pod_resources
from prometheus_client.parser import text_string_to_metric_families

from nrop.api.checkpoints import encode_cpu_manager_checkpoint
from nrop.localcluster.apiserver.tls import client_context, generate_ca, issue_server_cert
from nrop.suite.e2e.kube import POD, Kube
from nrop.suite.e2e.wait import polling as waiting
from nrop.suite.e2e.wait import waiters
from nrop.suite.plugin.target import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("devices")]

WORKER = "worker-0"
OTHER_WORKER = "worker-1"
TIMEOUT = 10.0
GI = 1024**3
MI = 1024**2
Series = dict[tuple[tuple[str, str], ...], float]
EXPORTER = str(Path(sys.executable).with_name("numainfo-exporter"))


#: The suite's waiter with this module's timeout.
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT, interval=0.05)


# ----------------------------------------------------------------------------- the exporter process


class Exporter:
    """``numainfo-exporter`` on a node root, its stderr collected line by line."""

    def __init__(
        self, node: str, sysfs: Path, kube_state: Path, *extra: str, context: ssl.SSLContext | None = None
    ) -> None:
        self.process = subprocess.Popen(
            [EXPORTER, "-N", node, "-L", "127.0.0.1:0", "-Y", str(sysfs), "-K", str(kube_state), *extra],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.context = context
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        scheme = "https" if context is not None else "http"
        serving = self.wait_log(f"serving metrics on {scheme}://127.0.0.1:")
        self.url = serving[serving.index(f"{scheme}://") :].split()[0]

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_log(self, text: str, after: int = 0) -> str:
        def found() -> str | None:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the exporter exited {self.process.returncode}:\n" + "\n".join(self.lines)
                )
            return next((line for line in self.lines[after:] if text in line), None)

        line = wait_for(found, lambda hit: hit is not None, f"a log line with {text!r}")
        assert line is not None
        return line

    def scrape(self) -> dict[str, Series]:
        with urllib.request.urlopen(self.url, timeout=5, context=self.context) as response:
            assert response.status == 200
            text = response.read().decode()
        return {
            family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
            for family in text_string_to_metric_families(text)
        }

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=10)


def cores(metrics: dict[str, Series], node: str, kind: str) -> dict[str, float]:
    """``numainfo_core_count`` of ``type=kind`` as ``{numanode: value}``."""
    return {
        dict(labels)["numanode"]: value
        for labels, value in metrics.get("numainfo_core_count", {}).items()
        if dict(labels)["type"] == kind and dict(labels)["node"] == node
    }


def memory(metrics: dict[str, Series], resource: str, kind: str) -> dict[str, float]:
    return {
        dict(labels)["numanode"]: value
        for labels, value in metrics.get("numainfo_memory_bytes", {}).items()
        if dict(labels)["type"] == kind and dict(labels)["resource"] == resource
    }


def valid(metrics: dict[str, Series], checkpoint: str) -> float:
    (value,) = [
        v
        for labels, v in metrics["numainfo_checkpoint_valid"].items()
        if dict(labels)["checkpoint"] == checkpoint
    ]
    return value


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def exporter(embedded: EmbeddedCluster) -> Iterator[Exporter]:
    root = node_root(embedded, WORKER)
    process = Exporter(WORKER, root / "sys", root / "var/lib/kubelet")
    yield process
    assert process.stop() == 0


# ----------------------------------------------------------------------------- pods


def guaranteed_pod(
    name: str, node: str, cpus: int, memory_limit: str, hugepages: str | None = None
) -> dict[str, Any]:
    limits = {"cpu": str(cpus), "memory": memory_limit}
    if hugepages:
        limits["hugepages-2Mi"] = hugepages
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "image": "busybox", "resources": {"limits": limits}}],
        },
    }


def run_pod(kube: Kube, namespace: str, body: dict[str, Any]) -> None:
    kube.create({**body, "metadata": {**body["metadata"], "namespace": namespace}})
    waiters.for_pod_phase(
        kube, namespace, body["metadata"]["name"], "Running", interval=0.05, timeout=TIMEOUT
    )


def delete_pod(kube: Kube, namespace: str, name: str) -> None:
    kube.delete(POD, name, namespace, grace_period_seconds=0)
    waiters.for_pod_deleted(kube, namespace, name, interval=0.05, timeout=TIMEOUT)


def placement(root: Path, namespace: str, name: str) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Exclusive CPUs per ``nodeNN`` and memory bytes per (``nodeNN``, resource), as podresources reports them."""
    numa_of: dict[int, int] = {}
    base = root / "sys/devices/system/node"
    for node_dir in base.glob("node[0-9]*"):
        for part in (node_dir / "cpulist").read_text().strip().split(","):
            low, _, high = part.partition("-")
            numa_of.update(dict.fromkeys(range(int(low), int(high or low) + 1), int(node_dir.name[4:])))
    pod = pod_resources(root, namespace, name)
    cpus: dict[str, int] = {}
    blocks: dict[tuple[str, str], int] = {}
    for container in pod.containers:
        for cpu in container.cpu_ids:
            label = f"node{numa_of[cpu]:02d}"
            cpus[label] = cpus.get(label, 0) + 1
        for block in container.memory:
            (numa,) = [n.ID for n in block.topology.nodes]
            key = (f"node{numa:02d}", block.memory_type)
            blocks[key] = blocks.get(key, 0) + block.size
    return cpus, blocks


# ----------------------------------------------------------------------------- tests


def test_capacity_without_allocations(exporter: Exporter) -> None:
    metrics = exporter.scrape()
    assert metrics["numainfo_node_count"] == {(("node", WORKER),): 2}
    assert cores(metrics, WORKER, "capacity") == {"node00": 16, "node01": 16}
    assert cores(metrics, WORKER, "allocation") == {}  # upstream: no allocation samples without allocations
    assert memory(metrics, "hugepages-2Mi", "capacity") == {"node00": 512 * 2 * MI, "node01": 512 * 2 * MI}
    assert memory(metrics, "memory", "allocation") == {}
    version = next(iter(metrics["numainfo_version"]))
    assert ("version", "1") in version


def allocated(metrics: dict[str, Series]) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """The worker's allocated CPUs, memory and 2Mi hugepages, per NUMA node.

    The kubelet's CPU and memory managers checkpoint to separate files, one after the other,
    so a scrape can see one of them updated and not the other: waits compare all three.
    """
    return (
        cores(metrics, WORKER, "allocation"),
        memory(metrics, "memory", "allocation"),
        memory(metrics, "hugepages-2Mi", "allocation"),
    )


def test_allocation_follows_a_guaranteed_pod(
    embedded: EmbeddedCluster, exporter: Exporter, kube: Kube, namespace: str
) -> None:
    root = node_root(embedded, WORKER)
    run_pod(kube, namespace, guaranteed_pod("background", WORKER, 2, "512Mi"))
    base_cpus, _ = placement(root, namespace, "background")
    baseline = wait_for(
        exporter.scrape,
        lambda m: sum(allocated(m)[0].values()) == 2 and sum(allocated(m)[1].values()) == 512 * MI,
        "2 allocated CPUs and 512Mi of memory for the background pod",
    )
    base_cores, base_memory, base_hugepages = allocated(baseline)
    assert {k: v for k, v in base_cores.items() if v} == base_cpus

    run_pod(kube, namespace, guaranteed_pod("measured", WORKER, 4, "1Gi", "128Mi"))
    cpus, blocks = placement(root, namespace, "measured")
    (numa,) = cpus  # single-numa-node: one NUMA node
    assert cpus[numa] == 4
    assert blocks == {(numa, "memory"): GI, (numa, "hugepages-2Mi"): 128 * MI}
    expected = (
        {**base_cores, numa: base_cores[numa] + 4},
        {**base_memory, numa: base_memory[numa] + GI},
        {**base_hugepages, numa: base_hugepages.get(numa, 0) + 128 * MI},
    )
    after = wait_for(
        exporter.scrape,
        lambda m: allocated(m) == expected,
        f"the allocation of {numa} to rise by 4 CPUs, 1Gi of memory and 128Mi of hugepages to {expected}",
    )
    assert cores(after, WORKER, "capacity") == {"node00": 16, "node01": 16}

    delete_pod(kube, namespace, "measured")
    wait_for(
        exporter.scrape,
        lambda m: allocated(m) == (base_cores, base_memory, base_hugepages),
        "the CPU, memory and hugepages allocation to fall back to the baseline",
    )

    delete_pod(kube, namespace, "background")
    wait_for(
        exporter.scrape,
        lambda m: allocated(m) == ({}, {}, {}),
        "no allocation samples once no pod holds CPUs or memory",
    )


def test_corrupt_checkpoints_warn_keep_serving_and_recover(
    embedded: EmbeddedCluster, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    real = node_root(embedded, OTHER_WORKER)
    run_pod(kube, namespace, guaranteed_pod("held", OTHER_WORKER, 2, "256Mi"))
    cpus, _ = placement(real, namespace, "held")
    real_state = real / "var/lib/kubelet"
    wait_for((real_state / "cpu_manager_state").read_bytes, lambda b: b'"entries"' in b, "an entry")
    copy = tmp_path / "root"
    shutil.copytree(real / "sys", copy / "sys", symlinks=True)
    state = copy / "var/lib/kubelet"
    state.mkdir(parents=True)
    for name in ("cpu_manager_state", "memory_manager_state"):
        shutil.copyfile(real_state / name, state / name)
    good_cpu = (state / "cpu_manager_state").read_bytes()
    good_memory = (state / "memory_manager_state").read_bytes()
    unknown_policy = encode_cpu_manager_checkpoint(
        "dynamic", "0-31", {}
    )  # a valid checksum, a foreign policy
    edited = json.loads(good_cpu)
    edited["defaultCpuSet"] = "0-31"  # hand-edited, checksum left as it was

    process = Exporter(OTHER_WORKER, copy / "sys", state)
    try:
        healthy = process.scrape()
        assert {k: v for k, v in cores(healthy, OTHER_WORKER, "allocation").items() if v} == cpus
        for file, bad, warning in (
            ("cpu_manager_state", good_cpu[: len(good_cpu) // 2], "could not parse checkpoint"),
            ("cpu_manager_state", json.dumps(edited).encode(), "checkpoint is corrupted"),
            ("cpu_manager_state", unknown_policy, "unknown CPU manager policy 'dynamic'"),
            ("memory_manager_state", good_memory[:-3], "could not parse checkpoint"),
        ):
            mark = len(process.lines)
            (state / file).write_bytes(bad)
            broken = process.scrape()  # still serves, with less data
            line = process.wait_log(f"cannot use {state / file}", after=mark)
            assert "WARNING" in line and warning in line, line
            assert valid(broken, file) == 0
            assert cores(broken, OTHER_WORKER, "capacity") == {"node00": 16, "node01": 16}
            if file == "cpu_manager_state":
                assert cores(broken, OTHER_WORKER, "allocation") == {}
                assert memory(broken, "memory", "capacity")  # the other file is unaffected
            else:
                assert "numainfo_memory_bytes" not in broken
                assert cores(broken, OTHER_WORKER, "allocation") == cores(healthy, OTHER_WORKER, "allocation")

            (state / f".{file}.tmp").write_bytes(good_cpu if file == "cpu_manager_state" else good_memory)
            (state / f".{file}.tmp").replace(state / file)  # fixed atomically, as the kubelet writes
            fixed = process.scrape()
            assert fixed == healthy
            process.wait_log(f"checkpoint {state / file} recovered", after=mark)
    finally:
        assert process.stop() == 0
    assert (real_state / "cpu_manager_state").read_bytes() == good_cpu  # the kubelet's file was never touched
    delete_pod(kube, namespace, "held")


def test_dump_metrics_prints_once_and_exits(embedded: EmbeddedCluster) -> None:
    root = node_root(embedded, WORKER)
    result = subprocess.run(
        [
            EXPORTER,
            "-M",
            "-N",
            f"n-{uuid.uuid4().hex[:4]}",
            "--sysfs",
            str(root / "sys"),
            "--kube-state",
            str(root / "var/lib/kubelet"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert 'numainfo_core_count{node="n-' in result.stdout
    assert 'numanode="node01",type="capacity"} 16.0' in result.stdout
    assert 'numainfo_checkpoint_valid{checkpoint="cpu_manager_state"' in result.stdout
    assert result.stderr == ""


def test_serves_https_with_cert_and_key(embedded: EmbeddedCluster, tmp_path: Path) -> None:
    root = node_root(embedded, WORKER)
    ca = generate_ca()
    cert, key = issue_server_cert(ca, ["127.0.0.1"]).write_pair(tmp_path, "metrics")
    process = Exporter(
        WORKER,
        root / "sys",
        root / "var/lib/kubelet",
        "-c",
        str(cert),
        "-k",
        str(key),
        context=client_context(ca.cert_pem),
    )
    try:
        assert cores(process.scrape(), WORKER, "capacity") == {"node00": 16, "node01": 16}
    finally:
        assert process.stop() == 0
    missing = subprocess.run(
        [EXPORTER, "-L", "127.0.0.1:0", "-c", str(cert), "-k", str(tmp_path / "absent.key")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert missing.returncode == 1
    assert "cannot serve metrics on 127.0.0.1:0" in missing.stderr
