"""The serial suite's pytest plugin, exercised through real pytest runs (pytester): selection and reports.

Each test writes a small suite into a temporary directory and runs pytest on it with the
``nrop`` plugin loaded through its entry point (:mod:`_helpers_plugin`), then checks
outcomes, output, exit codes and the files written: the label markers and ``-m``, the
selection (label filter, tiers, focus and skip, an empty selection), the dry run, the JUnit
file and the run summary, the diagnostics of a failed spec, ``report.html`` and the Allure
attachments. The targets, xdist and the embedded cluster program are
``test_suite_plugin_targets.py``'s.
"""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET

import pytest
from _helpers_plugin import (
    BASE_ARGS,
    SUITE_CONFTEST,
    _clean_env,
    passed_names,
    placement_specs,
    run,
    suite,
)

pytest_plugins = ("pytester",)

# The shared fixtures, used by name only.
__all__ = ["_clean_env", "suite"]


# ------------------------------------------------------------------------- markers and -m


def test_every_label_becomes_a_registered_marker(suite: pytest.Pytester) -> None:
    result = run(suite, "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.e2e__serial: label e2e:serial (suite)*",
            "@pytest.mark.mno_masters_schedulable: label mno-masters-schedulable*",
            "@pytest.mark.feature__tmpol: label feature:tmpol (feature):*",
            "@pytest.mark.tmscope__cnt: label tmscope:cnt (scenario):*",
        ]
    )


def test_m_accepts_upstream_label_spellings(suite: pytest.Pytester) -> None:
    result = run(suite, "--strict-markers", "-m", "feature:tmpol and not tmscope:cnt")
    assert result.ret == 0
    assert passed_names(result) == {"test_pod_scope"}


def test_effective_labels_are_inherited_and_include_the_suite_label(suite: pytest.Pytester) -> None:
    result = run(suite, "-m", "e2e:serial and feature:wlplacement")
    assert passed_names(result) == {"test_two_containers", "test_pod_scope", "test_untiered_placeholder"}


def test_unknown_label_fails_the_import_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        "from nrop.suite.plugin.specs import spec\n@spec('x', 'tier0', 'nodelabel')\ndef test_x():\n    pass\n"
    )
    result = run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*UnknownLabelError: unknown spec label(s) 'nodelabel'*"])


# ---------------------------------------------------------------------------- selection


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        pytest.param(("--label-filter", "tier0 && !tmscope:cnt"), {}, {"test_pod_scope"}, id="cli-filter"),
        pytest.param((), {"E2E_NROP_LABEL_FILTER": "tmscope: containsAny {cnt}"}, {"test_two_containers"}, id="env"),
        pytest.param(("--label-filter", "tier0"), {"E2E_NROP_LABEL_FILTER": "tier3"},
                     {"test_two_containers", "test_pod_scope"}, id="cli-beats-env"),
        pytest.param(("--label-filter", "/^tier[12]$/"), {}, {"test_table[47615]", "test_table[with restricted]"},
                     id="regexp"),
        pytest.param(("--label-filter", "feature: isSubsetOf {wlplacement, nodelabel}"), {},
                     {"test_untiered_placeholder"}, id="set-operation"),
    ],
)  # fmt: skip
def test_label_filter(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], env: dict[str, str],
    expected: set[str],
) -> None:  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run(suite, *args)
    assert result.ret == 0
    assert passed_names(result) == expected


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        pytest.param(("--tier-up-to", "0"), {}, {"test_two_containers", "test_pod_scope"}, id="tier0"),
        pytest.param(("--tier-up-to", "1"), {}, {"test_two_containers", "test_pod_scope", "test_table[47615]"},
                     id="tier1"),
        pytest.param((), {"E2E_NROP_TIER_UPTO": "2"},
                     {"test_two_containers", "test_pod_scope", "test_table[47615]", "test_table[with restricted]"},
                     id="env"),
        pytest.param((), {"E2E_SERIAL_TIER_UPTO": "0"}, {"test_two_containers", "test_pod_scope"}, id="legacy-env"),
        pytest.param(("--tier-up-to", "3", "--label-filter", "tmscope:pod"), {},
                     {"test_pod_scope", "test_table[47616]"}, id="with-label-filter"),
    ],
)  # fmt: skip
def test_tier_up_to_never_selects_untiered_specs(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], env: dict[str, str],
    expected: set[str],
) -> None:  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run(suite, *args)
    assert result.ret == 0
    assert passed_names(result) == expected


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        pytest.param(("--focus", r"\[test_id:4757\d\]"), {}, {"test_two_containers"}, id="focus"),
        pytest.param(("--focus", "scope pod", "--focus", "timing"), {},
                     {"test_table[47616]", "test_untiered_placeholder"}, id="focus-repeated"),
        pytest.param((), {"E2E_SERIAL_FOCUS": "unschedulable a pod"},
                     {"test_table[47615]", "test_table[with restricted]", "test_table[47616]"}, id="focus-env"),
        pytest.param(("--focus", "unschedulable", "--skip", "restricted"), {},
                     {"test_table[47615]", "test_table[47616]"}, id="focus-and-skip"),
        pytest.param((), {"E2E_SERIAL_SKIP": "workload"}, set(), id="skip-env-everything"),
    ],
)  # fmt: skip
def test_focus_and_skip_match_the_full_spec_text(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], env: dict[str, str],
    expected: set[str],
) -> None:  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run(suite, *args)
    assert passed_names(result) == expected
    assert result.ret == (0 if expected else pytest.ExitCode.USAGE_ERROR)


