"""Starting and stopping the embedded cluster the suite runs against when no kubeconfig is given.

This is the only local-only code of the suite, and it knows the embedded cluster solely
as a program: ``nrop-cluster up --profile P --state-dir D`` runs as a child process,
prints ``ready: kubeconfig=<path>`` on stdout once it serves, logs progress on stderr,
and stops cleanly on SIGTERM. Nothing here imports ``nrop.localcluster``, so the suite
works the same against any cluster given by a kubeconfig.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

__all__ = [
    "ClusterStartError",
    "EmbeddedCluster",
    "cluster_command",
    "environment_copy",
    "is_embedded_version",
    "progress_line",
    "serves_embedded",
    "start",
]

log = logging.getLogger(__name__)

READY_PREFIX = "ready: kubeconfig="
START_TIMEOUT = 300.0
STOP_TIMEOUT = 60.0

#: How the embedded API server's ``/version`` ends its ``gitVersion`` (``v1.33.0-nrop``): a
#: cluster given by kubeconfig that answers so was started by ``nrop-cluster up``.
EMBEDDED_VERSION_SUFFIX = "-nrop"
VERSION_PROBE_TIMEOUT = 5.0

Progress = Callable[[str], None]


def is_embedded_version(git_version: str) -> bool:
    """Whether a ``/version`` answer's ``gitVersion`` is the embedded cluster's."""
    return git_version.endswith(EMBEDDED_VERSION_SUFFIX)


def serves_embedded(kubeconfig: Path) -> bool:
    """Whether the cluster of ``kubeconfig`` is an embedded one (``nrop-cluster up`` by hand or
    by a benchmark): it then gets the embedded cluster's timings. Unreachable: no."""
    from kubernetes import client

    from nrop.suite.e2e.kube import Kube

    try:
        kube = Kube.from_kubeconfig(kubeconfig)
    except Exception as exc:  # the run reports the kubeconfig's problem where it opens the target
        log.warning("cannot load %s (%s): upstream's timings", kubeconfig, exc)
        return False
    try:
        version = client.VersionApi(kube.api_client).get_code(_request_timeout=VERSION_PROBE_TIMEOUT)
        return is_embedded_version(str(version.git_version or ""))
    except Exception as exc:  # any failure: treat it as a real cluster, upstream's timings
        log.warning("cannot read the version of the cluster of %s (%s): upstream's timings", kubeconfig, exc)
        return False
    finally:
        kube.close()


class ClusterStartError(RuntimeError):
    """``nrop-cluster up`` exited or stayed silent before it was ready."""


def cluster_command() -> list[str]:
    """The ``nrop-cluster`` program of this installation (next to the interpreter first)."""
    sibling = Path(sys.executable).parent / "nrop-cluster"
    if sibling.is_file():
        return [str(sibling)]
    found = shutil.which("nrop-cluster")
    if found is None:
        raise ClusterStartError("nrop-cluster is not installed: run `make install`, or give --kubeconfig")
    return [found]


@dataclass
class EmbeddedCluster:
    """A running ``nrop-cluster up`` child process."""

    profile: str
    state_dir: Path
    kubeconfig: Path
    process: subprocess.Popen[str]
    log_path: Path
    started_in: float
    _relay: threading.Thread | None = field(default=None, repr=False)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM, wait, then SIGKILL if it would not stop; idempotent."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning(
                    "nrop-cluster (profile %s) did not stop in %ss: killing it", self.profile, timeout
                )
                self.process.kill()
                self.process.wait(10)
        if self._relay is not None:
            self._relay.join(5)
            self._relay = None  # a second stop (the last-resort one at exit) does not wait again


_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ (?P<level>[A-Z]+) (?P<logger>\S+): ")


def progress_line(line: str) -> str:
    """A log line of the cluster as a short progress line: no timestamp, no logger, level if not INFO."""
    match = _LOG_PREFIX.match(line)
    if match is None:
        return line
    level = match.group("level")
    rest = line[match.end() :]
    return rest if level == "INFO" else f"{level}: {rest}"


def environment_copy(without: Collection[str] = ()) -> dict[str, str]:
    """A copy of this process's environment less ``without``, safe while another thread changes it:
    pytest sets and pops ``PYTEST_CURRENT_TEST`` at every test phase on the main thread while the
    session opens the next cluster on its background thread, and ``os.environ.items()`` raises
    ``KeyError`` for a key that went between its listing and its read."""
    env = {}
    for key in list(os.environ):
        value = os.environ.get(key)
        if value is not None and key not in without:
            env[key] = value
    return env


def _relay_stderr(stream: IO[str], log_path: Path, progress: Progress, ready: threading.Event) -> None:
    """Copy the cluster's stderr to its log file; show lines as progress until it is ready."""
    with log_path.open("a", encoding="utf-8") as sink:
        for line in stream:
            sink.write(line)
            sink.flush()
            if not ready.is_set():
                progress(progress_line(line.rstrip()))


def start(
    profile: str,
    state_dir: Path,
    *,
    progress: Progress = log.info,
    timeout: float = START_TIMEOUT,
    command: list[str] | None = None,
) -> EmbeddedCluster:
    """Start ``nrop-cluster up`` for ``profile`` in ``state_dir`` and wait until it serves."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "nrop-cluster.log"
    # --exit-with-parent: a run killed outright (SIGKILL, an xdist worker torn down) leaves no cluster behind
    argv = [
        *(command or cluster_command()), "up", "--profile", profile, "--state-dir", str(state_dir),
        "--exit-with-parent",
    ]  # fmt: skip
    env = environment_copy(without=("KUBECONFIG", "NROP_CLUSTER_KUBECONFIG"))
    began = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,  # Ctrl-C on the terminal reaches pytest, which stops the cluster itself
    )
    assert process.stdout is not None and process.stderr is not None
    ready = threading.Event()
    relay = threading.Thread(
        target=_relay_stderr,
        args=(process.stderr, log_path, progress, ready),
        daemon=True,
        name=f"nrop-{profile}",
    )
    relay.start()

    found: list[Path] = []

    def read_stdout() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(READY_PREFIX) and not found:
                found.append(Path(line[len(READY_PREFIX) :].strip()))
                ready.set()
        ready.set()  # stdout closed: the process ended

    reader = threading.Thread(target=read_stdout, daemon=True, name=f"nrop-{profile}-stdout")
    reader.start()
    cluster = EmbeddedCluster(profile, state_dir, Path(), process, log_path, 0.0, relay)
    try:
        came = ready.wait(timeout)
    except BaseException:  # Ctrl-C while starting: do not leave the cluster behind
        cluster.stop()
        raise
    if not came or not found:
        cluster.stop()
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:] if log_path.exists() else ""
        what = "exited" if process.poll() is not None else f"was not ready within {timeout:g}s"
        raise ClusterStartError(f"nrop-cluster up --profile {profile} {what}; its log ends with:\n{tail}")
    cluster.kubeconfig = found[0]
    cluster.started_in = time.monotonic() - began
    return cluster
