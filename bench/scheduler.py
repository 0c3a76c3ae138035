"""Benchmark: the NUMA-aware scheduler end to end against the embedded API server.

An embedded cluster (profile ``empty``, no default scheduler, no controllers) runs in a
thread. For each size N the script creates N Node objects (``status.allocatable`` set)
with one NodeResourceTopology each (4 NUMA zones, ``single-numa-node``, scope pod or
container), then P pending guaranteed pods with ``schedulerName: topo-aware-scheduler``,
then starts an in-process :class:`nrop.sched.scheduler.Scheduler` (profile
``topo-aware-scheduler`` with NodeResourceTopologyMatch, over-reserve or passthrough
cache) in its own thread and event loop. It measures:

* pods/s: from the scheduler's start until its pod cache shows all P pods bound;
* per-pod scheduling latency: wall time of each ``Scheduler.schedule_one`` call (the
  scheduling cycle: filter, score, reserve; not the asynchronous bind), p50 and p99;
* cost growth: mean ``schedule_one`` time divided by nodes x zones, compared between sizes.

    python bench/scheduler.py [--sizes 10 100 500] [--pods 1000] [--scope pod|container]
                              [--cache overreserve|passthrough] [--profile FILE.prof]

Never run in CI. Targets: >= 100 pods/s at 100 nodes on 2 cores; cost linear in nodes x zones.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config

from nrop.api import crds
from nrop.api.clientconfig import load_kubeconfig
from nrop.api.nrt import GROUP, PLURAL, VERSION
from nrop.localcluster.cluster import ClusterConfig, ClusterThread
from nrop.localcluster.controllers import ControllerSettings
from nrop.sched.config import configuration as schedconfig
from nrop.sched.framework import registry
from nrop.sched.kubeclient import KubeClient
from nrop.sched.scheduler import Scheduler

ZONES = 4
SCHEDULER_NAME = "topo-aware-scheduler"
ZONE_CPU, ZONE_MEMORY_GI = 128, 512
POD_CPU, POD_MEMORY = "1", "1Gi"


@dataclass
class Figures:
    nodes: int
    pods: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.pods / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def mean(self) -> float:
        return sum(self.latencies) / len(self.latencies)

    @property
    def per_zone(self) -> float:
        """Mean cycle time per node x zone (microseconds)."""
        return self.mean / (self.nodes * ZONES) * 1e6


def scheduler_document(cache: str) -> dict[str, Any]:
    args: dict[str, Any] = {"scoringStrategy": {"type": "LeastAllocated"}}
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}
    if cache == "overreserve":
        args["cacheResyncPeriodSeconds"] = 5
    else:
        plugins["reserve"] = {"disabled": [{"name": "NodeResourceTopologyMatch"}]}
    profile = {
        "schedulerName": SCHEDULER_NAME,
        "plugins": plugins,
        "pluginConfig": [{"name": "NodeResourceTopologyMatch", "args": args}],
    }
    return {
        "apiVersion": schedconfig.API_VERSION,
        "kind": schedconfig.KIND,
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": 5000, "burst": 5000},
        "profiles": [profile],
    }


def node_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"bench": "sched"}}}


def node_status(nodes: int) -> dict[str, Any]:
    allocatable = {
        "cpu": str(ZONE_CPU * ZONES),
        "memory": f"{ZONE_MEMORY_GI * ZONES}Gi",
        "pods": "250",
        "ephemeral-storage": "100Gi",
    }
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    return {"status": {"capacity": allocatable, "allocatable": allocatable, "conditions": [ready]}}


def nrt_body(name: str, scope: str) -> dict[str, Any]:
    def resource(res: str, qty: str) -> dict[str, str]:
        return {"name": res, "capacity": qty, "allocatable": qty, "available": qty}

    zones = [
        {
            "name": f"node-{z}",
            "type": "Node",
            "costs": [{"name": f"node-{o}", "value": 10 if o == z else 21} for o in range(ZONES)],
            "resources": [resource("cpu", str(ZONE_CPU)), resource("memory", f"{ZONE_MEMORY_GI}Gi")],
        }
        for z in range(ZONES)
    ]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "topologyPolicies": ["None"],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": scope},
        ],
        "zones": zones,
    }


def pod_body(name: str) -> dict[str, Any]:
    resources = {"cpu": POD_CPU, "memory": POD_MEMORY}
    container = {"name": "c", "image": "pause", "resources": {"limits": resources, "requests": resources}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": SCHEDULER_NAME, "containers": [container]},
    }


def populate(api: client.ApiClient, nodes: int, pods: int, scope: str, namespace: str) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    for i in range(nodes):
        name = f"b{nodes}-{i:04}"
        core.create_node(node_body(name))
        core.patch_node_status(name, node_status(nodes))
        custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, nrt_body(name, scope))
    core.create_namespace({"metadata": {"name": namespace}})
    for i in range(pods):
        core.create_namespaced_pod(namespace, pod_body(f"p-{i:05}"))


def teardown(api: client.ApiClient, nodes: int, namespace: str) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    core.delete_namespace(namespace)
    for i in range(nodes):
        name = f"b{nodes}-{i:04}"
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
        core.delete_node(name)


def run_scheduler(kubeconfig: Path, cache: str, pods: int, namespace: str, profiler: cProfile.Profile | None,
                  timeout: float) -> tuple[float, list[float]]:  # fmt: skip
    """Start the scheduler in this thread's own loop; return (seconds to bind all, cycle times)."""
    cfg = schedconfig.parse(
        scheduler_document(cache), registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT
    )
    latencies: list[float] = []

    async def scenario() -> float:
        async with KubeClient(load_kubeconfig(kubeconfig), rate_limit=None) as kube:
            scheduler = Scheduler(cfg, kube)
            inner = scheduler.schedule_one

            def timed(item: Any) -> None:
                begin = time.perf_counter()
                inner(item)
                latencies.append(time.perf_counter() - begin)

            scheduler.schedule_one = timed  # type: ignore[method-assign]
            start = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            await scheduler.start()
            try:
                deadline = start + timeout
                while time.perf_counter() < deadline:
                    bound = sum(
                        1
                        for p in scheduler.pods.list()
                        if p["metadata"].get("namespace") == namespace and p["spec"].get("nodeName")
                    )
                    if bound >= pods:
                        return time.perf_counter() - start
                    await asyncio.sleep(0.05)
                raise TimeoutError(f"only {bound} of {pods} pods bound after {timeout:g}s")
            finally:
                if profiler is not None:
                    profiler.disable()
                await scheduler.stop()

    seconds = asyncio.run(scenario())
    return seconds, latencies