def test_an_empty_selection_is_a_usage_error_listing_the_labels(suite: pytest.Pytester) -> None:
    result = run(suite, "--label-filter", "feature:nosuchthing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "ERROR: no spec of the serial suite is selected (label filter 'feature:nosuchthing'; 6 specs collected)."
            " labels of the collected specs: *feature:tmpol*tier0*tmscope:cnt*"
        ]
    )


def test_an_empty_m_selection_is_a_usage_error_too(suite: pytest.Pytester) -> None:
    result = run(suite, "-m", "openshift")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ERROR: no spec of the serial suite is selected (-m 'openshift'*"])


def test_outside_the_suite_an_empty_selection_keeps_pytest_s_exit_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*BASE_ARGS, "-m", "slow")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_suite_run_leaves_out_the_plugins_no_spec_uses(pytester: pytest.Pytester) -> None:
    """hypothesis's plugin costs every xdist worker an import of hypothesis at its end."""
    probe = "def test_plugins(request):\n    assert request.config.pluginmanager.get_plugin('hypothesispytest') {}\n"
    pytester.makepyfile(probe.format("is not None"))
    assert pytester.runpytest(*BASE_ARGS).ret == pytest.ExitCode.OK
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(probe.format("is None"))
    assert run(pytester).ret == pytest.ExitCode.OK


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--label-filter", "tier0 &"), {}, "--label-filter: invalid label filter 'tier0 &' at position 6*"),
        ((), {"E2E_NROP_TIER_UPTO": "7"}, "E2E_NROP_TIER_UPTO='7': expected a tier number 0..3"),
        ((), {"E2E_NROP_SETUP": "maybe"}, "E2E_NROP_SETUP='maybe' is not a boolean: use true or false"),
        (("--focus", "(unclosed"), {}, "--focus='(unclosed' is not a valid regular expression*"),
        (
            (),
            {"KUBECONFIG": "/nonexistent/kubeconfig"},
            "KUBECONFIG='/nonexistent/kubeconfig': no such file*",
        ),
    ],
)
def test_bad_values_are_usage_errors_naming_their_source(
    suite: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    message: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run(suite, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


# ------------------------------------------------------------------------------ dry run


def test_dry_run_lists_full_text_and_labels_without_running(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=placement_specs().replace("pass", "raise AssertionError('ran')"))
    result = run(pytester, "--dry-run-specs", "--tier-up-to", "0")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*dry run: 2 of 3 specs selected*",
            # in the order they would run: the default profile's specs first
            "[[]serial[]][[]disruptive[]] numaresources workload placement with TM policy [[]test_id:50159[]] one pod "
            "scope [[]e2e:serial, feature:wlplacement, feature:tmpol, tier0, tmscope:pod[]]",
            "[[]serial[]][[]disruptive[]] numaresources workload placement with TM policy [[]test_id:47575[]] two "
            "containers on different zones [[]e2e:serial, feature:wlplacement, feature:tmpol, tier0, tmscope:cnt[]]",
        ]
    )
    assert "ran" not in result.stdout.str()
    assert not (pytester.path / "reports" / "e2e-serial-run.xml").exists()


def test_k_selects_a_spec_by_its_test_id(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=placement_specs())
    result = run(pytester, "--dry-run-specs", "-k", "47575")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*dry run: 1 of 3 specs selected*", "*[[]test_id:47575[]]*"])


# ------------------------------------------------------------------------------- reports


def test_junit_file_carries_test_id_tier_and_labels(suite: pytest.Pytester) -> None:
    result = run(suite, "--tier-up-to", "1")
    assert result.ret == 0
    junit = suite.path / "reports" / "e2e-serial-run.xml"
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_two_containers", "test_pod_scope", "test_table[47615]"}
    props = {p.get("name"): p.get("value") for p in cases["test_table[47615]"].iter("property")}
    assert props == {
        "test_id": "47615",
        "tier": "tier1",
        "labels": "e2e:serial,feature:unsched,tier1,unsched",
        "spec": "[serial] numaresources workload unschedulable a pod should not be scheduled "
        "[test_id:47615] single-numa-node",
    }


