"""The pytest plugin of the serial suite (entry point ``pytest11: nrop``).

It owns the run, not the tests: options and their environment twins
(:mod:`nrop.suite.plugin.options`), the label markers (:mod:`nrop.suite.plugin.labels`), spec selection
(``--tier-up-to``, ``--label-filter``, ``--focus``/``--skip``, ``-m`` with upstream label
spellings), ``--dry-run-specs``, the target clusters, the session and per-test fixtures,
failure diagnostics and the reports (:mod:`nrop.suite.plugin.reports`).

It is inert for anything but the suite: the project's own tests load it through the entry
point and see only registered markers. A cluster is started, and the stack installed, only
when a collected test asks for ``kube``, ``suite_config`` or ``fxt``.

Targets. With a kubeconfig (``--kubeconfig`` / ``KUBECONFIG``) every spec runs against
that cluster, serially (``-n`` is refused: the specs disturb the whole cluster). Without
one, an embedded cluster is started per needed profile: specs labelled ``tmscope:cnt``
need ``container-scope``, the others ``--cluster-profile`` (default ``default``). Such a run
spreads its specs over xdist workers by itself once it knows the selection
(:mod:`nrop.suite.plugin.distributing`): as many as the free memory, the cores and the selected specs call for,
or ``-n N`` (``-n 0``: serially); every worker starts its own clusters and runs its lane of
the plan, longest spec first. A serial run orders the specs by profile, prepares the next
cluster in the background (:data:`~nrop.suite.plugin.selecting.PREPARE_AHEAD` specs before it is
needed) and closes the previous one in the background.

Fixtures (see docs/contributing.md): ``kube`` (session) the client of the target, with the stack
installed; ``timeouts`` (session); ``suite_config`` (session) the BeforeSuite result,
skipping the spec with the reason when the cluster lacks what the suite needs; ``fxt``
(function) the per-test namespace and NRT cooldown, named after the module's
``FIXTURE_BASENAME``; ``defer_cleanup`` (function) Ginkgo's ``DeferCleanup``, run after
``fxt``'s teardown.

This module is the entry point and owns the run's configuration: the options, the markers,
whether this is a suite run, the option checks against ``-n`` and the defaults it sets
(session timeout, JUnit path; ``-n`` held back until the selection is known). It loads the
rest of the plugin (``pytest_plugins``), one module per seam, sharing the run's state
(:mod:`nrop.suite.plugin.runstate`): spec selection and order (:mod:`nrop.suite.plugin.selecting`), the
spread over workers (:mod:`nrop.suite.plugin.distributing`), targets and fixtures
(:mod:`nrop.suite.plugin.targeting`), outcomes, reports and the end of the run
(:mod:`nrop.suite.plugin.reporting`).

A test directory declares itself the serial suite with ``NROP_SERIAL_SUITE = True`` in its
conftest.py; then an empty selection is a usage error (exit 4) instead of pytest's exit 5,
and the JUnit file and ``report.html`` are written into the report directory.

Timeouts (pytest-timeout): a spec gets :data:`~nrop.suite.plugin.selecting.SPEC_TIMEOUT` for setup,
body and teardown unless ``--timeout`` or a ``timeout`` mark says otherwise (pyproject's 300s
is for the project's own tests), and the run upstream's 5h (:data:`SESSION_TIMEOUT`) unless
``--session-timeout`` is given.
"""

from __future__ import annotations

import os
import types
from dataclasses import replace

import pytest

from nrop.suite.plugin import environtable, loggertable, reports
from nrop.suite.plugin import labels as _labels
from nrop.suite.plugin.options import OPTION_DESTS, SELECTION_FLAGS, SuiteOptions, add_options, resolve
from nrop.suite.plugin.runstate import STATE, RunState, is_distributed
from nrop.suite.plugin.specs import SPEC_MARK

__all__ = ["SESSION_TIMEOUT", "SUITE_FLAG"]

#: The rest of the plugin, one module per seam (registered when pytest registers this module).
pytest_plugins = (
    "nrop.suite.plugin.selecting",
    "nrop.suite.plugin.distributing",
    "nrop.suite.plugin.targeting",
    "nrop.suite.plugin.reporting",
)

SUITE_FLAG = "NROP_SERIAL_SUITE"
#: pytest-timeout's ``--session-timeout`` of a suite run when none is given: upstream's whole-run
#: timeout (5h). It is soft: the spec running when it expires ends, then the run stops.
SESSION_TIMEOUT = 5 * 3600.0

