"""What the tests of the ``nrop`` plugin share: a small serial suite and an inner pytest run on it.

Imported by ``test_suite_plugin.py`` (selection and reports) and
``test_suite_plugin_targets.py`` (targets, xdist, timeouts, the embedded cluster program).
Each test writes a suite into pytester's temporary directory and runs pytest on it in
process with the ``nrop`` plugin loaded through its entry point (:func:`run`); the
autouse ``_clean_env`` fixture, imported by name, keeps the outer run's kubeconfig and
suite variables out of it.
"""

from __future__ import annotations

import os
import textwrap

import pytest

__all__ = [
    "BASE_ARGS",
    "SUITE_CONFTEST",
    "_clean_env",
    "passed_names",
    "placement_specs",
    "run",
    "suite",
]

SUITE_CONFTEST = "NROP_SERIAL_SUITE = True\n"
# inner runs: no cache directory, and no asyncio plugin (its config warning is noise here)
BASE_ARGS = ("-p", "no:cacheprovider", "-p", "no:asyncio")

SPECS = textwrap.dedent(
    """
    import pytest
    from nrop.suite.plugin.specs import entry, spec

    pytestmark = spec("[serial][disruptive] numaresources workload placement", "feature:wlplacement")

    class TestTmpol:
        pytestmark = spec("with TM policy", "feature:tmpol")

        @spec("[test_id:47575] two containers on different zones", "tier0", "tmscope:cnt")
        def test_two_containers(self):
            pass

        @spec("[test_id:50159] one pod scope", "tier0", "tmscope:pod")
        def test_pod_scope(self):
            pass

    @spec("[test_id:47627] TAS vs default scheduler timing", "nodelabel_free")
    def test_untiered_placeholder():
        pass
    """
)


def placement_specs() -> str:
    """:data:`SPECS` with the nodelabel feature label spelled as upstream does."""
    return SPECS.replace('"nodelabel_free"', '"feature:nodelabel"')


TABLE = textwrap.dedent(
    """
    import pytest
    from nrop.suite.plugin.specs import entry, spec

    pytestmark = spec("[serial] numaresources workload unschedulable", "feature:unsched")

    @spec("a pod should not be scheduled")
    @pytest.mark.parametrize("amount", [
        entry("[test_id:47615] single-numa-node", 1, labels=("tier1", "unsched")),
        entry("with restricted", 2, labels=("tier2",)),
        entry("[test_id:47616] scope pod", 3, labels=("tier3", "tmscope:pod")),
    ])
    def test_table(amount):
        assert amount in (1, 2, 3)
    """
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubeconfig and no suite variable of the outer environment reaches the inner runs."""
    for name in list(os.environ):
        if name == "KUBECONFIG" or name.startswith(("E2E_NROP_", "E2E_SERIAL_")):
            monkeypatch.delenv(name)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A temporary serial suite of two modules: the placement specs and a table of entries."""
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=placement_specs(), test_unsched=TABLE)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An inner pytest run in process, its reports in ``reports/`` of the temporary directory."""
    report_dir = pytester.path / "reports"
    return pytester.runpytest(*BASE_ARGS, "--report-dir", str(report_dir), *args)


def passed_names(result: pytest.RunResult) -> set[str]:
    """The names of the tests that passed in an inner run."""
    passed, _, _ = result.reprec.listoutcomes()  # type: ignore[attr-defined]
    return {report.nodeid.split("::")[-1] for report in passed}
