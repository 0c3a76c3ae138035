"""The faithfulness ledger (``docs/faithfulness.md``): its rows, and the checks that keep it honest.

The ledger says, for every spec of the serial suite and for every shared helper, where upstream's
code is at the pinned commit, where ours is, and whether the two do the same thing. This module
owns the ledger's row format and the checks a reader would otherwise do by hand:

* every spec pytest collects under ``serial/`` has exactly one row, and no row names a spec that
  is not collected (the project's own specs, label ``extra``, have no upstream counterpart and
  no row);
* every row's upstream location exists in the pinned source, and there (on the line or one of
  the next two) names the spec's ``[test_id:N]`` (or, without one, the spec's own text), or the
  ``func`` of the helper;
* every row's location in this repository is the ``def`` (or table ``entry``) of that spec, or a
  ``def``/``class`` for a helper;
* every verdict is filled in.

Usage::

    python hack/faithfulness.py check [--upstream PATH]   # exit 1 and one line per problem
    python hack/faithfulness.py fix-ours                  # re-point the "ours" cells after an edit

``--upstream`` (or ``UPSTREAM_SRC``) is a directory or the pinned tarball; the default is the
tarball in ``../shared/upstream/``. ``fix-ours`` rewrites the ``ours`` cells after an edit moved
code: a spec row to its spec's ``def`` or entry, a helper row to the definition its line named
in the last commit.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs" / "faithfulness.md"
DEFAULT_UPSTREAM = ROOT.parent / "shared" / "upstream" / "numaresources-operator-d7c43906.tar.gz"

SPEC_HEADER = ("spec", "test_id", "upstream", "ours", "verdict")
HELPER_HEADER = ("helper", "upstream", "ours", "verdict")
# how many lines after a cited line may still hold the text it names (Go wraps long It/Entry texts)
WINDOW = 3

log = logging.getLogger("faithfulness")

_LOCATION = re.compile(r"^(?P<path>[\w./-]+):(?P<line>\d+)$")
_PARAM = re.compile(r"\[(?P<param>[^\]]*)\]$")
_LEADING_TAGS = re.compile(r"^(\s*\[[^\]]*\])+\s*")


@dataclass(frozen=True)
class Location:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class SpecRow:
    spec: str
    test_id: str | None
    upstream: Location
    ours: Location
    verdict: str
    at: int  # line of the row in the ledger


@dataclass(frozen=True)
class HelperRow:
    helper: str
    upstream: Location
    ours: Location
    verdict: str
    at: int


@dataclass(frozen=True)
class CollectedSpec:
    """What pytest knows of one spec: its node id under ``serial/``, test_id and innermost text."""

    node: str
    test_id: str | None
    text: str


class LedgerError(ValueError):
    """A row that cannot be read; the message names the ledger line."""


def _cells(line: str) -> list[str]:
    return [cell.strip().strip("`").strip() for cell in line.strip().strip("|").split("|")]


def _location(cell: str, at: int) -> Location:
    match = _LOCATION.match(cell)
    if not match:
        raise LedgerError(f"line {at}: {cell!r} is not path:line")
    return Location(match["path"], int(match["line"]))


def parse(text: str) -> tuple[list[SpecRow], list[HelperRow]]:
    """The spec rows and helper rows of every table of the ledger whose header is one of ours."""
    specs: list[SpecRow] = []
    helpers: list[HelperRow] = []
    header: tuple[str, ...] | None = None
    for at, line in enumerate(text.splitlines(), start=1):
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = tuple(cells) if tuple(cells) in (SPEC_HEADER, HELPER_HEADER) else ()
            continue
        if not header or all(set(cell) <= set("-: ") for cell in cells):
            continue
        if len(cells) != len(header):
            raise LedgerError(f"line {at}: {len(cells)} cells, the table has {len(header)}")
        if header == SPEC_HEADER:
            spec, test_id, upstream, ours, verdict = cells
            specs.append(
                SpecRow(
                    spec=spec,
                    test_id=None if test_id in ("", "-") else test_id,
                    upstream=_location(upstream, at),
                    ours=_location(ours, at),
                    verdict=verdict,
                    at=at,
                )
            )
        else:
            helper, upstream, ours, verdict = cells
            helpers.append(HelperRow(helper, _location(upstream, at), _location(ours, at), verdict, at))
    return specs, helpers


def inner_text(text: str) -> str:
    """A spec's own words: its text less the leading ``[test_id:…][case:…]`` tags."""
    return " ".join(_LEADING_TAGS.sub("", text).split())


