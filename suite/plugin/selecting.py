"""Which specs of the serial suite run, in what order, on which embedded profile (hooks of the ``nrop`` plugin).

Owns collection: each spec item gets its :class:`~nrop.suite.plugin.specs.SpecInfo`, its label
markers and ``test_id``, the embedded cluster profile it needs (:func:`profile_for`) and a
pytest-timeout limit (:data:`SPEC_TIMEOUT`); then the selection (``--label-filter``,
``--focus``/``--skip``), the order of a serial run (the run's profile first), the points where
a serial run prepares its next target (:func:`prepare_points`), and ``--dry-run-specs``,
which lists the selection instead of running it. How a run is spread over xdist workers is
:mod:`nrop.suite.plugin.distributing`'s.
"""

from __future__ import annotations

import re

import pytest

from nrop.suite.plugin import labelfilter, reports
from nrop.suite.plugin import labels as _labels
from nrop.suite.plugin.runstate import CONTEXT_FIXTURE, PREPARE, PROFILE, SPEC, STATE, is_distributed, state
from nrop.suite.plugin.specs import spec_info

__all__ = [
    "CONTAINER_SCOPE_PROFILE",
    "PREPARE_AHEAD",
    "PROFILE_MARK",
    "SPEC_TIMEOUT",
    "prepare_points",
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

#: A serial run on embedded clusters prepares its next target (cluster, stack, BeforeSuite) in
#: the background when the spec this many places before the first one needing it starts.
PREPARE_AHEAD = 2


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
    if options is not None and options.embedded and run.worker is None and not is_distributed(session.config):
        # after every deselection (-k, -m): the specs that will run, in order
        targeted = [i for i in session.items if PROFILE in i.stash and CONTEXT_FIXTURE in i.fixturenames]
        points = prepare_points([item.stash[PROFILE] for item in targeted], PREPARE_AHEAD)
        for index, profile in points.items():
            targeted[index].stash[PREPARE] = profile


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
