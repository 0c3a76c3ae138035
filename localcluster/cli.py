"""``nrop-cluster``: run the embedded cluster in the foreground, stop it, list the shipped profiles, show its nodes.

``up`` starts the cluster, records its PID in ``<state dir>/nrop-cluster.pid``, writes
the kubeconfig, prints ``ready: kubeconfig=<path>`` on stdout and runs until SIGINT or
SIGTERM, then shuts down cleanly (exit 0), removes the PID file and a temporary state
directory.  Progress goes to stderr.  ``down --state-dir DIR`` sends SIGTERM to the ``up``
process recorded there and waits for it to exit.  ``nodes`` prints, per node and NUMA
zone, what is allocated out of what is allocatable.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nrop.localcluster.profiles import ProfileError, shipped

log = logging.getLogger("nrop-cluster")

#: Written by ``up`` in its state directory: the PID and the process's start time (clock ticks since
#: boot, field 22 of ``/proc/<pid>/stat``), so that ``down`` never signals a recycled PID.
PID_FILE = "nrop-cluster.pid"
DOWN_TIMEOUT = 60.0
#: How often ``up --exit-with-parent`` checks that the process that started it is still there.
PARENT_POLL = 1.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nrop-cluster", description="The embedded Kubernetes cluster of numaresources-operator-tests."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run a cluster in the foreground until SIGINT/SIGTERM")
    up.add_argument(
        "--profile",
        default=os.environ.get("NROP_CLUSTER_PROFILE", "default"),
        help="profile name (see `nrop-cluster profiles`) or path to a profile YAML [env NROP_CLUSTER_PROFILE; default: default]",
    )
    up.add_argument(
        "--state-dir",
        type=Path,
        default=os.environ.get("NROP_CLUSTER_STATE_DIR"),
        help="directory for the cluster's files (PKI, node roots, nrop-cluster.pid for `down`); a temporary one, removed on exit, if unset [env NROP_CLUSTER_STATE_DIR]",
    )
    up.add_argument(
        "--kubeconfig",
        type=Path,
        default=os.environ.get("NROP_CLUSTER_KUBECONFIG"),
        help="where to write the admin kubeconfig [env NROP_CLUSTER_KUBECONFIG; default: <state-dir>/kubeconfig]",
    )
    up.add_argument(
        "--keep-kubeconfig",
        action="store_true",
        default=os.environ.get("NROP_CLUSTER_KEEP_KUBECONFIG", "") not in ("", "0", "false"),
        help="leave the kubeconfig behind when the cluster stops (by default it is removed, since it "
        "points at a port nothing serves any more) [env NROP_CLUSTER_KEEP_KUBECONFIG=1]",
    )
    up.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("NROP_CLUSTER_PORT", "0")),
        help="HTTPS port on 127.0.0.1 [default: a free port]",
    )
    up.add_argument(
        "--own-image",
        action="append",
        metavar="PATTERN",
        help="image pattern (fnmatch) whose containers run as real processes; repeatable "
        "[env NROP_CLUSTER_OWN_IMAGES, comma-separated; default: *numaresources-operator-tests*]",
    )
    up.add_argument(
        "--machine-configs",
        action=argparse.BooleanOptionalAction,
        default=os.environ.get("NROP_CLUSTER_MACHINE_CONFIGS", "1").lower() not in ("", "0", "false"),
        help="serve MachineConfigPools and KubeletConfigs (machineconfiguration.openshift.io/v1), applied "
        "by restarting the kubelets of a pool one at a time, and the Infrastructure and Scheduler "
        "objects (config.openshift.io/v1) stating the cluster type [env NROP_CLUSTER_MACHINE_CONFIGS=0 "
        "turns it off; default: on]",
    )
    up.add_argument(
        "--exit-with-parent",
        action="store_true",
        default=os.environ.get("NROP_CLUSTER_EXIT_WITH_PARENT", "") not in ("", "0", "false"),
        help="stop the cluster, as on SIGTERM, when the process that started it goes away (the suite "
        "passes it, so that a test run killed with SIGKILL leaves no cluster behind) "
        "[env NROP_CLUSTER_EXIT_WITH_PARENT=1]",
    )
    up.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        help="seconds between watch BOOKMARK events for clients that allow them [default: 60]",
    )
    down_help = (
        "stop the cluster that `up --state-dir DIR` runs: SIGTERM to the PID in DIR/nrop-cluster.pid, "
        "then wait for it to exit (exit 0, also when the file is stale; 1 when there is no PID file "
        "or the cluster outlives --timeout)"
    )
    down = sub.add_parser("down", help=down_help, description=down_help)
    down.add_argument(
        "--state-dir",
        type=Path,
        default=os.environ.get("NROP_CLUSTER_STATE_DIR"),
        required=not os.environ.get("NROP_CLUSTER_STATE_DIR"),
        help="the state directory the cluster was started with [env NROP_CLUSTER_STATE_DIR]",
    )
    down.add_argument(
        "--timeout",
        type=float,
        default=DOWN_TIMEOUT,
        help=f"seconds to wait for the cluster to exit [default: {DOWN_TIMEOUT:g}]",
    )
    sub.add_parser("profiles", help="list the shipped profiles with a one-line summary")
    nodes = sub.add_parser(
        "nodes",
        help="per node and NUMA zone: CPUs, memory, hugepages and devices allocated/allocatable",
    )
    nodes.add_argument(
        "--kubeconfig",
        type=Path,
        default=os.environ.get("NROP_CLUSTER_KUBECONFIG") or os.environ.get("KUBECONFIG"),
        required=not (os.environ.get("NROP_CLUSTER_KUBECONFIG") or os.environ.get("KUBECONFIG")),
        help="kubeconfig of a running embedded cluster [env NROP_CLUSTER_KUBECONFIG, then KUBECONFIG]",
    )
    return parser


async def _run_up(args: argparse.Namespace, early_signals: list[int]) -> int:
    # Imported here, after main() catches stop signals: importing the server takes a while.
    from nrop.localcluster.cluster import ClusterConfig, LocalCluster

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if early_signals:
        log.info("stopped before starting")
        return 0
    watchdog = asyncio.create_task(_watch_parent(args.parent_pid, stop)) if args.exit_with_parent else None
    cluster = LocalCluster(
        ClusterConfig(
            profile=args.profile,
            state_dir=args.state_dir,
            kubeconfig=args.kubeconfig,
            port=args.port,
            bookmark_interval=args.bookmark_interval,
            own_images=_own_images(args.own_image),
            machine_configs=args.machine_configs,
        )
    )
    pid_file = cluster.state_dir / PID_FILE
    written = b""
    try:
        cluster.state_dir.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(_pid_record(os.getpid()).render())
        await cluster.start()
        written = cluster.kubeconfig_path.read_bytes()
        sys.stdout.write(f"ready: kubeconfig={cluster.kubeconfig_path}\n")
        sys.stdout.flush()
        await stop.wait()
        log.info("shutting down")
    finally:
        if watchdog is not None:
            watchdog.cancel()
        await cluster.stop()
        if written and not args.keep_kubeconfig:
            _remove_if_unchanged(cluster.kubeconfig_path, written)
        pid_file.unlink(missing_ok=True)
    return 0


async def _watch_parent(parent: int, stop: asyncio.Event) -> None:
    """Set ``stop`` once the process that started ``up`` is gone (this process is re-parented)."""
    while not stop.is_set():
        if os.getppid() != parent:
            log.warning("the process that started nrop-cluster (pid %d) is gone: shutting down", parent)
            stop.set()
            return
        await asyncio.sleep(PARENT_POLL)


def _remove_if_unchanged(path: Path, written: bytes) -> None:
    """Remove the kubeconfig ``up`` wrote, unless someone replaced it since."""
    try:
        if path.read_bytes() == written:
            path.unlink()
            log.info("removed %s", path)
    except OSError:
        pass


@dataclass(frozen=True)
class PidRecord:
    """What ``up`` writes in its PID file: ``<pid> <start time>``."""

    pid: int
    start_time: int

    def render(self) -> str:
        return f"{self.pid} {self.start_time}\n"


def parse_pid_record(text: str, source: Path) -> PidRecord:
    """The record in a PID file; a malformed one is an error naming the file."""
    fields = text.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        raise ValueError(f"{source}: expected '<pid> <start time>', got {text.strip()!r}")
    return PidRecord(int(fields[0]), int(fields[1]))


def _start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``, or None when no such process runs (a zombie does not)."""
    try:
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    state, start = fields[0], fields[19]
    return None if state in ("Z", "X") else int(start)


