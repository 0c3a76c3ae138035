"""make upstream-e2e (nrop.suite.plugin.upstreame2e): Ginkgo flags, cache keys, junit parsing, the differential, the build cache."""

from __future__ import annotations

import contextlib
import io
import re
import tarfile
from pathlib import Path

import pytest

from nrop.suite.plugin import upstreame2e as up

# ------------------------------------------------------------------------------ Ginkgo flags


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        (0, "tier0"),
        (1, "tier0 || tier1"),
        (3, "tier0 || tier1 || tier2 || tier3"),
    ],
)
def test_label_filter_from_tier(tier: int, expected: str) -> None:
    assert up.label_filter(tier) == expected


@pytest.mark.parametrize("tier", [-1, 4])
def test_label_filter_rejects_unknown_tiers(tier: int) -> None:
    with pytest.raises(ValueError, match="tier"):
        up.label_filter(tier)


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain words", "plain words"),
        ("[test_id:47591]", r"\[test_id:47591\]"),
        ("a.b+c*d?e(f)g|h{i}j^k$l\\m", r"a\.b\+c\*d\?e\(f\)g\|h\{i\}j\^k\$l\\m"),
        ("gu-pod, 2 cnt: 4Gi/8Gi", "gu-pod, 2 cnt: 4Gi/8Gi"),
    ],
)
def test_quote_meta_is_gos(text: str, quoted: str) -> None:
    assert up.quote_meta(text) == quoted
    assert re.fullmatch(quoted, text)  # RE2 and Python agree on these escapes


SPEC_A = "[serial] numaresources workload placement [test_id:47591] should do A (x+y)"
SPEC_B = "[serial][disruptive] numaresources config with a fresh NRO should work [tier0]"
SPEC_C = "[serial] numaresources workload placement [test_id:47614] a deployment"
SPEC_C2 = "[serial] numaresources workload placement [test_id:47614] a daemonset"


@pytest.mark.parametrize(
    ("texts", "expected", "matches", "misses"),
    [
        pytest.param([SPEC_A], r"\[test_id:47591\]", [SPEC_A], [SPEC_B], id="by-test-id"),
        pytest.param(
            [SPEC_B],
            r"^NUMAResources serial e2e tests \[serial\]\[disruptive\] numaresources config with a fresh NRO "
            r"should work \[tier0\]$",
            [SPEC_B],
            [SPEC_B + " too", "x " + SPEC_B],
            id="by-anchored-text",
        ),
        pytest.param(
            [SPEC_A, SPEC_B],
            r"\[test_id:47591\]|^NUMAResources serial e2e tests \[serial\]\[disruptive\] numaresources config "
            r"with a fresh NRO should work \[tier0\]$",
            [SPEC_A, SPEC_B],
            [SPEC_C],
            id="alternatives",
        ),
        pytest.param(
            [SPEC_C, SPEC_C2], r"\[test_id:47614\]", [SPEC_C, SPEC_C2], [SPEC_A], id="shared-id-once"
        ),
    ],
)
def test_focus_regex(texts: list[str], expected: str, matches: list[str], misses: list[str]) -> None:
    focus = up.focus_regex(texts)
    assert focus == expected
    # what Ginkgo matches the focus against: the suite's description, a space, the full text
    assert all(re.search(focus, f"{up.SUITE_DESCRIPTION} {text}") for text in matches)
    assert not any(re.search(focus, f"{up.SUITE_DESCRIPTION} {text}") for text in misses)


def test_focus_regex_needs_a_spec() -> None:
    with pytest.raises(ValueError, match="no spec"):
        up.focus_regex([])


def test_ginkgo_args_are_upstream_runners_and_the_selection() -> None:
    args = up.ginkgo_args(1, [SPEC_A], Path("/r/upstream-default.xml"))
    assert args == [
        "-ginkgo.timeout=5h",
        "-ginkgo.no-color",
        "-ginkgo.v",
        "-ginkgo.label-filter=tier0 || tier1",
        r"-ginkgo.focus=\[test_id:47591\]",
        "-ginkgo.junit-report=/r/upstream-default.xml",
    ]


