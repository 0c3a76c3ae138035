"""Benchmark: start-up time, pod throughput and peak memory of the embedded cluster, as users run it.

Each cluster is ``nrop-cluster up --profile P`` launched as a subprocess; this
process is an ordinary client (the official ``kubernetes`` package).  Measured:

* start-up: from launching the subprocess to its ``ready:`` line, and to a node
  list that shows every node of the profile ``Ready`` (the figure held to the
  target), for the ``default`` profile and for ``fifty`` (50 workers);
* throughput, on the ``fifty`` cluster: from creating N pause pods (one Deployment
  with N replicas, or N bare pods created by a thread pool) until a watch has seen
  all N ``Running``;
* peak memory: the cluster process's RSS high-water mark (``VmHWM`` in
  ``/proc/<pid>/status``), read just before it is stopped.

Prints a table: figure, target, measured, verdict ("missed by far" past twice the
target).  Never run in CI: the figures depend on the machine and its load.

    python bench/cluster.py [--pods 1000] [--workload deployment|pods] [--threads 8]
        [--big-profile fifty] [--skip-default]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config, watch

from nrop.localcluster.profiles import load_profile

NAMESPACE = "bench"
APP = "bench-pause"
# Not the project's image, so the kubelets simulate it with pause semantics.
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
# Small requests: the scheduler and the kubelets' admission do real fit work, and
# 1000 pods still fit 50 workers of 8 CPUs (20 per node, 200m CPU each).
REQUESTS = {"cpu": "10m", "memory": "16Mi"}
FAR = 2.0  # a target missed by more than this factor is "missed by far"
READY_TIMEOUT = 300.0
STOP_TIMEOUT = 30.0


@dataclass(frozen=True)
class Figure:
    name: str
    measured: float
    unit: str
    target: float | None = None  # an upper bound in the figure's unit; None: reported only


def verdict(measured: float, target: float | None, far: float = FAR) -> str:
    """How a measured figure compares with its upper-bound target."""
    if target is None:
        return "-"
    if measured <= target:
        return "ok"
    return "MISSED BY FAR" if measured > far * target else "missed"


def format_table(figures: list[Figure]) -> str:
    rows = [("figure", "target", "measured", "verdict")]
    for f in figures:
        target = "-" if f.target is None else f"<= {f.target:g} {f.unit}"
        rows.append((f.name, target, f"{f.measured:.2f} {f.unit}", verdict(f.measured, f.target)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a live process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


@dataclass
class Running:
    process: subprocess.Popen[str]
    api: client.ApiClient
    ready_line_s: float  # launch -> "ready:" line
    nodes_ready_s: float  # launch -> node list with every node Ready


def _all_nodes_ready(core: client.CoreV1Api, expected: int) -> bool:
    nodes = core.list_node().items
    ready = [
        n for n in nodes if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
    ]
    return len(nodes) == expected and len(ready) == expected


@contextlib.contextmanager
def cluster_up(profile: str, state_dir: Path) -> Iterator[Running]:
    """Launch ``nrop-cluster up``, time it to Ready, yield it, then stop it with SIGTERM."""
    expected = len(load_profile(profile).nodes())
    command = [str(Path(sys.executable).with_name("nrop-cluster")), "up", "--profile", profile]
    command += ["--state-dir", str(state_dir)]
    log = (state_dir.parent / f"{profile}.log").open("w")
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until the line, or EOF if the cluster dies
        ready_line = time.perf_counter() - start
        if not line.startswith("ready: kubeconfig="):
            process.wait(timeout=STOP_TIMEOUT)
            tail = Path(log.name).read_text().splitlines()[-10:]
            raise RuntimeError(f"nrop-cluster up --profile {profile} ended early:\n" + "\n".join(tail))
        api = config.new_client_from_config(config_file=line.split("=", 1)[1].strip())
        core = client.CoreV1Api(api)
        while not _all_nodes_ready(core, expected):
            if time.perf_counter() - start > READY_TIMEOUT:
                raise TimeoutError(f"{profile}: not all {expected} nodes Ready after {READY_TIMEOUT:.0f} s")
            time.sleep(0.05)
        nodes_ready = time.perf_counter() - start
        yield Running(process, api, ready_line, nodes_ready)
        api.close()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _pod_template() -> client.V1PodTemplateSpec:
    container = client.V1Container(
        name="pause", image=PAUSE_IMAGE, resources=client.V1ResourceRequirements(requests=REQUESTS)
    )
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels={"app": APP}),
        spec=client.V1PodSpec(containers=[container], termination_grace_period_seconds=0),
    )


def create_deployment(api: client.ApiClient, replicas: int) -> None:
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name=APP),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels={"app": APP}),
            template=_pod_template(),
        ),
    )
    client.AppsV1Api(api).create_namespaced_deployment(NAMESPACE, body)


def create_pods(api: client.ApiClient, count: int, threads: int) -> None:
    core = client.CoreV1Api(api)
    template = _pod_template()

    def create(i: int) -> None:
        meta = client.V1ObjectMeta(name=f"{APP}-{i:04}", labels=template.metadata.labels)
        core.create_namespaced_pod(NAMESPACE, client.V1Pod(metadata=meta, spec=template.spec))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(create, range(count)))


def time_pods_running(
    api: client.ApiClient, count: int, workload: str, threads: int, timeout: float
) -> float:
    """Seconds from creating ``count`` pause pods until a watch has seen them all Running."""
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    since = core.list_namespaced_pod(NAMESPACE).metadata.resource_version
    start = time.perf_counter()
    if workload == "deployment":
        create_deployment(api, count)
    else:
        create_pods(api, count, threads)
    phases: dict[str, str] = {}
    running = 0
    deadline = start + timeout
    while running < count:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"{running}/{count} pods Running after {timeout:.0f} s")
        stream = watch.Watch().stream(
            core.list_namespaced_pod,
            NAMESPACE,
            label_selector=f"app={APP}",
            resource_version=since,
            timeout_seconds=max(1, int(remaining)),
        )
        for event in stream:
            pod = event["object"]
            since = pod.metadata.resource_version
            name = pod.metadata.name
            phase = "" if event["type"] == "DELETED" else pod.status.phase or ""
            running += (phase == "Running") - (phases.get(name) == "Running")
            phases[name] = phase
            if running >= count:
                break
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000, help="pause pods to run [default: 1000]")
    parser.add_argument(
        "--workload",
        choices=("deployment", "pods"),
        default="deployment",
        help="one Deployment with --pods replicas, or --pods bare pods created concurrently [default: deployment]",
    )
    parser.add_argument(
        "--threads", type=int, default=8, help="client threads for --workload pods [default: 8]"
    )
    parser.add_argument("--big-profile", default="fifty", help="profile of the scale run [default: fifty]")
    parser.add_argument("--skip-default", action="store_true", help="skip the default profile's start-up")
    parser.add_argument("--pods-timeout", type=float, default=600.0, help="give up after this many seconds")
    args = parser.parse_args()

    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="nrop-bench-cluster-") as tmp:
        if not args.skip_default:
            with cluster_up("default", Path(tmp) / "default") as up:
                figures += [
                    Figure("default: launch -> ready line", up.ready_line_s, "s"),
                    Figure("default: launch -> all nodes Ready", up.nodes_ready_s, "s", 5.0),
                    Figure("default: peak RSS (VmHWM)", peak_rss_mib(up.process.pid), "MiB"),
                ]
        big = args.big_profile
        with cluster_up(big, Path(tmp) / big) as up:
            figures += [
                Figure(f"{big}: launch -> ready line", up.ready_line_s, "s"),
                Figure(f"{big}: launch -> all nodes Ready", up.nodes_ready_s, "s", 30.0),
                Figure(f"{big}: peak RSS after start-up", peak_rss_mib(up.process.pid), "MiB"),
            ]
            elapsed = time_pods_running(up.api, args.pods, args.workload, args.threads, args.pods_timeout)
            figures += [
                Figure(f"{big}: {args.pods} pods ({args.workload}) Running", elapsed, "s", 60.0),
                Figure(f"{big}: pods Running per second", args.pods / elapsed, "pods/s"),
                Figure(f"{big}: peak RSS (VmHWM) with the pods", peak_rss_mib(up.process.pid), "MiB"),
            ]
    print(f"cpus={os.cpu_count()} load average={os.getloadavg()[0]:.2f} python={sys.version.split()[0]}")
    print(format_table(figures))


if __name__ == "__main__":
    main()
