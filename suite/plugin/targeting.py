"""The targets the specs run against, and the suite's fixtures over them (hooks of the ``nrop`` plugin).

Owns the session fixtures docs/contributing.md lists, ``kube`` (the client of the target, with the
stack installed), ``timeouts`` and ``suite_config`` (BeforeSuite's result, skipping the
spec with the reason when the cluster lacks what the suite needs), the per-test
``fxt`` (the namespace and NRT cooldown, named after the module's ``FIXTURE_BASENAME``,
kept on failure when asked) and ``defer_cleanup`` (Ginkgo's ``DeferCleanup``: what a spec
registers runs after its teardowns, ``fxt``'s included, last registered first). They hang on
one session fixture, the target of the running spec
(:class:`nrop.suite.plugin.session.Targets` opens and closes them): before a spec whose
profile differs from the previous one, ``pytest_runtest_setup`` finishes the session
fixtures, switches the target and closes the previous one in the background (a run takes
each profile's specs in one stretch); a spec whose setup waited for its target carries the
seconds it waited (the property :data:`~nrop.suite.plugin.lanes.TARGET_SECONDS`). Targets are
prepared ahead: in a serial run where selection said so; on an xdist worker its first one as
the worker starts (the controller names its profile) and the next one as soon as the spec
after the running one (the only one it knows) needs another profile. A run that ends
abnormally still stops its embedded clusters (``pytest_unconfigure``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nrop.suite.plugin.lanes import TARGET_SECONDS
from nrop.suite.plugin.precedence import TIMED_SPECS, precedence
from nrop.suite.plugin.runstate import (
    CONTEXT_FIXTURE,
    FIRST_PROFILE_INPUT,
    PREPARE,
    PREPARE_AFTER_INPUT,
    PROFILE,
    REPORTS,
    SPEC,
    STATE,
    say_for,
    state,
)
from nrop.suite.plugin.session import Context, Targets

__all__ = ["DEFAULT_FIXTURE_BASENAME", "run_deferred"]

log = logging.getLogger(__name__)

DEFAULT_FIXTURE_BASENAME = "e2e-test"


def _targets(config: pytest.Config) -> Targets:
    run = state(config)
    if run.targets is None:
        run.targets = Targets(run.usable_options(), say_for(config), run.worker)
    return run.targets


def pytest_sessionstart(session: pytest.Session) -> None:
    """On an xdist worker: start preparing its first target while it collects."""
    config = session.config
    profile = getattr(config, "workerinput", {}).get(FIRST_PROFILE_INPUT)
    if profile and state(config).worker is not None:
        targets = _targets(config)
        targets.prepare(targets.key_for(profile))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """On an xdist worker: prepare the next spec's target while this one runs if it is another
    profile than this one's, when the plan says (:data:`PREPARE_AFTER_INPUT`), else now."""
    run = state(item.config)
    if run.worker is None or nextitem is None or CONTEXT_FIXTURE not in getattr(nextitem, "fixturenames", ()):
        return
    options = run.usable_options()
    profile = nextitem.stash.get(PROFILE, options.cluster_profile)
    if profile != item.stash.get(PROFILE, options.cluster_profile):
        targets = _targets(item.config)
        after = getattr(item.config, "workerinput", {}).get(PREPARE_AFTER_INPUT, {}).get(item.nodeid, 0.0)
        targets.prepare(targets.key_for(profile), after)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Switch the session fixtures to the target this spec needs before its fixtures are set up;
    note how long the setup waited for the target."""
    if CONTEXT_FIXTURE not in getattr(item, "fixturenames", ()):
        return (yield)
    _switch_target(item)
    targets = _targets(item.config)
    waited = targets.waited
    try:
        return (yield)
    finally:
        if round(targets.waited - waited, 1) > 0:
            item.user_properties.append((TARGET_SECONDS, f"{targets.waited - waited:.1f}"))


def _switch_target(item: pytest.Item) -> None:
    run = state(item.config)
    options = run.usable_options()
    targets = _targets(item.config)
    key = targets.key_for(item.stash.get(PROFILE, options.cluster_profile))
    previous = run.active_key
    run.active_key = key
    ahead = item.stash.get(PREPARE, None)
    if ahead is not None:
        targets.prepare(targets.key_for(ahead))
    if previous is None or previous == key:
        return
    # The session-scoped fixtures hold the previous target: finish them (and what depends on
    # them), as pytest does when a parametrized higher-scoped fixture changes its parameter.
    fixturedefs = item._fixtureinfo.name2fixturedefs.get(CONTEXT_FIXTURE, ())  # type: ignore[attr-defined]
    for fixturedef in fixturedefs:
        fixturedef.finish(item._request)  # type: ignore[attr-defined]
    # a run takes each profile's specs in one stretch: the previous target is not needed again (if
    # it is, it opens anew); its AfterSuite and teardown run while this spec does (errors at the end)
    targets.close_in_background(previous)


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(STATE, None)
    if run is not None and run.targets is not None:
        # a last resort after an internal error: never leave embedded clusters running
        run.targets.stop_clusters()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """The body of a spec that times the stack (:data:`~nrop.suite.plugin.precedence.TIMED_SPECS`)
    runs with its embedded cluster's processes ahead of the other workers' clusters."""
    info = item.stash.get(SPEC, None)
    context = (getattr(item, "funcargs", None) or {}).get(CONTEXT_FIXTURE)
    cluster = getattr(context, "cluster", None)
    if (
        info is None
        or info.test_id not in TIMED_SPECS
        or cluster is None
        or cluster.process.poll() is not None
    ):
        return (yield)
    with precedence(cluster.process.pid, os.getpid()):
        return (yield)


@pytest.fixture(scope="session")
def _nrop_context(request: pytest.FixtureRequest) -> Context:
    run = state(request.config)
    targets = _targets(request.config)
    key = run.active_key or targets.key_for(run.usable_options().cluster_profile)
    run.active_key = key
    return targets.get(key)


@pytest.fixture(scope="session")
def timeouts(request: pytest.FixtureRequest) -> Any:
    """Every timeout of the suite (``nrop.suite.e2e.timeouts.Timeouts``), from the environment."""
    from nrop.suite.e2e.timeouts import Timeouts

    options = state(request.config).usable_options()
    return Timeouts.from_env(os.environ, local=options.emulated)


@pytest.fixture(scope="session")
def kube(_nrop_context: Context) -> Any:
    """The client of the target cluster (``nrop.suite.e2e.kube.Kube``), with the stack installed."""
    return _nrop_context.kube


@pytest.fixture(scope="session")
def suite_config(request: pytest.FixtureRequest, _nrop_context: Context) -> Any:
    """BeforeSuite's result (``nrop.suite.e2e.config.SuiteConfig``); skips when the cluster cannot run the suite."""
    run = state(request.config)
    assert run.targets is not None
    run.targets.before_suite(_nrop_context)
    if _nrop_context.skip_reason:
        pytest.skip(_nrop_context.skip_reason)
    return _nrop_context.config


