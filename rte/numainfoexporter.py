"""``numainfo-exporter``: per-NUMA CPU, memory and hugepages figures of one node as Prometheus gauges.

This module owns the process and its I/O, nothing that decides: the command line
(upstream ``ffromani/numainfo_exporter``'s flags), a custom Prometheus collector that,
on every scrape, re-reads the sysfs tree (:func:`nrop.rte.sysinfo.read_machine`) and the
kubelet's ``cpu_manager_state`` and ``memory_manager_state`` under ``--kube-state``, and
the HTTP(S) server. What the figures mean is decided in :mod:`nrop.rte.decisions.numainfo`.

The kubelet's files are opened read-only (``O_RDONLY``, non-blocking so that a FIFO
cannot hang a scrape, regular files only, at most :data:`MAX_CHECKPOINT_BYTES`) and never
written. A source that cannot be used — sysfs unreadable, a checkpoint missing,
truncated, corrupted or of an unknown policy — is logged as a warning (once per change
of problem, then a reminder every 30 s), contributes no figures to that scrape and is
read again at the next one; a scrape never fails because of it.

Exit status: 0 after ``--dump-metrics`` or a signal (SIGTERM, SIGINT); 2 for bad flags;
1 when the listen address cannot be bound or the TLS files cannot be loaded.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, TypeVar

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from nrop.api import checkpoints
from nrop.api.distribution import package_version
from nrop.rte.decisions.numainfo import (
    METRICS,
    NUMAInfoError,
    Snapshot,
    exclusive_cpus,
    memory_figures,
    samples,
    unmapped_cpus,
)
from nrop.rte.retrying import FailureLog
from nrop.rte.sysinfo import DEFAULT_SYSFS, MachineInfo, SysinfoError, read_machine

__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "NUMAInfoCollector",
    "build_parser",
    "main",
    "parse_listen_address",
    "read_checkpoint",
]

log = logging.getLogger(__name__)

PROG: Final = "numainfo-exporter"
DEFAULT_LISTEN_ADDRESS: Final = ":19091"
DEFAULT_KUBE_STATE: Final = "/var/lib/kubelet"
NODE_NAME_ENV: Final = "NUMAINFO_NODENAME"
#: Real checkpoints are a few kB; anything this big is not one, and is not read into memory.
MAX_CHECKPOINT_BYTES: Final = 16 * 1024 * 1024
VERSION_METRIC: Final = "numainfo_version"
EXIT_OK, EXIT_RUNTIME = 0, 1
#: How often the main thread wakes up to notice a signal.
_STOP_POLL: Final = 1.0
T = TypeVar("T")


# ----------------------------------------------------------------------------- reading


def read_checkpoint(path: Path) -> bytes:
    """The bytes of a kubelet checkpoint, opened read-only; ``OSError`` or :class:`NUMAInfoError` if unusable."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NUMAInfoError("not a regular file")
        data = file.read(MAX_CHECKPOINT_BYTES + 1)
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise NUMAInfoError(f"larger than {MAX_CHECKPOINT_BYTES} bytes")
    return data