def test_every_spec_means_no_label_filter_here_and_no_tier_for_the_port() -> None:
    args = up.ginkgo_args(None, [SPEC_A], Path("/r/upstream-default.xml"))
    assert not any(arg.startswith("-ginkgo.label-filter") for arg in args)
    assert r"-ginkgo.focus=\[test_id:47591\]" in args
    assert up.tier_args(None) == []
    assert up.tier_args(2) == ["--tier-up-to", "2"]


# ------------------------------------------------------------------------------ cache keys, build info, env


def test_tarball_key_is_the_digest_prefix() -> None:
    assert up.tarball_key("16703411df3bf0a5dd4d4adff880b0bd") == "16703411df3bf0a5"


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        pytest.param([("a", b"1"), ("b", b"2")], [("b", b"2"), ("a", b"1")], True, id="order-free"),
        pytest.param([("a", b"1")], [("a", b"2")], False, id="content"),
        pytest.param([("a", b"1")], [("b", b"1")], False, id="path"),
        pytest.param([("ab", b"")], [("a", b"b")], False, id="path-content-boundary"),
        pytest.param([], [], True, id="empty"),
    ],
)
def test_tree_key(left: list[tuple[str, bytes]], right: list[tuple[str, bytes]], same: bool) -> None:
    assert (up.tree_key(left) == up.tree_key(right)) is same


@pytest.mark.parametrize(
    ("commit", "branch", "env"),
    [
        ("d7c43906", "main", {"NRO_BUILD_COMMIT": "d7c43906", "NRO_BUILD_BRANCH": "main"}),
        ("d7c43906", None, {"NRO_BUILD_COMMIT": "d7c43906"}),
        (None, None, {}),
    ],
)
def test_buildinfo_env(commit: str | None, branch: str | None, env: dict[str, str]) -> None:
    assert up.buildinfo_env(commit, branch) == env


def test_upstream_env_keeps_the_callers_variables_but_names_the_cluster() -> None:
    env = up.upstream_env(
        {"KUBECONFIG": "/elsewhere", "E2E_NROP_DEVICE_TYPE_1": "mine/dev", "PATH": "/bin"},
        Path("/state/kubeconfig"),
        {"E2E_NROP_DEVICE_TYPE_1": "example.com/deviceA", "E2E_NROP_DEVICE_TYPE_2": "example.com/deviceB"},
        "localhost/ours:latest",
        {"E2E_NROP_TEST_COOLDOWN": "30s"},
    )
    assert env == {
        "KUBECONFIG": "/state/kubeconfig",
        "E2E_NROP_DEVICE_TYPE_1": "mine/dev",
        "E2E_NROP_DEVICE_TYPE_2": "example.com/deviceB",
        "E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": "localhost/ours:latest",
        "E2E_NROP_TEST_COOLDOWN": "30s",
        "PATH": "/bin",
    }


# ------------------------------------------------------------------------------ junit reports

#: What ``-ginkgo.junit-report`` writes (reporters/junit_report.go), cut down by hand.
GINKGO_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="6" disabled="1" errors="0" failures="2" time="40.5">
      <testsuite name="NUMAResources serial e2e tests" package="/src/test/e2e/serial" tests="6" disabled="0"
                 skipped="1" errors="0" failures="2" time="40.5" timestamp="2026-11-29T00:30:00">
          <properties>
              <property name="SuiteSucceeded" value="false"></property>
              <property name="LabelFilter" value="tier0"></property>
          </properties>
          <testcase name="[BeforeSuite]" classname="NUMAResources serial e2e tests" status="passed" time="12.1">
              <system-err>&gt; Enter [BeforeSuite] TOP-LEVEL</system-err>
          </testcase>
          <testcase name="[It] [serial] numaresources workload placement [test_id:47591] should do A (x+y) [feature:wlplacement, tier0]"
                    classname="NUMAResources serial e2e tests" status="passed" time="10.2"></testcase>
          <testcase name="[It] [serial][disruptive] numaresources config with a fresh NRO should work [tier0] [feature:config, tier0]"
                    classname="NUMAResources serial e2e tests" status="failed" time="8">
              <failure message="Timed out after 120.000s.&#xA;Expected&#xA;    &lt;bool&gt;: false" type="failed">[FAILED] Timed out</failure>
          </testcase>
          <testcase name="[It] [serial] numaresources workload placement [test_id:47614] a deployment [tier3, unsched]"
                    classname="NUMAResources serial e2e tests" status="skipped" time="0">
              <skipped message="skipped - not enough nodes"></skipped>
          </testcase>
          <testcase name="[AfterSuite]" classname="NUMAResources serial e2e tests" status="failed" time="1">
              <failure message="namespace e2e-test-infra not deleted" type="failed">[FAILED] namespace</failure>
          </testcase>
          <testcase name="[ReportAfterSuite] Autogenerated ReportAfterSuite for --junit-report"
                    classname="NUMAResources serial e2e tests" status="passed" time="0.01"></testcase>
      </testsuite>
  </testsuites>
