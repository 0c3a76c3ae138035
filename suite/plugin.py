"""The pytest plugin of the serial suite (entry point ``pytest11: nrop``).

It owns the run, not the tests: options and their environment twins
(:mod:`nrop.suite.options`), the label markers (:mod:`nrop.suite.labels`), spec selection
(``--tier-up-to``, ``--label-filter``, ``--focus``/``--skip``, ``-m`` with upstream label
spellings), ``--dry-run-specs``, the target clusters, the session and per-test fixtures,
failure diagnostics and the reports (:mod:`nrop.suite.reports`).

It is inert for anything but the suite: the project's own tests load it through the entry
point and see only registered markers. A cluster is started, and the stack installed, only
when a collected test asks for ``kube``, ``suite_config`` or ``fxt``.

Targets. With a kubeconfig (``--kubeconfig`` / ``KUBECONFIG``) every spec runs against
that cluster, serially (``-n`` is refused: the specs disturb the whole cluster). Without
one, an embedded cluster is started per needed profile: specs labelled ``tmscope:cnt``
need ``container-scope``, the others ``--cluster-profile`` (default ``default``). Specs are
ordered by profile; a serial run prepares the next cluster in the background
(:data:`PREPARE_AHEAD` specs before it is needed) and closes the previous one in the
background. With ``-n`` every xdist worker starts its own clusters and a profile other than
the default one is kept on one worker (``--dist loadgroup``).

Fixtures (CONTRACTS.md): ``kube`` (session) the client of the target, with the stack
installed; ``timeouts`` (session); ``suite_config`` (session) the BeforeSuite result,
skipping the spec with the reason when the cluster lacks what the suite needs; ``fxt``
(function) the per-test namespace and NRT cooldown, named after the module's
``FIXTURE_BASENAME``.

A test directory declares itself the serial suite with ``NROP_SERIAL_SUITE = True`` in its
conftest.py; then an empty selection is a usage error (exit 4) instead of pytest's exit 5,
and the JUnit file and ``report.html`` are written into the report directory.

Timeouts (pytest-timeout): a spec gets :data:`SPEC_TIMEOUT` for setup, body and teardown
unless ``--timeout`` or a ``timeout`` mark says otherwise (pyproject's 300s is for the
project's own tests), and the run upstream's 5h (:data:`SESSION_TIMEOUT`) unless
``--session-timeout`` is given.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from nrop.suite import labelfilter, reports
from nrop.suite import labels as _labels
from nrop.suite.options import SELECTION_FLAGS, SuiteOptions, add_options, resolve
from nrop.suite.session import Context, Targets
from nrop.suite.specs import SPEC_MARK, SpecInfo, spec_info

__all__ = [
    "CONTAINER_SCOPE_PROFILE",
    "PREPARE_AHEAD",
    "PROFILE_MARK",
    "SUITE_FLAG",
    "prepare_points",
    "profile_for",
]

log = logging.getLogger(__name__)

SUITE_FLAG = "NROP_SERIAL_SUITE"
CONTAINER_SCOPE_PROFILE = "container-scope"
CONTAINER_SCOPE_LABELS = frozenset({"tmscope:cnt", "tmscope:container"})
#: ``@pytest.mark.nrop_profile(name)``: on embedded clusters the spec runs on a cluster of that
#: profile (a spec whose upstream premise is a machine shape the default profile does not have).
PROFILE_MARK = "nrop_profile"
DEFAULT_FIXTURE_BASENAME = "e2e-test"

#: pytest-timeout limit of one spec (setup, body and teardown with its cooldown) when neither the
#: spec nor ``--timeout`` sets one: pyproject's 300s is for the project's own tests; upstream bounds
#: only the whole run, and scheduler-cache specs legitimately take several minutes each.
SPEC_TIMEOUT = 1800.0
#: pytest-timeout's ``--session-timeout`` of a suite run when none is given: upstream's whole-run
#: timeout (5h). It is soft: the spec running when it expires ends, then the run stops.
SESSION_TIMEOUT = 5 * 3600.0

#: Under xdist, the specs of a profile other than the run's are kept on one worker per this many
#: specs (each such worker starts a cluster of that profile: about 20 s against minutes of specs).
GROUP_SIZE = 8

#: A serial run on embedded clusters prepares its next target (cluster, stack, BeforeSuite) in
#: the background when the spec this many places before the first one needing it starts.
PREPARE_AHEAD = 2

_OPTION_DESTS = (*SELECTION_FLAGS, "nrop_keep_namespace")
_LOADGROUP_INPUT = "nrop_loadgroup"
#: xdist workeroutput key: a worker's AfterSuite/teardown/leak-check errors, for the controller.
_CLOSE_ERRORS_OUTPUT = "nrop_close_errors"
#: xdist workeroutput key: a worker's leak-check verdict lines, shown by the controller.
_LEAK_NOTES_OUTPUT = "nrop_leak_notes"
_LEAK_NOTE_PREFIXES = ("leak check:", "left behind:")


def prepare_points(profiles: list[str], ahead: int) -> dict[int, str]:
    """Where a serial run starts preparing its next target: spec index -> profile to prepare.

    ``profiles`` are the profiles of the specs in run order; each change of profile is
    prepared when the spec ``ahead`` places before it starts (the first spec at the earliest).
    """
    points: dict[int, str] = {}
    for index in range(1, len(profiles)):
        if profiles[index] != profiles[index - 1] and profiles[index] not in profiles[:index]:
            points.setdefault(max(0, index - ahead), profiles[index])
    return points


def profile_for(labels: tuple[str, ...], default_profile: str, marked: str | None = None) -> str:
    """The embedded cluster profile a spec needs: the one its ``nrop_profile`` mark names, else
    ``container-scope`` for container-scope specs, else the run's profile."""
    if marked:
        return marked
    if any(label.lower() in CONTAINER_SCOPE_LABELS for label in labels):
        return CONTAINER_SCOPE_PROFILE
    return default_profile


