"""The targets of one pytest process: clusters the suite runs against, prepared lazily and closed at the end.

A *context* is one prepared target: with a kubeconfig, that cluster; without one, an
embedded cluster of one profile started through :mod:`nrop.suite.target`. Opening a
context connects the client and, when ``--setup`` is in effect, installs the stack through
the operator (:func:`nrop.suite.stack.setup`); :meth:`Targets.before_suite` then runs
upstream's BeforeSuite once (topology checks, numacell, node labels, the NRT reference)
and builds the :class:`~nrop.suite.config.SuiteConfig`. A cluster that cannot run the
suite leaves a skip reason instead of an error. Closing runs AfterSuite, the stack
teardown when asked, and stops the embedded cluster, keeping its log in the report
directory. Progress lines of the stack and infra helpers are relayed to the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nrop.suite.options import SuiteOptions
from nrop.suite.target import EmbeddedCluster

__all__ = ["EMBEDDED_DEVICE_TYPES", "KUBECONFIG_KEY", "Context", "Targets"]

log = logging.getLogger(__name__)

KUBECONFIG_KEY = "kubeconfig"
#: Loggers whose INFO lines are shown on the terminal while a target is being prepared.
PROGRESS_LOGGERS = ("nrop.suite.stack", "nrop.suite.infra")
#: What the embedded profiles advertise as devices (CONTRACTS.md, "Embedded cluster target").
EMBEDDED_DEVICE_TYPES = {
    "E2E_NROP_DEVICE_TYPE_1": "example.com/deviceA",
    "E2E_NROP_DEVICE_TYPE_2": "example.com/deviceB",
    "E2E_NROP_DEVICE_TYPE_3": "example.com/deviceC",
}


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


class _ProgressHandler(logging.Handler):
    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        self.say(record.getMessage())


@contextlib.contextmanager
def _progress_from_loggers(say: Callable[[str], None]) -> Iterator[None]:
    handler = _ProgressHandler(say)
    loggers = [logging.getLogger(name) for name in PROGRESS_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


class Targets:
    """The contexts of one pytest process, opened lazily and closed at the end."""

    def __init__(self, options: SuiteOptions, say: Callable[[str], None], worker: str | None) -> None:
        self.options = options
        self.say = say
        self.worker = worker
        self.contexts: dict[str, Context] = {}
        self._state_root: Path | None = None
        from nrop.suite.timeouts import Timeouts

        self.timeouts = Timeouts.from_env(os.environ, local=options.embedded)

    def key_for(self, profile: str) -> str:
        return profile if self.options.embedded else KUBECONFIG_KEY

    def get(self, key: str) -> Context:
        context = self.contexts.get(key)
        if context is None:
            context = self._open(key)
            self.contexts[key] = context
        return context

    def _state_dir(self, key: str) -> Path:
        if self._state_root is None:
            self._state_root = Path(tempfile.mkdtemp(prefix="nrop-e2e-"))
        return self._state_root / key

    def _say(self, key: str) -> Callable[[str], None]:
        prefix = f"[{key}{'@' + self.worker if self.worker else ''}] "
        return lambda line: self.say(prefix + line)

    def _open(self, key: str) -> Context:
        from nrop.suite import kube as k
        from nrop.suite import stack

        say = self._say(key)
        options = self.options
        cluster: EmbeddedCluster | None = None
        began = time.monotonic()
        if options.embedded:
            from nrop.suite import target

            say(f"starting the embedded cluster (profile {key})")
            cluster = target.start(key, self._state_dir(key), progress=say)
            say(f"embedded cluster up in {cluster.started_in:.1f}s: {cluster.kubeconfig}")
            for var, value in EMBEDDED_DEVICE_TYPES.items():
                os.environ.setdefault(var, value)
            kubeconfig = cluster.kubeconfig
        else:
            assert options.kubeconfig is not None
            kubeconfig = options.kubeconfig
        context = Context(key=key, kube=None, timeouts=self.timeouts, cluster=cluster)
        try:
            context.kube = k.Kube.from_kubeconfig(kubeconfig)
            if options.do_setup:
                say("installing the operator and creating the NUMAResourcesOperator/Scheduler CRs")
                timings = stack.StackTimings.local() if options.embedded else stack.StackTimings()
                with _progress_from_loggers(say):
                    stack.setup(context.kube, pool=os.environ.get("E2E_NODE_ROLE", "worker"), timings=timings)
                context.stack_installed = True
                say(f"stack ready in {time.monotonic() - began:.1f}s")
        except BaseException:
            with contextlib.suppress(Exception):  # the setup error is the one to report
                self._close(context)
            raise
        return context

    def before_suite(self, context: Context) -> None:
        """BeforeSuite once per context: topology checks, numacell, labels, NRT reference."""
        if context.config is not None or context.skip_reason is not None:
            return
        if context.suite_error is not None:
            raise context.suite_error
        from nrop.suite import infra
        from nrop.suite.config import SuiteConfig

        say = self._say(context.key)
        embedded = self.options.embedded
        try:
            log.info("%s", infra.dump_environment(os.environ))
            problems = infra.check_nodes_topology(context.kube)
            if problems:
                context.skip_reason = "the cluster does not satisfy the serial suite: " + "; ".join(problems)
                say(context.skip_reason)
                return
            say("BeforeSuite: numacell device plugin, node labels, NRT reference")
            timings = infra.InfraTimings.local() if embedded else infra.InfraTimings()
            with _progress_from_loggers(say):
                if embedded:
                    from nrop.api.images import DEFAULT_IMAGE

                    context.infra = infra.before_suite(
                        context.kube, environ=os.environ, image=DEFAULT_IMAGE, timings=timings
                    )
                else:
                    context.infra = infra.before_suite(context.kube, environ=os.environ, timings=timings)
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
            )
        except BaseException as exc:
            context.suite_error = exc
            raise

    def _close(self, context: Context) -> None:
        from nrop.suite import infra, stack

        say = self._say(context.key)
        options = self.options
        try:
            if context.infra is not None and context.kube is not None:
                timings = infra.InfraTimings.local() if options.embedded else infra.InfraTimings()
                with _progress_from_loggers(say):
                    infra.after_suite(context.kube, context.infra, environ=os.environ, timings=timings)
                context.infra = None
            if (
                options.do_teardown
                and context.kube is not None
                and (context.stack_installed or not options.embedded)
            ):
                say("removing the NUMAResourcesScheduler/Operator CRs and the operator")
                timings = stack.StackTimings.local() if options.embedded else stack.StackTimings()
                with _progress_from_loggers(say):
                    stack.teardown(context.kube, timings=timings)
                context.stack_installed = False
        finally:
            if context.kube is not None:
                context.kube.close()
            if context.cluster is not None:
                self._keep_cluster_log(context.cluster)
                context.cluster.stop()
                say("embedded cluster stopped")

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
            self._close(context)

    def close_all(self) -> None:
        errors: list[BaseException] = []
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