def check_coverage(rows: Iterable[SpecRow], collected: Mapping[str, CollectedSpec]) -> list[str]:
    """Every collected spec has exactly one row with its test_id; no row for anything else."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for row in rows:
        if row.spec in seen:
            problems.append(f"ledger:{row.at}: {row.spec} has a row already (line {seen[row.spec]})")
            continue
        seen[row.spec] = row.at
        spec = collected.get(row.spec)
        if spec is None:
            problems.append(f"ledger:{row.at}: {row.spec} is not a collected spec")
        elif spec.test_id != row.test_id:
            problems.append(
                f"ledger:{row.at}: {row.spec} has test_id {spec.test_id or '-'}, the row says {row.test_id or '-'}"
            )
        if not row.verdict:
            problems.append(f"ledger:{row.at}: {row.spec} has no verdict")
    problems.extend(f"ledger: no row for {node}" for node in collected if node not in seen)
    return problems


def _window(lines: list[str], line: int) -> str | None:
    if not 1 <= line <= len(lines):
        return None
    return " ".join(" ".join(lines[line - 1 : line - 1 + WINDOW]).split())


def check_upstream_spec(row: SpecRow, spec: CollectedSpec | None, lines: list[str] | None) -> str | None:
    """Why the row's upstream location does not name its spec, or None."""
    if lines is None:
        return f"ledger:{row.at}: {row.upstream.path} is not in the pinned source"
    window = _window(lines, row.upstream.line)
    if window is None:
        return f"ledger:{row.at}: {row.upstream} is past the end of the file ({len(lines)} lines)"
    if row.test_id:
        wanted = f"[test_id:{row.test_id}]"
    elif spec is not None:
        wanted = inner_text(spec.text)[:40]
    else:
        return None
    if wanted not in window:
        return f"ledger:{row.at}: {row.upstream} does not name {wanted!r}"
    return None


def check_upstream_helper(row: HelperRow, lines: list[str] | None) -> str | None:
    if lines is None:
        return f"ledger:{row.at}: {row.upstream.path} is not in the pinned source"
    window = _window(lines, row.upstream.line)
    if window is None:
        return f"ledger:{row.at}: {row.upstream} is past the end of the file ({len(lines)} lines)"
    if not lines[row.upstream.line - 1].lstrip().startswith(("func ", "type ")):
        return f"ledger:{row.at}: {row.upstream} is not a func or type of upstream"
    return None


def spec_anchor(node: str) -> tuple[str, str | None]:
    """The function name of a spec's node id, and its parametrize id (None when it has none)."""
    leaf = node.rsplit("::", 1)[-1]
    match = _PARAM.search(leaf)
    if match is None:
        return leaf, None
    return leaf[: match.start()], match["param"]


def _defines(line: str, name: str) -> bool:
    return re.match(rf"\s*(async\s+)?def\s+{re.escape(name)}\(", line) is not None


def check_ours_spec(row: SpecRow, lines: list[str] | None) -> str | None:
    """Why the row's location here is not the spec's ``def`` or table entry, or None."""
    if lines is None:
        return f"ledger:{row.at}: {row.ours.path} does not exist"
    window = _window(lines, row.ours.line)
    if window is None:
        return f"ledger:{row.at}: {row.ours} is past the end of the file ({len(lines)} lines)"
    name, param = spec_anchor(row.spec)
    if _defines(lines[row.ours.line - 1], name):
        return None
    if param is not None and param in window:
        return None
    return f"ledger:{row.at}: {row.ours} is neither `def {name}` nor its entry {param!r}"


