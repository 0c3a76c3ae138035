"""The serial suite's pytest plugin, exercised through real pytest runs (pytester).

Each test writes a small suite into a temporary directory and runs pytest on it with the
``nrop`` plugin loaded through its entry point, then checks outcomes, output, exit codes
and the JUnit file. No cluster is started: where a target is needed, the ``Targets``
class is replaced by one whose contexts are plain strings, so the wiring (which profile a
spec gets, when targets open and close) is what is tested.
"""

from __future__ import annotations

import os
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from nrop.suite import options as suite_options
from nrop.suite import plugin, target

pytest_plugins = ("pytester",)

SUITE_CONFTEST = "NROP_SERIAL_SUITE = True\n"
# inner runs: no cache directory, and no asyncio plugin (its config warning is noise here)
BASE_ARGS = ("-p", "no:cacheprovider", "-p", "no:asyncio")

SPECS = textwrap.dedent(
    """
    import pytest
    from nrop.suite.specs import entry, spec

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


def _specs(tier_labels: bool = True) -> str:
    return SPECS.replace('"nodelabel_free"', '"feature:nodelabel"')


TABLE = textwrap.dedent(
    """
    import pytest
    from nrop.suite.specs import entry, spec

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
    for name in list(os.environ):
        if name == "KUBECONFIG" or name.startswith(("E2E_NROP_", "E2E_SERIAL_")):
            monkeypatch.delenv(name)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=_specs(), test_unsched=TABLE)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    report_dir = pytester.path / "reports"
    return pytester.runpytest(*BASE_ARGS, "--report-dir", str(report_dir), *args)


def _passed(result: pytest.RunResult) -> set[str]:
    passed, _, _ = result.reprec.listoutcomes()  # type: ignore[attr-defined]
    return {report.nodeid.split("::")[-1] for report in passed}


# ------------------------------------------------------------------------- markers and -m


def test_every_label_becomes_a_registered_marker(suite: pytest.Pytester) -> None:
    result = _run(suite, "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.e2e__serial: label e2e:serial (suite)*",
            "@pytest.mark.mno_masters_schedulable: label mno-masters-schedulable*",
            "@pytest.mark.feature__tmpol: label feature:tmpol (feature):*",
            "@pytest.mark.tmscope__cnt: label tmscope:cnt (scenario):*",
        ]
    )


def test_m_accepts_upstream_label_spellings(suite: pytest.Pytester) -> None:
    result = _run(suite, "--strict-markers", "-m", "feature:tmpol and not tmscope:cnt")
    assert result.ret == 0
    assert _passed(result) == {"test_pod_scope"}


def test_effective_labels_are_inherited_and_include_the_suite_label(suite: pytest.Pytester) -> None:
    result = _run(suite, "-m", "e2e:serial and feature:wlplacement")
    assert _passed(result) == {"test_two_containers", "test_pod_scope", "test_untiered_placeholder"}


def test_unknown_label_fails_the_import_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        "from nrop.suite.specs import spec\n@spec('x', 'tier0', 'nodelabel')\ndef test_x():\n    pass\n"
    )
    result = _run(pytester)
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
    result = _run(suite, *args)
    assert result.ret == 0
    assert _passed(result) == expected


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
    result = _run(suite, *args)
    assert result.ret == 0
    assert _passed(result) == expected


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
    result = _run(suite, *args)
    assert _passed(result) == expected
    assert result.ret == (0 if expected else pytest.ExitCode.USAGE_ERROR)


def test_an_empty_selection_is_a_usage_error_listing_the_labels(suite: pytest.Pytester) -> None:
    result = _run(suite, "--label-filter", "feature:nosuchthing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "ERROR: no spec of the serial suite is selected (label filter 'feature:nosuchthing'; 6 specs collected)."
            " labels of the collected specs: *feature:tmpol*tier0*tmscope:cnt*"
        ]
    )


