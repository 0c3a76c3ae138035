"""Running a command in a pod (``pods/exec``, upstream ``remoteexec.CommandOnPod``) and reading a
pod's HTTPS endpoint through the API server's ``pods/proxy``, for the metrics, network-policy and
version specs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.suite import Kube


@dataclass(frozen=True)
class ExecResult:
    returncode: int
    stdout: str
    stderr: str


def exec_in_pod(
    kube: Kube, pod: Mapping[str, Any], command: Sequence[str], container: str | None = None
) -> ExecResult:
    """``remoteexec.CommandOnPod``: run ``command`` in the pod's (first) container via pods/exec.

    The exit status comes from the exec error channel: ``Success`` is 0, a ``NonZeroExitCode``
    carries the code, any other failure (e.g. the command cannot be started) is -1 with the
    server's message appended to stderr.
    """
    from kubernetes import client
    from kubernetes.stream import stream
    from kubernetes.stream.ws_client import ERROR_CHANNEL

    meta = pod["metadata"]
    core = client.CoreV1Api(kube.api_client)
    resp = stream(
        core.connect_get_namespaced_pod_exec,
        meta["name"],
        meta["namespace"],
        command=list(command),
        container=container or pod["spec"]["containers"][0]["name"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    stdout: list[str] = []
    stderr: list[str] = []
    while resp.is_open():
        resp.update(timeout=1)
        if resp.peek_stdout():
            stdout.append(resp.read_stdout())
        if resp.peek_stderr():
            stderr.append(resp.read_stderr())
    status_text = resp.read_channel(ERROR_CHANNEL)
    resp.close()
    return ExecResult(_exit_code(status_text, stderr), "".join(stdout), "".join(stderr))


def _exit_code(status_text: str, stderr: list[str]) -> int:
    """The exit code an exec error-channel Status (``metav1.Status`` JSON) stands for."""
    if not status_text:
        return 0
    status = json.loads(status_text)
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", "-1"))
    stderr.append(str(status.get("message", "")))
    return -1


def join_host_port(host: str, port: str) -> str:
    """``net.JoinHostPort``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def fetch_pod_https(kube: Kube, pod: Mapping[str, Any], port: str, path: str) -> str:
    """GET ``https://<pod>:<port>/<path>`` through the API server's pods/proxy (certificate not
    verified, like ``curl -k``)."""
    from kubernetes import client

    meta = pod["metadata"]
    core = client.CoreV1Api(kube.api_client)
    return str(
        core.connect_get_namespaced_pod_proxy_with_path(
            f"https:{meta['name']}:{port}", meta["namespace"], path
        )
    )
