"""The targets the specs run against, and the suite's fixtures over them (hooks of the ``nrop`` plugin).

Owns the session fixtures of CONTRACTS.md, ``kube`` (the client of the target, with the
stack installed), ``timeouts`` and ``suite_config`` (BeforeSuite's result, skipping the
spec with the reason when the cluster lacks what the suite needs), and the per-test
``fxt`` (the namespace and NRT cooldown, named after the module's ``FIXTURE_BASENAME``,
kept on failure when asked). They hang on one session fixture, the target of the running
spec (:class:`nrop.suite.session.Targets` opens and closes them): before a spec whose
profile differs from the previous one, ``pytest_runtest_setup`` finishes the session
fixtures and switches the target, starts preparing the next one where selection said so,
and a serial run closes the previous target in the background. A run that ends abnormally
still stops its embedded clusters (``pytest_unconfigure``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from nrop.suite.runstate import CONTEXT_FIXTURE, PREPARE, PROFILE, REPORTS, STATE, say_for, state
from nrop.suite.session import Context, Targets

__all__ = ["DEFAULT_FIXTURE_BASENAME"]

DEFAULT_FIXTURE_BASENAME = "e2e-test"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Switch the session fixtures to the target this spec needs before its fixtures are set up."""
    run = state(item.config)
    if CONTEXT_FIXTURE not in getattr(item, "fixturenames", ()):
        return
    options = run.usable_options()
    if run.targets is None:
        run.targets = Targets(options, say_for(item.config), run.worker)
    key = run.targets.key_for(item.stash.get(PROFILE, options.cluster_profile))
    previous = run.active_key
    run.active_key = key
    ahead = item.stash.get(PREPARE, None)
    if ahead is not None:
        run.targets.prepare(run.targets.key_for(ahead))
    if previous is None or previous == key:
        return
    # The session-scoped fixtures hold the previous target: finish them (and what depends on
    # them), as pytest does when a parametrized higher-scoped fixture changes its parameter.
    fixturedefs = item._fixtureinfo.name2fixturedefs.get(CONTEXT_FIXTURE, ())  # type: ignore[attr-defined]
    for fixturedef in fixturedefs:
        fixturedef.finish(item._request)  # type: ignore[attr-defined]
    if run.worker is None:
        # a serial run orders specs by profile: the previous target is not needed again; its
        # AfterSuite and teardown run while this spec does (errors come out at the end)
        run.targets.close_in_background(previous)


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(STATE, None)
    if run is not None and run.targets is not None:
        # a last resort after an internal error: never leave embedded clusters running
        run.targets.stop_clusters()


@pytest.fixture(scope="session")
def _nrop_context(request: pytest.FixtureRequest) -> Context:
    run = state(request.config)
    options = run.usable_options()
    if run.targets is None:
        run.targets = Targets(options, say_for(request.config), run.worker)
    key = run.active_key or run.targets.key_for(options.cluster_profile)
    run.active_key = key
    return run.targets.get(key)


@pytest.fixture(scope="session")
def timeouts(request: pytest.FixtureRequest) -> Any:
    """Every timeout of the suite (``nrop.suite.timeouts.Timeouts``), from the environment."""
    from nrop.suite.timeouts import Timeouts

    options = state(request.config).usable_options()
    return Timeouts.from_env(os.environ, local=options.emulated)


@pytest.fixture(scope="session")
def kube(_nrop_context: Context) -> Any:
    """The client of the target cluster (``nrop.suite.kube.Kube``), with the stack installed."""
    return _nrop_context.kube


@pytest.fixture(scope="session")
def suite_config(request: pytest.FixtureRequest, _nrop_context: Context) -> Any:
    """BeforeSuite's result (``nrop.suite.config.SuiteConfig``); skips when the cluster cannot run the suite."""
    run = state(request.config)
    assert run.targets is not None
    run.targets.before_suite(_nrop_context)
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
    run = state(request.config)
    outcome = request.node.stash.get(REPORTS, {})
    failed = any(report.failed for report in outcome.values())
    if failed and run.options is not None and run.options.keep_namespace_on_failure:
        say_for(request.config)(
            f"kept namespace {fixture.namespace} of the failed spec {request.node.nodeid}"
        )
        return
    fixture.teardown()
