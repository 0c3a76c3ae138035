"""Benchmark: how soon the NRT object reflects a pod admission, reactive vs periodic exporter.

One embedded cluster (``nrop-cluster up``, its own process) with two NUMA-aware workers;
one ``resource-topology-exporter`` per worker, each its own process, at upstream's
defaults (rate limit 1 scan/s) except for the refresh mode:

* ``worker-0`` **reactive**: ``--notify-file <node root>/run/rte/notify`` (the kubelet
  rewrites it when a container starts or stops), ``--sleep-interval 0``;
* ``worker-1`` **periodic**: ``--sleep-interval 10s``, no notify file.

This process admits guaranteed pods (2 exclusive CPUs each, so every admission changes
the pods fingerprint) on both workers at the same moments: one operation every
``--spacing`` seconds, a creation while fewer than ``--pool`` pods live on the worker,
else the deletion of its oldest pod. Two watches time each pod: the pod watch gives the
moment it became ``Running``; the NRT watch the first object whose fingerprint is that
of a pod set containing it (every set the bench creates is fingerprinted in advance).
The delay of a pod is the difference; both moments are taken in this process.

Operations are spaced by at least the rate limit's period (1 s by default): a burst
of admissions within one period shares one scan per second by design, so a reactive
p95 of 500 ms is only reachable for spaced admissions (``--spacing 0.3`` shows bursts).

    python bench/rte_latency.py [--pods 100] [--spacing 1.2] [--pool 12] [--interval 10s]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from nrop.api import crds, fingerprint
from nrop.api.nrt import GROUP, PLURAL, VERSION, NodeResourceTopology

REACTIVE, PERIODIC = "worker-0", "worker-1"
NAMESPACE = "rte-bench"
BIN = Path(sys.executable).parent


# ----------------------------------------------------------------------------- processes


@contextlib.contextmanager
def cluster(state_dir: Path, profile: str) -> Iterator[Path]:
    """``nrop-cluster up`` in its own process; yields the kubeconfig once it is ready."""
    log = (state_dir / "cluster.log").open("w")
    proc = subprocess.Popen(
        [str(BIN / "nrop-cluster"), "up", "--profile", profile, "--state-dir", str(state_dir / "c")],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("ready: kubeconfig="):
            raise SystemExit(f"cluster did not start; see {state_dir / 'cluster.log'}")
        yield Path(line.strip().split("=", 1)[1])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


@contextlib.contextmanager
def exporter(node: str, root: Path, kubeconfig: Path, mode_args: list[str], log_path: Path) -> Iterator[None]:
    args = [
        str(BIN / "resource-topology-exporter"), "--kubeconfig", str(kubeconfig), "--hostname", node,
        "--sysfs", str(root / "sys"),
        "--podresources-socket", f"unix://{root / 'var/lib/kubelet/pod-resources/kubelet.sock'}",
        "--topology-manager-policy", "single-numa-node", "--topology-manager-scope", "pod",
        "--podreadiness=false", *mode_args,
    ]  # fmt: skip
    with log_path.open("w") as log:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
        try:
            yield
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


# ----------------------------------------------------------------------------- timing


@dataclass
class Timings:
    """What the watches saw, stamped with ``time.monotonic()`` on arrival."""

    running: dict[str, float] = field(default_factory=dict)
    reflected: dict[str, float] = field(default_factory=dict)
    #: node -> fingerprint -> the pod set it stands for (registered before each operation).
    sets: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def expect(self, node: str, pods: frozenset[str]) -> None:
        sign = fingerprint.compute((NAMESPACE, name) for name in pods)
        with self.lock:
            self.sets.setdefault(node, {})[sign] = pods

    def on_pod(self, obj: dict[str, Any], now: float) -> None:
        if (obj.get("status") or {}).get("phase") == "Running":
            with self.lock:
                self.running.setdefault(obj["metadata"]["name"], now)

    def on_nrt(self, obj: dict[str, Any], now: float) -> None:
        node = obj["metadata"]["name"]
        sign = NodeResourceTopology.from_dict(obj).pods_fingerprint
        with self.lock:
            for name in self.sets.get(node, {}).get(sign or "", ()):
                self.reflected.setdefault(name, now)


def follow(stream_of: Any, handle: Any, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        with contextlib.suppress(Exception):  # the cluster stopping ends the stream
            for event in stream_of():
                handle(event["object"], time.monotonic())
                if stop.is_set():
                    return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


# ----------------------------------------------------------------------------- the run


def wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def run(args: argparse.Namespace, kubeconfig: Path, node_root: Path, state_dir: Path) -> Timings:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ext = client.ApiextensionsV1Api(api)
    crd = crds.load("noderesourcetopologies")
    ext.create_custom_resource_definition(crd)
    wait(lambda: any(c.type == "Established" for c in ext.read_custom_resource_definition(
        crd["metadata"]["name"]).status.conditions or ()), 10, "the NRT CRD")  # fmt: skip
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))

    timings, stop = Timings(), threading.Event()
    for node in (REACTIVE, PERIODIC):
        timings.expect(node, frozenset())
    modes = {
        REACTIVE: ["--notify-file", str(node_root / REACTIVE / "run/rte/notify"), "--sleep-interval", "0"],
        PERIODIC: ["--sleep-interval", args.interval],
    }
    if args.max_events_per_second is not None:
        for mode in modes.values():
            mode += ["--max-events-per-second", str(args.max_events_per_second)]
    with contextlib.ExitStack() as stack:
        for node, mode in modes.items():
            stack.enter_context(exporter(node, node_root / node, kubeconfig, mode, state_dir / f"{node}.log"))

        def nrt_exists(node: str) -> bool:
            with contextlib.suppress(client.ApiException):
                return bool(custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, node))
            return False

        wait(lambda: all(nrt_exists(n) for n in modes), 30, "both NRT objects")
        pod_api = config.new_client_from_config(config_file=str(kubeconfig))
        nrt_api = config.new_client_from_config(config_file=str(kubeconfig))
        pod_rv = core.list_namespaced_pod(NAMESPACE).metadata.resource_version
        nrt_rv = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)["metadata"]["resourceVersion"]
        follow(
            lambda: watch.Watch().stream(
                client.CoreV1Api(pod_api).list_namespaced_pod,
                NAMESPACE,
                resource_version=pod_rv,
                deserialize=False,
            ),
            timings.on_pod,
            stop,
        )
        follow(lambda: watch.Watch().stream(client.CustomObjectsApi(nrt_api).list_cluster_custom_object,
                                            GROUP, VERSION, PLURAL, resource_version=nrt_rv),
               timings.on_nrt, stop)  # fmt: skip

        live: dict[str, deque[str]] = {node: deque() for node in modes}
        created = 0
        next_at = time.monotonic() + args.spacing  # the initial scans also count against the rate limit
        while created < args.pods:
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += args.spacing
            create = len(live[REACTIVE]) < args.pool
            for node in modes:
                if create:
                    name = f"{node}-{created:04d}"
                    live[node].append(name)
                    timings.expect(node, frozenset(live[node]))
                    core.create_namespaced_pod(NAMESPACE, pod_body(name, node))
                else:
                    name = live[node].popleft()
                    timings.expect(node, frozenset(live[node]))
                    core.delete_namespaced_pod(name, NAMESPACE)
            created += create
            if created % 20 == 0 and create:
                print(f"  {created}/{args.pods} admissions per worker", file=sys.stderr)

        names = [f"{node}-{i:04d}" for node in modes for i in range(args.pods)]
        grace = args.interval_seconds + 5
        with contextlib.suppress(SystemExit):
            wait(lambda: all(n in timings.reflected for n in names), grace, "every admission to be reflected")
        stop.set()
        for node in modes:
            for name in live[node]:
                core.delete_namespaced_pod(name, NAMESPACE)
        pod_api.close()
        nrt_api.close()
    api.close()
    return timings


def pod_body(name: str, node: str) -> dict[str, Any]:
    limits = {"cpu": "2", "memory": "64Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits}}],
        },
    }


def report(args: argparse.Namespace, timings: Timings) -> None:
    rows: dict[str, dict[str, float]] = {}
    for label, node in (("reactive", REACTIVE), ("periodic", PERIODIC)):
        names = [f"{node}-{i:04d}" for i in range(args.pods)]
        delays = [
            (timings.reflected[n] - timings.running[n]) * 1000
            for n in names
            if n in timings.running and n in timings.reflected
        ]
        if not delays:
            raise SystemExit(f"{label}: no admission was both seen Running and reflected")
        rows[label] = {
            "n": len(delays),
            "missed": len(names) - len(delays),
            "early": sum(d < 0 for d in delays),
            "p50": percentile(delays, 50),
            "p95": percentile(delays, 95),
            "max": max(delays),
        }
    rate = args.max_events_per_second if args.max_events_per_second is not None else "1 (default)"
    print(f"pods per worker: {args.pods}, one operation every {args.spacing:g}s, pool {args.pool}, "
          f"rate limit {rate}/s, periodic interval {args.interval}")  # fmt: skip
    print()
    print(f"{'delay Running -> NRT (ms)':<28}{'reactive':>12}{'periodic':>12}{'ratio':>10}")
    for key in ("p50", "p95", "max"):
        reactive, periodic = rows["reactive"][key], rows["periodic"][key]
        ratio = periodic / reactive if reactive > 0 else float("inf")
        print(f"{key:<28}{reactive:>12.0f}{periodic:>12.0f}{ratio:>9.1f}x")
    for key, text in (
        ("n", "admissions measured"),
        ("missed", "not measured"),
        ("early", "NRT before Running"),
    ):
        print(f"{text:<28}{rows['reactive'][key]:>12.0f}{rows['periodic'][key]:>12.0f}")
    verdict = "met" if rows["reactive"]["p95"] <= args.target_ms else "NOT met"
    print(f"\ntarget: reactive p95 <= {args.target_ms:g} ms: {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=100, help="admissions per worker (default 100)")
    parser.add_argument("--spacing", type=float, default=1.2, help="seconds between operations (default 1.2)")
    parser.add_argument(
        "--pool", type=int, default=12, help="pods kept per worker before deleting (default 12)"
    )
    parser.add_argument(
        "--interval", default="10s", help="periodic exporter's --sleep-interval (default 10s)"
    )
    parser.add_argument("--max-events-per-second", type=int, default=None,
                        help="pass to both exporters (default: theirs, 1)")  # fmt: skip
    parser.add_argument("--profile", default="default", help="cluster profile with two NUMA workers")
    parser.add_argument("--target-ms", type=float, default=500.0, help="reactive p95 target (default 500)")
    args = parser.parse_args(argv)
    from nrop.api.durations import parse_duration

    args.interval_seconds = parse_duration(args.interval)
    if args.pool * args.spacing <= args.interval_seconds + 1:
        # The first pods live pool x spacing seconds: a periodic scan must fall within.
        parser.error("pods would be deleted before a periodic scan sees them: raise --pool or --spacing")
    # Unix socket paths are limited to 107 bytes: keep the node roots short.
    state_dir = Path(tempfile.mkdtemp(prefix="rtel-", dir="/tmp"))
    try:
        with cluster(state_dir, args.profile) as kubeconfig:
            timings = run(args, kubeconfig, state_dir / "c" / "nodes", state_dir)
        report(args, timings)
    finally:
        if not os.environ.get("KEEP_STATE"):
            shutil.rmtree(state_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
