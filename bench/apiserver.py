"""Benchmark: the embedded API server against kmock's KubernetesEmulator, side by side.

Each server runs in its own process; this process is the client (aiohttp, a
few concurrent requests).  The same workload runs against both in one
invocation: create, get, list, merge-patch of ConfigMaps, then a watch
fan-out (W watchers, events timed from the write's request to each watcher).
Prints ops/s and p50/p99 latency per operation for both servers and the ratio.
Then the cost of Kubernetes protobuf on our server: create, get and list of Pods
with JSON bodies and ``Accept: application/json`` against protobuf bodies and
client-go's ``Accept`` (protobuf, then JSON), side by side.

Our server is measured as it is used: HTTPS with a bearer token.  kmock serves
plain HTTP with no authentication.

    python bench/apiserver.py [--objects 1000] [--concurrency 8] [--watchers 50] [--events 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import ssl
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml


@dataclass
class Target:
    name: str
    url: str
    headers: dict[str, str]
    ssl: ssl.SSLContext | bool


def _serve_ours(queue: mp.Queue, state_dir: str) -> None:  # type: ignore[type-arg]
    import logging

    from nrop.localcluster.cluster import ClusterConfig, LocalCluster

    logging.basicConfig(level=logging.WARNING)

    async def main() -> None:
        cluster = LocalCluster(ClusterConfig(profile="empty", state_dir=Path(state_dir)))
        await cluster.start()
        queue.put((cluster.url, str(cluster.kubeconfig_path)))
        await asyncio.Event().wait()

    asyncio.run(main())


def _serve_kmock(queue: mp.Queue) -> None:  # type: ignore[type-arg]
    import kmock

    async def main() -> None:
        async with kmock.KubernetesEmulator() as emulator, kmock.Server(emulator) as server:
            queue.put((str(server.url).rstrip("/"), ""))
            await asyncio.Event().wait()

    asyncio.run(main())


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))
    return ordered[index]


@dataclass
class OpResult:
    ops_per_s: float
    p50_ms: float
    p99_ms: float


async def _run_op(count: int, concurrency: int, op: Callable[[int], Awaitable[None]]) -> OpResult:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            await op(i)
            latencies.append(time.perf_counter() - start)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return OpResult(count / elapsed, _percentile(latencies, 50) * 1000, _percentile(latencies, 99) * 1000)


async def _check(response: aiohttp.ClientResponse, expected: tuple[int, ...]) -> Any:
    body = await response.read()
    if response.status not in expected:
        raise RuntimeError(f"{response.method} {response.url} -> {response.status}: {body[:200]!r}")
    return body


async def run_workload(
    target: Target, objects: int, concurrency: int, watchers: int, events: int
) -> dict[str, OpResult]:
    base = f"{target.url}/api/v1/namespaces/default/configmaps"
    connector = aiohttp.TCPConnector(limit=concurrency + watchers + 4, ssl=target.ssl)
    results: dict[str, OpResult] = {}
    async with aiohttp.ClientSession(connector=connector, headers=target.headers) as session:

        async def create(i: int) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "namespace": "default", "labels": {"bench": "yes"}},
                "data": {"k": str(i)},
            }
            async with session.post(base, json=body) as response:
                await _check(response, (200, 201))

        async def get(i: int) -> None:
            async with session.get(f"{base}/cm-{i}") as response:
                await _check(response, (200,))

        async def list_all(_: int) -> None:
            async with session.get(base) as response:
                await _check(response, (200,))

        async def patch(i: int) -> None:
            headers = {"Content-Type": "application/merge-patch+json"}
            async with session.patch(
                f"{base}/cm-{i}", data=b'{"data":{"p":"1"}}', headers=headers
            ) as response:
                await _check(response, (200,))

        results["create"] = await _run_op(objects, concurrency, create)
        results["get"] = await _run_op(objects, concurrency, get)
        results["list"] = await _run_op(max(10, objects // 20), concurrency, list_all)
        results["patch"] = await _run_op(objects, concurrency, patch)
        results["watch"] = await _watch_fanout(session, target, watchers, events)
    return results


PROTOBUF = "application/vnd.kubernetes.protobuf"


def _pod(name: str, wire: str) -> dict[str, Any]:
    """A Pod about the size of the suite's: two containers with resources, labels, a toleration."""
    container = {
        "image": "registry.example/app:1",
        "command": ["sleep", "inf"],
        "resources": {"limits": {"cpu": "1", "memory": "64Mi"}, "requests": {"cpu": "1", "memory": "64Mi"}},
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"bench": wire, "app": name}},
        "spec": {
            "containers": [{"name": "a", **container}, {"name": "b", **container}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
        },
    }


