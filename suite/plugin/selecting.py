"""Which specs of the serial suite run, in what order, on which embedded profile (hooks of the ``nrop`` plugin).

Owns collection: each spec item gets its :class:`~nrop.suite.plugin.specs.SpecInfo`, its label
markers and ``test_id``, the embedded cluster profile it needs (:func:`profile_for`) and a
pytest-timeout limit (:data:`SPEC_TIMEOUT`); then the selection (``--label-filter``,
``--focus``/``--skip``), the order of a serial run (the run's profile first), the points where
it prepares its next target (:func:`nrop.suite.plugin.lanes.prepare_points`; an xdist worker
takes its lane's from the controller), and ``--dry-run-specs``,
which lists the selection instead of running it. How a run is spread over xdist workers is
:mod:`nrop.suite.plugin.distributing`'s.
"""

from __future__ import annotations

import re

import pytest

from nrop.suite.plugin import distributing, labelfilter, lanes, reports
from nrop.suite.plugin import labels as _labels
from nrop.suite.plugin.runstate import PREPARE, PREPARE_INPUT, PROFILE, SPEC, STATE, is_distributed, state
from nrop.suite.plugin.specs import spec_info

__all__ = [
    "CONTAINER_SCOPE_PROFILE",
    "PROFILE_MARK",
    "SPEC_TIMEOUT",
    "profile_for",
]

CONTAINER_SCOPE_PROFILE = "container-scope"
CONTAINER_SCOPE_LABELS = frozenset({"tmscope:cnt", "tmscope:container"})
#: ``@pytest.mark.nrop_profile(name)``: on embedded clusters the spec runs on a cluster of that
#: profile (a spec whose upstream premise is a machine shape the default profile does not have).
PROFILE_MARK = "nrop_profile"

#: pytest-timeout limit of one spec (setup, body and teardown with its cooldown) when neither the
#: spec nor ``--timeout`` sets one: pyproject's 300s is for the project's own tests; upstream bounds
#: only the whole run, and scheduler-cache specs legitimately take several minutes each.
SPEC_TIMEOUT = 1800.0


def profile_for(labels: tuple[str, ...], default_profile: str, marked: str | None = None) -> str:
    """The embedded cluster profile a spec needs: the one its ``nrop_profile`` mark names, else
    ``container-scope`` for container-scope specs, else the run's profile."""
    if marked:
        return marked
    if any(label.lower() in CONTAINER_SCOPE_LABELS for label in labels):
        return CONTAINER_SCOPE_PROFILE
    return default_profile


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{PROFILE_MARK}(name): on embedded clusters, run the spec on a cluster of that profile"
    )


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    run = config.stash.get(STATE, None)
    if run is None or not run.suite_run or not config.pluginmanager.hasplugin("timeout"):
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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = state(config)
    specs: list[pytest.Item] = []
    for item in items:
        info = spec_info(item)
        if info is None:
            continue
        item.stash[SPEC] = info
        for label in info.labels:
            item.add_marker(getattr(pytest.mark, _labels.marker_name(label)))
        if info.test_id:
            item.add_marker(pytest.mark.test_id(info.test_id))
            item.extra_keyword_matches.add(info.test_id)  # `-k 47591` selects the spec, as --focus does
        item.user_properties.extend(reports.spec_properties(info))
        run.labels_seen.update(info.labels)
        specs.append(item)
    run.collected_specs = len(specs)
    if not specs:
        return
    options = run.usable_options()
    bound = config.pluginmanager.hasplugin("timeout") and config.getoption("timeout", None) is None
    for item in specs:
        marked = item.get_closest_marker(PROFILE_MARK)
        profile = profile_for(
            item.stash[SPEC].labels, options.cluster_profile, str(marked.args[0]) if marked else None
        )
        item.stash[PROFILE] = profile
        if bound and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SPEC_TIMEOUT))

    predicate = labelfilter.parse(options.selection_filter)
    focus = [re.compile(pattern) for pattern in options.focus]
    skip = [re.compile(pattern) for pattern in options.skip]

    def selected(item: pytest.Item) -> bool:
        info = item.stash.get(SPEC, None)
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
    # a serial run uses one target after the other: the specs of the default profile first (a spread
    # run gives each worker its own order)
    keep.sort(key=lambda item: (item.stash.get(PROFILE, options.cluster_profile) != options.cluster_profile,
                                item.stash.get(PROFILE, "")))  # fmt: skip
    items[:] = keep


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    run = state(session.config)
    run.selected_specs = sum(1 for item in session.items if SPEC in item.stash)
    options = run.options
    if options is None or not options.embedded:
        return
    if run.worker is not None:
        # an xdist worker: the points of its lane, planned by the controller
        marks = getattr(session.config, "workerinput", {}).get(PREPARE_INPUT) or {}
        for item in session.items:
            if item.nodeid in marks:
                item.stash[PREPARE] = marks[item.nodeid]
    elif not is_distributed(session.config):
        # after every deselection (-k, -m): the specs that will run, in order (a run spread later
        # by distributing plans its lanes' points there; its own items never run)
        specs = distributing.estimated_specs(
            session.items, distributing.load_durations(options.spec_durations)
        )
        for index, profile in lanes.prepare_points(specs).items():
            session.items[index].stash[PREPARE] = profile


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    run = state(session.config)
    if run.options is None or not run.options.dry_run:
        return None
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    listed = [item.stash[SPEC] for item in session.items if SPEC in item.stash]
    if terminal is not None:
        terminal.write_sep("-", f"dry run: {len(listed)} of {run.collected_specs} specs selected")
        for info in listed:
            terminal.write_line(info.listing())
    return True