def test_an_empty_m_selection_is_a_usage_error_too(suite: pytest.Pytester) -> None:
    result = _run(suite, "-m", "openshift")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ERROR: no spec of the serial suite is selected (-m 'openshift'*"])


def test_outside_the_suite_an_empty_selection_keeps_pytest_s_exit_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*BASE_ARGS, "-m", "slow")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


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
    result = _run(suite, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


# ------------------------------------------------------------------------------ dry run


def test_dry_run_lists_full_text_and_labels_without_running(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=_specs().replace("pass", "raise AssertionError('ran')"))
    result = _run(pytester, "--dry-run-specs", "--tier-up-to", "0")
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
    pytester.makepyfile(test_placement=_specs())
    result = _run(pytester, "--dry-run-specs", "-k", "47575")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*dry run: 1 of 3 specs selected*", "*[[]test_id:47575[]]*"])


# ------------------------------------------------------------------------------- reports


def test_junit_file_carries_test_id_tier_and_labels(suite: pytest.Pytester) -> None:
    result = _run(suite, "--tier-up-to", "1")
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
            from nrop.suite.specs import spec

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
    result = _run(pytester)
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


# ------------------------------------------------------------------------------- targets


def test_nothing_starts_for_tests_that_do_not_use_the_suite_fixtures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    monkeypatch.setattr(target, "start", lambda profile, *a, **k: started.append(profile))
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        test_plain="def test_plain(tmp_path):\n    assert tmp_path.exists()\n",
        test_spec_without_fixtures=_specs(),
    )
    result = _run(pytester)
    assert result.ret == 0
    assert started == []
    assert "nrop: [" not in result.stdout.str()  # no target says anything


def test_a_suite_fixture_starts_the_embedded_cluster_of_the_spec_profile(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(profile: str, state_dir: Path, **_: object) -> None:
        raise target.ClusterStartError(f"not in this test: would start {profile} in {state_dir.name}")

    monkeypatch.setattr(target, "start", refuse)
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        textwrap.dedent(
            """
            from nrop.suite.specs import spec

            @spec("needs the cluster", "tier0")
            def test_uses_kube(kube):
                pass
            """
        )
    )
    result = _run(pytester, "--cluster-profile", "smt-aligned")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "nrop: [[]smt-aligned[]] starting the embedded cluster (profile smt-aligned)",
            "*ClusterStartError: not in this test: would start smt-aligned in smt-aligned",
        ]
    )


FAKE_TARGETS = textwrap.dedent(
    """
    import os
    from nrop.suite import session

    NROP_SERIAL_SUITE = True
    LOG = os.path.join(os.path.dirname(__file__), "targets.log")

    def _record(*words):
        with open(LOG, "a") as f:
            f.write(" ".join(words) + "\\n")

    def _open(self, key, say):
        _record("open", key, self.worker or "main")
        return session.Context(key=key, kube=f"kube-of-{key}", timeouts=self.timeouts)

    def _before_suite(self, context, say):
        if context.config is None:
            _record("before-suite", context.key)
            context.config = f"config-of-{context.key}"

    def _close(self, context, say):
        _record("close", context.key, self.worker or "main")

    session.Targets._open = _open
    session.Targets._before_suite = _before_suite
    session.Targets._close = _close
    """
)

PROFILED = textwrap.dedent(
    """
    import os
    from nrop.suite.specs import spec

    pytestmark = spec("profiles")

    def _seen(name, kube, suite_config):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(os.path.dirname(__file__), "seen.log"), "a") as f:
            f.write(f"{name} {kube} {suite_config} {worker}\\n")

    @spec("[test_id:1] a cnt spec first in the file", "tier0", "tmscope:cnt")
    def test_cnt_1(kube, suite_config):
        _seen("cnt_1", kube, suite_config)

    @spec("[test_id:2] a default spec", "tier0")
    def test_default_1(kube, suite_config):
        _seen("default_1", kube, suite_config)

    @spec("[test_id:3] another cnt spec", "tier0", "tmscope:cnt")
    def test_cnt_2(kube, suite_config):
        _seen("cnt_2", kube, suite_config)

    @spec("[test_id:4] another default spec", "tier0")
    def test_default_2(kube, suite_config):
        _seen("default_2", kube, suite_config)
    """
)