def check_ours_helper(row: HelperRow, lines: list[str] | None) -> str | None:
    if lines is None:
        return f"ledger:{row.at}: {row.ours.path} does not exist"
    if not 1 <= row.ours.line <= len(lines):
        return f"ledger:{row.at}: {row.ours} is past the end of the file ({len(lines)} lines)"
    if not re.match(r"\s*((async\s+)?def|class)\s", lines[row.ours.line - 1]):
        return f"ledger:{row.at}: {row.ours} is not a def or class"
    return None


def locate_spec(node: str, lines: list[str]) -> int | None:
    """The line of a spec's table entry (when parametrized) or else of its ``def``."""
    name, param = spec_anchor(node)
    if param is not None:
        needle = f"[test_id:{param}]" if param.isdigit() else param
        for number, line in enumerate(lines, start=1):
            if needle in line:
                return number
    for number, line in enumerate(lines, start=1):
        if _defines(line, name):
            return number
    return None


class UpstreamSource:
    """Files of the pinned upstream tree, read from a directory or from the tarball."""

    def __init__(self, source: Path) -> None:
        self._source = source
        self._files: dict[str, list[str] | None] = {}

    def load(self, paths: Iterable[str]) -> None:
        wanted = {path for path in paths if path not in self._files}
        if not wanted:
            return
        if self._source.is_dir():
            for path in wanted:
                file = self._source / path
                self._files[path] = file.read_text().splitlines() if file.is_file() else None
            return
        with tarfile.open(self._source) as tar:
            for member in tar:
                relative = member.name.split("/", 1)[-1]
                if relative in wanted and member.isfile():
                    data = tar.extractfile(member)
                    assert data is not None
                    self._files[relative] = data.read().decode().splitlines()
        for path in wanted:
            self._files.setdefault(path, None)

    def lines(self, path: str) -> list[str] | None:
        self.load([path])
        return self._files[path]


def _repo_lines(path: str) -> list[str] | None:
    file = ROOT / path
    return file.read_text().splitlines() if file.is_file() else None


class _Collector:
    """A pytest plugin that keeps each collected serial spec's node id, test_id and own text."""

    def __init__(self) -> None:
        self.specs: list[CollectedSpec] = []

    def pytest_collection_modifyitems(self, items: list) -> None:
        from nrop.suite.plugin.specs import spec_info

        for item in items:
            info = spec_info(item)
            if info is not None and info.is_extra:
                continue  # the project's own specs: no upstream counterpart (docs/defects.md)
            # a table entry's own level is its parameter's mark; pytest lists it after the function's
            callspec = getattr(item, "callspec", None)
            entry = [mark for mark in getattr(callspec, "marks", ()) if mark.name == "nrop_spec"]
            marks = entry + [mark for mark in item.iter_markers("nrop_spec") if mark not in entry]
            texts = [str(mark.args[0]) for mark in marks if mark.args]
            own = texts[0] if texts else item.name
            ids = [found for text in texts for found in re.findall(r"\[test_id:(\d+)\]", text)]
            node = item.nodeid.removeprefix("serial/")
            self.specs.append(CollectedSpec(node, ids[0] if ids else None, own))