"""


def test_parse_ginkgo_junit() -> None:
    cases = up.parse_ginkgo_junit(GINKGO_JUNIT)
    assert [(c.leaf_type, c.status, c.outcome) for c in cases] == [
        ("BeforeSuite", "passed", "passed"),
        ("It", "passed", "passed"),
        ("It", "failed", "failed"),
        ("It", "skipped", "skipped"),
        ("AfterSuite", "failed", "failed"),
        ("ReportAfterSuite", "passed", "passed"),
    ]
    assert cases[2].message.startswith("Timed out after 120.000s.\nExpected")
    assert cases[3].message == "skipped - not enough nodes"
    assert [c.name for c in up.suite_node_failures(cases)] == ["[AfterSuite]"]


@pytest.mark.parametrize(
    ("full_text", "outcome"),
    [
        (SPEC_A, "passed"),
        (SPEC_B, "failed"),  # its text ends in a bracket, as the labels do
        (SPEC_C, "skipped"),
        (SPEC_C2, "absent"),
        ("[serial] numaresources workload placement", "absent"),  # a container is no spec
    ],
)
def test_upstream_verdict_finds_the_spec_by_full_text(full_text: str, outcome: str) -> None:
    assert up.upstream_verdict(full_text, up.parse_ginkgo_junit(GINKGO_JUNIT)).outcome == outcome


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        ("passed", "passed"),
        ("skipped", "skipped"),
        ("pending", "skipped"),
        ("failed", "failed"),
        ("timedout", "failed"),
        ("panicked", "failed"),
        ("interrupted", "failed"),
        ("aborted", "failed"),
        ("something new", "failed"),
    ],
)
def test_ginkgo_states_as_outcomes(status: str, outcome: str) -> None:
    assert up.GinkgoCase("[It] x", status).outcome == outcome


def _pytest_case(spec: str, body: str = "", name: str = "test_x") -> str:
    return (
        f'<testcase classname="serial.test_x" name="{name}" time="1.0"><properties>'
        f'<property name="test_id" value="" /><property name="spec" value="{spec}" /></properties>{body}</testcase>'
    )


PYTEST_JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1">'
    + _pytest_case(SPEC_A)
    + _pytest_case(SPEC_B, '<failure message="AssertionError: NRT not settled">trace</failure>')
    + _pytest_case(SPEC_C, '<skipped type="pytest.skip" message="not enough nodes">skip</skipped>')
    + _pytest_case(SPEC_C2)
    + _pytest_case(SPEC_C2, '<error message="failed on teardown with &quot;leak&quot;">trace</error>')
    + '<testcase classname="tests.unit" name="test_not_a_spec" time="0.1" />'
    + "</testsuite></testsuites>"
)


def test_parse_pytest_junit_keeps_the_worse_case_per_spec() -> None:
    assert up.parse_pytest_junit(PYTEST_JUNIT) == {
        SPEC_A: up.Verdict("passed"),
        SPEC_B: up.Verdict("failed", "AssertionError: NRT not settled"),
        SPEC_C: up.Verdict("skipped", "not enough nodes"),
        SPEC_C2: up.Verdict("failed", 'failed on teardown with "leak"'),
    }


# ------------------------------------------------------------------------------ the differential

P, F, S, A = (up.Verdict(o) for o in ("passed", "failed", "skipped", "absent"))


@pytest.mark.parametrize(
    ("upstream", "python", "judgement", "fails"),
    [
        (P, P, "same", False),
        (S, S, "same", False),
        (P, None, "not compared", False),
        (S, None, "not compared", False),
        (F, F, "upstream failed", True),
        (F, None, "upstream failed", True),
        (A, None, "upstream failed", True),
        (P, F, "different", True),
        (F, P, "different", True),
        (S, P, "different", True),
        (P, A, "different", True),  # the port's report lacks the spec: not judged the same
    ],
)
def test_judgement(upstream: up.Verdict, python: up.Verdict | None, judgement: str, fails: bool) -> None:
    assert up.judge(upstream, python) == judgement
    row = up.Row("default", SPEC_A, upstream, python)
    assert up.differential_failed([row], []) is fails


def test_a_failed_suite_node_fails_the_run() -> None:
    row = up.Row("default", SPEC_A, P, P)
    assert up.differential_failed([row], [up.GinkgoCase("[BeforeSuite]", "failed", "415")]) is True


def test_rows_for_one_profile() -> None:
    cases = up.parse_ginkgo_junit(GINKGO_JUNIT)
    python = up.parse_pytest_junit(PYTEST_JUNIT)
    rows = up.rows_for("container-scope", [SPEC_A, SPEC_B, SPEC_C2, "[serial] not ported"], cases, python)
    assert [
        (r.name, r.profile, r.upstream.outcome, r.python and r.python.outcome, r.judgement) for r in rows
    ] == [
        ("47591", "container-scope", "passed", "passed", "same"),
        (SPEC_B, "container-scope", "failed", "failed", "upstream failed"),
        ("47614", "container-scope", "absent", "failed", "different"),
        ("[serial] not ported", "container-scope", "absent", "absent", "upstream failed"),
    ]
    assert [r.python for r in up.rows_for("default", [SPEC_A], cases, None)] == [None]


def test_render_table() -> None:
    rows = [
        up.Row("default", SPEC_A, P, P),
        up.Row("default", SPEC_C, up.Verdict("skipped", "skipped - not enough nodes"), P),
        up.Row("default", SPEC_C2, up.Verdict("failed", "a|b"), up.Verdict("failed", "x")),
    ]
    table = up.render_table(
        rows, {"default": [up.GinkgoCase("[BeforeSuite]", "failed", "the server\nsaid 415")]}
    )
    lines = table.splitlines()
    assert lines[0] == "# Upstream's serial suite beside the port"
    assert "- **default: [BeforeSuite] failed**: the server said 415" in lines
    assert "| spec | profile | upstream | port | judgement | detail |" in lines
    assert "| 47591 | default | passed | passed | same |  |" in lines
    # the two specs sharing test_id 47614 are told apart by their texts; a pipe is escaped
    assert f"| {SPEC_C} | default | skipped | passed | different | skipped - not enough nodes |" in lines
    assert f"| {SPEC_C2} | default | failed | failed | upstream failed | a\\|b |" in lines
    assert lines[-1] == "1 different, 1 same, 1 upstream failed"


def test_render_table_without_the_port() -> None:
    table = up.render_table([up.Row("default", SPEC_A, P, None)], {})
    assert "| spec | profile | upstream | judgement | detail |" in table
    assert "| 47591 | default | passed | not compared |  |" in table


GINKGO_VERBOSE = """Will run 2 of 158 specs
------------------------------
[BeforeSuite]
/src/test/e2e/serial/e2e_serial_test.go:44
E2E NROP environment variables dump BEGIN
[BeforeSuite] PASSED [21.354 seconds]
------------------------------
[serial] placement [test_id:85792] should be placed [tier0, feature:wlplacement]
/src/test/e2e/serial/tests/workload_placement_resources.go:128
  STEP: set up the test namespace @ 11/29/26 00:27:47.978
