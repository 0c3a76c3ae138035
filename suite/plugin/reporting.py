"""Outcomes and reports of a serial-suite run, and how it ends (hooks of the ``nrop`` plugin).

Owns what the run says about itself (the content is :mod:`nrop.suite.plugin.reports`'): the
failure diagnostics attached to a failing spec's report (events, NRT diff, and Allure
attachments when ``--alluredir`` is given), the run summary and ``report.html`` fed by every
report, and the end of the session: the targets closed (AfterSuite and teardown), their
errors failing an otherwise clean run (xdist workers hand theirs, their leak-check notes
and when their clusters were prepared to the controller), and an empty selection of a suite
run turned into a usage error that names the selection and the labels there are.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from nrop.suite.plugin import expectedskips, reports
from nrop.suite.plugin import labels as _labels
from nrop.suite.plugin.htmlreport import ClusterSpan
from nrop.suite.plugin.options import DEFAULT_PROFILE
from nrop.suite.plugin.runstate import CONTEXT_FIXTURE, REPORTS, SPEC, RunState, say_for, state

__all__: list[str] = []

log = logging.getLogger(__name__)

#: xdist workeroutput key: a worker's AfterSuite/teardown/leak-check errors, for the controller.
_CLOSE_ERRORS_OUTPUT = "nrop_close_errors"
#: xdist workeroutput key: a worker's leak-check verdict lines, shown by the controller.
_LEAK_NOTES_OUTPUT = "nrop_leak_notes"
#: xdist workeroutput key: when a worker's clusters were prepared (lane, profile, start, stop).
_SPANS_OUTPUT = "nrop_cluster_spans"


class _Outcomes:
    """Feeds the run summary and report.html (a plugin object: ``pytest_runtest_logreport`` gets no config)."""

    def __init__(self, summary: reports.RunSummary, html: reports.HtmlCollector) -> None:
        self.summary = summary
        self.html = html

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.summary.add(report)
        self.html.add(report)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """After the plugin's ``pytest_configure`` made the run's state: feed its summary and report.html."""
    run = state(config)
    config.pluginmanager.register(_Outcomes(run.summary, run.html), "nrop-suite-outcomes")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    info = item.stash.get(SPEC, None)
    if info is not None and getattr(item.config.option, "allure_report_dir", None):
        reports.attach_to_allure(info)


def _fail_unexpected_skip(item: pytest.Item, report: pytest.TestReport) -> None:
    """On an embedded cluster this run started with the suite's own profiles, a skip not in
    :mod:`nrop.suite.plugin.expectedskips` of a spec that ran against it becomes a failure (those
    profiles are built to run every other spec; with ``--cluster-profile`` another one, specs
    may legitimately find it lacking)."""
    run = state(item.config)
    info = item.stash.get(SPEC, None)
    options = run.options
    if info is None or run.error is not None or options is None or not options.embedded:
        return
    if options.cluster_profile != DEFAULT_PROFILE:
        return
    context = (getattr(item, "funcargs", None) or {}).get(CONTEXT_FIXTURE)
    if getattr(context, "cluster", None) is None:
        return
    if hasattr(report, "wasxfail"):
        return
    reason = reports.skip_reason(report)
    name = getattr(item, "originalname", None) or item.name
    if expectedskips.is_expected(info.test_id, name, reason):
        return
    report.outcome = "failed"
    report.longrepr = expectedskips.unexpected_message(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report: pytest.TestReport = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    if report.skipped:
        _fail_unexpected_skip(item, report)
    if not report.failed:
        return report
    fxt = (getattr(item, "funcargs", None) or {}).get("fxt")
    if fxt is None or not hasattr(fxt, "namespace"):
        return report
    # a failing teardown (cooldown) has deleted the namespace: only the NRTs are worth a look
    diagnostics = reports.failure_diagnostics(fxt, events=report.when != "teardown")
    report.sections.extend((f"nrop: {title}", text) for title, text in diagnostics.sections)
    if diagnostics.findings:
        # in the failure text itself (terminal, JUnit): the component the evidence points at
        title, text = f"nrop: {reports.CROSSCHECK_TITLE}", "\n".join(diagnostics.findings)
        if isinstance(report.longrepr, str):  # an unexpected skip made a failure
            report.longrepr = f"{report.longrepr}\n\n{title}\n{text}"
        elif hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection(title, text)
    setattr(report, reports.FAILURE_ATTR, diagnostics.html_payload())
    if getattr(item.config.option, "allure_report_dir", None):
        from nrop.suite.plugin.htmlreport import failure_page

        page = failure_page(item.nodeid, diagnostics.nrt_diff, diagnostics.nrts)
        reports.attach_to_allure(None, diagnostics.sections, [("NUMA zones at failure", page)])
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: a worker's AfterSuite/teardown errors fail the run the controller reports."""
    output = getattr(node, "workeroutput", {})
    worker = getattr(node, "workerinput", {}).get("workerid", "worker")
    state(node.config).close_errors.extend(f"[{worker}] {e}" for e in output.get(_CLOSE_ERRORS_OUTPUT) or [])
    say = say_for(node.config)
    for note in output.get(_LEAK_NOTES_OUTPUT) or []:
        say(note)  # already prefixed with the profile and the worker
    state(node.config).cluster_spans.extend(ClusterSpan(*span) for span in output.get(_SPANS_OUTPUT) or [])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    run = state(config)
    lines = run.summary.lines(time.monotonic() - run.started)
    if not lines:
        return
    terminalreporter.write_sep("=", "serial suite summary")
    for line in lines:
        terminalreporter.write_line(line)
    if run.html_path is not None:
        terminalreporter.write_line(f"HTML report: {run.html_path}")


