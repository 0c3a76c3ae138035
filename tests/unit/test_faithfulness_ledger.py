"""The faithfulness ledger is honest (hack/faithfulness.py): its checks, table-tested, then the ledger.

The last test runs the real check: every spec ``pytest serial`` collects has one row, each row's
upstream location names that spec in the pinned source, and each of ours points at its ``def``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("hack.faithfulness", ROOT / "hack" / "faithfulness.py")
assert _SPEC is not None and _SPEC.loader is not None
fl = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = fl
_SPEC.loader.exec_module(fl)

NODE = "test_x.py::TestA::test_b"
LEDGER = f"""# Ledger

| spec | test_id | upstream | ours | verdict |
|---|---|---|---|---|
| `{NODE}` | 47593 | `test/e2e/serial/tests/x.go:2` | `serial/test_x.py:3` | same |
| `test_x.py::test_table[50156]` | 50156 | `test/e2e/serial/tests/x.go:4` | `serial/test_x.py:6` | poll 1 s: embedded |

| helper | upstream | ours | verdict |
|---|---|---|---|
| get_updated | `test/internal/nrts.go:1` | `suite/e2e/nrt/updates.py:9` | same |
"""

GO = [
    'var _ = Describe("x", func() {',
    '\tIt("[test_id:47593][case:1] should keep existing',
    '\t\tworkloads running", func() {',
    '\t\tEntry("[test_id:50156] a pod",',
]
PY = [
    "class TestA:",
    "    @spec('x')",
    "    def test_b(self):",
    "        pass",
    "def test_table(x):",
    "    entry('[test_id:50156]')",
]


def test_parse_reads_both_tables() -> None:
    specs, helpers = fl.parse(LEDGER)
    assert [row.spec for row in specs] == [NODE, "test_x.py::test_table[50156]"]
    assert specs[0].upstream == fl.Location("test/e2e/serial/tests/x.go", 2)
    assert specs[0].at == 5
    assert specs[1].verdict == "poll 1 s: embedded"
    assert [(row.helper, str(row.ours)) for row in helpers] == [("get_updated", "suite/e2e/nrt/updates.py:9")]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        pytest.param("| `a` | - | x.go | y.py:1 | same |", "is not path:line", id="location without a line"),
        pytest.param("| `a` | - | x.go:1 | same |", "4 cells, the table has 5", id="a cell missing"),
    ],
)
def test_parse_refuses_malformed_rows(row: str, message: str) -> None:
    text = "| spec | test_id | upstream | ours | verdict |\n|---|---|---|---|---|\n" + row
    with pytest.raises(fl.LedgerError, match=message):
        fl.parse(text)


def spec_row(
    spec: str = NODE, test_id: str | None = "47593", up: int = 2, ours: int = 3, verdict: str = "same"
):
    return fl.SpecRow(
        spec,
        test_id,
        fl.Location("test/e2e/serial/tests/x.go", up),
        fl.Location("serial/test_x.py", ours),
        verdict,
        9,
    )


COLLECTED = {
    NODE: fl.CollectedSpec(NODE, "47593", "[test_id:47593][case:1] should keep existing workloads running")
}


@pytest.mark.parametrize(
    ("rows", "collected", "problems"),
    [
        pytest.param([spec_row()], COLLECTED, [], id="one row per spec"),
        pytest.param([], COLLECTED, [f"ledger: no row for {NODE}"], id="a spec without a row"),
        pytest.param(
            [spec_row(), spec_row()],
            COLLECTED,
            [f"ledger:9: {NODE} has a row already (line 9)"],
            id="two rows",
        ),
        pytest.param(
            [spec_row(spec="test_gone.py::test_c")],
            {},
            ["ledger:9: test_gone.py::test_c is not a collected spec"],
            id="a row for no spec",
        ),
        pytest.param(
            [spec_row(test_id="1")],
            COLLECTED,
            [f"ledger:9: {NODE} has test_id 47593, the row says 1"],
            id="test_id",
        ),
        pytest.param(
            [spec_row(verdict="")], COLLECTED, [f"ledger:9: {NODE} has no verdict"], id="no verdict"
        ),
    ],
)
def test_check_coverage(rows: list, collected: dict, problems: list[str]) -> None:
    assert fl.check_coverage(rows, collected) == problems


@pytest.mark.parametrize(
    ("row", "spec", "lines", "problem"),
    [
        pytest.param(spec_row(), COLLECTED[NODE], GO, None, id="the It line names the test_id"),
        pytest.param(spec_row(up=1), COLLECTED[NODE], GO, None, id="within the window"),
        pytest.param(
            spec_row(up=4), COLLECTED[NODE], GO, "does not name '[test_id:47593]'", id="another spec"
        ),
        pytest.param(
            spec_row(up=40), COLLECTED[NODE], GO, "past the end of the file (4 lines)", id="past the end"
        ),
        pytest.param(spec_row(), COLLECTED[NODE], None, "is not in the pinned source", id="no such file"),
        pytest.param(
            spec_row(test_id=None, up=2),
            fl.CollectedSpec(NODE, None, "[case:1] should keep existing"),
            GO,
            None,
            id="no test_id: the spec's own words",
        ),
        pytest.param(
            spec_row(test_id=None, up=4),
            fl.CollectedSpec(NODE, None, "should keep existing"),
            GO,
            "does not name 'should keep existing'",
            id="no test_id: other words",
        ),
    ],
)
def test_check_upstream_spec(row, spec, lines, problem: str | None) -> None:
    found = fl.check_upstream_spec(row, spec, lines)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        pytest.param(spec_row(ours=3), None, id="the def"),
        pytest.param(spec_row(ours=2), "is neither `def test_b` nor its entry None", id="the decorator"),
        pytest.param(spec_row(spec="test_x.py::test_table[50156]", ours=6), None, id="the table entry"),
        pytest.param(spec_row(spec="test_x.py::test_table[50156]", ours=5), None, id="the table's def"),
        pytest.param(
            spec_row(spec="test_x.py::test_table[50157]", ours=1), "its entry '50157'", id="wrong entry"
        ),
    ],
)
def test_check_ours_spec(row, problem: str | None) -> None:
    found = fl.check_ours_spec(row, PY)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    ("node", "line"),
    [
        pytest.param(NODE, 3, id="a def"),
        pytest.param("test_x.py::test_table[50156]", 6, id="an entry with a test_id"),
        pytest.param("test_x.py::test_gone", None, id="nothing"),
    ],
)
def test_locate_spec(node: str, line: int | None) -> None:
    assert fl.locate_spec(node, PY) == line


@pytest.mark.parametrize(
    ("name", "line"),
    [
        pytest.param("TestA", 1, id="a class"),
        pytest.param("test_table", 5, id="a def"),
        pytest.param("test", None, id="a prefix is not a name"),
    ],
)
def test_locate_symbol(name: str, line: int | None) -> None:
    assert fl.locate_symbol(name, PY) == line


@pytest.mark.parametrize(
    ("text", "inner"),
    [
        ("[test_id:47593][case:1] should keep   existing", "should keep existing"),
        ("should converge", "should converge"),
        ("[tier0] [x] ok [not a tag]", "ok [not a tag]"),
    ],
)
def test_inner_text(text: str, inner: str) -> None:
    assert fl.inner_text(text) == inner


def test_the_ledger_is_honest() -> None:
    """docs/faithfulness.md against the collected specs, the pinned upstream source and our tree."""
    upstream = Path(os.environ.get("UPSTREAM_SRC", fl.DEFAULT_UPSTREAM))
    if not upstream.exists():
        pytest.skip(f"the pinned upstream source is not at {upstream} (set UPSTREAM_SRC)")
    run = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "faithfulness.py"), "check", "--upstream", str(upstream)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr + run.stdout