def collect_in_process(out: Path) -> int:
    import pytest

    collector = _Collector()
    code = pytest.main(["serial", "--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[collector])
    out.write_text(json.dumps([spec.__dict__ for spec in collector.specs]))
    return int(code)


def collect() -> dict[str, CollectedSpec]:
    """The specs ``pytest serial`` collects, from a pytest run of its own (in a child process)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "specs.json"
        run = subprocess.run(
            [sys.executable, __file__, "_collect", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode != 0:
            raise RuntimeError(
                f"collecting serial/ failed (exit {run.returncode}):\n{run.stdout}{run.stderr}"
            )
        return {entry["node"]: CollectedSpec(**entry) for entry in json.loads(out.read_text())}


def check(ledger: Path, upstream: UpstreamSource, collected: Mapping[str, CollectedSpec]) -> list[str]:
    """Every problem of the ledger, one line each (empty: the ledger is honest)."""
    specs, helpers = parse(ledger.read_text())
    problems = check_coverage(specs, collected)
    upstream.load([row.upstream.path for row in [*specs, *helpers]])
    for row in specs:
        problems.append(check_upstream_spec(row, collected.get(row.spec), upstream.lines(row.upstream.path)))
        problems.append(check_ours_spec(row, _repo_lines(row.ours.path)))
    for row in helpers:
        problems.append(check_upstream_helper(row, upstream.lines(row.upstream.path)))
        problems.append(check_ours_helper(row, _repo_lines(row.ours.path)))
    return [problem for problem in problems if problem]


_DEF = re.compile(r"\s*(?:async\s+)?(?:def|class)\s+(\w+)")


def locate_symbol(name: str, lines: list[str]) -> int | None:
    """The line of the first ``def``/``class`` named ``name``."""
    return next(
        (number for number, line in enumerate(lines, start=1) if (m := _DEF.match(line)) and m[1] == name),
        None,
    )


def _committed_lines(path: str) -> list[str] | None:
    run = subprocess.run(
        ["git", "show", f"HEAD:{path}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return run.stdout.splitlines() if run.returncode == 0 else None


def fix_ours(ledger: Path) -> int:
    """Re-point the ``ours`` cells after an edit moved code; the number of cells changed.

    A spec row goes to its spec's ``def`` or entry. A helper row whose line is no longer a
    ``def``/``class`` goes to the definition that its line named in the last commit (the
    ledger is checked at every commit, so that line was right there).
    """
    specs, helpers = parse(ledger.read_text())
    lines = ledger.read_text().splitlines(keepends=True)
    moves: list[tuple[int, Location, int | None]] = []
    for row in specs:
        source = _repo_lines(row.ours.path)
        moves.append((row.at, row.ours, locate_spec(row.spec, source) if source is not None else None))
    for helper in helpers:
        source = _repo_lines(helper.ours.path)
        if source is None or check_ours_helper(helper, source) is None:
            continue
        committed = _committed_lines(helper.ours.path) or []
        was = _DEF.match(committed[helper.ours.line - 1]) if 0 < helper.ours.line <= len(committed) else None
        moves.append((helper.at, helper.ours, locate_symbol(was[1], source) if was else None))
    changed = 0
    for at, ours, found in moves:
        if found is None or found == ours.line:
            continue
        lines[at - 1] = lines[at - 1].replace(f"`{ours}`", f"`{Location(ours.path, found)}`", 1)
        changed += 1
    ledger.write_text("".join(lines))
    return changed


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    checking = sub.add_parser("check", help="check the ledger against the collected specs and both sources")
    checking.add_argument(
        "--upstream", type=Path, default=Path(os.environ.get("UPSTREAM_SRC", DEFAULT_UPSTREAM))
    )
    checking.add_argument("--ledger", type=Path, default=LEDGER)
    fixing = sub.add_parser("fix-ours", help="re-point the 'ours' cells after an edit moved code")
    fixing.add_argument("--ledger", type=Path, default=LEDGER)
    collecting = sub.add_parser("_collect")
    collecting.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "_collect":
        return collect_in_process(args.out)
    if args.command == "fix-ours":
        log.info("%d rows re-pointed", fix_ours(args.ledger))
        return 0
    if not args.upstream.exists():
        log.error("upstream source %s not found (set --upstream or UPSTREAM_SRC)", args.upstream)
        return 2
    problems = check(args.ledger, UpstreamSource(args.upstream), collect())
    for problem in problems:
        log.error("%s", problem)
    specs, helpers = parse(args.ledger.read_text())
    log.info("%d spec rows, %d helper rows, %d problems", len(specs), len(helpers), len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