async def run_wire_workload(target: Target, objects: int, concurrency: int, wire: str) -> dict[str, OpResult]:
    """Create, get and list Pods in one wire format: ``json`` or ``protobuf`` (as client-go does)."""
    from nrop.localcluster.apiserver.wire import protobuf

    base = f"{target.url}/api/v1/namespaces/default/pods"
    if wire == "protobuf":
        headers = {"Accept": f"{PROTOBUF}, application/json", "Content-Type": PROTOBUF}
        encode: Callable[[dict[str, Any]], bytes] = protobuf.encode
    else:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}

        def encode(obj: dict[str, Any]) -> bytes:
            import orjson

            return orjson.dumps(obj)

    connector = aiohttp.TCPConnector(limit=concurrency + 4, ssl=target.ssl)
    results: dict[str, OpResult] = {}
    async with aiohttp.ClientSession(connector=connector, headers={**target.headers, **headers}) as session:

        async def create(i: int) -> None:
            async with session.post(base, data=encode(_pod(f"{wire}-{i}", wire))) as response:
                await _check(response, (201,))

        async def get(i: int) -> None:
            async with session.get(f"{base}/{wire}-{i}") as response:
                await _check(response, (200,))

        async def list_all(_: int) -> None:
            async with session.get(base, params={"labelSelector": f"bench={wire}"}) as response:
                await _check(response, (200,))

        results["create"] = await _run_op(objects, concurrency, create)
        results["get"] = await _run_op(objects, concurrency, get)
        results["list"] = await _run_op(max(10, objects // 50), concurrency, list_all)
    return results


async def _watch_fanout(
    session: aiohttp.ClientSession, target: Target, watchers: int, events: int
) -> OpResult:
    base = f"{target.url}/api/v1/namespaces/default/configmaps"
    async with session.get(base) as response:
        listing = await response.json(content_type=None)
    rv = listing.get("metadata", {}).get("resourceVersion", "")
    sent: dict[str, float] = {}
    latencies: list[float] = []
    ready = asyncio.Event()
    opened = 0
    done = asyncio.Event()
    received = 0

    async def watcher() -> None:
        nonlocal opened, received
        params = {"watch": "true"}
        if rv.isdigit():
            params["resourceVersion"] = rv
        async with session.get(base, params=params, timeout=aiohttp.ClientTimeout(total=None)) as response:
            opened += 1
            if opened == watchers:
                ready.set()
            async for line in response.content:
                now = time.perf_counter()
                if b'"w-' not in line:
                    continue
                import orjson

                event = orjson.loads(line)
                name = event["object"]["metadata"]["name"]
                if name in sent:
                    latencies.append(now - sent[name])
                    received += 1
                    if received >= watchers * events:
                        done.set()

    tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
    await asyncio.wait_for(ready.wait(), 30)
    await asyncio.sleep(0.5)
    started = time.perf_counter()
    for i in range(events):
        name = f"w-{i}"
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"k": "v"},
        }
        sent[name] = time.perf_counter()
        async with session.post(base, json=body) as response:
            await _check(response, (200, 201))
        await asyncio.sleep(0.005)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 30)
    elapsed = time.perf_counter() - started
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    delivered = len(latencies)
    if delivered < watchers * events:
        sys.stderr.write(f"{target.name}: only {delivered}/{watchers * events} watch events arrived\n")
    return OpResult(delivered / elapsed, _percentile(latencies, 50) * 1000, _percentile(latencies, 99) * 1000)