# ------------------------------------------------------------------------------- run state


@dataclass
class _State:
    options: SuiteOptions | None
    error: pytest.UsageError | None
    suite_run: bool
    worker: str | None
    started: float = field(default_factory=time.monotonic)
    summary: reports.RunSummary = field(default_factory=reports.RunSummary)
    html: reports.HtmlCollector = field(default_factory=reports.HtmlCollector)
    html_path: Path | None = None
    collected_specs: int = 0
    selected_specs: int = 0
    labels_seen: set[str] = field(default_factory=set)
    targets: Targets | None = None
    active_key: str | None = None
    close_errors: list[str] = field(default_factory=list)
    leak_notes: list[str] = field(default_factory=list)

    def usable_options(self) -> SuiteOptions:
        if self.error is not None:
            raise self.error
        assert self.options is not None
        return self.options


_STATE = pytest.StashKey[_State]()
_SAY_LOCK = threading.Lock()
_SPEC = pytest.StashKey[SpecInfo]()
_PROFILE = pytest.StashKey[str]()
_PREPARE = pytest.StashKey[str]()
_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


def _is_suite_run(config: pytest.Config) -> bool:
    if any(config.getoption(dest, None) for dest in SELECTION_FLAGS):
        return True
    return any(
        isinstance(plugin, types.ModuleType) and getattr(plugin, SUITE_FLAG, False) is True
        for plugin in config.pluginmanager.get_plugins()
    )


def _distributed(config: pytest.Config) -> bool:
    return getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "tx", None))


def _say_for(config: pytest.Config) -> Callable[[str], None]:
    """Write a progress line on the terminal, past output capturing (log only on xdist workers)."""

    def say(line: str) -> None:
        log.info("%s", line)
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if hasattr(config, "workerinput"):
            if line.split("] ", 1)[-1].startswith(_LEAK_NOTE_PREFIXES):
                _state(config).leak_notes.append(line)  # the controller shows the verdict
            return
        if terminal is None:
            return
        capman = config.pluginmanager.get_plugin("capturemanager")
        guard = capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()
        with _SAY_LOCK, guard:  # the cluster's stderr relay says lines from its own thread
            terminal.ensure_newline()
            terminal.write_line(f"nrop: {line}")

    return say


