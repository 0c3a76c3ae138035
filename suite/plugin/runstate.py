"""The state of one pytest run of the serial suite, shared by the hook modules of the plugin.

The ``nrop`` plugin (:mod:`nrop.suite.plugin.entrypoint`) is split along its seams: configuration,
spec selection (:mod:`nrop.suite.plugin.selecting`), targets and fixtures
(:mod:`nrop.suite.plugin.targeting`), outcomes and reports (:mod:`nrop.suite.plugin.reporting`). What they
share lives here once: the run's :class:`RunState` in the config's stash (created by the
plugin's ``pytest_configure``), the stash keys that hand a spec's data from one hook to the
next, whether the run is distributed, and :func:`say_for`, the progress line on the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nrop.suite.plugin import reports
from nrop.suite.plugin.htmlreport import ClusterSpan
from nrop.suite.plugin.lanes import Spec
from nrop.suite.plugin.options import SuiteOptions
from nrop.suite.plugin.session import Targets
from nrop.suite.plugin.specs import SpecInfo

__all__ = [
    "CONTEXT_FIXTURE",
    "FIRST_PROFILE_INPUT",
    "PREPARE",
    "PREPARE_AFTER_INPUT",
    "PROFILE",
    "REPORTS",
    "SPEC",
    "STATE",
    "RunState",
    "is_distributed",
    "say_for",
    "state",
]

log = logging.getLogger(__name__)

#: The session fixture that holds the target of the running spec: a spec that uses it needs a target.
CONTEXT_FIXTURE = "_nrop_context"
#: xdist workerinput key: the profile of the first cluster of a worker's lane, prepared as soon as
#: the worker starts (while it collects), before its first spec asks for it.
FIRST_PROFILE_INPUT = "nrop_first_profile"
#: xdist workerinput key: for each spec of a worker's lane followed by one of another profile,
#: how many seconds after it starts that next cluster is prepared
#: (:func:`nrop.suite.plugin.lanes.prepare_delays`).
PREPARE_AFTER_INPUT = "nrop_prepare_after"
#: Progress lines of a worker's leak check: the controller shows them (xdist workers say nothing).
_LEAK_NOTE_PREFIXES = ("leak check:", "left behind:")


@dataclass
class RunState:
    """What the plugin knows of the run: its options (or why they are unusable), counts, targets, reports."""

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
    #: the pytest process of a suite run on embedded clusters: it may spread the specs over
    #: xdist workers (:mod:`nrop.suite.plugin.distributing`), ``-n N`` if given (0: serial), else chosen
    spreads: bool = False
    requested_workers: int | None = None
    #: the plan of a spread run: node ids per worker id, and each spec's profile and estimate
    lanes: dict[str, list[str]] | None = None
    estimates: dict[str, Spec] = field(default_factory=dict)
    #: when each embedded cluster was being prepared (cluster, stack, BeforeSuite), for report.html
    cluster_spans: list[ClusterSpan] = field(default_factory=list)

    def usable_options(self) -> SuiteOptions:
        if self.error is not None:
            raise self.error
        assert self.options is not None
        return self.options


STATE = pytest.StashKey[RunState]()
#: On a spec item: its spec data, the embedded profile it needs, the profile to prepare when it
#: starts, its reports by phase.
SPEC = pytest.StashKey[SpecInfo]()
PROFILE = pytest.StashKey[str]()
PREPARE = pytest.StashKey[str]()
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()

_SAY_LOCK = threading.Lock()


def state(config: pytest.Config) -> RunState:
    return config.stash[STATE]


def is_distributed(config: pytest.Config) -> bool:
    return getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "tx", None))


def say_for(config: pytest.Config) -> Callable[[str], None]:
    """Write a progress line on the terminal, past output capturing (log only on xdist workers)."""

    def say(line: str) -> None:
        log.info("%s", line)
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if hasattr(config, "workerinput"):
            if line.split("] ", 1)[-1].startswith(_LEAK_NOTE_PREFIXES):
                state(config).leak_notes.append(line)  # the controller shows the verdict
            return
        if terminal is None:
            return
        capman = config.pluginmanager.get_plugin("capturemanager")
        guard = capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()
        with _SAY_LOCK, guard:  # the cluster's stderr relay says lines from its own thread
            terminal.ensure_newline()
            terminal.write_line(f"nrop: {line}")

    return say