def _start(target: Callable[..., None], *args: Any) -> tuple[mp.Process, str, str]:
    queue: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    process = mp.Process(target=target, args=(queue, *args), daemon=True)
    process.start()
    url, kubeconfig = queue.get(timeout=60)
    return process, url, kubeconfig


def _ours_target(url: str, kubeconfig: str) -> Target:
    config = yaml.safe_load(Path(kubeconfig).read_text())
    import base64

    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    context = ssl.create_default_context(cadata=ca)
    token = config["users"][0]["user"]["token"]
    return Target("nrop", url, {"Authorization": f"Bearer {token}"}, context)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--events", type=int, default=100)
    args = parser.parse_args(argv)
    import tempfile

    results: dict[str, dict[str, OpResult]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-apiserver-") as state:
        proc, url, kubeconfig = _start(_serve_ours, state)
        try:
            target = _ours_target(url, kubeconfig)
            results["nrop"] = asyncio.run(
                run_workload(target, args.objects, args.concurrency, args.watchers, args.events)
            )
            for wire in ("json", "protobuf"):
                results[wire] = asyncio.run(run_wire_workload(target, args.objects, args.concurrency, wire))
        finally:
            proc.terminate()
            proc.join(10)
    proc, url, _ = _start(_serve_kmock)
    try:
        target = Target("kmock", url, {}, False)
        results["kmock"] = asyncio.run(
            run_workload(target, args.objects, args.concurrency, args.watchers, args.events)
        )
    finally:
        proc.terminate()
        proc.join(10)

    header = f"{'operation':<10} {'nrop ops/s':>11} {'p50 ms':>8} {'p99 ms':>8} | {'kmock ops/s':>11} {'p50 ms':>8} {'p99 ms':>8} | {'ratio':>6}"
    lines = [
        f"objects={args.objects} concurrency={args.concurrency} watchers={args.watchers} events={args.events}",
        header,
        "-" * len(header),
    ]
    for op in ("create", "get", "list", "patch", "watch"):
        ours, theirs = results["nrop"][op], results["kmock"][op]
        ratio = ours.ops_per_s / theirs.ops_per_s if theirs.ops_per_s else float("inf")
        lines.append(
            f"{op:<10} {ours.ops_per_s:>11.0f} {ours.p50_ms:>8.2f} {ours.p99_ms:>8.2f} | "
            f"{theirs.ops_per_s:>11.0f} {theirs.p50_ms:>8.2f} {theirs.p99_ms:>8.2f} | {ratio:>5.2f}x"
        )
    shared = ("create", "get", "list", "patch")
    geo = statistics.geometric_mean(
        results["nrop"][o].ops_per_s / results["kmock"][o].ops_per_s for o in shared
    )
    lines.append(f"geometric mean throughput ratio over {', '.join(shared)}: {geo:.2f}x")
    lines.append(
        f"watch event p99 with {args.watchers} watchers: nrop {results['nrop']['watch'].p99_ms:.1f} ms, "
        f"kmock {results['kmock']['watch'].p99_ms:.1f} ms"
    )
    wire_header = f"{'pods':<10} {'json ops/s':>11} {'p50 ms':>8} {'p99 ms':>8} | {'proto ops/s':>11} {'p50 ms':>8} {'p99 ms':>8} | {'ratio':>6}"
    lines += [
        "",
        f"our server, JSON against protobuf ({args.objects} Pods)",
        wire_header,
        "-" * len(wire_header),
    ]
    for op in ("create", "get", "list"):
        js, pb = results["json"][op], results["protobuf"][op]
        lines.append(
            f"{op:<10} {js.ops_per_s:>11.0f} {js.p50_ms:>8.2f} {js.p99_ms:>8.2f} | "
            f"{pb.ops_per_s:>11.0f} {pb.p50_ms:>8.2f} {pb.p99_ms:>8.2f} | {pb.ops_per_s / js.ops_per_s:>5.2f}x"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
