"""Starting and stopping the embedded cluster the suite runs against when no kubeconfig is given.

This is the only local-only code of the suite, and it knows the embedded cluster solely
as a program: ``nrop-cluster up --profile P --state-dir D`` runs as a child process,
prints ``ready: kubeconfig=<path>`` on stdout once it serves, logs progress on stderr,
and stops cleanly on SIGTERM. Nothing here imports ``nrop.localcluster``, so the suite
works the same against any cluster given by a kubeconfig.

Where the clusters' state goes (:func:`state_root`): a cluster writes a few thousand small files
(its nodes' sysfs trees, sockets, pods' directories) and the run deletes them when it stops it;
on a disk filesystem that churn costs CPU the run feels, so the state goes to a memory
filesystem when one has room, and the state a killed run left there is removed by the next one
(:func:`remove_orphans`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
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
    "remove_orphans",
    "serves_embedded",
    "start",
    "state_parent",
    "state_root",
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

#: The memory filesystem (tmpfs) the clusters' state goes to when it has room (:func:`state_parent`).
MEMORY_FILESYSTEM = Path("/dev/shm")
#: The room one pytest process's clusters need there: two at a time (a lane prepares its next
#: profile's while the last specs on the first run), each 2,000-4,300 files of 4 KiB pages on
#: tmpfs (7 to 15 MiB measured with pods running), with a margin.
STATE_ROOM = 64 * 2**20
#: The directory name's prefix: kept short, since the kubelet sockets under it must stay within
#: 107 bytes (``/dev/shm/nrop-XXXXXXXX`` is as long as ``/tmp/nrop-e2e-XXXXXXXX`` was).
STATE_PREFIX = "nrop-"
#: The file in a state directory naming the pid of the process that made it (:func:`remove_orphans`).
STATE_OWNER = "owner.pid"


def state_parent(environ: Mapping[str, str], memory_free: int | None) -> Path | None:
    """Where a process makes its clusters' state directory: :data:`MEMORY_FILESYSTEM` when
    ``TMPDIR`` is not set (set, it is the user's choice) and that is a writable memory filesystem
    (``memory_free``: its free bytes; ``None``: it is not one) with :data:`STATE_ROOM` free for
    every process of the run (the xdist workers, ``PYTEST_XDIST_WORKER_COUNT``, choose at once,
    before any has written); else ``None``: the temporary directory :mod:`tempfile` picks (the one
    ``TMPDIR`` names if it is usable, else the system's). On a disk
    filesystem each cluster's few thousand files cost CPU to create and to delete, and more while
    recently deleted ones are many (ext4 without a journal skips inodes freed in the last minutes
    when it allocates one): creating 2,000 files took 0.3 s of CPU on a quiet disk and 2 s right
    after a run, against 0.03 s on tmpfs, and tier0 run after run grew from 674 to 701
    spec-seconds on disk where it stayed at 664-666 in memory."""
    if environ.get("TMPDIR"):
        return None
    workers = environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    processes = int(workers) if workers.isdigit() and int(workers) > 0 else 1
    if memory_free is not None and memory_free >= STATE_ROOM * processes:
        return MEMORY_FILESYSTEM
    return None


def _memory_free(path: Path) -> int | None:
    """Free bytes of ``path`` if it is a memory filesystem this process may write, else ``None``."""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            memory = any(
                fields[1] == str(path) and fields[2] == "tmpfs"
                for fields in (line.split() for line in mounts)
                if len(fields) > 2
            )
        if not memory or not os.access(path, os.W_OK | os.X_OK):
            return None
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def state_root() -> Path:
    """A new directory for the state of the embedded clusters this process starts (:func:`state_parent`),
    with this process's pid in :data:`STATE_OWNER`; first the state left by runs that ended without
    removing theirs (killed) is removed from there: in memory it would hold RAM until a reboot."""
    parent = state_parent(os.environ, _memory_free(MEMORY_FILESYSTEM))
    parent = parent if parent is not None else Path(tempfile.gettempdir())
    remove_orphans(parent)
    root = Path(tempfile.mkdtemp(prefix=STATE_PREFIX, dir=parent))
    (root / STATE_OWNER).write_text(f"{os.getpid()}\n", encoding="ascii")
    return root


def remove_orphans(parent: Path) -> list[Path]:
    """Remove the state directories under ``parent`` whose owner (:data:`STATE_OWNER`) is no longer a
    process; a directory without an owner file (being made, or not the suite's) is left alone."""
    removed = []
    for root in parent.glob(STATE_PREFIX + "*"):
        try:
            owner = int((root / STATE_OWNER).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
        if _alive(owner):
            continue
        log.warning(
            "removing %s: the state of a run that ended without removing it (pid %d is gone)", root, owner
        )
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


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
