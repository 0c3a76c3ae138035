"""Fixtures shared by the project's own tests: an embedded cluster and clients pointed at it.

Two kinds of cluster, one per test module:

* by default ``cluster`` runs the cluster of ``cluster_config`` in a background thread of
  the test process (``cluster_thread``), its state below ``state_dir``. The default
  ``cluster_config`` is the API-conformance cluster (profile ``empty``, no controllers, no
  default scheduler); a module that needs another profile or other settings overrides the
  ``cluster_config`` fixture, and only that;
* a module marked ``pytest.mark.cluster_profile("<profile>")`` runs against ``embedded``:
  the embedded cluster of that profile started exactly as the suite starts its target
  (:func:`nrop.suite.plugin.target.start`, ``nrop-cluster up`` as a child process), its node
  roots below ``state_dir``.

``kubeconfig`` is the admin kubeconfig of whichever the module uses; ``kubectl`` runs
the real kubectl binary against it (skipped with a reason where kubectl is absent);
``api_client`` is an official Python client (``core`` its CoreV1Api, ``kube`` the suite's
client over it); ``namespace`` is a fresh namespace per test, deleted afterwards;
``state_dir`` is a short per-module directory. ``go_map_starts`` is a random source for
:mod:`nrop.api.gomaps` whose draws are scripted: the start of each Go map iteration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nrop.localcluster.cluster import ClusterConfig, ClusterThread, LocalCluster
from nrop.localcluster.controllers import ControllerSettings
from nrop.suite.plugin import target

KUBECTL = shutil.which("kubectl")


class ScriptedGoMapStarts(random.Random):
    """A random source whose ``getrandbits`` returns the scripted values in turn: where each Go map
    iteration (or ``PopAny``) of :mod:`nrop.api.gomaps` starts."""

    def __init__(self, *offsets: int) -> None:
        super().__init__(0)
        self.offsets = list(offsets)

    def getrandbits(self, k: int) -> int:
        return self.offsets.pop(0)


@pytest.fixture
def go_map_starts() -> type[random.Random]:
    """:class:`ScriptedGoMapStarts`: ``go_map_starts(0, 3)`` starts the first iteration at slot 0, the next at 3."""
    return ScriptedGoMapStarts


PROFILE_MARKER = "cluster_profile"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{PROFILE_MARKER}(name): the module runs against the embedded cluster of that profile, "
        "started as the suite starts its target (fixture ``embedded``)",
    )


def _profile(request: pytest.FixtureRequest) -> str | None:
    marker = request.node.get_closest_marker(PROFILE_MARKER)
    return None if marker is None else str(marker.args[0])


@pytest.fixture(scope="module")
def state_dir() -> Iterator[Path]:
    """A per-module directory with a short path: node roots hold unix sockets (107 bytes at most)."""
    path = Path(tempfile.mkdtemp(prefix="nrop-t-", dir="/tmp" if Path("/tmp").is_dir() else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def embedded(request: pytest.FixtureRequest, state_dir: Path) -> Iterator[target.EmbeddedCluster]:
    """The module's ``cluster_profile`` cluster, as the suite's embedded target; node roots in ``nodes/``."""
    profile = _profile(request)
    if profile is None:
        raise pytest.UsageError(
            f"{request.node.nodeid}: the embedded fixture needs a {PROFILE_MARKER} marker"
        )
    cluster = target.start(profile, state_dir / "c")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """The module's in-process cluster, without its state directory (``cluster_thread`` adds it)."""
    # API conformance: no controllers, so namespaces hold exactly what a test puts there
    # (no default ServiceAccount, no kube-root-ca.crt, no ReplicaSets behind Deployments), and
    # no default scheduler: with no nodes it would only add FailedScheduling events to every pod.
    return ClusterConfig(
        profile="empty",
        bookmark_interval=1.0,
        history_size=2000,
        controllers=ControllerSettings(controllers=()),
        default_scheduler=False,
    )


