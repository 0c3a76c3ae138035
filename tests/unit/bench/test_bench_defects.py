"""bench/defects.py and bench/defects/: the catalog still applies, the hook fails loudly, the kill table's judgement."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest
from _helpers_bench import ROOT, load

bench = load("bench_defects", ROOT / "bench" / "defects.py")
seeding = bench.seeding


# -- the catalog --------------------------------------------------------------------------------


def test_catalog_has_at_least_twenty_defects_over_every_component() -> None:
    catalog = seeding.load_catalog()
    assert len(catalog.defects) >= 20
    assert {d.component for d in catalog.defects} == set(catalog.components)
    for defect in catalog.defects:
        assert defect.source.startswith(("http", "invented: ")), defect.id


@pytest.mark.parametrize(
    "defect_id", [d.id for d in [seeding.load_catalog().runtime, *seeding.load_catalog().defects]]
)
def test_every_defect_still_applies_to_the_code(defect_id: str) -> None:
    """A failure here means a target changed: review the defect against the new code, then update its sha256."""
    catalog = seeding.load_catalog()
    defect = catalog.runtime if defect_id == "runtime" else catalog.defect(defect_id)
    assert bench.stale_reason(defect) is None
    sys.path.insert(0, str(seeding.HERE))
    try:
        assert callable(seeding._factory(defect.replacement))
    finally:
        sys.path.remove(str(seeding.HERE))


@pytest.mark.parametrize(
    ("data", "error"),
    [
        pytest.param(
            {"defects": [{"component": "nope"}]}, "unknown component 'nope'", id="unknown component"
        ),
        pytest.param({"defects": [{}, {}]}, "duplicate defect ids: a", id="duplicate id"),
    ],
)
def test_parse_catalog_rejects(data: dict, error: str) -> None:
    base = {
        "id": "a",
        "component": "c",
        "description": "",
        "source": "",
        "target": "",
        "sha256": "",
        "replacement": "",
    }
    document = {
        "components": {"c": {"programs": ["p"], "pointers": []}},
        "runtime": {k: v for k, v in base.items() if k not in ("id", "component")},
        "defects": [{**base, **d} for d in data["defects"]],
    }
    with pytest.raises(ValueError, match=error):
        seeding.parse_catalog(document)


# -- staleness and application ---------------------------------------------------------------------


@pytest.fixture
def target_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    (tmp_path / "defecttarget.py").write_text(
        textwrap.dedent(
            """
            def answer():
                return 42

            class Box:
                def size(self):
                    return 1
            """
        )
    )
    (tmp_path / "defectfix.py").write_text(
        "def off_by_one(original):\n    return lambda *a: original(*a) + 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("defecttarget", None)
    sys.modules.pop("defectfix", None)
    import defecttarget  # type: ignore[import-not-found]

    return defecttarget


def _defect(target: str, sha: str) -> object:
    return seeding.Defect("d", "c", "", "", target, sha, "defectfix:off_by_one")


@pytest.mark.parametrize(
    ("target", "stale"),
    [
        pytest.param("defecttarget:answer", None, id="as written"),
        pytest.param("defecttarget:Box.size", None, id="a method"),
        pytest.param("defecttarget:gone", "no longer exists", id="function gone"),
        pytest.param("defecttarget:Gone.size", "Gone is gone", id="class gone"),
        pytest.param("nodefecttarget:answer", "cannot be imported", id="module gone"),
    ],
)
def test_check_says_why_a_defect_is_stale(target_module: ModuleType, target: str, stale: str | None) -> None:
    sha = seeding.source_hash(target_module.answer if target.endswith("answer") else target_module.Box.size)
    reason = bench.stale_reason(_defect(target, sha))
    assert reason is None if stale is None else stale in reason


def test_check_fails_on_a_changed_source(target_module: ModuleType) -> None:
    reason = bench.stale_reason(_defect("defecttarget:answer", "000000000000"))
    assert reason is not None
    assert "changed since defect d was written" in reason


def test_apply_replaces_the_target_with_what_the_factory_builds(target_module: ModuleType) -> None:
    seeding.apply(_defect("defecttarget:answer", seeding.source_hash(target_module.answer)))
    seeding.apply(_defect("defecttarget:Box.size", seeding.source_hash(target_module.Box.size)))
    assert target_module.answer() == 43
    assert target_module.Box().size() == 2


def test_apply_rebinds_the_function_where_the_product_imported_it_by_name(
    target_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller, elsewhere = ModuleType("nrop.defectcaller"), ModuleType("elsewhere")
    caller.answer = elsewhere.answer = target_module.answer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nrop.defectcaller", caller)
    monkeypatch.setitem(sys.modules, "elsewhere", elsewhere)
    rebound = seeding.apply(_defect("defecttarget:answer", seeding.source_hash(target_module.answer)))
    assert rebound == ["nrop.defectcaller.answer"]
    assert caller.answer() == 43  # type: ignore[attr-defined]
    assert elsewhere.answer() == 42  # type: ignore[attr-defined]


_REACHES = """
import sys
import seeding

