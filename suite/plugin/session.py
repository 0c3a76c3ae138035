"""The targets of one pytest process: clusters the suite runs against, prepared lazily and closed at the end.

A *context* is one prepared target: with a kubeconfig, that cluster; without one, an
embedded cluster of one profile started through :mod:`nrop.suite.plugin.target`. Opening a
context connects the client and, when ``--setup`` is in effect, installs the stack through
the operator (:func:`nrop.suite.install.stack.setup`); :meth:`Targets.before_suite` then runs
upstream's BeforeSuite once (topology checks, numacell, node labels, the NRT reference)
and builds the :class:`~nrop.suite.e2e.config.SuiteConfig`. A cluster given by kubeconfig that
cannot run the suite leaves a skip reason instead of an error, as upstream skips; an
embedded cluster is built to run it, so there the same finding is an error of every spec
(:class:`UnsuitableEmbeddedCluster`): a CI gate must not stay green on a stack whose
exporter stopped reporting the topology. Closing runs AfterSuite, the stack
teardown when asked, and stops the embedded cluster, keeping its log in the report
directory. Progress lines of the stack and infra helpers are relayed to the terminal.

A serial run that needs a second embedded target prepares it ahead on a thread
(:meth:`Targets.prepare`: cluster, stack, BeforeSuite) while the last specs of the first
one run, and closes the first one on a thread (:meth:`Targets.close_in_background`) while
the specs of the second one run; the lines and errors of both come out when they are
joined. Only the embedded target does this: each context is its own cluster. When each
target was being prepared (from its start to the end of BeforeSuite) is kept for the
timeline of ``report.html`` (:attr:`Targets.spans`), and how long the specs waited for
their targets (:attr:`Targets.waited`): a spec's measured duration leaves that out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nrop.api.images import own_image
from nrop.suite.plugin.htmlreport import ClusterSpan
from nrop.suite.plugin.options import SuiteOptions
from nrop.suite.plugin.target import EmbeddedCluster, environment_copy, state_root

__all__ = ["EMBEDDED_DEVICE_TYPES", "EMBEDDED_REFRESH_PERIOD", "KUBECONFIG_KEY", "Context", "Targets"]

log = logging.getLogger(__name__)

KUBECONFIG_KEY = "kubeconfig"
#: The dynamic client's discovery cache of an embedded cluster, in its state directory.
DISCOVERY_CACHE = "discovery.json"
#: The longest name of a cluster's state directory (its profile's, cut): the kubelet sockets
#: under it must stay within 107 bytes.
STATE_NAME_LENGTH = 15
#: Loggers whose INFO lines are shown on the terminal while a target is being prepared.
PROGRESS_LOGGERS = ("nrop.suite.install.stack", "nrop.suite.install.infra", "nrop.suite.install.nodetopology")
#: ``infoRefreshPeriod`` of the NROP the suite creates on an embedded cluster. The mode stays
#: ``Periodic`` (the scheduler-cache specs need it); every wait that spans one exporter refresh
#: (settling, cooldown, BeforeSuite's numacell check, re-publication grace) reads the period from
#: the NROP, so they shrink with it. A real cluster keeps the operator's default (10s).
EMBEDDED_REFRESH_PERIOD = "2s"
#: What the embedded profiles advertise as devices (README.tests.md, "Against the embedded cluster").
EMBEDDED_DEVICE_TYPES = {
    "E2E_NROP_DEVICE_TYPE_1": "example.com/deviceA",
    "E2E_NROP_DEVICE_TYPE_2": "example.com/deviceB",
    "E2E_NROP_DEVICE_TYPE_3": "example.com/deviceC",
}


class UnsuitableEmbeddedCluster(RuntimeError):
    """An embedded cluster whose NRTs do not show what its profile configures: the stack is broken."""


@dataclass
class Context:
    """One prepared target: a cluster (maybe embedded), its client, and after BeforeSuite its config."""

    key: str
    kube: Any
    timeouts: Any
    cluster: EmbeddedCluster | None = None
    stack_installed: bool = False
    infra: Any = None
    config: Any = None
    skip_reason: str | None = None
    suite_error: BaseException | None = None
    #: The cluster before BeforeSuite, compared after AfterSuite (:mod:`nrop.suite.install.leaks`).
    baseline: Any = None
    #: When opening it began (epoch seconds).
    opened_at: float = 0.0


def _embedded_operator_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The operator env of a throwaway embedded cluster: what BeforeSuite would set, set at install.

    BeforeSuite turns the scheduler image validation off (unless E2E_VALIDATE_SCHEDULER_IMAGE=true)
    by rolling the operator out again, and AfterSuite rolls it back; installing the operator with
    the value BeforeSuite wants makes both a no-op ("already set") instead of two rollouts.
    """
    from nrop.suite.install import infra

    if infra.scheduler_image_validation_enabled(environ):
        return {}
    return {infra.SCHEDULER_IMAGE_VALIDATION: "false"}