• [11.798 seconds]
------------------------------
SSSSSSS
------------------------------
[serial] config should work [tier0]
/src/test/e2e/serial/tests/config.go:10
  [FAILED] Timed out after 120.000s.
• [FAILED] [130.020 seconds]
------------------------------
[AfterSuite] PASSED [1.0 seconds]

Ran 2 of 158 Specs in 190.512 seconds
FAIL! -- 1 Passed | 1 Failed | 0 Pending | 156 Skipped
"""


def test_progress_lines_of_the_verbose_output() -> None:
    progress = up.ProgressFilter()
    shown = [line for line in map(progress.feed, GINKGO_VERBOSE.splitlines()) if line is not None]
    assert shown == [
        "[BeforeSuite] PASSED [21.354 seconds]",
        "• [11.798 seconds] [serial] placement [test_id:85792] should be placed [tier0, feature:wlplacement]",
        "[FAILED] Timed out after 120.000s.",
        "• [FAILED] [130.020 seconds] [serial] config should work [tier0]",
        "[AfterSuite] PASSED [1.0 seconds]",
        "Ran 2 of 158 Specs in 190.512 seconds",
        "FAIL! -- 1 Passed | 1 Failed | 0 Pending | 156 Skipped",
    ]


# ------------------------------------------------------------------------------ the build cache

FAKE_GO = """#!/bin/sh
# A test double of the go command: records each call, plays buildhelper and `go test -c`.
echo "$* commit=$NRO_BUILD_COMMIT branch=$NRO_BUILD_BRANCH flags=$GOFLAGS proxy=$GOPROXY toolchain=$GOTOOLCHAIN cgo=$CGO_ENABLED" >> "$(dirname "$0")/calls"
case "$1" in
run) echo '{"commit":"'"$NRO_BUILD_COMMIT"'"}' ;;
test) test -f pkg/version/_buildinfo.json && printf 'binary' > "$4" ;;
esac
"""


def _fake_go(tmp_path: Path) -> Path:
    go = tmp_path / "go-bin" / "go"
    go.parent.mkdir()
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    return go


def _calls(go: Path) -> list[str]:
    calls = go.parent / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def _archive(path: Path, readme: bytes, commit: str = "d7c439060293ae897642854b418d3c651c041f6e") -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": commit}) as archive:
        for name, data in (
            ("numaresources-operator/README.md", readme),
            ("numaresources-operator/pkg/version/v.go", b""),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_build_is_skipped_when_the_cache_hits(tmp_path: Path) -> None:
    go = _fake_go(tmp_path)
    cache = tmp_path / "cache"
    source = _archive(tmp_path / "up.tar.gz", b"one")

    binary, tree = up.build_binary(source, cache, go)
    assert binary.read_text() == "binary"
    assert (tree / "README.md").read_text() == "one"
    assert (tree / "pkg/version/_buildinfo.json").read_text() == '{"commit":"d7c43906"}\n'
    env = "commit=d7c43906 branch=main flags=-mod=vendor proxy=off toolchain=local cgo=0"
    assert _calls(go) == [
        f"run ./tools/buildhelper inspect {env}",
        f"test -c -o {binary.with_name('e2e-serial.test.partial').resolve()} ./test/e2e/serial commit= branch= "
        "flags=-mod=vendor proxy=off toolchain=local cgo=0",
    ]

    assert up.build_binary(source, cache, go) == (binary, tree)
    assert len(_calls(go)) == 2  # the cache hit ran no go command

    changed = _archive(tmp_path / "up2.tar.gz", b"two")
    other, _ = up.build_binary(changed, cache, go)
    assert other != binary and len(_calls(go)) == 4


def test_a_directory_source_is_keyed_by_its_tree(tmp_path: Path) -> None:
    go = _fake_go(tmp_path)
    source = tmp_path / "checkout"
    (source / "pkg" / "version").mkdir(parents=True)
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (source / "README.md").write_text("one")
    key = up.source_key(source)
    (source / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
    assert up.source_key(source) == key  # git's own files are no source
    binary, tree = up.build_binary(source, tmp_path / "cache", go)
    assert binary.parent.name == key and (tree / "README.md").read_text() == "one"
    assert not (tree / ".git").exists()
    (source / "README.md").write_text("two")
    assert up.source_key(source) != key


# ------------------------------------------------------------------------------ selection and routing


def test_by_profile_keeps_the_runs_order() -> None:
    selected = [up.Selected("a", "default"), up.Selected("b", "container-scope"), up.Selected("c", "default")]
    assert up.by_profile(selected) == {"default": ["a", "c"], "container-scope": ["b"]}


def _shards(selected: list, workers: int, durations: dict) -> list[list[tuple[str, str, list[str]]]]:
    runs = up.shards(selected, workers, durations, cores=2)
    return [[(shard.name, shard.profile, shard.full_texts) for shard in lane] for lane in runs]


_SELECTED = [
    up.Selected("long", "default", "serial/test_a.py::test_long"),
    up.Selected("cnt", "container-scope", "serial/test_b.py::test_cnt"),
    up.Selected("short", "default", "serial/test_a.py::test_short"),
    up.Selected("mid", "default", "serial/test_a.py::test_mid"),
]
_DURATIONS = {"test_a.py::test_long": 300.0, "test_b.py::test_cnt": 60.0, "test_a.py::test_short": 5.0,
              "test_a.py::test_mid": 100.0}  # fmt: skip


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        pytest.param(
            1,
            [
                [
                    ("default", "default", ["long", "short", "mid"]),
                    ("container-scope", "container-scope", ["cnt"]),
                ]
            ],
            id="one lane: a run per profile, named for it, in the port's order",
        ),
        pytest.param(
            0,
            [
                [
                    ("default", "default", ["long", "short", "mid"]),
                    ("container-scope", "container-scope", ["cnt"]),
                ]
            ],
            id="no workers chosen: the same",
        ),
        pytest.param(
            2,
            [
                [("default-0", "default", ["long"])],
                [
                    ("default-1", "default", ["short", "mid"]),
                    ("container-scope-1", "container-scope", ["cnt"]),
                ],
            ],
            id="two lanes: the longest spec alone, the rest beside it, a lane's profiles one after the other",
        ),
        pytest.param(
            8,
            [
                [("default-0", "default", ["long"])],
                [("default-1", "default", ["mid"])],
                [("container-scope-2", "container-scope", ["cnt"])],
                [("default-3", "default", ["short"])],
            ],
            id="more lanes than specs: empty lanes run nothing",
        ),
    ],
)
def test_shards_follow_the_port_s_lane_plan(workers: int, expected: list) -> None:
    assert _shards(_SELECTED, workers, _DURATIONS) == expected


@pytest.mark.slow
def test_specs_go_where_the_port_runs_them() -> None:
    """Routing is by what a spec needs: these container-scope specs carry no ``tmscope:cnt`` label."""
    grouped = up.by_profile(up.select(Path(__file__).parents[4] / "serial", 1))
    ids = {profile: {text for text in texts if "[test_id:" in text} for profile, texts in grouped.items()}
    for test_id in ("54021", "85005", "85006", "54019", "47575"):
        assert any(f"[test_id:{test_id}]" in text for text in ids["container-scope"]), test_id
    assert not any("[test_id:47577]" in text for text in ids["container-scope"])
    assert any("[test_id:47577]" in text for text in ids["default"])


@pytest.mark.parametrize(
    ("texts", "timed"),
    [
        (["[serial] cluster with at least two available nodes [test_id:47627] should schedule many replicas"], True),
        (["[serial] a [test_id:47577] b", "[serial] c [test_id:47627] d"], True),
        (["[serial] a [test_id:47577] b"], False),
        (["[serial] no test id at all"], False),
    ],
    ids=["the-timed-spec", "a-shard-holding-it", "another-spec", "no-test-id"],
)  # fmt: skip
def test_a_shard_holding_a_timed_spec_runs_with_precedence(texts: list[str], timed: bool) -> None:
    manager = up.timed_precedence(up.Shard("wide-zones", "wide-zones", texts), 1 << 30, 1 << 30)
    assert (not isinstance(manager, contextlib.nullcontext)) is timed