catalog = seeding.load_catalog()
defect = catalog.defect(sys.argv[1])
original = seeding.check(defect)
seeding.apply(defect)
stale = [f"{name}.{attr}" for name, module in list(sys.modules.items()) if name.startswith("nrop.")
         for attr, value in list(vars(module).items()) if value is original]
print(" ".join(stale) or "ok")
"""


@pytest.mark.parametrize("defect_id", [d.id for d in seeding.load_catalog().defects])
def test_every_defect_reaches_every_product_module_that_names_its_target(defect_id: str) -> None:
    """Applied in a fresh interpreter, no module of the product still holds the original function."""
    done = subprocess.run(
        [sys.executable, "-c", _REACHES, defect_id],
        env={**os.environ, "PYTHONPATH": str(seeding.HERE)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok", f"still the original: {done.stdout.strip()}"


def _python_with_hook(defect_id: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NROP_DEFECT": defect_id, "PYTHONPATH": str(seeding.HERE)}
    env.pop("NROP_DEFECT_LOG", None)
    return subprocess.run(
        [sys.executable, "-c", "print('started')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hook_ends_a_process_whose_defect_is_unknown() -> None:
    done = _python_with_hook("no-such-defect")
    assert done.returncode == seeding.STALE_EXIT
    assert "nrop-defect: defect no-such-defect stale" in done.stderr
    assert "started" not in done.stdout


def test_hook_leaves_processes_of_other_programs_alone() -> None:
    done = _python_with_hook("kubelet-cpus-not-aligned")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "started"


@pytest.mark.parametrize(
    ("program", "component", "hosted"),
    [
        ("nrop-scheduler", "scheduler", True),
        ("resource-topology-exporter", "scheduler", False),
        ("nrop-cluster", "kubelet", True),
        ("pytest", "kubelet", False),
    ],
)
def test_hosts(program: str, component: str, hosted: bool) -> None:
    catalog = seeding.load_catalog()
    defect = next(d for d in catalog.defects if d.component == component)
    assert seeding.hosts(catalog, defect, seeding.program_of([f"/venv/bin/{program}", "--flag"])) is hosted


# -- the replacements (plain data in, what the original is handed) ---------------------------------


def _recording() -> tuple[list[tuple], object]:
    calls: list[tuple] = []

    def original(*args: object) -> object:
        calls.append(args)
        return "fit"

    return calls, original


@pytest.mark.parametrize(
    ("factory", "kept"),
    [
        ("filter_ignores_memory", {"cpu", "hugepages-1Gi", "example.com/dev"}),
        ("filter_ignores_hugepages", {"cpu", "memory", "example.com/dev"}),
        ("filter_ignores_devices", {"cpu", "memory", "hugepages-1Gi"}),
    ],
)
def test_filter_defects_hide_one_resource_kind(factory: str, kept: set[str]) -> None:
    module = load("seeded_scheduler", seeding.HERE / "seeded_scheduler.py")
    calls, original = _recording()
    broken = getattr(module, factory)(original)
    requests = {"cpu": 2, "memory": 1, "hugepages-1Gi": 1, "example.com/dev": 1}
    assert broken([], requests, "Guaranteed", set()) == "fit"
    assert set(calls[0][1]) == kept


def test_hugepages_counted_as_pages() -> None:
    module = load("seeded_exporter", seeding.HERE / "seeded_exporter.py")

    @dataclasses.dataclass
    class Entry:
        resource: str
        ids: tuple[str, ...]
        numa_nodes: tuple[int, ...]

    def original(entries: list[Entry]) -> dict:
        return {0: {e.resource: len(e.ids) for e in entries}} if entries else {}

    broken = module.hugepages_counted_as_pages(original)
    counted = broken([Entry("cpu", ("1", "2"), (0,)), Entry("hugepages-1Gi", (str(2**30),), (0,))])
    assert counted == {0: {"cpu": 2, "hugepages-1Gi": 1}}


# -- reading a run and judging it ------------------------------------------------------------------


def test_junit_specs_reads_outcomes_and_failure_text(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(
        """<testsuites><testsuite>
        <testcase classname="serial.test_a.TestA" name="test_ok" time="1.5"><properties>
          <property name="tier" value="tier0"/><property name="labels" value="e2e:serial,tier0"/>
        </properties></testcase>
        <testcase classname="serial.test_extras" name="test_x" time="1"><properties>
          <property name="tier" value="tier1"/><property name="labels" value="e2e:serial,extra,tier1"/>
        </properties></testcase>
        <testcase classname="serial.test_a.TestA" name="test_bad" time="2"><failure message="assert NRT">zones differ</failure></testcase>
        <testcase classname="serial.test_b" name="test_err" time="0"><error message="setup">TopologyAffinityError</error></testcase>
        <testcase classname="serial.test_b" name="test_skip" time="0"><skipped message="no"/></testcase>
        </testsuite></testsuites>"""
    )
    specs = bench.junit_specs(junit)
    assert [(s.key, s.outcome, s.failed, s.tier, s.extra) for s in specs] == [
        ("serial.test_a.TestA::test_ok", "passed", False, "tier0", False),
        ("serial.test_extras::test_x", "passed", False, "tier1", True),
        ("serial.test_a.TestA::test_bad", "failure", True, "", False),
        ("serial.test_b::test_err", "error", True, "", False),
        ("serial.test_b::test_skip", "skipped", False, "", False),
    ]
    assert specs[2].text == "assert NRT\nzones differ"
    assert specs[0].text == ""
    assert specs[4].text == "no"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param([], None, id="no output"),
        pytest.param(
            [
                (3.0, "serial/test_a.py::test_x PASSED [ 50%]"),
                (9.5, "serial/test_a.py::test_y FAILED [100%]"),
            ],
            ("serial/test_a.py::test_y", 9.5),
            id="serial run",
        ),
        pytest.param(
            [(4.0, "[gw1] [ 10%] ERROR serial/test_b.py::TestB::test_z[cnt] ")],
            ("serial/test_b.py::TestB::test_z[cnt]", 4.0),
            id="xdist error",
        ),
        pytest.param([(1.0, "FAILED to start cluster")], None, id="no node id"),
    ],
)
def test_first_failure(lines: list[tuple[float, str]], expected: tuple[str, float] | None) -> None:
    assert bench.first_failure(lines) == expected


def _run(
    *specs: object, log: list[dict] | None = None, first: tuple[str, float] | None = None, exit_code: int = 1
) -> object:
    return bench.Run(
        list(specs), first, log if log is not None else [{"outcome": "applied"}], exit_code, 60.0, Path("/r")
    )


_PASS = bench.Spec("t::ok", "passed", 1.0)
_FAIL = bench.Spec(
    "t::bad", "failure", 2.0, "expected pod to be Running: FailedScheduling cannot align container"
)
_FLAKY = bench.Spec("t::flaky", "failure", 2.0, "timeout")
_FAIL_TIER0 = bench.Spec("t::tier0", "failure", 2.0, "timeout", tier="tier0")
_FAIL_EXTRA = bench.Spec("t::extra", "error", 2.0, "timeout", tier="tier1", extra=True)
_SKIP = bench.Spec(
    "t::ok", "skipped", 0.0, "the cluster does not satisfy the serial suite: no NRT\ncannot align"
)
_POINTERS = ("NodeResourceTopologyMatch", "FailedScheduling", "cannot align")


@pytest.mark.parametrize(
    ("run", "baseline", "expected"),
    [
        pytest.param(
            _run(_PASS, _FAIL, first=("serial/t.py::bad", 42.0)),
            [],
            bench.Row(
                "d",
                "scheduler",
                "yes",
                1,
                "serial/t.py::bad",
                42.0,
                ["FailedScheduling", "cannot align"],
                failed_upstream=1,
                first_named=["FailedScheduling", "cannot align"],
            ),
            id="caught, named",
        ),
        pytest.param(
            _run(_PASS, _FLAKY),
            [],
            bench.Row("d", "scheduler", "yes", 1, "t::flaky", None, [], failed_upstream=1),
            id="caught, not named, no live line",
        ),
        pytest.param(
            _run(_FAIL_TIER0, _FAIL_EXTRA, _FLAKY),
            [],
            bench.Row(
                "d", "scheduler", "yes", 3, "t::tier0", None, [], failed_upstream_tier0=1, failed_upstream=2
            ),
            id="counted per selection: upstream's tier0, upstream's, with the extras",
        ),
        pytest.param(
            _run(_FAIL_EXTRA),
            [],
            bench.Row("d", "scheduler", "yes", 1, "t::extra", None, []),
            id="caught by an extra only",
        ),
        pytest.param(
            _run(_PASS, _FLAKY),
            [_PASS, _FLAKY],
            bench.Row("d", "scheduler", "no"),
            id="baseline failure discounted",
        ),
        pytest.param(
            _run(_SKIP),
            [_PASS],
            bench.Row(
                "d",
                "scheduler",
                "skipped",
                named=["cannot align"],
                detail="1 specs skipped: the cluster does not satisfy the serial suite: no NRT",
            ),
            id="skipped what the baseline ran",
        ),
        pytest.param(
            _run(_SKIP), [_SKIP], bench.Row("d", "scheduler", "no"), id="skipped in the baseline too"
        ),
        pytest.param(_run(_PASS), [], bench.Row("d", "scheduler", "no"), id="not caught"),
        pytest.param(_run(_PASS, log=[]), [], bench.Row("d", "scheduler", "not applied"), id="never applied"),
        pytest.param(
            _run(log=[{"outcome": "stale", "detail": "target gone"}]),
            [],
            bench.Row("d", "scheduler", "stale", detail="target gone"),
            id="stale in a process",
        ),
        pytest.param(
            _run(),
            [],
            bench.Row("d", "scheduler", "no report", detail="no junit (exit code 1)"),
            id="no junit",
        ),
    ],
)
def test_judge(run: object, baseline: list, expected: object) -> None:
    assert bench.judge("d", "scheduler", _POINTERS, run, baseline) == expected


def test_first_named_reads_the_first_failing_spec_only() -> None:
    first = bench.Spec("serial.test_a.TestX::test_y[1]", "failure", 2.0, "timeout")
    run = _run(_FAIL, first, first=("serial/test_a.py::TestX::test_y[1]", 9.0))
    row = bench.judge("d", "scheduler", _POINTERS, run)
    assert (row.first_spec, row.named, row.first_named) == (
        "serial/test_a.py::TestX::test_y[1]",
        ["FailedScheduling", "cannot align"],
        [],
    )


@pytest.mark.parametrize(
    ("nodeid", "key"),
    [
        ("serial/test_a.py::test_x", "serial.test_a::test_x"),
        ("serial/test_a.py::TestX::TestY::test_z[85011]", "serial.test_a.TestX.TestY::test_z[85011]"),
        ("serial.test_a::test_x", "serial.test_a::test_x"),
    ],
)
def test_junit_key(nodeid: str, key: str) -> None:
    assert bench.junit_key(nodeid) == key


def test_timed_lines_read_the_live_log_back() -> None:
    text = "     3.0 serial/test_a.py::test_x PASSED [ 50%]\n   120.5 [gw1] [100%] FAILED serial/test_a.py::y\nnoise\n"
    lines = bench.timed_lines(text)
    assert lines == [
        (3.0, "serial/test_a.py::test_x PASSED [ 50%]"),
        (120.5, "[gw1] [100%] FAILED serial/test_a.py::y"),
    ]
    assert bench.first_failure(lines) == ("serial/test_a.py::y", 120.5)


def test_markdown_table() -> None:
    rows = [
        bench.Row(
            "a",
            "scheduler",
            "yes",
            2,
            "serial/t.py::x",
            61.4,
            ["FailedScheduling"],
            failed_upstream_tier0=1,
            failed_upstream=2,
        ),
        bench.Row("b", "operator", "no"),
        bench.Row("c", "kubelet", "stale", detail="target gone"),
        bench.Row("d", "exporter", "skipped", named=["NRT"], detail="x" * 300),
    ]
    assert bench.markdown_table(rows)[2:] == [
        "| a | scheduler | yes | 2 | 1 | 2 | `serial/t.py::x` | 61 s | no | yes (FailedScheduling) |",
        "| b | operator | no | - | - | - | - | - | - | - |",
        "| c | kubelet | stale: target gone | - | - | - | - | - | - | - |",
        f"| d | exporter | skipped: {'x' * 199}… | - | - | - | - | - | - | yes (NRT) |",
    ]


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        pytest.param([_PASS], "baseline: all green (1 specs, 60 s)", id="green"),
        pytest.param([_PASS, _SKIP], "baseline: all green (2 specs, 60 s)", id="skips are not red"),
        pytest.param([_PASS, _FLAKY], "baseline NOT green: 1 failing (t::flaky)", id="red"),
        pytest.param([], "baseline: no junit (exit code 1)", id="no junit"),
    ],
)
def test_baseline_verdict(specs: list, expected: str) -> None:
    assert bench.baseline_verdict(_run(*specs)).startswith(expected)


def test_run_env_names_the_defect_only_for_defect_runs() -> None:
    environ = {"PATH": "/bin", "PYTHONPATH": "/x", "NROP_DEFECT": "left-over"}
    assert bench.run_env(environ, None, Path("/r")) == {
        "PATH": "/bin",
        "PYTHONPATH": "/x",
        "PYTHONUNBUFFERED": "1",
    }
    env = bench.run_env(environ, "d", Path("/r"))
    assert env["NROP_DEFECT"] == "d"
    assert env["NROP_DEFECT_LOG"] == "/r/defect-log.jsonl"
    assert env["PYTHONPATH"] == f"{seeding.HERE}{os.pathsep}/x"


def test_runtime_gives_every_container_the_defect_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NROP_DEFECT", "d")
    monkeypatch.setenv("NROP_DEFECT_LOG", "/r/log")
    monkeypatch.syspath_prepend(str(seeding.HERE))
    module = load("seeded_runtime", seeding.HERE / "seeded_runtime.py")

    @dataclasses.dataclass(frozen=True)
    class Spec:
        argv: tuple[str, ...]
        env: dict[str, str]

    specs = {"run": Spec(("rte",), {"PYTHONPATH": "/site", "HOME": "/h"}), "refused": "no such program"}
    process = module.default_env(lambda self, name, command, args: specs[name])
    assert process(None, "refused", [], []) == "no such program"
    assert process(None, "run", [], []).env == {
        "PYTHONPATH": f"{seeding.HERE}{os.pathsep}/site",
        "HOME": "/h",
        "NROP_DEFECT": "d",
        "NROP_DEFECT_LOG": "/r/log",
    }


def test_cpus_not_accounted_changes_the_zones_only() -> None:
    module = load("seeded_exporter", seeding.HERE / "seeded_exporter.py")

    @dataclasses.dataclass(frozen=True)
    class Container:
        cpu_ids: tuple[int, ...]
        memory: tuple = ()

    @dataclasses.dataclass(frozen=True)
    class Pod:
        containers: tuple[Container, ...]

    @dataclasses.dataclass
    class Result:
        zones: list[int]
        fingerprint: list[int]

    def scan(machine: object, resources: object, pods: list[Pod], options: object, rng: object) -> Result:
        cpus = [cpu for pod in pods for c in pod.containers for cpu in c.cpu_ids]
        return Result(zones=[8 - len(cpus)], fingerprint=cpus)

    result = module.cpus_not_accounted(scan)(None, None, [Pod((Container((1, 2)),))])
    assert result == Result(zones=[8], fingerprint=[1, 2])


# -- planning the runs ----------------------------------------------------------------------------


def _expected(*seconds: float) -> object:
    return bench.Expected({f"test_x.py::test_{i}": s for i, s in enumerate(seconds)})


@pytest.mark.parametrize(
    ("seconds", "most", "workers"),
    [
        (None, 12, 4),  # nothing measured
        (None, 3, 3),
        ((), 12, 4),
        ((300.0, *[60.0] * 20), 12, 5),  # a healthy run: five lanes reach its longest spec
        ((300.0, *[240.0] * 30), 12, 11),  # specs waiting out their timeouts: the suite's own choice
        ((300.0, *[240.0] * 30), 8, 8),  # capped
        ((300.0,), 12, 2),  # one long spec: no fewer than two
    ],
)
def test_workers_for(seconds: tuple[float, ...] | None, most: int, workers: int) -> None:
    expected = _expected(*seconds) if seconds is not None else None
    assert bench.workers_for(expected, 2, most) == workers


@pytest.mark.parametrize(
    ("within", "workers"),
    [
        (None, 5),  # the suite's own choice: five lanes reach the longest spec (325 s planned)
        (1000.0, 2),  # two lanes end within it (796 s planned)
        (700.0, 3),  # three (559 s)
        (500.0, 4),  # four (442 s)
        (300.0, 5),  # none ends that soon: the suite's own choice
    ],
)
def test_workers_for_takes_fewer_where_the_run_still_ends_within(within: float | None, workers: int) -> None:
    assert bench.workers_for(_expected(300.0, *[60.0] * 20), 2, 10, within) == workers


def test_plan_runs_starts_the_longest_first_and_the_unmeasured_last() -> None:
    expected = {
        "baseline": _expected(300.0, *[60.0] * 20),
        "slow": _expected(300.0, *[240.0] * 30),
        "quick": _expected(40.0, 30.0),
    }
    planned = bench.plan_runs(["baseline", "new", "quick", "slow"], expected, budget=21, cores=2)
    assert [run for run, _ in planned] == ["slow", "baseline", "quick", "new"]
    assert dict(planned)["slow"] == 8  # the suite's choice with memory for half the budget
    assert dict(planned)["new"] == 4
    assert bench.plan_runs(["slow"], expected, budget=5, cores=2) == [("slow", 2)]


def test_plan_runs_narrows_a_run_that_ends_within_half_the_table() -> None:
    expected = {"baseline": _expected(300.0, *[60.0] * 20), "slow": _expected(300.0, *[240.0] * 30)}
    # 9,000 spec-seconds over 8 workers: 1,125 s at best; a run may take half of it
    assert bench.RUN_SHARE_OF_TABLE == 0.5
    assert bench.plan_runs(["baseline", "slow"], expected, budget=8, cores=2) == [
        ("slow", 4),
        ("baseline", 3),
    ]
    # over 21 workers: 429 s, and no run ends within 214 s: each gets the suite's own choice
    assert bench.plan_runs(["baseline", "slow"], expected, budget=21, cores=2) == [
        ("slow", 8),
        ("baseline", 5),
    ]


@pytest.mark.parametrize(
    ("memory_gib", "cores", "budget"),
    [
        (22, 2, 21),  # the cores decide: 2 x 0.67 / 0.063
        (6, 2, 5),  # the memory decides: (6 - 2 GiB) / 768 MiB
        (1, 2, 2),
        (64, 8, 82),  # memory again: (64 - 2 GiB) / 768 MiB, where the cores would carry 85
    ],
)
def test_workers_budget(memory_gib: int, cores: int, budget: int) -> None:
    assert bench.workers_budget(memory_gib * 2**30, cores) == budget


@pytest.mark.parametrize(
    ("pending", "free", "running", "index"),
    [
        ([("a", 12), ("b", 6)], 21, 0, 0),
        ([("a", 12), ("b", 6)], 8, 1, 1),  # b fills the gap a does not fit in
        ([("a", 12), ("b", 6)], 5, 2, None),
        ([("a", 30)], 21, 0, 0),  # wider than the budget: alone
        ([("a", 30)], 21, 1, None),
        ([], 21, 0, None),
    ],
)
def test_next_to_start(pending: list[tuple[str, int]], free: int, running: int, index: int | None) -> None:
    assert bench.next_to_start(pending, free, running) == index


@pytest.mark.parametrize(
    ("need", "free", "releases", "expected"),
    [
        (6, 8, [], (0.0, 2)),  # fits now
        (10, 2, [(300.0, 4), (100.0, 2)], None),  # the planned ends leave 8 of the 10 needed
        (10, 4, [(300.0, 4), (100.0, 4)], (300.0, 2)),  # after both, 2 spare
        (8, 4, [(300.0, 8), (100.0, 4)], (100.0, 0)),  # the earlier end is enough
    ],
)
def test_reservation(
    need: int, free: int, releases: list[tuple[float, int]], expected: tuple[float, int] | None
) -> None:
    assert bench.reservation(need, free, releases) == expected


WALLS = {"wide": 900.0, "short": 200.0, "long": 600.0, "small": 900.0}


@pytest.mark.parametrize(
    ("pending", "free", "releases", "index"),
    [
        # "wide" (10) waits for 6 workers a run gives back in 300 s: "short" ends before, it starts
        ([("wide", 10), ("long", 4), ("short", 4)], 4, [(300.0, 6)], 2),
        # nothing ends before the reservation, and nothing is spare then: "wide" waits
        ([("wide", 10), ("long", 4)], 4, [(300.0, 6)], None),
        # 4 spare beside "wide" once the run ends: "long" may take them now
        ([("wide", 10), ("long", 4)], 8, [(300.0, 6)], 1),
        # no planned end frees enough: the first later run that fits, as without walls
        ([("wide", 10), ("long", 4)], 4, [], 1),
        ([("wide", 10), ("short", 4)], 10, [], 0),
    ],
)
def test_next_to_start_backfills_without_delaying_the_first(
    pending: list[tuple[str, int]], free: int, releases: list[tuple[float, int]], index: int | None
) -> None:
    assert bench.next_to_start(pending, free, 2, WALLS, releases) == index


def _junit(tmp_path: Path, name: str, seconds: list[float]) -> Path:
    cases = "".join(
        f'<testcase classname="serial.test_x" name="test_{i}" time="{s}"/>' for i, s in enumerate(seconds)
    )
    path = tmp_path / f"{name}.xml"
    path.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")
    return path


def test_durations_round_trip_per_tier(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    junits = {"baseline": _junit(tmp_path, "b", [300.4, 20.5]), "gone": tmp_path / "missing.xml"}
    bench.write_durations(path, 1, "abc1234", junits)
    assert bench.load_expected(path, 1) == {
        "baseline": bench.Expected({"test_x.py::test_0": 300.0, "test_x.py::test_1": 20.0})
    }
    bench.write_durations(path, 1, "abc1235", {"slow": _junit(tmp_path, "s", [400.0])})
    assert set(bench.load_expected(path, 1)) == {"baseline", "slow"}  # other runs kept
    assert bench.load_expected(path, 0) == {}  # measured at another tier
    bench.write_durations(path, 0, "abc1236", {"quick": _junit(tmp_path, "q", [40.0])})
    assert set(bench.load_expected(path, 0)) == {"quick"}  # another tier replaces the file's runs
    assert json.loads(path.read_text())["commit"] == "abc1236"


def test_run_planned_keeps_to_the_budget_and_runs_everything() -> None:
    lock = threading.Lock()
    busy = {"now": 0, "peak": 0}
    started: list[str] = []

    def start(run: str, workers: int) -> object:
        with lock:
            busy["now"] += workers
            busy["peak"] = max(busy["peak"], busy["now"])
            started.append(run)
        time.sleep(0.05)
        with lock:
            busy["now"] -= workers
        return run

    planned = [("a", 6), ("b", 6), ("c", 4), ("d", 2), ("e", 9)]
    results = bench.run_planned(planned, 10, None, start)
    assert results == {run: run for run, _ in planned}
    assert busy["peak"] <= 10
    assert started[:2] == ["a", "c"]  # b does not fit beside a, c does
    assert bench.run_planned(planned, 100, 1, start) == results  # --parallel 1: one after the other


@pytest.mark.parametrize(
    ("workers", "elapsed", "wall", "expected"),
    [
        (10, 100.0, 700.0, 10),  # within its plan: every worker
        (10, 700.0, 700.0, 2),  # past it: the last lanes only
        (1, 900.0, 700.0, 1),
        (10, 5000.0, None, 10),  # nothing planned: every worker until it ends
    ],
)
def test_held(workers: int, elapsed: float, wall: float | None, expected: int) -> None:
    assert bench.held(workers, elapsed, wall) == expected


@pytest.mark.parametrize(
    ("workers", "elapsed", "wall", "alive", "expected"),
    [
        pytest.param(10, 100.0, 700.0, 3, 3, id="lanes-done-early-give-back-their-workers"),
        pytest.param(10, 900.0, 700.0, 7, 7, id="past-its-plan-with-most-lanes-still-running"),
        pytest.param(10, 900.0, 700.0, 0, 0, id="every-worker-gone"),
        pytest.param(4, 10.0, 700.0, 5, 4, id="a-replacement-worker-counts-no-more-than-planned"),
    ],
)
def test_held_counts_the_workers_seen_alive(
    workers: int, elapsed: float, wall: float, alive: int, expected: int
) -> None:
    assert bench.held(workers, elapsed, wall, alive) == expected


def test_worker_watch_counts_the_workers_not_done_with_their_clusters() -> None:
    tree: dict[int, list[int]] = {7: []}
    watch = bench.WorkerWatch(lambda: tree)
    assert watch.alive("run") is None  # not started
    watch.started("run", 7)
    assert watch.alive("run") is None  # started, workers not spawned yet
    tree[7] = [8, 9, 10]
    assert watch.alive("run") == 3  # no cluster up yet: each still starting
    tree |= {8: [80], 9: [90], 10: [100]}
    assert watch.alive("run") == 3
    tree |= {8: [], 9: []}  # two lanes done: their clusters closed, the processes wait for the run
    assert watch.alive("run") == 1
    tree[7] = [10]
    assert watch.alive("run") == 1


def test_children_by_parent_reads_the_parents_from_proc(tmp_path: Path) -> None:
    for pid, stat in {
        "8": "8 (python3) S 7 8 7 0",
        "9": "9 (odd ) name) S 7 9 7 0",
        "10": "10 (python3) S 1 10 1 0",
        "12": "12 (cut short",  # not a stat that parses: left out
    }.items():
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "stat").write_text(stat)
    (tmp_path / "self").mkdir()
    (tmp_path / "11").mkdir()  # gone before its stat was read
    tree = bench.children_by_parent(tmp_path)
    assert sorted(tree[7]) == [8, 9] and tree[1] == [10] and set(tree) == {1, 7}


def test_run_planned_releases_the_workers_a_run_no_longer_has() -> None:
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    alive = {"long": 8}

    def start(run: str, workers: int) -> object:
        started[run] = time.monotonic()
        if run == "long":
            time.sleep(0.1)
            alive["long"] = 2  # six lanes done: their workers shut down
            time.sleep(0.3)
        ended[run] = time.monotonic()
        return run

    planned = [("long", 8), ("next", 6)]
    bench.run_planned(planned, 10, None, start, {"long": 5.0}, recheck=0.02, alive=alive.get)
    assert started["next"] < ended["long"]


def test_run_planned_does_not_let_narrow_runs_starve_a_wide_one() -> None:
    started: list[str] = []
    sleeps = {"first": 0.35, "wide": 0.05, "long": 0.5, "short": 0.05}

    def start(run: str, workers: int) -> object:
        started.append(run)
        time.sleep(sleeps[run])
        return run

    planned = [("first", 6), ("wide", 8), ("long", 4), ("short", 4)]
    walls = {"first": 0.3, "wide": 0.1, "long": 1.0, "short": 0.05}
    bench.run_planned(planned, 10, None, start, walls, recheck=0.02)
    # "long" would fit beside "first" but outlast it and hold the workers "wide" waits for
    assert started == ["first", "short", "wide", "long"]


def test_run_planned_releases_the_budget_of_a_run_past_its_plan() -> None:
    started: dict[str, float] = {}
    ended: dict[str, float] = {}

    def start(run: str, workers: int) -> object:
        started[run] = time.monotonic()
        time.sleep(0.4 if run == "long" else 0.05)
        ended[run] = time.monotonic()
        return run

    planned = [("long", 8), ("next", 6)]
    bench.run_planned(planned, 10, None, start, {"long": 0.1}, recheck=0.02)
    assert started["next"] < ended["long"]  # past its 0.1 s plan, "long" holds 2 of its 8 workers
    started.clear()
    ended.clear()
    bench.run_planned(planned, 10, None, start, {"long": 5.0}, recheck=0.02)
    assert started["next"] >= ended["long"]  # within its plan it holds all 8


def test_every_table_states_the_machine_speed_as_the_documented_tables_do(monkeypatch) -> None:
    suite = bench.benchsuite
    assert suite.speed_line(1.314) == "machine speed: 10,000,000 Python additions in 1.31 s"
    monkeypatch.setattr(suite, "SPEED_ADDITIONS", 200_000)
    small = suite.machine_speed(tries=1)
    monkeypatch.setattr(suite, "SPEED_ADDITIONS", 2_000_000)
    large = suite.machine_speed(tries=1)
    assert 0 < small < large  # CPU seconds of the loop itself, which grow with its length


@pytest.mark.parametrize(
    ("runs", "seconds", "cpu", "line"),
    [
        (26, 3780.0, 5670.0, "26 suite runs in 63 min, 5,670 CPU-s (1.50 cores on average)"),
        (1, 0.0, 0.0, "1 suite runs in 0 min, 0 CPU-s (0.00 cores on average)"),
    ],
)
def test_effort_line_states_the_wall_time_and_the_cpu(
    runs: int, seconds: float, cpu: float, line: str
) -> None:
    assert bench.effort_line(runs, seconds, cpu) == line