def run_deferred(callbacks: list[Callable[[], None]]) -> None:
    """Run a spec's deferred cleanups as Ginkgo does: the last registered first, each one even
    when an earlier one failed; the first failure is raised (the later ones are logged and noted
    on it)."""
    first: BaseException | None = None
    while callbacks:
        callback = callbacks.pop()
        try:
            callback()
        except Exception as err:
            if first is None:
                first = err
            else:
                log.error("deferred cleanup failed too: %s: %s", type(err).__name__, err)
                first.add_note(f"deferred cleanup failed too: {type(err).__name__}: {err}")
    if first is not None:
        raise first


@pytest.fixture
def defer_cleanup() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Ginkgo's ``DeferCleanup`` inside a spec: ``defer_cleanup(fn)`` from a setup fixture or the
    body runs ``fn`` after the spec's ``AfterEach`` work (the teardowns of the fixtures that use
    ``fxt``, then ``fxt``'s namespace teardown and cooldown, which asks for this fixture so that
    it finishes first), the last registered first (:func:`run_deferred`)."""
    callbacks: list[Callable[[], None]] = []
    yield callbacks.append
    run_deferred(callbacks)


@pytest.fixture
def fxt(
    request: pytest.FixtureRequest, suite_config: Any, defer_cleanup: Callable[[Callable[[], None]], None]
) -> Iterator[Any]:
    """The per-test fixture (``nrop.suite.e2e.fixture.Fixture``): a namespace, the initial NRTs, the
    cooldown. It asks for ``defer_cleanup`` so that the cleanups a spec defers run after its teardown."""
    from nrop.suite.e2e.fixture import Fixture

    base_name = getattr(request.module, "FIXTURE_BASENAME", DEFAULT_FIXTURE_BASENAME)
    fixture = Fixture.setup(suite_config, base_name)
    yield fixture
    run = state(request.config)
    outcome = request.node.stash.get(REPORTS, {})
    failed = any(report.failed for report in outcome.values())
    if failed and run.options is not None and run.options.keep_namespace_on_failure:
        say_for(request.config)(
            f"kept namespace {fixture.namespace} of the failed spec {request.node.nodeid}"
        )
        return
    fixture.teardown()
