"""The embedded MachineConfig operator in a running cluster: pools, the initial KubeletConfig,
and a KubeletConfig change rolled out by rebooting the workers' kubelets one at a time."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.cluster import ClusterConfig, ClusterThread, LocalCluster
from nrop.localcluster.controllers.decisions import machineconfigs as mc
from nrop.localcluster.controllers.machineconfigoperator import GROUP, INITIAL_KUBELETCONFIG

KCS = (GROUP, "kubeletconfigs")
MCPS = (GROUP, "machineconfigpools")
NODES = ("", "nodes")
WORKERS = ("worker-0", "worker-1")


def _updated(cluster: LocalCluster, name: str) -> dict[str, Any] | None:
    obj = cluster.server.store.get(MCPS, "", name)
    conds = {c["type"]: c["status"] for c in ((obj or {}).get("status") or {}).get("conditions") or ()}
    return obj if conds.get("Updated") == "True" else None


def _until(check: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    return check()


def test_a_kubeletconfig_change_reboots_the_workers_into_the_new_configuration() -> None:
    thread = ClusterThread(ClusterConfig(default_scheduler=False))
    with thread as cluster:
        store = cluster.server.store
        before = _until(lambda: _updated(cluster, "worker"), 20)
        assert before is not None and before["status"]["machineCount"] == 2
        assert _updated(cluster, "master")["status"]["machineCount"] == 0
        initial = store.get(KCS, "", INITIAL_KUBELETCONFIG)
        assert initial["spec"]["kubeletConfig"] == {
            "topologyManagerPolicy": "single-numa-node",
            "topologyManagerScope": "pod",
        }
        assert initial["status"]["conditions"][0]["type"] == "Success"
        rendered = before["status"]["configuration"]["name"]
        uids = {}
        for name in WORKERS:
            meta = store.get(NODES, "", name)["metadata"]
            assert (
                meta["annotations"][mc.CURRENT_CONFIG] == meta["annotations"][mc.DESIRED_CONFIG] == rendered
            )
            uids[name] = meta["uid"]

        def change() -> None:
            kind = cluster.server.registry.lookup(GROUP, "v1", "kubeletconfigs")
            obj = copy.deepcopy(store.get(KCS, "", INITIAL_KUBELETCONFIG))
            obj["spec"]["kubeletConfig"]["topologyManagerScope"] = "container"
            cluster.server.rest.update(
                kind, "", INITIAL_KUBELETCONFIG, obj, WriteOptions(field_manager="test")
            )

        thread.call(change)
        after = _until(
            lambda: (
                (p := _updated(cluster, "worker")) and p["status"]["configuration"]["name"] != rendered and p
            ),
            30,
        )
        assert after, f"the worker pool did not roll out: {store.get(MCPS, '', 'worker')['status']}"
        target = after["status"]["configuration"]["name"]
        assert target.startswith("rendered-worker-")
        for name in WORKERS:
            meta = store.get(NODES, "", name)["metadata"]
            assert meta["uid"] == uids[name]
            assert meta["annotations"][mc.CURRENT_CONFIG] == meta["annotations"][mc.DESIRED_CONFIG] == target
            assert meta["annotations"][mc.STATE] == mc.STATE_DONE
            assert (
                cluster.fleet.kubelets[name].configz()["kubeletconfig"]["topologyManagerScope"] == "container"
            )


def test_a_kubeletconfig_the_kubelets_cannot_take_fails_and_changes_nothing() -> None:
    thread = ClusterThread(ClusterConfig(default_scheduler=False))
    with thread as cluster:
        store = cluster.server.store
        rendered = _until(lambda: _updated(cluster, "worker"), 20)["status"]["configuration"]["name"]
        bad = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "KubeletConfig",
            "metadata": {"name": "bad"},
            "spec": {
                "machineConfigPoolSelector": {
                    "matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}
                },
                "kubeletConfig": {"topologyManagerScope": "numa"},
            },
        }
        kind = cluster.server.registry.lookup(GROUP, "v1", "kubeletconfigs")
        thread.call(lambda: cluster.server.rest.create(kind, "", bad, WriteOptions(field_manager="test")))
        failed = _until(lambda: (store.get(KCS, "", "bad") or {}).get("status"), 10)
        condition = failed["conditions"][0]
        assert (condition["type"], condition["status"]) == ("Failure", "False")
        assert condition["message"].startswith(
            "Error: KubeletConfiguration for pool worker (node worker-0): "
        )
        assert _updated(cluster, "worker")["status"]["configuration"]["name"] == rendered