def test_a_serial_run_uses_targets_in_profile_order_preparing_the_next_one_ahead(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a serial run: not one of the xdist workers this test itself may be running in
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(FAKE_TARGETS)
    pytester.makepyfile(test_profiles=PROFILED)
    # -k deselects after the plugin ordered the specs: the point of preparing ahead follows
    result = pytester.runpytest_subprocess(
        *BASE_ARGS, "--report-dir", str(pytester.path / "r"), "-k", "not default_1"
    )
    assert result.ret == 0, result.stdout.str()
    seen = (pytester.path / "seen.log").read_text().split("\n")
    assert seen[:3] == [
        "default_2 kube-of-default config-of-default main",
        "cnt_1 kube-of-container-scope config-of-container-scope main",
        "cnt_2 kube-of-container-scope config-of-container-scope main",
    ]
    # two specs before it is needed (here: the first spec) container-scope is opened and its
    # BeforeSuite run on a thread; default is closed on a thread once the run switched
    log = (pytester.path / "targets.log").read_text().splitlines()
    assert sorted(log) == sorted(
        [
            "open default main",
            "before-suite default",
            "open container-scope main",
            "before-suite container-scope",
            "close default main",
            "close container-scope main",
        ]
    )
    assert log.index("before-suite container-scope") < log.index("close default main")
    assert log[-1] == "close container-scope main"
    result.stdout.fnmatch_lines(
        [
            "nrop: [[]container-scope[]] preparing the target in the background",
            "nrop: [[]container-scope[]] prepared in the background in *s (waited *s for it)",
        ]
    )


@pytest.mark.parametrize(
    ("profiles", "ahead", "points"),
    [
        (["d", "d", "d", "d", "c", "c"], 2, {2: "c"}),
        (["d", "c"], 2, {0: "c"}),
        (["d", "d", "c"], 0, {2: "c"}),
        (["d", "d", "d"], 2, {}),
        (["c", "c"], 2, {}),
        ([], 2, {}),
        (["d", "d", "c", "s"], 1, {1: "c", 2: "s"}),
    ],
)
def test_prepare_points(profiles: list[str], ahead: int, points: dict[int, str]) -> None:
    assert plugin.prepare_points(profiles, ahead) == points


def test_with_xdist_each_worker_has_its_own_targets_and_a_profile_stays_on_one_worker(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(FAKE_TARGETS)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    seen = [line.split() for line in (pytester.path / "seen.log").read_text().splitlines()]
    assert len(seen) == 4
    for name, kube, config, _worker in seen:
        profile = "container-scope" if name.startswith("cnt") else "default"
        assert (kube, config) == (f"kube-of-{profile}", f"config-of-{profile}")
    assert len({worker for name, *_, worker in seen if name.startswith("cnt")}) == 1
    assert {worker for *_, worker in seen} <= {"gw0", "gw1"}
    opened = [
        line.split() for line in (pytester.path / "targets.log").read_text().splitlines() if "open" in line
    ]
    assert all(worker in ("gw0", "gw1") for _, _, worker in opened)


def test_with_xdist_a_large_profile_is_split_into_groups_that_run_first(pytester: pytest.Pytester) -> None:
    # more cnt specs than a group holds: two groups, each on its own worker with its own cluster;
    # xdist hands out the largest units first, so each worker starts with a group
    specs = ["import os", "from nrop.suite.specs import spec", 'pytestmark = spec("profiles")']
    for index in range(plugin.GROUP_SIZE + 2):
        specs.append(
            f'@spec("[test_id:{100 + index}] cnt spec {index}", "tier0", "tmscope:cnt")\n'
            f"def test_cnt_{index}(kube):\n"
            f'    open(os.path.join(os.path.dirname(__file__), "order.log"), "a").write('
            f"f\"{{os.environ['PYTEST_XDIST_WORKER']}} cnt\\n\")"
        )
    for index in range(2):
        specs.append(
            f'@spec("[test_id:{200 + index}] default spec {index}", "tier0")\n'
            f"def test_default_{index}(kube):\n"
            f'    open(os.path.join(os.path.dirname(__file__), "order.log"), "a").write('
            f"f\"{{os.environ['PYTEST_XDIST_WORKER']}} default\\n\")"
        )
    pytester.makeconftest(FAKE_TARGETS)
    pytester.makepyfile(test_groups="\n\n\n".join(specs) + "\n")
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    opened = [
        line.split() for line in (pytester.path / "targets.log").read_text().splitlines() if "open" in line
    ]
    assert sorted(worker for _, key, worker in opened if key == "container-scope") == ["gw0", "gw1"]
    runs = [line.split() for line in (pytester.path / "order.log").read_text().splitlines()]
    assert sum(1 for _, what in runs if what == "cnt") == plugin.GROUP_SIZE + 2
    for worker in ("gw0", "gw1"):
        assert next(what for who, what in runs if who == worker) == "cnt"


def test_with_xdist_a_worker_s_after_suite_failure_fails_the_run(pytester: pytest.Pytester) -> None:
    # the leak check (and any AfterSuite/teardown error) raises in a worker's close: the
    # controller must print it and exit 1, though every spec passed
    leaky = FAKE_TARGETS.replace(
        '_record("close", context.key, self.worker or "main")',
        '_record("close", context.key, self.worker or "main")\n'
        '    if context.key == "container-scope":\n'
        '        raise RuntimeError("the run left the cluster changed (1): namespace e2e-test-x is left")',
    )
    pytester.makeconftest(leaky)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*nrop: AfterSuite/teardown failed: [[]gw?[]] RuntimeError: the run left the cluster changed (1)*"]
    )


def test_with_xdist_the_controller_shows_each_worker_s_leak_check(pytester: pytest.Pytester) -> None:
    # a worker's progress lines stay in its log; the leak-check verdict reaches the user
    checked = FAKE_TARGETS.replace(
        '_record("close", context.key, self.worker or "main")',
        '_record("close", context.key, self.worker or "main")\n'
        '    say("leak check: the cluster is as BeforeSuite found it")',
    )
    pytester.makeconftest(checked)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    for profile in ("container-scope", "default"):  # the workers end in any order
        result.stdout.fnmatch_lines(
            [f"*nrop: [[]{profile}@gw?[]] leak check: the cluster is as BeforeSuite found it"]
        )


def test_xdist_is_refused_against_a_real_cluster(pytester: pytest.Pytester) -> None:
    kubeconfig = pytester.path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=_specs())
    result = pytester.runpytest(*BASE_ARGS, "-n", "2", "--kubeconfig", str(kubeconfig))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: -n/--dist runs specs in parallel, but the serial suite must run alone on a shared cluster*"]
    )