def _empty_selection_message(run: RunState, config: pytest.Config) -> str:
    options = run.options
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
    collected = f"{run.collected_specs} specs collected" if run.collected_specs else "no spec collected"
    available = run.labels_seen or set(_labels.LABELS)
    source = "labels of the collected specs" if run.labels_seen else "known labels"
    return (
        f"no spec of the serial suite is selected ({', '.join(what) or 'no selection'}; {collected}). "
        f"{source}: {', '.join(sorted(available, key=str.lower))}"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = state(session.config)
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    if run.targets is not None:
        try:
            run.targets.close_all()
        except Exception as exc:
            run.close_errors.append(f"{type(exc).__name__}: {exc}")
        run.cluster_spans.extend(run.targets.spans)
    if run.worker is not None and hasattr(session.config, "workeroutput"):
        session.config.workeroutput[_CLOSE_ERRORS_OUTPUT] = list(run.close_errors)
        session.config.workeroutput[_LEAK_NOTES_OUTPUT] = list(run.leak_notes)
        # plain tuples: execnet carries built-in types only
        session.config.workeroutput[_SPANS_OUTPUT] = [
            (span.lane, span.profile, span.start, span.stop) for span in run.cluster_spans
        ]
    for error in run.close_errors:
        # AfterSuite / teardown failed: the run is not clean even if every spec passed
        if terminal is not None:
            terminal.ensure_newline()
            terminal.write_line(f"nrop: AfterSuite/teardown failed: {error}", red=True)
        else:
            log.error("AfterSuite/teardown failed: %s", error)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _write_html_report(run)
    if run.suite_run and run.worker is None and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        message = _empty_selection_message(run, session.config)
        if terminal is not None:
            terminal.write_line(f"ERROR: {message}", red=True, bold=True)
        else:
            log.error("%s", message)


def _write_html_report(run: RunState) -> None:
    """report.html of a suite run, written by the controller (xdist workers send it their reports)."""
    options = run.options
    if not run.suite_run or run.worker is not None or options is None or options.dry_run:
        return
    entries = run.html.entries()
    if not entries:
        return
    try:
        run.html_path = reports.write_html_report(
            options.report_dir, entries, time.monotonic() - run.started, run.cluster_spans
        )
    except OSError as exc:
        log.error("could not write the HTML report into %s: %s", options.report_dir, exc)