class NUMAInfoCollector(Collector):
    """Reads sysfs and the kubelet checkpoints on every scrape; each source fails on its own."""

    def __init__(
        self,
        node: str,
        sysfs: str | Path,
        kube_state: str | Path,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.node = node
        self.sysfs = Path(sysfs)
        self.cpu_state = Path(kube_state) / checkpoints.CPU_MANAGER_STATE_FILE
        self.memory_state = Path(kube_state) / checkpoints.MEMORY_MANAGER_STATE_FILE
        self._lock = threading.Lock()  # scrapes may run concurrently; the failure logs are not thread-safe
        self._failures = {
            source: FailureLog(log, clock=clock) for source in ("sysfs", "cpu", "memory", "unmapped")
        }
        self._version_labels = {
            "version": "1",
            "revision": package_version(),
            "pythonversion": platform.python_version(),
        }

    # -- one cycle
    def _machine(self) -> MachineInfo | None:
        try:
            machine = read_machine(self.sysfs)
        except SysinfoError as exc:
            self._failures["sysfs"].failed(
                f"cannot read the NUMA topology (no CPU figures this cycle): {exc}"
            )
            return None
        self._failures["sysfs"].recovered(f"sysfs {self.sysfs}")
        return machine

    def _checkpoint(self, source: str, path: Path, what: str, decode: Callable[[bytes], T]) -> T | None:
        try:
            value = decode(read_checkpoint(path))
        except (OSError, NUMAInfoError) as exc:
            problem = f"{exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
            self._failures[source].failed(
                f"cannot use {path} (no {what} this cycle, retried at the next scrape): {problem}"
            )
            return None
        self._failures[source].recovered(f"checkpoint {path}")
        return value

    def snapshot(self) -> Snapshot:
        """Read every source once; a source that fails contributes nothing and is logged."""
        with self._lock:
            machine = self._machine()
            cpus = self._checkpoint("cpu", self.cpu_state, "CPU allocation", exclusive_cpus)
            memory = self._checkpoint("memory", self.memory_state, "memory figures", memory_figures)
            if machine is not None and cpus:
                unknown = unmapped_cpus(cpus, machine)
                if unknown:
                    self._failures["unmapped"].failed(
                        f"{self.cpu_state} assigns CPUs on no NUMA node of {self.sysfs} (not counted): "
                        + ",".join(map(str, unknown))
                    )
                else:
                    self._failures["unmapped"].recovered("CPU to NUMA mapping")
        return Snapshot(self.node, machine, cpus, memory)

    # -- the Collector protocol
    def _families(self) -> dict[str, GaugeMetricFamily]:
        return {
            name: GaugeMetricFamily(name, text, labels=list(labels))
            for name, (text, labels) in METRICS.items()
        }

    def _version(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(VERSION_METRIC, "Version information", labels=list(self._version_labels))
        family.add_metric(list(self._version_labels.values()), 1)
        return family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield self._version()
        yield from self._families().values()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield self._version()
        try:
            found = samples(self.snapshot())
        except Exception:
            # Not a known failure of a source; a scrape with less data beats a crash or a 500.
            log.exception("collecting the NUMA figures failed unexpectedly")
            return
        families = self._families()
        for sample in found:
            families[sample.name].add_metric([value for _, value in sample.labels], sample.value)
        yield from (family for family in families.values() if family.samples)


# ----------------------------------------------------------------------------- command line


def parse_listen_address(text: str) -> tuple[str, int]:
    """Go's ``host:port`` (``:19091`` = every IPv4 address, ``[::1]:80`` for IPv6) as ``(host, port)``."""
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"address {text}: missing port in address")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"address {text}: too many colons in address (IPv6 hosts need [brackets])")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"address {text}: invalid port {port!r} (expected 0-65535)")
    return host or "0.0.0.0", int(port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Export the per-NUMA capacity and exclusive allocation of CPUs, memory and hugepages "
        "of this node as Prometheus gauges, read from sysfs and the kubelet checkpoint files on every scrape.",
    )
    parser.add_argument(
        "-c",
        "--cert-file",
        default="",
        metavar="FILE",
        help="TLS certificate (PEM); with --key-file, serve HTTPS (default: HTTP)",
    )
    parser.add_argument(
        "-k", "--key-file", default="", metavar="FILE", help="TLS private key (PEM); needs --cert-file"
    )
    parser.add_argument(
        "-L",
        "--listen-address",
        default=DEFAULT_LISTEN_ADDRESS,
        metavar="[HOST]:PORT",
        help="host:port to serve /metrics on; an empty host means every IPv4 address, port 0 a free port "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "-M", "--dump-metrics", action="store_true", help="print the metrics once to stdout and exit"
    )
    parser.add_argument(
        "-N",
        "--node-name",
        default="",
        metavar="NAME",
        help=f"the node label of every metric (default: ${NODE_NAME_ENV}, else the hostname)",
    )
    parser.add_argument(
        "-Y",
        "--sysfs",
        default=DEFAULT_SYSFS,
        metavar="DIR",
        help="root of the sysfs tree to read (default: %(default)s)",
    )
    parser.add_argument(
        "-K",
        "--kube-state",
        default=DEFAULT_KUBE_STATE,
        metavar="DIR",
        help="directory of the kubelet's cpu_manager_state and memory_manager_state, opened read-only "
        "(default: %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        host, port = parse_listen_address(args.listen_address)
    except ValueError as exc:
        parser.error(f"--listen-address: {exc}")
    if bool(args.cert_file) != bool(args.key_file):
        parser.error("--cert-file and --key-file must be given together")
    node = args.node_name or os.environ.get(NODE_NAME_ENV, "") or socket.gethostname()

    registry = CollectorRegistry(auto_describe=True)
    registry.register(NUMAInfoCollector(node, args.sysfs, args.kube_state))
    if args.dump_metrics:
        sys.stdout.write(generate_latest(registry).decode())
        sys.stdout.flush()
        return EXIT_OK

    tls = bool(args.cert_file)
    try:
        server, _thread = start_http_server(
            port,
            addr=host,
            registry=registry,
            certfile=args.cert_file or None,
            keyfile=args.key_file or None,
        )
    except OSError as exc:  # ssl.SSLError is one
        log.error("cannot serve metrics on %s: %s", args.listen_address, exc)
        return EXIT_RUNTIME
    bound_host, bound_port = server.server_address[:2]
    log.info(
        "node %s: serving metrics on %s://%s:%d/metrics (sysfs %s, kubelet state %s)",
        node,
        "https" if tls else "http",
        f"[{bound_host}]" if ":" in str(bound_host) else bound_host,
        bound_port,
        args.sysfs,
        args.kube_state,
    )

    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    while not stop.wait(_STOP_POLL):
        pass
    server.shutdown()
    server.server_close()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