def test_summary_counts_per_tier_and_groups_skip_reasons(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        textwrap.dedent(
            """
            import pytest
            from nrop.suite.plugin.specs import spec

            pytestmark = spec("summary")

            @spec("a", "tier0")
            def test_a():
                pytest.skip("fewer than 2 nodes with single-numa-node")

            @spec("b", "tier0")
            def test_b():
                pytest.skip("fewer than 2 nodes with single-numa-node")

            @spec("c", "tier0")
            def test_c():
                assert False

            @spec("d", "tier1")
            def test_d():
                pass

            @spec("e")
            def test_e():
                pytest.skip("needs E2E_NROP_DEVICE_TYPE_1")
            """
        )
    )
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= serial suite summary =*",
            "tier      passed  failed  skipped",
            "tier0          0       1        2",
            "tier1          1       0        0",
            "no tier        0       0        1",
            "total          1       1        3",
            "skipped because:",
            "    2 x fewer than 2 nodes with single-numa-node",
            "    1 x needs E2E_NROP_DEVICE_TYPE_1",
            "wall time *s",
        ]
    )


# ----------------------------------------------------------------------- failure diagnostics

FAKE_FXT = textwrap.dedent(
    """
    import types
    import pytest
    from nrop.suite.e2e import kube as k

    NROP_SERIAL_SUITE = True

    class FakeKube:
        def list(self, kind, namespace=None, label_selector=None, field_selector=None):
            if kind == k.EVENT:
                return [{"type": "Warning", "reason": "FailedScheduling", "message": "0/3 nodes: cannot align pod",
                         "involvedObject": {"kind": "Pod", "name": "testpod"}, "reportingComponent": "topo-sched",
                         "lastTimestamp": "2026-01-01T00:00:00Z"}]
            if kind == k.POD:
                return [{"metadata": {"name": "secondary-scheduler-abc"}}]
            return []

        def pod_logs(self, namespace, name, since_seconds=None):
            return f"scheduler log of {namespace}/{name}"

    @pytest.fixture
    def fxt():
        config = types.SimpleNamespace(operator_namespace="numaresources")
        return types.SimpleNamespace(kube=FakeKube(), namespace="e2e-test-x-1", initial_nrts=[], config=config)
    """
)


def test_a_failed_spec_gets_events_nrt_diff_and_scheduler_logs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_FXT)
    pytester.makepyfile(
        "from nrop.suite.plugin.specs import spec\n"
        "@spec('[test_id:9] fails', 'tier0')\n"
        "def test_fails(fxt):\n    assert False, 'placement went wrong'\n"
        "@spec('[test_id:10] passes', 'tier0')\n"
        "def test_passes(fxt):\n    pass\n"
    )
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*- nrop: events in namespace e2e-test-x-1 -*",
            "2026-01-01T00:00:00Z Warning Pod/testpod FailedScheduling [[]topo-sched[]]: 0/3 nodes: cannot align pod",
            "*- nrop: NRT difference from the start of the test -*",
            "*- nrop: secondary scheduler logs -*",
            "--- numaresources/secondary-scheduler-abc (not started; last 300s)",
            "scheduler log of numaresources/secondary-scheduler-abc",
        ]
    )
    assert result.stdout.str().count("nrop: events in namespace") == 1


# --------------------------------------------------------------------------------- report.html