def test_xdist_against_a_real_cluster_is_not_refused_outside_the_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = pytester.path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*BASE_ARGS, "-n", "2")
    assert result.ret == 0


# ------------------------------------------------------------------ option resolution (pure)


@pytest.mark.parametrize(
    ("cli", "env", "field", "expected"),
    [
        ({}, {}, "cluster_profile", "default"),
        ({}, {"E2E_NROP_CLUSTER_PROFILE": "smt-aligned"}, "cluster_profile", "smt-aligned"),
        (
            {"nrop_cluster_profile": "none"},
            {"E2E_NROP_CLUSTER_PROFILE": "smt-aligned"},
            "cluster_profile",
            "none",
        ),
        ({}, {}, "do_setup", True),
        ({}, {"E2E_NROP_SETUP": "false"}, "do_setup", False),
        ({"nrop_setup": True}, {"E2E_NROP_SETUP": "false"}, "do_setup", True),
        ({}, {"E2E_NROP_TEARDOWN": "no"}, "do_teardown", False),
        ({}, {"E2E_NROP_TIER_UPTO": "1", "E2E_SERIAL_TIER_UPTO": "3"}, "tier_up_to", 1),
        ({"nrop_tier_up_to": "tier2"}, {"E2E_NROP_TIER_UPTO": "1"}, "tier_up_to", 2),
        ({}, {}, "report_dir", suite_options.DEFAULT_REPORT_DIR),
        ({}, {"E2E_NROP_REPORT_DIR": "/r"}, "report_dir", Path("/r")),
        ({}, {"E2E_NROP_KEEP_NAMESPACE_ON_FAILURE": "true"}, "keep_namespace_on_failure", True),
        ({"nrop_focus": ["a", "b"]}, {"E2E_SERIAL_FOCUS": "c"}, "focus", ("a", "b")),
        ({}, {"E2E_SERIAL_SKIP": "reboot_required"}, "skip", ("reboot_required",)),
        (
            {"nrop_tier_up_to": "0", "nrop_label_filter": "a || b"},
            {},
            "selection_filter",
            "(tier0) && (a || b)",
        ),
    ],
)
def test_resolve_precedence(
    cli: dict[str, object], env: dict[str, str], field: str, expected: object
) -> None:
    assert getattr(suite_options.resolve(cli, env), field) == expected


