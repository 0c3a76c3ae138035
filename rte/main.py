"""``resource-topology-exporter``: the process that keeps one node's NRT object current.

This module owns wiring and the loop, nothing that decides: configuration
(:mod:`~nrop.rte.config`) → machine (:mod:`~nrop.rte.sysinfo`) → podresources client
(:mod:`~nrop.rte.podres`, filtered by the middlewares of :mod:`~nrop.rte.decisions.scan`, the
terminal pods coming from :mod:`~nrop.rte.terminalpods`) → scan (:mod:`~nrop.rte.decisions.scan`)
→ write (:mod:`~nrop.rte.publish`, or JSON on stdout with ``--no-publish``), each
outcome reported as a condition of the exporter's own pod
(:mod:`~nrop.rte.podreadiness`), paced by :mod:`~nrop.rte.refreshing`.

Exit status: 0 after a signal (SIGTERM, SIGINT) or a ``--oneshot`` cycle; 2 for bad
configuration; 1 when the node cannot be described at all (no sysfs tree, an unusable
notify file, a metrics port in use). Transient faults — the podresources socket missing
or late, the kubelet restarting, API errors — are logged and retried with back-off,
never fatal.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Final

from nrop.api.clientconfig import ClientConfigError, resolve_config
from nrop.api.distribution import package_version
from nrop.api.restclient import RestClient
from nrop.rte import config as rteconfig
from nrop.rte.decisions.nrtinfo import TopologyManager, Trigger, new_nrt, update_nrt_info
from nrop.rte.decisions.scan import (
    NodeResources,
    ScanOptions,
    ScanResult,
    exclude_pods,
    exclude_terminal_pods,
    node_resources,
    remove_shared_pool,
    scan,
)
from nrop.rte.metrics import Metrics
from nrop.rte.podreadiness import ConditionInjector, ConditionType
from nrop.rte.podres import CALL_GET_ALLOCATABLE, PodResourcesClient, PodResourcesError, retry
from nrop.rte.publish import Publisher, PublishError
from nrop.rte.refreshing import NotifyFileError, NotifyWatcher, Pacer, Scheduler, prepare_notify_file
from nrop.rte.retrying import Backoff, FailureLog
from nrop.rte.sysinfo import MachineInfo, SysinfoError, read_machine
from nrop.rte.terminalpods import TerminalPods

__all__ = ["Exporter", "main"]

log = logging.getLogger("nrop.rte")

#: How often the notify file is stat'ed; bounds reactive latency from below.
NOTIFY_POLL_INTERVAL: Final = 0.05
#: The longest the loop sleeps, so that it notices a stop or a clock jump soon.
MAX_SLEEP: Final = 1.0
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name("__" + path.name)
    tmp.write_text(text)
    os.replace(tmp, path)


class Exporter:
    """One node's scan-and-publish cycle and the loop that schedules it."""

    def __init__(
        self,
        cfg: rteconfig.Config,
        tm: TopologyManager,
        machine: MachineInfo,
        podres: PodResourcesClient,
        publisher: Publisher | None,
        metrics: Metrics,
        *,
        readiness: ConditionInjector | None = None,
        terminal_pods: TerminalPods | None = None,
        out: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.cfg = cfg
        #: Draws the order of each zone's resources, as Go's map iteration does upstream.
        self.rng = rng if rng is not None else random.Random()
        self.tm = tm
        self.machine = machine
        self.podres = podres
        self.publisher = publisher
        self.metrics = metrics
        self.readiness = readiness
        self.terminal_pods = terminal_pods
        self.out = out if out is not None else sys.stdout
        self.clock = clock
        self.options = ScanOptions(
            node_name=cfg.hostname,
            namespace=cfg.watch_namespace,
            pods_fingerprint=cfg.pods_fingerprint,
            fingerprint_method=cfg.fingerprint_method,
            resource_exclude=cfg.resource_exclude,
            topology_manager_policy=tm.policy,
        )
        self.resources: NodeResources | None = None
        self.cycles = 0
        self._last_wakeup: float | None = None
        self._seen_warnings: set[str] = set()
        self._failures = FailureLog(log)
        self._podres_failed = False

    # -- one cycle
    def _warn_once(self, warnings: Sequence[str]) -> None:
        for text in warnings:
            if text not in self._seen_warnings:
                self._seen_warnings.add(text)
                log.warning("%s", text)

    def refresh_resources(self) -> NodeResources:
        try:
            allocatable = self.podres.allocatable()
        except PodResourcesError:
            self.metrics.podresources_failure(CALL_GET_ALLOCATABLE)
            raise
        resources = node_resources(self.machine, allocatable)
        if resources != self.resources:
            log.info("node resources: capacity %s; allocatable %s", resources.capacity, resources.allocatable)
        self._warn_once(resources.warnings)
        self.resources = resources
        return resources

    def scan(self, trigger: Trigger) -> ScanResult:
        started = self.clock()
        try:
            if self.resources is None or self.cfg.refresh_node_resources or self._podres_failed:
                # After a podresources failure the kubelet may have restarted with other devices.
                self.refresh_resources()
            pods = self.podres.list_pods()
        except PodResourcesError as err:
            if err.call != CALL_GET_ALLOCATABLE:
                self.metrics.podresources_failure(err.call)
            self._podres_failed = True
            raise
        finally:
            # Dialled again at the next scan: while a channel is open, gRPC's core keeps a pool
            # of threads sized to the CPUs the node shows, each waking now and then (bench/README.md).
            self.podres.close()
        self._podres_failed = False
        pods = exclude_pods(remove_shared_pool(pods, self.cfg.reference), self.cfg.pod_exclude)
        if self.terminal_pods is not None:
            pods = exclude_terminal_pods(pods, self.terminal_pods.current())
        assert self.resources is not None
        result = scan(self.machine, self.resources, pods, self.options, self.rng)
        self._warn_once(result.warnings)
        self.metrics.operation_delay("podresources_scan", trigger.value, (self.clock() - started) * 1000)
        if self.cfg.pods_fingerprint_status_file and result.fingerprint_status is not None:
            status = result.fingerprint_status
            status.fingerprint_expected = result.fingerprint
            try:
                _write_atomically(Path(self.cfg.pods_fingerprint_status_file), status.to_json())
            except OSError as exc:
                self._warn_once([f"cannot write {self.cfg.pods_fingerprint_status_file}: {exc}"])
        return result

    def _condition(self, kind: ConditionType, ok: bool) -> None:
        if self.readiness is not None:
            self.readiness.set(kind, ok)

    def _failed(self, trigger: Trigger, exc: Exception) -> None:
        if isinstance(exc, (PodResourcesError, PublishError)):
            self._failures.failed(f"cycle {self.cycles} ({trigger.value}): {exc}")
        else:
            # Not a known transient fault, but crashing would only restart into it: log and retry.
            log.error("cycle %d (%s) failed unexpectedly", self.cycles, trigger.value, exc_info=exc)

    def _write(self, result: ScanResult, trigger: Trigger) -> None:
        started = self.clock()
        if self.publisher is None:
            obj = update_nrt_info(new_nrt(self.cfg.hostname), result, self.tm, trigger)
            self.out.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self.out.flush()
        else:
            self.publisher.publish(result, trigger)
        self.metrics.operation_delay(
            "node_resource_object_update", Trigger.REACTIVE.value, (self.clock() - started) * 1000
        )

    def cycle(self, trigger: Trigger) -> bool:
        """Scan and publish once; False (logged, counted) when it should be retried."""
        now = self.clock()
        if self._last_wakeup is not None:
            self.metrics.wakeup_delay(trigger.value, (now - self._last_wakeup) * 1000)
        self._last_wakeup = now
        self.cycles += 1
        try:
            result = self.scan(trigger)
        except Exception as exc:
            self._failed(trigger, exc)
            self._condition(ConditionType.PODRESOURCES_FETCHED, False)
            return False
        self._condition(ConditionType.PODRESOURCES_FETCHED, True)
        try:
            self._write(result, trigger)
        except Exception as exc:
            self._failed(trigger, exc)
            self._condition(ConditionType.NODE_TOPOLOGY_UPDATED, False)
            return False
        self._condition(ConditionType.NODE_TOPOLOGY_UPDATED, True)
        self._failures.recovered("NRT updates")
        log.info(
            "cycle %d (%s): %s NRT %s, fingerprint %s",
            self.cycles,
            trigger.value,
            "printed" if self.publisher is None else "published",
            self.cfg.hostname,
            result.fingerprint or "-",
        )
        return True

    # -- the loop
    def run(self, stop: threading.Event) -> int:
        ready = retry(
            self.refresh_resources,
            stop,
            what=f"waiting for the kubelet podresources API on {self.podres.socket_path}",
            backoff=Backoff(initial=0.5, maximum=10.0),
        )
        if ready is None:
            return EXIT_OK
        if self.terminal_pods is not None and not self.terminal_pods.synced.is_set():
            log.info("waiting for the first list of terminal pods")
            while not self.terminal_pods.synced.wait(MAX_SLEEP):
                if stop.is_set():
                    return EXIT_OK
        watcher = NotifyWatcher(Path(self.cfg.notify_file)) if self.cfg.notify_file else None
        pacer = Pacer(self.cfg.max_events_per_second, self.cfg.time_unit_to_limit_events)
        scheduler = Scheduler(self.cfg.sleep_interval, pacer, self.clock())
        backoff = Backoff(initial=1.0, maximum=30.0)
        while not stop.is_set():
            now = self.clock()
            if watcher is not None and watcher.changed():
                scheduler.notify(Trigger.REACTIVE)
            trigger = scheduler.due(now)
            if trigger is None:
                wait = min(scheduler.next_deadline(now), MAX_SLEEP)
                if watcher is not None:
                    wait = min(wait, NOTIFY_POLL_INTERVAL)
                stop.wait(wait)
                continue
            if self.cycle(trigger):
                backoff.reset()
                if self.cfg.oneshot:
                    return EXIT_OK
            else:
                scheduler.retry(self.clock(), backoff.next_delay(), trigger)
        return EXIT_OK


# ----------------------------------------------------------------------------- wiring


def _setup_logging(cfg: rteconfig.Config) -> None:
    level = logging.DEBUG if cfg.debug or cfg.verbose >= 4 else logging.INFO
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    if level > logging.DEBUG:
        logging.getLogger("urllib3").setLevel(logging.WARNING)


def _api_client(cfg: rteconfig.Config) -> RestClient:
    """The API connection: ``--kubeconfig``, else ``KUBECONFIG``, else the pod's service account."""
    try:
        return RestClient(resolve_config(cfg.kubeconfig), user_agent=f"{rteconfig.PROG}/{package_version()}")
    except (ClientConfigError, ValueError) as exc:
        source = cfg.sources.get("kubeconfig", "default")
        raise rteconfig.ConfigError(
            f"cannot load kubeconfig {cfg.kubeconfig or '(default)'} ({source}): {exc}"
        ) from None


def _dump_config(cfg: rteconfig.Config, dest: str) -> bool:
    """Handle ``--dump-config``; True when the process should exit afterwards."""
    text = rteconfig.dump(cfg)
    if dest in ("-", ".andexit"):
        sys.stdout.write(text)
        sys.stdout.flush()
    elif dest == ".log":
        log.info("configuration:\n%s", text)
    else:
        Path(dest).write_text(text)
    return dest == ".andexit"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        cfg, args = rteconfig.load(argv, os.environ)
        if args.version:
            sys.stdout.write(f"resource-topology-exporter {package_version()}\n")
            return EXIT_OK
        _setup_logging(cfg)
        if args.dump_config and _dump_config(cfg, args.dump_config):
            return EXIT_OK
        tm, kubelet = rteconfig.resolve_topology_manager(cfg)
        own_pod = rteconfig.readiness_pod(cfg, os.environ)
        needs_api = not cfg.no_publish or own_pod is not None or cfg.exclude_terminal_pods
        api = _api_client(cfg) if needs_api else None
    except rteconfig.ConfigError as exc:
        sys.stderr.write(f"{rteconfig.PROG}: error: {exc}\n")
        return EXIT_USAGE

    reserved = kubelet.reserved_system_cpus if kubelet is not None else ()
    try:
        machine = read_machine(cfg.sysfs, reserved)
        if cfg.notify_file:
            prepare_notify_file(Path(cfg.notify_file))
    except (SysinfoError, NotifyFileError) as exc:
        log.error("%s", exc)
        return EXIT_RUNTIME
    log.info(
        "node %s: %d NUMA nodes from %s; topology manager policy=%r scope=%r; podresources %s",
        cfg.hostname,
        len(machine.nodes),
        cfg.sysfs,
        tm.policy,
        tm.scope,
        cfg.socket_path,
    )

    metrics = Metrics(cfg.hostname)
    if cfg.metrics_mode != "disabled":
        import prometheus_client

        prometheus_client.disable_created_metrics()
        try:
            metrics.serve(
                cfg.metrics_address,
                cfg.metrics_port,
                tls=cfg.metrics_mode == "httptls",
                certs_dir=cfg.metrics_certs_dir,
                cert_file=cfg.metrics_cert_file,
                key_file=cfg.metrics_key_file,
                want_client_auth=cfg.metrics_want_cli_auth,
                tls_policy=cfg.metrics_tls_policy,
            )
        except OSError as exc:
            log.error("cannot serve metrics on %s:%d: %s", cfg.metrics_address, cfg.metrics_port, exc)
            return EXIT_RUNTIME

    publisher = None
    if api is not None and not cfg.no_publish:
        publisher = Publisher(
            api,
            cfg.hostname,
            tm,
            patch_mode=cfg.patch_mode,
            patch_resync=cfg.patch_resync,
            add_owner=cfg.add_nrt_owner,
            metrics=metrics,
        )

    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    readiness = ConditionInjector(api, own_pod) if api is not None and own_pod is not None else None
    terminal_pods = TerminalPods(api, cfg.hostname) if api is not None and cfg.exclude_terminal_pods else None
    if terminal_pods is not None:
        terminal_pods.start()
    with PodResourcesClient(cfg.socket_path) as podres:
        exporter = Exporter(
            cfg, tm, machine, podres, publisher, metrics, readiness=readiness, terminal_pods=terminal_pods
        )
        try:
            return exporter.run(stop)
        finally:
            if terminal_pods is not None:
                terminal_pods.stop()
            metrics.stop()
            if api is not None:
                api.close()


if __name__ == "__main__":
    sys.exit(main())