NRT_FXT = textwrap.dedent(
    """
    import types
    import pytest
    from nrop.suite.e2e import kube as k

    NROP_SERIAL_SUITE = True

    def nrt(cpu0):
        res = lambda name, total, free: {"name": name, "capacity": total, "allocatable": total, "available": free}
        return {"metadata": {"name": "worker-0"}, "zones": [
            {"name": "node-00", "type": "Node", "resources": [res("cpu", "18", cpu0), res("memory", "24Gi", "24Gi")]},
            {"name": "node-01", "type": "Node", "resources": [res("cpu", "20", "20")]},
        ]}

    class FakeKube:
        def list(self, kind, namespace=None, label_selector=None, field_selector=None):
            return [nrt("4")] if kind == k.NRT else []

        def pod_logs(self, namespace, name, since_seconds=None):
            return ""

    @pytest.fixture
    def fxt():
        config = types.SimpleNamespace(operator_namespace="numaresources")
        return types.SimpleNamespace(kube=FakeKube(), namespace="e2e-test-x-1", initial_nrts=[nrt("18")],
                                     config=config)
    """
)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_report_html_shows_the_failed_spec_with_nrt_diff_and_zone_pictures(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    pytester.makeconftest(NRT_FXT)
    pytester.makepyfile(
        "import pytest\n"
        "from nrop.suite.plugin.specs import spec\n"
        "@spec('[test_id:9] fails on purpose', 'tier0', 'feature:tmpol')\n"
        "def test_fails(fxt):\n    assert False, 'pod stayed Pending'\n"
        "@spec('[test_id:10] passes', 'tier0')\n"
        "def test_passes(fxt):\n    pass\n"
        "@spec('[test_id:11] skips', 'tier1')\n"
        "def test_skips(fxt):\n    pytest.skip('no second node')\n"
    )
    result = run(pytester, *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = pytester.path / "reports" / "report.html"
    result.stdout.fnmatch_lines([f"HTML report: {report}"])
    page = report.read_text(encoding="utf-8")
    failed = page[page.index('<details class="test failed" open') :]
    failed = failed[: failed.index('<details class="test ', 1)]  # up to the next test (it nests folded parts)
    assert "[test_id:9] fails on purpose" in failed and "feature:tmpol" in failed
    assert ".py:5: AssertionError: pod stayed Pending" in failed  # where and why; the traceback is folded
    assert '<details class="traceback"><summary>traceback</summary>' in failed
    assert '<details class="evidence"><summary>events in namespace e2e-test-x-1</summary>' in failed
    # the diff from the initial NRTs and one picture per zone of the NRTs at the failure
    assert '<pre class="nrt-diff">worker-0:\n  node-00: cpu -14</pre>' in failed
    assert failed.count('<figure class="zone"') == 2
    assert 'aria-label="cpu used 14 / 18"' in failed
    assert '<details class="test passed">' in page and "[test_id:10] passes" in page
    assert '<details class="test skipped">' in page and "no second node" in page
    assert "1 failed, 1 passed, 1 skipped" in page
    # the timeline: a lane per process that ran specs, each spec a bar (its label only where it fits)
    timeline = page[page.index('<svg class="timeline"') : page.index("</svg>")]
    lanes = {lane for lane in ("main", "gw0", "gw1") if f'data-lane="{lane}"' in timeline}
    assert lanes == {"main"} if not xdist else lanes and lanes <= {"gw0", "gw1"}
    assert timeline.count('<g class="spec ') == 3 and "::test_fails: failed, " in timeline


def test_allure_gets_the_zone_pictures_of_a_failed_spec(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NRT_FXT)
    pytester.makepyfile(
        "from nrop.suite.plugin.specs import spec\n"
        "@spec('[test_id:9] fails on purpose', 'tier0')\n"
        "def test_fails(fxt):\n    assert False\n"
    )
    allure_dir = pytester.path / "allure"
    result = run(pytester, "--alluredir", str(allure_dir))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    pages = [p.read_text(encoding="utf-8") for p in allure_dir.glob("*-attachment.html")]
    assert len(pages) == 1
    assert pages[0].count('<figure class="zone"') == 2 and "node-00: cpu -14" in pages[0]
    texts = [p.read_text(encoding="utf-8") for p in allure_dir.glob("*-attachment.txt")]
    assert any("node-00: cpu -14" in text for text in texts)


# ------------------------------------------------------------------------- deferred cleanups

DEFERRING_SPECS = textwrap.dedent(
    """
    import pytest
    from nrop.suite.plugin.specs import spec

    EVENTS = []

    @pytest.fixture(scope="module", autouse=True)
    def the_order():
        yield
        assert EVENTS == ["mode set", "spec", "after-each", "fxt torn down", "uncordoned", "mode reverted"]

    @pytest.fixture
    def mode(fxt, defer_cleanup):
        EVENTS.append("mode set")
        defer_cleanup(lambda: EVENTS.append("mode reverted"))
        yield
        EVENTS.append("after-each")

    @pytest.fixture
    def cordon(mode, defer_cleanup):
        defer_cleanup(lambda: EVENTS.append("uncordoned"))

    @spec("[test_id:11] defers", "tier0")
    def test_defers(cordon):
        EVENTS.append("spec")
    """
)


def test_deferred_cleanups_run_after_the_fxt_teardown_last_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    from nrop.suite.e2e import fixture as e2efixture

    pytester.makeconftest(
        SUITE_CONFTEST
        + "import pytest\n@pytest.fixture(scope='session')\ndef suite_config():\n    return None\n"
    )
    pytester.makepyfile(test_defer=DEFERRING_SPECS)

    def fake_setup(config: object, base_name: str) -> types.SimpleNamespace:
        events = sys.modules["test_defer"].EVENTS
        return types.SimpleNamespace(teardown=lambda: events.append("fxt torn down"))

    monkeypatch.setattr(e2efixture.Fixture, "setup", fake_setup)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert passed_names(result) == {"test_defers"}