def measure(kubeconfig: Path, nodes: int, args: argparse.Namespace) -> Figures:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    with client.ApiClient(configuration) as api:
        t0 = time.perf_counter()
        populate(api, nodes, args.pods, args.scope, namespace)
        print(f"  {nodes} nodes: created objects in {time.perf_counter() - t0:.1f}s", flush=True)
        profiler = cProfile.Profile() if args.profile else None
        result: dict[str, Any] = {}

        def target() -> None:
            try:
                result["value"] = run_scheduler(
                    kubeconfig, args.cache, args.pods, namespace, profiler, args.timeout
                )
            except BaseException as exc:  # reported in the main thread
                result["error"] = exc

        thread = threading.Thread(target=target, name=f"scheduler-{nodes}")
        thread.start()
        thread.join()
        if "error" in result:
            raise result["error"]
        if profiler is not None:
            path = f"{args.profile}.{nodes}"
            profiler.dump_stats(path)
            print(f"  profile written to {path}")
        teardown(api, nodes, namespace)
    seconds, latencies = result["value"]
    return Figures(nodes, args.pods, seconds, latencies)


def report(figures: list[Figures]) -> None:
    print()
    print(
        f"{'nodes':>6} {'pods/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'us/node-zone':>13} {'cycles':>7}"
    )
    for f in figures:
        print(
            f"{f.nodes:>6} {f.rate:>8.1f} {f.percentile(0.5) * 1e3:>8.2f} {f.percentile(0.99) * 1e3:>8.2f} "
            f"{f.mean * 1e3:>8.2f} {f.per_zone:>13.2f} {len(f.latencies):>7}"
        )
    print()
    for small, large in itertools.pairwise(figures):
        size = large.nodes / small.nodes
        print(
            f"{small.nodes} -> {large.nodes} nodes (x{size:g}): mean cycle x{large.mean / small.mean:.2f}, "
            f"per node-zone x{large.per_zone / small.per_zone:.2f}, pods/s x{large.rate / small.rate:.2f}"
        )
    print(
        "(latency = wall time of Scheduler.schedule_one per scheduling attempt; pods/s = start to all bound)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500], help="node counts")
    parser.add_argument("--pods", type=int, default=1000, help="pending pods per size")
    parser.add_argument("--scope", choices=("pod", "container"), default="pod", help="topologyManagerScope")
    parser.add_argument("--cache", choices=("overreserve", "passthrough"), default="overreserve")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per size")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the scheduler thread into FILE.<nodes>")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="nrop-bsch-"))
    cluster_config = ClusterConfig(
        profile="empty",
        state_dir=state,
        default_scheduler=False,
        controllers=ControllerSettings(controllers=()),
    )
    figures = []
    with ClusterThread(cluster_config) as cluster:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(cluster.kubeconfig_path), client_configuration=configuration)
        with client.ApiClient(configuration) as api:
            client.ApiextensionsV1Api(api).create_custom_resource_definition(
                crds.load("noderesourcetopologies")
            )
        time.sleep(1.0)  # the CRD becomes Established asynchronously
        print(f"cache {args.cache}, scope {args.scope}, {ZONES} zones per node, {args.pods} pods", flush=True)
        for nodes in args.sizes:
            figures.append(measure(cluster.kubeconfig_path, nodes, args))
            report(figures)


if __name__ == "__main__":
    main()