def test_a_kubeconfig_turns_setup_and_teardown_off_by_default(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("{}")
    resolved = suite_options.resolve({}, {"KUBECONFIG": f"{path}:/other"})
    assert (resolved.kubeconfig, resolved.target, resolved.do_setup, resolved.do_teardown) == (
        path,
        "kubeconfig",
        False,
        False,
    )


@pytest.mark.parametrize(
    ("labels", "default", "expected"),
    [
        (("tier0", "tmscope:cnt"), "default", "container-scope"),
        (("tmscope:container",), "default", "container-scope"),
        (("tier0", "tmscope:pod"), "default", "default"),
        (("tier0",), "smt-aligned", "smt-aligned"),
    ],
)
def test_profile_for(labels: tuple[str, ...], default: str, expected: str) -> None:
    assert plugin.profile_for(labels, default) == expected


@pytest.mark.parametrize(
    ("labels", "marked", "expected"),
    [
        (("tier0",), "wide-zones", "wide-zones"),
        (("tmscope:cnt",), "wide-zones", "wide-zones"),
        (("tier0",), None, "default"),
    ],
)
def test_profile_for_a_marked_spec(labels: tuple[str, ...], marked: str | None, expected: str) -> None:
    assert plugin.profile_for(labels, "default", marked) == expected


# ----------------------------------------------------------------------- failure diagnostics

FAKE_FXT = textwrap.dedent(
    """
    import types
    import pytest
    from nrop.suite import kube as k

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
        "from nrop.suite.specs import spec\n"
        "@spec('[test_id:9] fails', 'tier0')\n"
        "def test_fails(fxt):\n    assert False, 'placement went wrong'\n"
        "@spec('[test_id:10] passes', 'tier0')\n"
        "def test_passes(fxt):\n    pass\n"
    )
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*- nrop: events in namespace e2e-test-x-1 -*",
            "2026-01-01T00:00:00Z Warning Pod/testpod FailedScheduling [[]topo-sched[]]: 0/3 nodes: cannot align pod",
            "*- nrop: NRT difference from the start of the test -*",
            "*- nrop: secondary scheduler logs -*",
            "--- numaresources/secondary-scheduler-abc (last 300s)",
            "scheduler log of numaresources/secondary-scheduler-abc",
        ]
    )
    assert result.stdout.str().count("nrop: events in namespace") == 1


# --------------------------------------------------------------------------------- report.html

NRT_FXT = textwrap.dedent(
    """
    import types
    import pytest
    from nrop.suite import kube as k

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
        "from nrop.suite.specs import spec\n"
        "@spec('[test_id:9] fails on purpose', 'tier0', 'feature:tmpol')\n"
        "def test_fails(fxt):\n    assert False, 'pod stayed Pending'\n"
        "@spec('[test_id:10] passes', 'tier0')\n"
        "def test_passes(fxt):\n    pass\n"
        "@spec('[test_id:11] skips', 'tier1')\n"
        "def test_skips(fxt):\n    pytest.skip('no second node')\n"
    )
    result = _run(pytester, *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = pytester.path / "reports" / "report.html"
    result.stdout.fnmatch_lines([f"HTML report: {report}"])
    page = report.read_text(encoding="utf-8")
    failed = page[page.index('<details class="test failed" open') :]
    failed = failed[: failed.index("</details>")]
    assert "[test_id:9] fails on purpose" in failed and "feature:tmpol" in failed
    assert ".py:5: AssertionError: pod stayed Pending" in failed  # where and why; the traceback is folded
    assert '<details class="traceback"><summary>traceback</summary>' in failed
    # the diff from the initial NRTs and one picture per zone of the NRTs at the failure
    assert '<pre class="nrt-diff">worker-0:\n  node-00: cpu -14</pre>' in failed
    assert failed.count('<figure class="zone"') == 2
    assert 'aria-label="cpu used 14 / 18"' in failed
    assert '<details class="test passed">' in page and "[test_id:10] passes" in page
    assert '<details class="test skipped">' in page and "no second node" in page
    assert "1 failed, 1 passed, 1 skipped" in page


def test_allure_gets_the_zone_pictures_of_a_failed_spec(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NRT_FXT)
    pytester.makepyfile(
        "from nrop.suite.specs import spec\n"
        "@spec('[test_id:9] fails on purpose', 'tier0')\n"
        "def test_fails(fxt):\n    assert False\n"
    )
    allure_dir = pytester.path / "allure"
    result = _run(pytester, "--alluredir", str(allure_dir))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    pages = [p.read_text(encoding="utf-8") for p in allure_dir.glob("*-attachment.html")]
    assert len(pages) == 1
    assert pages[0].count('<figure class="zone"') == 2 and "node-00: cpu -14" in pages[0]
    texts = [p.read_text(encoding="utf-8") for p in allure_dir.glob("*-attachment.txt")]
    assert any("node-00: cpu -14" in text for text in texts)


# ------------------------------------------------------------------------- embedded cluster

FAKE_CLUSTER = textwrap.dedent(
    """
    import signal, sys, time
    state = sys.argv[sys.argv.index("--state-dir") + 1]
    print("2026-11-26 14:08:10,584 INFO nrop.localcluster.cluster: starting API server", file=sys.stderr, flush=True)
    if "broken" in sys.argv:
        print("2026-11-26 14:08:10,600 ERROR nrop.localcluster.cluster: no such profile", file=sys.stderr, flush=True)
        sys.exit(2)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    open(state + "/kubeconfig", "w").write("apiVersion: v1")
    print("ready: kubeconfig=" + state + "/kubeconfig", flush=True)
    while True:
        time.sleep(0.1)
    """
)


def test_embedded_cluster_start_waits_for_ready_and_stops_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "fake_cluster.py"
    script.write_text(FAKE_CLUSTER)
    lines: list[str] = []
    cluster = target.start(
        "default", tmp_path / "state", progress=lines.append, command=[sys.executable, str(script)]
    )
    try:
        assert cluster.kubeconfig == tmp_path / "state" / "kubeconfig"
        assert cluster.process.poll() is None
        # stderr is relayed by its own thread: lines printed before "ready" may race with it
        assert lines in ([], ["starting API server"])
    finally:
        cluster.stop()
    assert cluster.process.returncode == 0
    assert "starting API server" in cluster.log_path.read_text()


def test_embedded_cluster_that_exits_early_is_an_error_with_its_log(tmp_path: Path) -> None:
    script = tmp_path / "fake_cluster.py"
    script.write_text(FAKE_CLUSTER)
    with pytest.raises(
        target.ClusterStartError, match=r"(?s)--profile broken exited; its log ends with:.*no such"
    ):
        target.start(
            "broken", tmp_path / "state", progress=lambda _: None, command=[sys.executable, str(script)]
        )


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (
            "2026-11-26 14:08:10,584 INFO nrop.localcluster.kubelet.kubelet: node worker-0 ready",
            "node worker-0 ready",
        ),
        ("2026-11-26 14:08:10,878 WARNING nrop.sched.scheduler: plugin left out", "WARNING: plugin left out"),
        ("a line that is not a log record", "a line that is not a log record"),
    ],
)
def test_progress_line(line: str, shown: str) -> None:
    assert target.progress_line(line) == shown