@pytest.fixture(scope="module")
def start_cluster(state_dir: Path) -> Iterator[Callable[[str, ClusterConfig], ClusterThread]]:
    """Start an in-process cluster for this module: ``start_cluster(name, config)`` runs ``config``
    in a background thread, its state in ``state_dir/<name>``; every one stops when the module ends."""
    with contextlib.ExitStack() as running:

        def start(name: str, config: ClusterConfig) -> ClusterThread:
            runner = ClusterThread(dataclasses.replace(config, state_dir=state_dir / name))
            running.enter_context(runner)
            return runner

        yield start


@pytest.fixture(scope="module")
def cluster_thread(
    cluster_config: ClusterConfig, start_cluster: Callable[[str, ClusterConfig], ClusterThread]
) -> ClusterThread:
    """The module's cluster: ``cluster_config`` in a thread of this process, its state in ``state_dir/c``."""
    return start_cluster("c", cluster_config)


@pytest.fixture(scope="module")
def cluster(cluster_thread: ClusterThread) -> LocalCluster:
    return cluster_thread.cluster


@pytest.fixture(scope="module")
def kubeconfig(request: pytest.FixtureRequest) -> Path:
    """The admin kubeconfig of the module's cluster: ``embedded`` if it has a profile, else ``cluster``."""
    if _profile(request) is not None:
        embedded: target.EmbeddedCluster = request.getfixturevalue("embedded")
        return embedded.kubeconfig
    cluster: LocalCluster = request.getfixturevalue("cluster")
    return cluster.kubeconfig_path


@pytest.fixture(scope="module")
def kube_env(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = dict(os.environ)
    env["KUBECONFIG"] = str(kubeconfig)
    env["KUBECACHEDIR"] = str(tmp_path_factory.mktemp("kubecache"))
    env.pop("KUBE_FEATURE_WatchListClient", None)
    return env


KubectlRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def kubectl(kube_env: dict[str, str]) -> KubectlRunner:
    """``kubectl(*args, input=None, check=True, env=None, timeout=30)`` → CompletedProcess."""
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH")

    def run(
        *args: str,
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, *args],
            input=input,
            capture_output=True,
            text=True,
            env={**kube_env, **(env or {})},
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    return run


@pytest.fixture(scope="module")
def api_client(kubeconfig: Path):  # type: ignore[no-untyped-def]
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture(scope="module")
def rest_client(kubeconfig: Path):  # type: ignore[no-untyped-def]
    """The blocking client the exporter and the operator use (``nrop.api.restclient``), as admin."""
    from nrop.api.clientconfig import load_kubeconfig
    from nrop.api.restclient import RestClient

    rest = RestClient(load_kubeconfig(kubeconfig), user_agent="nrop-tests")
    yield rest
    rest.close()


@pytest.fixture(scope="module")
def core(api_client):  # type: ignore[no-untyped-def]
    """The official client's CoreV1Api."""
    from kubernetes import client

    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def kube(api_client):  # type: ignore[no-untyped-def]
    """The suite's client (``nrop.suite.e2e.kube.Kube``) on the module's cluster, nothing installed.

    It stands in for the suite plugin's session ``kube``, which would install the whole stack.
    """
    from nrop.suite.e2e.kube import Kube

    return Kube(api_client)


@pytest.fixture
def namespace(api_client) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from kubernetes import client

    name = f"t-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api_client)
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={"nrop.test": "true"}))
    )
    yield name
    try:
        core.delete_namespace(name)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def reader(api_client, namespace: str) -> str:  # type: ignore[no-untyped-def]
    """A service account of the test namespace that may get and list pods there, and nothing else."""
    from kubernetes import client

    client.CoreV1Api(api_client).create_namespaced_service_account(
        namespace, {"metadata": {"name": "reader"}}
    )
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "pod-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    return "reader"
