"""Benchmark: scheduling cycles per second of the framework runtime with the in-tree default profile.

A synthetic cluster of N nodes (one tainted control plane, workers with a few pods each,
labels, some PreferNoSchedule taints) and a stream of pods with requests, a node selector
on some and tolerations on others.  Each pod goes through the queue (add, pop) and a full
``Profile.schedule`` + ``run_reserve``; the chosen node's NodeInfo takes the pod, so the
cluster fills up as upstream's cache would.  Prints pods/s and the mean cycle time.

    python bench/sched_runtime.py [--nodes 100] [--pods 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import time

from nrop.sched.framework import registry
from nrop.sched.framework.interface import CycleState, NodeInfo, PodInfo, implements
from nrop.sched.framework.queue import SchedulingQueue
from nrop.sched.framework.runtime import Profile

POINTS = (
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "bind",
    "postBind",
)


def default_profile(seed: int) -> Profile:
    plugins = [
        (registry.IN_TREE[d.name](), d.weight)
        for d in registry.DEFAULT_MULTI_POINT
        if d.name in registry.IN_TREE
    ]
    by_point = {point: [(p, w) for p, w in plugins if implements(type(p), point)] for point in POINTS}
    by_point["preEnqueue"] = [(p, w) for p, w in plugins if hasattr(p, "pre_enqueue")]
    return Profile("default-scheduler", by_point, rng=random.Random(seed))


def make_pod(name: str, cpu_m: int, mem_mi: int, **spec) -> dict:
    resources = {"requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}}
    return {
        "metadata": {"name": name, "namespace": "bench", "uid": name},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": resources}], **spec},
        "status": {},
    }


def make_cluster(count: int, rng: random.Random) -> list[NodeInfo]:
    nodes = []
    for i in range(count):
        taints = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}] if i == 0 else []
        if i % 7 == 3:
            taints.append({"key": "soft", "effect": "PreferNoSchedule"})
        node = {
            "metadata": {
                "name": f"node-{i:04}",
                "labels": {"zone": f"z{i % 3}", "kubernetes.io/hostname": f"node-{i:04}"},
            },
            "spec": {"taints": taints},
            "status": {
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "100Gi"}
            },
        }
        pods = [
            make_pod(f"base-{i}-{j}", rng.randrange(100, 2000), rng.randrange(64, 4096)) for j in range(10)
        ]
        nodes.append(NodeInfo.of(node, pods))
    return nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    profile = default_profile(args.seed)
    nodes = make_cluster(args.nodes, rng)
    by_name = {n.name: n for n in nodes}
    clock = [0.0]
    queue = SchedulingQueue(
        profile.queue_sort_less,
        pre_enqueue=profile.pre_enqueue,
        events_to_register={profile.name: profile.events_to_register()},
        clock=lambda: clock[0],
    )
    scheduled = failed = 0
    start = time.perf_counter()
    for i in range(args.pods):
        spec: dict = {}
        if i % 3 == 0:
            spec["nodeSelector"] = {"zone": f"z{i % 3}"}
        if i % 5 == 0:
            spec["tolerations"] = [{"key": "soft", "operator": "Exists"}]
        queue.add(make_pod(f"p{i}", rng.randrange(100, 500), rng.randrange(64, 512), **spec))
        info = queue.pop()
        assert info is not None
        state = CycleState()
        result = profile.schedule(state, info.pod, nodes)
        if result.node is None:
            failed += 1
            queue.add_unschedulable(info, result.error.unschedulable_plugins if result.error else ())
            continue
        profile.run_reserve(state, info.pod, result.node)
        by_name[result.node].add_pod(PodInfo.of(info.pod))
        queue.done(info.pod)
        scheduled += 1
    elapsed = time.perf_counter() - start
    print(f"nodes={args.nodes} pods={args.pods} scheduled={scheduled} unschedulable={failed}")
    print(f"{args.pods / elapsed:.0f} pods/s, {1000 * elapsed / args.pods:.2f} ms per cycle")


if __name__ == "__main__":
    main()