# ---------------------------------------------------------------------------------- hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{SPEC_MARK}(text, *labels): one level of a serial-suite spec (use nrop.suite.specs.spec)"
    )
    config.addinivalue_line("markers", "test_id(id): the upstream test_id of a spec ([test_id:NNNNN])")
    config.addinivalue_line(
        "markers", f"{PROFILE_MARK}(name): on embedded clusters, run the spec on a cluster of that profile"
    )
    for label in _labels.LABELS.values():
        config.addinivalue_line(
            "markers", f"{label.marker}: label {label.name} ({label.kind}): {label.description}"
        )
    markexpr = getattr(config.option, "markexpr", "")
    if markexpr:
        config.option.markexpr = _labels.rewrite_mark_expression(markexpr)

    suite_run = _is_suite_run(config)
    if suite_run and _session_timeout_unset(config):
        config.option.session_timeout = SESSION_TIMEOUT  # read by pytest-timeout's pytest_configure
    cli = {dest: config.getoption(dest, None) for dest in _OPTION_DESTS}
    options: SuiteOptions | None = None
    error: pytest.UsageError | None = None
    try:
        options = resolve(cli, os.environ)
    except pytest.UsageError as exc:
        if suite_run:
            raise
        error = exc  # raised only if a spec of the suite is collected
    if options is not None and _probes_target(config, suite_run, options):
        from nrop.suite import target

        assert options.kubeconfig is not None
        options = replace(options, embedded_server=target.serves_embedded(options.kubeconfig))
    worker = config.workerinput["workerid"] if hasattr(config, "workerinput") else None
    state = _State(options=options, error=error, suite_run=suite_run, worker=worker)
    config.stash[_STATE] = state
    config.pluginmanager.register(_Outcomes(state.summary, state.html), "nrop-suite-outcomes")
    if worker is not None and config.workerinput.get(_LOADGROUP_INPUT):
        config.option.loadgroup = True  # workers re-parse argv: the controller's choice comes this way
    if not suite_run or options is None or worker is not None:
        return
    if _distributed(config):
        if options.dry_run:
            config.option.dist, config.option.tx = "no", []
        elif not options.embedded:
            raise pytest.UsageError(
                f"-n/--dist runs specs in parallel, but the serial suite must run alone on a shared cluster "
                f"(target {options.kubeconfig}): drop -n, or unset KUBECONFIG/--kubeconfig so that every "
                f"xdist worker starts its own embedded cluster"
            )
        elif config.option.dist == "load":
            config.option.dist = "loadgroup"
    if not options.dry_run and not config.option.collectonly and not getattr(config.option, "xmlpath", None):
        config.option.xmlpath = str(options.report_dir / reports.JUNIT_NAME)


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


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.suite_run or not config.pluginmanager.hasplugin("timeout"):
        return None
    spec_limit = config.getoption("timeout", None)
    spec_text = f"{spec_limit}s (--timeout)" if spec_limit is not None else f"{SPEC_TIMEOUT:g}s"
    session = config.getoption("session_timeout", None)
    return [
        f"nrop: each spec may take {spec_text} (setup, body, teardown; a timeout mark overrides), "
        f"the whole run {session:g}s (--session-timeout)"
        if session
        else f"nrop: each spec may take {spec_text} (setup, body, teardown; a timeout mark overrides)"
    ]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: tell each worker whether the controller groups specs by profile."""
    if getattr(node.config.option, "dist", "no") == "loadgroup":
        node.workerinput[_LOADGROUP_INPUT] = True


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: a worker's AfterSuite/teardown errors fail the run the controller reports."""
    output = getattr(node, "workeroutput", {})
    worker = getattr(node, "workerinput", {}).get("workerid", "worker")
    _state(node.config).close_errors.extend(f"[{worker}] {e}" for e in output.get(_CLOSE_ERRORS_OUTPUT) or [])
    say = _say_for(node.config)
    for note in output.get(_LEAK_NOTES_OUTPUT) or []:
        say(note)  # already prefixed with the profile and the worker


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _state(config)
    specs: list[pytest.Item] = []
    for item in items:
        info = spec_info(item)
        if info is None:
            continue
        item.stash[_SPEC] = info
        for label in info.labels:
            item.add_marker(getattr(pytest.mark, _labels.marker_name(label)))
        if info.test_id:
            item.add_marker(pytest.mark.test_id(info.test_id))
            item.extra_keyword_matches.add(info.test_id)  # `-k 47591` selects the spec, as --focus does
        item.user_properties.extend(reports.spec_properties(info))
        state.labels_seen.update(info.labels)
        specs.append(item)
    state.collected_specs = len(specs)
    if not specs:
        return
    options = state.usable_options()

    grouping = (
        bool(config.getoption("loadgroup", False)) or getattr(config.option, "dist", "no") == "loadgroup"
    )
    bound = config.pluginmanager.hasplugin("timeout") and config.getoption("timeout", None) is None
    for item in specs:
        marked = item.get_closest_marker(PROFILE_MARK)
        profile = profile_for(
            item.stash[_SPEC].labels, options.cluster_profile, str(marked.args[0]) if marked else None
        )
        item.stash[_PROFILE] = profile
        if bound and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SPEC_TIMEOUT))
    if grouping and options.embedded:
        _group_by_profile([item for item in specs if item.stash[_PROFILE] != options.cluster_profile])

    predicate = labelfilter.parse(options.selection_filter)
    focus = [re.compile(pattern) for pattern in options.focus]
    skip = [re.compile(pattern) for pattern in options.skip]

    def selected(item: pytest.Item) -> bool:
        info = item.stash.get(_SPEC, None)
        if info is None:
            return True
        if not predicate(info.labels):
            return False
        if focus and not any(pattern.search(info.full_text) for pattern in focus):
            return False
        return not any(pattern.search(info.full_text) for pattern in skip)

    keep = [item for item in items if selected(item)]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if not selected(item)])
    # a serial run uses one target after the other: the specs of the default profile first (under
    # xdist the order does not matter: LoadScopeScheduling hands out the largest groups first)
    keep.sort(key=lambda item: (item.stash.get(_PROFILE, options.cluster_profile) != options.cluster_profile,
                                item.stash.get(_PROFILE, "")))  # fmt: skip
    items[:] = keep