class _ProgressHandler(logging.Handler):
    """Relays INFO records emitted by one thread (a target prepared in the background has its own)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self.say = say
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.say(record.getMessage())


_LEVELS_LOCK = threading.Lock()
#: levels of the progress loggers before the first relay began (restored when the last one ends)
_SAVED_LEVELS: list[int] = []
_RELAYS = 0


@contextlib.contextmanager
def _progress_from_loggers(say: Callable[[str], None]) -> Iterator[None]:
    global _RELAYS
    handler = _ProgressHandler(say)
    loggers = [logging.getLogger(name) for name in PROGRESS_LOGGERS]
    with _LEVELS_LOCK:
        if _RELAYS == 0:
            _SAVED_LEVELS[:] = [logger.level for logger in loggers]
            for logger in loggers:
                if logger.getEffectiveLevel() > logging.INFO:
                    logger.setLevel(logging.INFO)
        _RELAYS += 1
        for logger in loggers:
            logger.addHandler(handler)
    try:
        yield
    finally:
        with _LEVELS_LOCK:
            for logger in loggers:
                logger.removeHandler(handler)
            _RELAYS -= 1
            if _RELAYS == 0:
                for logger, level in zip(loggers, _SAVED_LEVELS, strict=True):
                    logger.setLevel(level)


@dataclass
class _Background:
    """A context prepared or closed on a thread; its progress lines wait for the main thread."""

    key: str
    lines: list[str] = field(default_factory=list)
    context: Context | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None
    began: float = field(default_factory=time.monotonic)
    #: set when the work may begin before its delay is over (it is wanted now, or not at all)
    wanted: threading.Event = field(default_factory=threading.Event)
    #: the target is not wanted any more: a delayed preparation that has not begun does nothing
    dropped: bool = False

    def start(self, work: Callable[[], None]) -> None:
        def run() -> None:
            try:
                work()
            except BaseException as exc:
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True, name=f"nrop-{self.key}")
        self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


class Targets:
    """The contexts of one pytest process, opened lazily (or ahead, in the background) and closed at the end."""

    def __init__(self, options: SuiteOptions, say: Callable[[str], None], worker: str | None) -> None:
        self.options = options
        self.say = say
        self.worker = worker
        self.contexts: dict[str, Context] = {}
        self._state_root: Path | None = None
        self._lock = threading.Lock()
        self._preparing: dict[str, _Background] = {}
        self._closing: list[_Background] = []
        #: every embedded cluster started, for a last-resort stop
        self._clusters: list[EmbeddedCluster] = []
        #: when each target was being prepared, in the order they were
        self.spans: list[ClusterSpan] = []
        #: seconds the caller of :meth:`get` and :meth:`before_suite` has waited for targets so far
        self.waited = 0.0
        self._opened: dict[str, int] = {}
        from nrop.suite.e2e.timeouts import Timeouts

        self.timeouts = Timeouts.from_env(os.environ, local=options.emulated)

    def key_for(self, profile: str) -> str:
        return profile if self.options.embedded else KUBECONFIG_KEY

    def get(self, key: str) -> Context:
        context = self.contexts.get(key)
        if context is None:
            began = time.monotonic()
            try:
                pending = self._preparing.pop(key, None)
                if pending is not None:
                    pending.wanted.set()
                context = (
                    self._open(key, self._say(key)) if pending is None else self._finish_prepared(pending)
                )
            finally:
                self.waited += time.monotonic() - began
            self.contexts[key] = context
        return context

    def prepare(self, key: str, after: float = 0.0) -> None:
        """Start opening ``key`` and its BeforeSuite on a thread, while the current specs run;
        ``after`` seconds from now, or as soon as :meth:`get` wants it if that is sooner (a
        cluster ready when it is needed is not held unused, nor started in the storm of the
        other workers' first clusters).

        :meth:`get` then waits for it and shows its progress. Only embedded targets are
        prepared ahead (a kubeconfig target is a single context).
        """
        if not self.options.embedded or key in self.contexts or key in self._preparing:
            return
        pending = _Background(key)
        prefix = self._prefix(key)

        def work() -> None:
            pending.wanted.wait(after)
            if pending.dropped:
                return
            pending.began = time.monotonic()
            say = lambda line: pending.lines.append(prefix + line)  # noqa: E731
            pending.context = self._open(key, say)
            with contextlib.suppress(Exception):  # kept in context.suite_error, raised when used
                self._before_suite(pending.context, say)

        when = f" in {after:.0f}s" if after > 0 else ""
        self.say(f"{prefix}preparing the target in the background{when}")
        self._preparing[key] = pending
        pending.start(work)

    def _finish_prepared(self, pending: _Background) -> Context:
        waited = time.monotonic()
        pending.join()
        for line in pending.lines:
            self.say(line)
        self.say(
            f"{self._prefix(pending.key)}prepared in the background in {time.monotonic() - pending.began:.1f}s "
            f"(waited {time.monotonic() - waited:.1f}s for it)"
        )
        if pending.error is not None:
            raise pending.error
        assert pending.context is not None
        return pending.context

    def _state_dir(self, key: str) -> Path:
        """A directory of its own for each cluster (a target closed in the background may be reopened)."""
        with self._lock:
            if self._state_root is None:
                self._state_root = state_root()
            count = self._opened[key] = self._opened.get(key, 0) + 1
            # node roots hold unix sockets (at most 107 bytes): a long profile name is cut
            name = key[:STATE_NAME_LENGTH]
            return self._state_root / (name if count == 1 else f"{name}-{count}")

    def _prefix(self, key: str) -> str:
        return f"[{key}{'@' + self.worker if self.worker else ''}] "

    def _say(self, key: str) -> Callable[[str], None]:
        prefix = self._prefix(key)
        return lambda line: self.say(prefix + line)

    def _open(self, key: str, say: Callable[[str], None]) -> Context:
        from nrop.suite.e2e import kube as k
        from nrop.suite.install import stack

        options = self.options
        cluster: EmbeddedCluster | None = None
        began = time.monotonic()
        opened_at = time.time()
        if options.embedded:
            from nrop.suite.plugin import target

            say(f"starting the embedded cluster (profile {key})")
            cluster = target.start(key, self._state_dir(key), progress=say)
            self._clusters.append(cluster)
            say(f"embedded cluster up in {cluster.started_in:.1f}s: {cluster.kubeconfig}")
            kubeconfig = cluster.kubeconfig
        else:
            assert options.kubeconfig is not None
            kubeconfig = options.kubeconfig
            if options.embedded_server:
                say(
                    f"the cluster of {kubeconfig} is an embedded one (nrop-cluster up): its timings and devices"
                )
        if options.emulated:
            for var, value in EMBEDDED_DEVICE_TYPES.items():
                os.environ.setdefault(var, value)
        context = Context(key=key, kube=None, timeouts=self.timeouts, cluster=cluster, opened_at=opened_at)
        try:
            # an embedded cluster's discovery cache goes with its state (a new server each time)
            cache = cluster.state_dir / DISCOVERY_CACHE if cluster is not None else None
            context.kube = k.Kube.from_kubeconfig(kubeconfig, discovery_cache=cache)
            if options.do_setup:
                say(
                    f"installing the operator ({options.install_via}) and creating the "
                    "NUMAResourcesOperator/Scheduler CRs"
                )
                timings = stack.StackTimings.local() if options.emulated else stack.StackTimings()
                refresh = EMBEDDED_REFRESH_PERIOD if options.emulated else None
                with _progress_from_loggers(say):
                    stack.setup(
                        context.kube,
                        image=own_image(os.environ),
                        env=_embedded_operator_env(os.environ) if options.emulated else None,
                        pool=stack.node_role(os.environ),
                        refresh_period=refresh,
                        via=options.install_via,
                        timings=timings,
                    )
                context.stack_installed = True
                say(f"stack ready in {time.monotonic() - began:.1f}s")
        except BaseException:
            with contextlib.suppress(Exception):  # the setup error is the one to report
                self._close(context, say)
            raise
        return context

    def before_suite(self, context: Context) -> None:
        """BeforeSuite once per context: topology checks, numacell, labels, NRT reference."""
        began = time.monotonic()
        try:
            self._before_suite(context, self._say(context.key))
        finally:
            self.waited += time.monotonic() - began

    def _before_suite(self, context: Context, say: Callable[[str], None]) -> None:
        if context.config is not None or context.skip_reason is not None:
            return
        if context.suite_error is not None:
            raise context.suite_error
        try:
            self._run_before_suite(context, say)
        finally:
            self.spans.append(ClusterSpan(self.worker or "main", context.key, context.opened_at, time.time()))

    def _run_before_suite(self, context: Context, say: Callable[[str], None]) -> None:
        from nrop.suite.e2e.config import SuiteConfig, numacell_image
        from nrop.suite.install import infra, leaks, nodetopology

        embedded = self.options.embedded
        began = time.monotonic()
        try:
            # environment_copy: this may run on the background thread that opens the next cluster
            log.info("%s", infra.dump_environment(environment_copy()))
            problems = nodetopology.check_nodes_topology(context.kube)
            if problems:
                reason = "the cluster does not satisfy the serial suite: " + "; ".join(problems)
                if embedded:
                    # upstream skips ("we prefer to skip than a false negative") on a cluster
                    # someone else built; an embedded profile is built to satisfy the suite, so
                    # here the stack under test (exporter, kubelet) lost what the profile gives
                    raise UnsuitableEmbeddedCluster(
                        f"{reason} (the embedded profile {context.key!r} provides these: the NRTs its"
                        " exporters publish do not show them)"
                    )
                context.skip_reason = reason
                say(reason)
                return
            context.baseline = leaks.take(context.kube)
            say("BeforeSuite: numacell device plugin, node labels, NRT reference")
            timings = infra.InfraTimings.local() if self.options.emulated else infra.InfraTimings()
            # upstream's numacell image on an embedded cluster (its kubelets run it); our image's
            # numacell where this run installed the stack on another cluster
            ours = own_image(os.environ) if context.stack_installed and not self.options.emulated else None
            with _progress_from_loggers(say):
                context.infra = infra.before_suite(
                    context.kube,
                    environ=os.environ,
                    image=numacell_image(os.environ, ours),
                    timings=timings,
                )
            config = SuiteConfig.load(
                context.kube,
                timeouts=self.timeouts,
                environ=os.environ,
                target=self.options.target,
                profile=context.key if embedded else None,
                infra_namespace=context.infra.namespace,
            )
            context.config = replace(
                config.with_nrt_reference(context.infra.nrt_reference),
                numacell_image=context.infra.numacell_image,
                cluster_dir=context.cluster.state_dir if context.cluster is not None else None,
            )
            say(f"BeforeSuite done in {time.monotonic() - began:.1f}s")
        except BaseException as exc:
            context.suite_error = exc
            raise

    def _close(self, context: Context, say: Callable[[str], None]) -> None:
        from nrop.suite.install import infra, leaks, stack

        options = self.options
        began = time.monotonic()
        left: list[str] = []
        try:
            if context.infra is not None and context.kube is not None:
                timings = infra.InfraTimings.local() if options.emulated else infra.InfraTimings()
                with _progress_from_loggers(say):
                    infra.after_suite(context.kube, context.infra, environ=os.environ, timings=timings)
                context.infra = None
                if context.baseline is not None:
                    left = leaks.compare(context.baseline, leaks.take(context.kube))
                    for line in left:
                        say(f"left behind: {line}")
                    if not left:
                        say("leak check: the cluster is as BeforeSuite found it")
            if (
                options.do_teardown
                and context.kube is not None
                and (context.stack_installed or not options.embedded)
            ):
                say("removing the NUMAResourcesScheduler/Operator CRs and the operator")
                timings = stack.StackTimings.local() if options.emulated else stack.StackTimings()
                with _progress_from_loggers(say):
                    stack.teardown(context.kube, image=own_image(os.environ), timings=timings)
                context.stack_installed = False
        finally:
            if context.kube is not None:
                context.kube.close()
            if context.cluster is not None:
                self._keep_cluster_log(context.cluster)
                context.cluster.stop()
                say(f"embedded cluster stopped ({time.monotonic() - began:.1f}s after AfterSuite began)")
        if left:
            raise RuntimeError(f"the run left the cluster changed ({len(left)}): " + "; ".join(left))

    def _keep_cluster_log(self, cluster: EmbeddedCluster) -> None:
        suffix = f"-{self.worker}" if self.worker else ""
        try:
            self.options.report_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(
                cluster.log_path, self.options.report_dir / f"nrop-cluster-{cluster.profile}{suffix}.log"
            )
        except OSError as exc:
            log.warning("could not keep the embedded cluster log: %s", exc)

    def close(self, key: str) -> None:
        context = self.contexts.pop(key, None)
        if context is not None:
            self._close(context, self._say(key))

    def close_in_background(self, key: str) -> None:
        """AfterSuite, teardown and stop of ``key`` on a thread (a serial run does not need it again).

        Its errors and progress lines come out in :meth:`close_all`.
        """
        context = self.contexts.pop(key, None)
        if context is None:
            return
        closing = _Background(key)
        prefix = self._prefix(key)
        closing.start(lambda: self._close(context, lambda line: closing.lines.append(prefix + line)))
        self._closing.append(closing)

    def close_all(self) -> None:
        errors: list[BaseException] = []
        for key, pending in list(self._preparing.items()):  # prepared ahead but never used
            del self._preparing[key]
            pending.dropped = True
            pending.wanted.set()
            pending.join()
            if pending.context is not None:
                self.contexts.setdefault(key, pending.context)
        for closing in self._closing:
            closing.join()
            for line in closing.lines:
                self.say(line)
            if closing.error is not None:
                errors.append(closing.error)
        self._closing.clear()
        for key in list(self.contexts):
            try:
                self.close(key)
            except Exception as exc:
                errors.append(exc)
        if self._state_root is not None:
            shutil.rmtree(self._state_root, ignore_errors=True)
            self._state_root = None
        if errors:
            raise errors[0]

    def stop_clusters(self) -> None:
        """Last resort after an internal error: stop every embedded cluster started by this process."""
        for cluster in self._clusters:
            cluster.stop()