@pytest.mark.parametrize(
    ("args", "expected", "header"),
    [
        ((), "(1800.0,) 18000.0", "each spec may take 1800s *, the whole run 18000s (--session-timeout)"),
        (("--timeout", "7"), "None 18000.0", "each spec may take 7.0s (--timeout) *"),
        (("--session-timeout", "60"), "(1800.0,) 60.0", "*, the whole run 60s (--session-timeout)"),
    ],
    ids=["spec-default", "cli-timeout-wins", "cli-session-timeout-wins"],
)
def test_specs_get_a_long_timeout_and_the_run_upstream_s_5h_unless_given(
    pytester: pytest.Pytester, args: tuple[str, ...], expected: str, header: str
) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        "from nrop.suite.specs import spec\n"
        "@spec('a slow spec', 'tier0')\n"
        "def test_spec(request):\n"
        "    mark = request.node.get_closest_marker('timeout')\n"
        "    print('TIMEOUT', mark.args if mark else None, request.config.getoption('session_timeout'))\n"
    )
    result = _run(pytester, "-s", *args)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"nrop: {header}", f"*TIMEOUT {expected}"])


def test_a_kubeconfig_of_an_embedded_cluster_gets_the_embedded_timings(
    kubeconfig: Path, tmp_path: Path
) -> None:
    # nrop-cluster up by hand (or by bench/soak.py): the suite asks /version and treats it as embedded
    assert target.serves_embedded(kubeconfig)
    resolved = replace(suite_options.resolve({}, {"KUBECONFIG": str(kubeconfig)}), embedded_server=True)
    assert (resolved.embedded, resolved.emulated, resolved.target, resolved.do_setup) == (
        False,
        True,
        "embedded",
        False,
    )
    # a real cluster's version, and a cluster that does not answer, keep upstream's timings
    assert not target.is_embedded_version("v1.33.2")
    assert target.is_embedded_version("v1.33.0-nrop")
    unreachable = tmp_path / "kubeconfig"
    unreachable.write_text(kubeconfig.read_text().replace("https://127.0.0.1:", "https://127.0.0.1:1"))
    assert not target.serves_embedded(unreachable)