def _group_by_profile(items: list[pytest.Item]) -> None:
    """xdist groups of the specs of another profile: at most :data:`GROUP_SIZE` specs each, so that
    a large profile is split over several workers (each starts its own cluster of it)."""
    count: dict[str, int] = {}
    for item in items:
        profile = item.stash[_PROFILE]
        index = count.get(profile, 0)
        count[profile] = index + 1
        item.add_marker(pytest.mark.xdist_group(f"nrop-{profile}-{index // GROUP_SIZE}"))


def _suffix_group_ids(items: list[pytest.Item]) -> None:
    """Give grouped specs the ``<nodeid>@<group>`` ids xdist's LoadGroupScheduling reads.

    pytest-xdist 3.8 sets ``item._nodeid``, which pytest 9.2 no longer uses for ``nodeid``;
    items whose id did not get the suffix get it here.
    """
    from _pytest.nodeid import coerce_node_id

    for item in items:
        groups = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args})
        if groups and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(groups)}")  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    state = _state(session.config)
    state.selected_specs = sum(1 for item in session.items if _SPEC in item.stash)
    options = state.options
    if options is not None and options.embedded and state.worker is None and not _distributed(session.config):
        # after every deselection (-k, -m): the specs that will run, in order
        targeted = [i for i in session.items if _PROFILE in i.stash and "_nrop_context" in i.fixturenames]
        points = prepare_points([item.stash[_PROFILE] for item in targeted], PREPARE_AHEAD)
        for index, profile in points.items():
            targeted[index].stash[_PREPARE] = profile
    if state.worker is not None and getattr(session.config.option, "loadgroup", False):
        _suffix_group_ids(session.items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    state = _state(session.config)
    if state.options is None or not state.options.dry_run:
        return None
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    listed = [item.stash[_SPEC] for item in session.items if _SPEC in item.stash]
    if terminal is not None:
        terminal.write_sep("-", f"dry run: {len(listed)} of {state.collected_specs} specs selected")
        for info in listed:
            terminal.write_line(info.listing())
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Switch the session fixtures to the target this spec needs before its fixtures are set up."""
    state = _state(item.config)
    if "_nrop_context" not in getattr(item, "fixturenames", ()):
        return
    options = state.usable_options()
    if state.targets is None:
        state.targets = Targets(options, _say_for(item.config), state.worker)
    key = state.targets.key_for(item.stash.get(_PROFILE, options.cluster_profile))
    previous = state.active_key
    state.active_key = key
    ahead = item.stash.get(_PREPARE, None)
    if ahead is not None:
        state.targets.prepare(state.targets.key_for(ahead))
    if previous is None or previous == key:
        return
    # The session-scoped fixtures hold the previous target: finish them (and what depends on
    # them), as pytest does when a parametrized higher-scoped fixture changes its parameter.
    fixturedefs = item._fixtureinfo.name2fixturedefs.get("_nrop_context", ())  # type: ignore[attr-defined]
    for fixturedef in fixturedefs:
        fixturedef.finish(item._request)  # type: ignore[attr-defined]
    if state.worker is None:
        # a serial run orders specs by profile: the previous target is not needed again; its
        # AfterSuite and teardown run while this spec does (errors come out at the end)
        state.targets.close_in_background(previous)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    info = item.stash.get(_SPEC, None)
    if info is not None and getattr(item.config.option, "allure_report_dir", None):
        reports.attach_to_allure(info)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report: pytest.TestReport = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    if not report.failed:
        return report
    fxt = (getattr(item, "funcargs", None) or {}).get("fxt")
    if fxt is None or not hasattr(fxt, "namespace"):
        return report
    # a failing teardown (cooldown) has deleted the namespace: only the NRTs are worth a look
    diagnostics = reports.failure_diagnostics(fxt, events=report.when != "teardown")
    report.sections.extend((f"nrop: {title}", text) for title, text in diagnostics.sections)
    setattr(report, reports.FAILURE_ATTR, diagnostics.html_payload())
    if getattr(item.config.option, "allure_report_dir", None):
        from nrop.suite.htmlreport import failure_page

        page = failure_page(item.nodeid, diagnostics.nrt_diff, diagnostics.nrts)
        reports.attach_to_allure(None, diagnostics.sections, [("NUMA zones at failure", page)])
    return report


class _Outcomes:
    """Feeds the run summary and report.html (a plugin object: ``pytest_runtest_logreport`` gets no config)."""

    def __init__(self, summary: reports.RunSummary, html: reports.HtmlCollector) -> None:
        self.summary = summary
        self.html = html

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.summary.add(report)
        self.html.add(report)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = _state(config)
    lines = state.summary.lines(time.monotonic() - state.started)
    if not lines:
        return
    terminalreporter.write_sep("=", "serial suite summary")
    for line in lines:
        terminalreporter.write_line(line)
    if state.html_path is not None:
        terminalreporter.write_line(f"HTML report: {state.html_path}")


def _empty_selection_message(state: _State, config: pytest.Config) -> str:
    options = state.options
    what = []
    if options is not None:
        if options.selection_filter:
            what.append(f"label filter {options.selection_filter!r}")
        if options.focus:
            what.append(f"focus {list(options.focus)}")
        if options.skip:
            what.append(f"skip {list(options.skip)}")
    if getattr(config.option, "markexpr", ""):
        what.append(f"-m {config.option.markexpr!r}")
    if getattr(config.option, "keyword", ""):
        what.append(f"-k {config.option.keyword!r}")
    collected = f"{state.collected_specs} specs collected" if state.collected_specs else "no spec collected"
    if _distributed(config):
        collected = "collected by the xdist workers"
    available = state.labels_seen or set(_labels.LABELS)
    source = "labels of the collected specs" if state.labels_seen else "known labels"
    return (
        f"no spec of the serial suite is selected ({', '.join(what) or 'no selection'}; {collected}). "
        f"{source}: {', '.join(sorted(available, key=str.lower))}"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = _state(session.config)
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    if state.targets is not None:
        try:
            state.targets.close_all()
        except Exception as exc:
            state.close_errors.append(f"{type(exc).__name__}: {exc}")
    if state.worker is not None and hasattr(session.config, "workeroutput"):
        session.config.workeroutput[_CLOSE_ERRORS_OUTPUT] = list(state.close_errors)
        session.config.workeroutput[_LEAK_NOTES_OUTPUT] = list(state.leak_notes)
    for error in state.close_errors:
        # AfterSuite / teardown failed: the run is not clean even if every spec passed
        if terminal is not None:
            terminal.ensure_newline()
            terminal.write_line(f"nrop: AfterSuite/teardown failed: {error}", red=True)
        else:
            log.error("AfterSuite/teardown failed: %s", error)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _write_html_report(state)
    if state.suite_run and state.worker is None and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        message = _empty_selection_message(state, session.config)
        if terminal is not None:
            terminal.write_line(f"ERROR: {message}", red=True, bold=True)
        else:
            log.error("%s", message)


def _write_html_report(state: _State) -> None:
    """report.html of a suite run, written by the controller (xdist workers send it their reports)."""
    options = state.options
    if not state.suite_run or state.worker is not None or options is None or options.dry_run:
        return
    entries = state.html.entries()
    if not entries:
        return
    try:
        state.html_path = reports.write_html_report(
            options.report_dir, entries, time.monotonic() - state.started
        )
    except OSError as exc:
        log.error("could not write the HTML report into %s: %s", options.report_dir, exc)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None and state.targets is not None:
        # a last resort after an internal error: never leave embedded clusters running
        state.targets.stop_clusters()


# -------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def _nrop_context(request: pytest.FixtureRequest) -> Context:
    state = _state(request.config)
    options = state.usable_options()
    if state.targets is None:
        state.targets = Targets(options, _say_for(request.config), state.worker)
    key = state.active_key or state.targets.key_for(options.cluster_profile)
    state.active_key = key
    return state.targets.get(key)


@pytest.fixture(scope="session")
def timeouts(request: pytest.FixtureRequest) -> Any:
    """Every timeout of the suite (``nrop.suite.timeouts.Timeouts``), from the environment."""
    from nrop.suite.timeouts import Timeouts

    options = _state(request.config).usable_options()
    return Timeouts.from_env(os.environ, local=options.emulated)


@pytest.fixture(scope="session")
def kube(_nrop_context: Context) -> Any:
    """The client of the target cluster (``nrop.suite.kube.Kube``), with the stack installed."""
    return _nrop_context.kube


@pytest.fixture(scope="session")
def suite_config(request: pytest.FixtureRequest, _nrop_context: Context) -> Any:
    """BeforeSuite's result (``nrop.suite.config.SuiteConfig``); skips when the cluster cannot run the suite."""
    state = _state(request.config)
    assert state.targets is not None
    state.targets.before_suite(_nrop_context)
    if _nrop_context.skip_reason:
        pytest.skip(_nrop_context.skip_reason)
    return _nrop_context.config


@pytest.fixture
def fxt(request: pytest.FixtureRequest, suite_config: Any) -> Iterator[Any]:
    """The per-test fixture (``nrop.suite.fixture.Fixture``): a namespace, the initial NRTs, the cooldown."""
    from nrop.suite.fixture import Fixture

    base_name = getattr(request.module, "FIXTURE_BASENAME", DEFAULT_FIXTURE_BASENAME)
    fixture = Fixture.setup(suite_config, base_name)
    yield fixture
    state = _state(request.config)
    outcome = request.node.stash.get(_REPORTS, {})
    failed = any(report.failed for report in outcome.values())
    if failed and state.options is not None and state.options.keep_namespace_on_failure:
        _say_for(request.config)(
            f"kept namespace {fixture.namespace} of the failed spec {request.node.nodeid}"
        )
        return
    fixture.teardown()
