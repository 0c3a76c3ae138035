"""Test-only plumbing of the conformance modules that run the project's programs beside an embedded cluster.

The suite installs the exporter through the operator; these modules instead run
``resource-topology-exporter`` (and ``nrop-scheduler``) as bare subprocesses against a
worker's node root, so that what they check is the program itself. What they share
lives here once: where a node's root and podresources socket are, what the kubelet reports
there for a pod, how a program of this
installation is started, a subprocess with its log in a file, the NRT CRD (created here,
awaited with :func:`nrop.suite.install.stack.wait_crds_established`), the KubeletConfiguration file
an exporter reads, one exporter per worker stopped cleanly at the end, and numacell on the
workers (:func:`nrop.suite.install.numacelldeploy.deploy_numacell`). NRTs are awaited with
:func:`nrop.suite.e2e.nrt.waiters.for_nrts`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import grpc
import yaml

from nrop.api import crds
from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc
from nrop.api.images import DEFAULT_IMAGE
from nrop.suite.e2e import objects
from nrop.suite.e2e.kube import Kube
from nrop.suite.install import nodegroups, nodetopology, numacelldeploy, stack
from nrop.suite.plugin.target import EmbeddedCluster

#: Where ``nrop-cluster up`` keeps each node's root below its state directory.
NODES_DIR = "nodes"
PODRESOURCES_SOCKET = "var/lib/kubelet/pod-resources/kubelet.sock"
NUMACELL_DAEMONSET = f"{numacelldeploy.NUMACELL_PREFIX}-worker-ds"
NUMACELL_POD_LABELS = {"name": f"{numacelldeploy.NUMACELL_PREFIX}-worker-pod"}
#: How often these modules poll the embedded cluster, which answers at once.
POLL_INTERVAL = 0.05

Manifest = dict[str, Any]


def node_root(cluster: EmbeddedCluster, node: str) -> Path:
    return cluster.state_dir / NODES_DIR / node


def podresources_socket(root: Path) -> Path:
    """The kubelet's podresources socket in a node root."""
    return root / PODRESOURCES_SOCKET


def pod_resources(root: Path, namespace: str, name: str) -> Any:
    """What the node's kubelet reports for one pod on its podresources socket (``List``)."""
    with grpc.insecure_channel(f"unix://{podresources_socket(root)}") as channel:
        response = api_pb2_grpc.PodResourcesListerStub(channel).List(
            api_pb2.ListPodResourcesRequest(), timeout=5
        )
    (pod,) = [p for p in response.pod_resources if (p.namespace, p.name) == (namespace, name)]
    return pod


def program(script: str, module: str) -> list[str]:
    """The installed console script next to the interpreter, else ``python -m module``."""
    path = Path(sys.executable).with_name(script)
    return [str(path)] if path.exists() else [sys.executable, "-m", module]


def exporter_env() -> dict[str, str]:
    """The environment without ``REFERENCE_*``: an exporter outside a pod of its own."""
    return {key: value for key, value in os.environ.items() if not key.startswith("REFERENCE_")}


class Process:
    """A subprocess whose output goes to a log file; ``stop()`` sends SIGTERM and returns the exit code.

    With ``pipe_stdout`` only stderr goes to the log, and stdout is left to the test to read.
    """

    def __init__(
        self, command: list[str], log_path: Path, env: Mapping[str, str], *, pipe_stdout: bool = False
    ) -> None:
        self.log_path = log_path
        self._log: IO[str] = log_path.open("w")
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE if pipe_stdout else self._log,
            stderr=self._log if pipe_stdout else subprocess.STDOUT,
            text=True,
            env=dict(env),
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


@contextlib.contextmanager
def stopped_cleanly(processes: Mapping[str, Process]) -> Iterator[None]:
    """Stop every process on the way out and fail unless each exited 0 (the logs in the message)."""
    try:
        yield
    finally:
        codes = {name: proc.stop() for name, proc in processes.items()}
        assert codes == dict.fromkeys(processes, 0), {name: p.log() for name, p in processes.items()}


def install_nrt_crd(kube: Kube, timeout: float = 20.0) -> None:
    """Create the NodeResourceTopology CRD and wait for it to be Established (the suite's wait)."""
    crd = crds.load("noderesourcetopologies")
    kube.create(crd)
    stack.wait_crds_established(kube, [crd["metadata"]["name"]], timeout, interval=POLL_INTERVAL)


def write_kubelet_config(kube: Kube, node: str, path: Path) -> Path:
    """The node's ``/configz`` (read through the API server) as a KubeletConfiguration file."""
    body = nodetopology.kubelet_configuration(kube, node)
    assert body is not None, f"configz of node {node} through the API server's node proxy"
    doc = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **body}
    path.write_text(yaml.safe_dump(doc))
    return path


def start_exporter(
    cluster: EmbeddedCluster,
    kube: Kube,
    node: str,
    files: Path,
    *mode: str,
    env: Mapping[str, str] | None = None,
    kubelet_config: Path | None = None,
) -> Process:
    """``resource-topology-exporter`` for ``node`` of ``cluster`` (its sysfs, podresources socket and
    kubelet configuration, written into ``files`` unless given), publishing through the API; ``mode``
    adds the flags of the test. Its log is ``files/<node>-exporter.log``."""
    root = node_root(cluster, node)
    kubelet = kubelet_config or write_kubelet_config(kube, node, files / f"{node}-kubelet.yaml")
    args = [
        "--kubeconfig", str(cluster.kubeconfig), "--hostname", node, "--sysfs", str(root / "sys"),
        "--podresources-socket", f"unix://{podresources_socket(root)}", "--kubelet-config-file", str(kubelet),
    ]  # fmt: skip
    command = [*program("resource-topology-exporter", "nrop.rte.main"), *args, *mode]
    return Process(command, files / f"{node}-exporter.log", exporter_env() if env is None else env)


def deploy_numacell(kube: Kube, namespace: str, timeout: float = 30.0) -> Manifest:
    """numacell (the project's image and program) on every worker, as the suite deploys it
    (:func:`nrop.suite.install.numacelldeploy.deploy_numacell`); the ready DaemonSet. The namespace is
    created here and deleting it removes everything."""
    kube.create(objects.new_namespace(namespace))
    (daemonset,) = numacelldeploy.deploy_numacell(
        kube,
        namespace,
        nodegroups.node_group_pools([{"poolName": "worker"}]),
        DEFAULT_IMAGE,
        timeout=timeout,
        interval=0.2,
    )
    return daemonset
