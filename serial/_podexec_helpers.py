"""Running a command in a pod (``pods/exec``, upstream ``remoteexec.CommandOnPod``), for the
metrics, network-policy and version specs.
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
    #: Why the exec failed as client-go words it (``command terminated with exit code 7``, or the
    #: server's message), empty when the command succeeded.
    cause: str = ""

    def error(self, command: Sequence[str]) -> str:
        """``CommandOnPod``'s error: ``failed to run command [<command>]: <cause>``, empty on success."""
        return f"failed to run command [{' '.join(command)}]: {self.cause}" if self.returncode else ""


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
    code, cause = _exit_code(status_text, stderr)
    return ExecResult(code, "".join(stdout), "".join(stderr), cause)


def _exit_code(status_text: str, stderr: list[str]) -> tuple[int, str]:
    """The exit code an exec error-channel Status (``metav1.Status`` JSON) stands for, and the
    cause as client-go's ``errorDecoderV4`` reports it."""
    if not status_text:
        return 0, ""
    status = json.loads(status_text)
    if status.get("status") == "Success":
        return 0, ""
    for cause in (status.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            code = int(cause.get("message", "-1"))
            return code, f"command terminated with exit code {code}"
    message = str(status.get("message", ""))
    stderr.append(message)
    return -1, message


def join_host_port(host: str, port: str) -> str:
    """``net.JoinHostPort``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