def _pid_record(pid: int) -> PidRecord:
    start = _start_time(pid)
    if start is None:
        raise OSError(f"no /proc/{pid}/stat to record the start time of nrop-cluster")
    return PidRecord(pid, start)


def _running(record: PidRecord) -> bool:
    return _start_time(record.pid) == record.start_time


def _run_down(state_dir: Path, timeout: float) -> int:
    pid_file = state_dir / PID_FILE
    try:
        record = parse_pid_record(pid_file.read_text(), pid_file)
    except FileNotFoundError:
        sys.stderr.write(f"nrop-cluster: no cluster is running in {state_dir} (no {PID_FILE})\n")
        return 1
    except ValueError as exc:
        sys.stderr.write(f"nrop-cluster: {exc}\n")
        return 1
    if not _running(record):
        # The process died without cleaning up (SIGKILL): the file is stale, the cluster is down.
        pid_file.unlink(missing_ok=True)
        log.info("process %d recorded in %s is not running; removed the stale file", record.pid, pid_file)
        return 0
    log.info("sending SIGTERM to nrop-cluster up (pid %d)", record.pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _running(record):
        if time.monotonic() > deadline:
            sys.stderr.write(f"nrop-cluster: pid {record.pid} still runs {timeout:g}s after SIGTERM\n")
            return 1
        time.sleep(0.05)
    log.info("stopped")
    return 0


def _own_images(flags: list[str] | None) -> tuple[str, ...]:
    """``--own-image`` flags, else ``NROP_CLUSTER_OWN_IMAGES``, else the default pattern."""
    from nrop.localcluster.kubelet.decisions.entrypoints import DEFAULT_OWN_IMAGES

    if flags:
        return tuple(flags)
    env = os.environ.get("NROP_CLUSTER_OWN_IMAGES", "")
    patterns = tuple(p.strip() for p in env.split(",") if p.strip())
    return patterns or DEFAULT_OWN_IMAGES


def _run_nodes(kubeconfig: Path) -> int:
    from kubernetes.client import ApiException
    from urllib3.exceptions import HTTPError

    from nrop.localcluster.nodereport import fetch_reports, format_reports

    try:
        reports = fetch_reports(kubeconfig)
    except (OSError, ApiException, HTTPError) as exc:
        sys.stderr.write(f"nrop-cluster: reading nodes through {kubeconfig}: {exc}\n")
        return 1
    sys.stdout.write(format_reports(reports))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.parent_pid = os.getppid()  # before anything slow: the parent may be gone by the time we start
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "profiles":
        for name, summary in shipped().items():
            sys.stdout.write(f"{name:<24} {summary}\n")
        return 0
    if args.command == "nodes":
        return _run_nodes(args.kubeconfig)
    if args.command == "down":
        return _run_down(args.state_dir, args.timeout)
    # Until the event loop takes them over, SIGINT/SIGTERM only ask for a stop (no
    # KeyboardInterrupt traceback, no death by signal half-way through starting).
    early_signals: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: early_signals.append(signum))
    try:
        with contextlib.suppress(KeyboardInterrupt):
            return asyncio.run(_run_up(args, early_signals))
    except ProfileError as exc:
        sys.stderr.write(f"nrop-cluster: {exc}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"nrop-cluster: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