#: Plugins installed for the project's own tests that no spec uses, left out of suite runs:
#: hypothesis's imports the whole hypothesis package in ``pytest_terminal_summary``, in every
#: process (the controller and each xdist worker), where pytest rewrites its asserts first
#: (about 0.5 s of CPU per process when bytecode is not cached).
UNUSED_IN_SUITE_RUNS = ("hypothesispytest",)


def _is_suite_run(config: pytest.Config) -> bool:
    if any(config.getoption(dest, None) for dest in SELECTION_FLAGS):
        return True
    return any(
        isinstance(plugin, types.ModuleType) and getattr(plugin, SUITE_FLAG, False) is True
        for plugin in config.pluginmanager.get_plugins()
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SPEC_MARK}(text, *labels): one level of a serial-suite spec (use nrop.suite.plugin.specs.spec)",
    )
    config.addinivalue_line("markers", "test_id(id): the upstream test_id of a spec ([test_id:NNNNN])")
    for label in _labels.LABELS.values():
        config.addinivalue_line(
            "markers", f"{label.marker}: label {label.name} ({label.kind}): {label.description}"
        )
    markexpr = getattr(config.option, "markexpr", "")
    if markexpr:
        config.option.markexpr = _labels.rewrite_mark_expression(markexpr)

    suite_run = _is_suite_run(config)
    if suite_run:
        loggertable.guard()  # before the session's background threads exist
        environtable.guard()
        for name in UNUSED_IN_SUITE_RUNS:
            if config.pluginmanager.has_plugin(name):
                config.pluginmanager.unregister(name=name)
    if suite_run and _session_timeout_unset(config):
        config.option.session_timeout = SESSION_TIMEOUT  # read by pytest-timeout's pytest_configure
    cli = {dest: config.getoption(dest, None) for dest in OPTION_DESTS}
    options: SuiteOptions | None = None
    error: pytest.UsageError | None = None
    try:
        options = resolve(cli, os.environ)
    except pytest.UsageError as exc:
        if suite_run:
            raise
        error = exc  # raised only if a spec of the suite is collected
    if options is not None and _probes_target(config, suite_run, options):
        from nrop.suite.plugin import target

        assert options.kubeconfig is not None
        options = replace(options, embedded_server=target.serves_embedded(options.kubeconfig))
    worker = config.workerinput["workerid"] if hasattr(config, "workerinput") else None
    run = RunState(options=options, error=error, suite_run=suite_run, worker=worker)
    config.stash[STATE] = run
    if not suite_run or options is None or worker is not None:
        return
    if is_distributed(config) and not options.dry_run and not options.embedded:
        raise pytest.UsageError(
            f"-n/--dist runs specs in parallel, but the serial suite must run alone on a shared cluster "
            f"(target {options.kubeconfig}): drop -n, or unset KUBECONFIG/--kubeconfig so that every "
            f"xdist worker starts its own embedded cluster"
        )
    _hold_back_xdist(config, run, options)
    if not options.dry_run and not config.option.collectonly and not getattr(config.option, "xmlpath", None):
        config.option.xmlpath = str(options.report_dir / reports.JUNIT_NAME)


def _hold_back_xdist(config: pytest.Config, run: RunState, options: SuiteOptions) -> None:
    """The workers of a suite run are started once the selection is known (:mod:`nrop.suite.plugin.distributing`).

    ``-n N`` is remembered and xdist kept from starting its session now; a dry run or a
    collection lists the specs in this process; a run that debugs (``--pdb``, ``--trace``)
    or has no xdist stays serial.
    """
    requested = getattr(config.option, "numprocesses", None)
    if is_distributed(config):
        config.option.dist, config.option.tx = "no", []
    listing = options.dry_run or bool(config.option.collectonly)
    debugging = bool(config.getoption("usepdb", False) or config.getoption("trace", False))
    run.spreads = (
        options.embedded and not listing and not debugging and config.pluginmanager.hasplugin("xdist")
    )
    run.requested_workers = int(requested) if requested is not None else None


def _probes_target(config: pytest.Config, suite_run: bool, options: SuiteOptions) -> bool:
    """Whether to ask a kubeconfig target if it is an embedded cluster (a run that will reach it)."""
    return (
        suite_run and options.kubeconfig is not None and not options.dry_run and not config.option.collectonly
    )


def _session_timeout_unset(config: pytest.Config) -> bool:
    if not config.pluginmanager.hasplugin("timeout") or config.getoption("session_timeout", None) is not None:
        return False
    try:
        return not config.getini("session_timeout")
    except ValueError:
        return True
