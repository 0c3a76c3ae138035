"""Fixtures shared by the project's own tests: an embedded cluster and clients pointed at it.

``cluster`` starts one embedded cluster (profile ``empty``) per test module in
a background thread; ``kubeconfig`` is its admin kubeconfig; ``kubectl`` runs
the real kubectl binary against it (skipped with a reason where kubectl is
absent); ``api_client`` is an official Python client; ``namespace`` is a fresh
namespace per test, deleted afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nrop.localcluster.cluster import ClusterConfig, ClusterThread, LocalCluster
from nrop.localcluster.controllers import ControllerSettings

KUBECTL = shutil.which("kubectl")


@pytest.fixture(scope="module")
def cluster_thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    state = tmp_path_factory.mktemp("cluster")
    # API conformance: no controllers, so namespaces hold exactly what a test puts there
    # (no default ServiceAccount, no kube-root-ca.crt, no ReplicaSets behind Deployments), and
    # no default scheduler: with no nodes it would only add FailedScheduling events to every pod.
    runner = ClusterThread(
        ClusterConfig(
            profile="empty",
            state_dir=state,
            bookmark_interval=1.0,
            history_size=2000,
            controllers=ControllerSettings(controllers=()),
            default_scheduler=False,
        )
    )
    with runner:
        yield runner


@pytest.fixture(scope="module")
def cluster(cluster_thread: ClusterThread) -> LocalCluster:
    return cluster_thread.cluster


@pytest.fixture(scope="module")
def kubeconfig(cluster: LocalCluster) -> Path:
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
