"""Benchmark: time from creating the NUMAResourcesOperator and NUMAResourcesScheduler to a working stack.

For each profile an embedded cluster runs in this process (a background thread); the
operator is installed as users do (``install_manifests``: it runs as a pod of the
project's image) and, once its Deployment is ready, the two samples are created.
Measured from that moment: every worker's NRT published, the scheduler Deployment
ready, and both CRs ``Available=True`` (the figure held to the target: 15 s on
``default``). Also reported: the operator's own start (install to ready).

Prints a table: profile, figure, target, measured. Never run in CI: the figures depend
on the machine and its load.

    python bench/operator.py [--profiles default,fifty] [--timeout 300]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client, config

from nrop.localcluster.cluster import ClusterConfig, ClusterThread
from nrop.operator import samples
from nrop.operator.decisions.manifests import install_manifests
from nrop.operator.kubeapi import Api

GROUP, VERSION = "nodetopology.openshift.io", "v1"
TARGETS = {"default": 15.0}
POLL = 0.2


def _until(check: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what} not reached in {timeout:.0f}s")
        time.sleep(POLL)
    return time.monotonic() - start


def _available(custom: client.CustomObjectsApi, plural: str, name: str) -> bool:
    try:
        obj = custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
    except client.ApiException:
        return False
    return any(
        c["type"] == "Available" and c["status"] == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def measure(profile: str, timeout: float) -> list[tuple[str, float, float | None]]:
    state = Path(tempfile.mkdtemp(prefix="nrop-bop-", dir="/tmp"))
    runner = ClusterThread(ClusterConfig(profile=profile, state_dir=state / "c", bookmark_interval=1.0))
    try:
        with runner:
            configuration = client.Configuration()
            config.load_kube_config(
                config_file=str(runner.cluster.kubeconfig_path), client_configuration=configuration
            )
            api_client = client.ApiClient(configuration)
            api, core = Api(api_client), client.CoreV1Api(api_client)
            apps, custom = client.AppsV1Api(api_client), client.CustomObjectsApi(api_client)
            workers = [
                n.metadata.name
                for n in core.list_node().items
                if "node-role.kubernetes.io/worker" in (n.metadata.labels or {})
            ]
            for manifest in install_manifests():
                api.apply(manifest)

            def operator_ready() -> bool:
                try:
                    status = apps.read_namespaced_deployment(
                        "numaresources-controller-manager", "numaresources"
                    ).status
                except client.ApiException:
                    return False
                return (status.ready_replicas or 0) >= 1

            operator_s = _until(operator_ready, timeout, "the operator ready")
            created = time.monotonic()
            for kind, plural in (("NUMAResourcesOperator", "numaresourcesoperators"),
                                 ("NUMAResourcesScheduler", "numaresourcesschedulers")):  # fmt: skip
                custom.create_cluster_custom_object(GROUP, VERSION, plural, samples.load(kind))

            def nrts() -> bool:
                try:
                    items: list[dict[str, Any]] = custom.list_cluster_custom_object(
                        "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"
                    )["items"]
                except client.ApiException:
                    return False
                return set(workers) <= {o["metadata"]["name"] for o in items}

            nrt_s = _until(nrts, timeout, "an NRT for every worker")
            _until(
                lambda: (
                    _available(custom, "numaresourcesschedulers", "numaresourcesscheduler")
                    and _available(custom, "numaresourcesoperators", "numaresourcesoperator")
                ),
                timeout,
                "both CRs Available",
            )
            stack_s = time.monotonic() - created
            return [
                ("operator install -> ready", operator_s, None),
                (f"CRs -> NRTs of {len(workers)} workers", nrt_s, None),
                ("CRs -> NRTs + scheduler ready + both Available", stack_s, TARGETS.get(profile)),
            ]
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profiles", default="default,fifty", help="comma-separated profiles (default: default,fifty)"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per wait (default 300)")
    args = parser.parse_args()
    rows = []
    for profile in args.profiles.split(","):
        for name, seconds, target in measure(profile, args.timeout):
            rows.append((profile, name, target, seconds))
    print(f"{'profile':<9} {'figure':<48} {'target':>8} {'measured':>9}  verdict")
    for profile, name, target, seconds in rows:
        verdict = "" if target is None else ("met" if seconds <= target else "missed")
        target_text = "-" if target is None else f"{target:.0f} s"
        print(f"{profile:<9} {name:<48} {target_text:>8} {seconds:>7.1f} s  {verdict}")


if __name__ == "__main__":
    main()
