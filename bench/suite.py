"""Benchmark: wall time of the serial suite, as users feel it.

Runs ``pytest serial --tier-up-to N`` against fresh embedded clusters (started by the suite
itself, as ``make e2e`` does), once serially and once with ``-n 2`` (one cluster per worker),
and prints each run's wall time, outcome counts, the machine's load average before and after
it, and the ratio between the two, next to the target (tier0 within 3 minutes, tier0-2 within
10, every tier within 20, on 2 cores). Then, from each run's junit, the figures per family
(upstream file): specs, outcomes and the seconds its tests took (with ``-n`` the families
overlap, so these add up to more than the wall time). Each run writes its reports (junit,
report.html, cluster logs) into its own temporary directory, named in the output.
``--junit FILE`` prints the family table of an earlier run instead of running. Never run in
CI: the figures depend on the machine and its load.

    python bench/suite.py [--tier 0] [--workers 2] [--only serial|parallel] [-- extra pytest args]
    python bench/suite.py --junit REPORT_DIR/e2e-serial-run.xml
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = {0: 180.0, 2: 600.0, 3: 1200.0}
JUNIT = "e2e-serial-run.xml"
_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")


@dataclass(frozen=True)
class Run:
    label: str
    seconds: float
    exit_code: int
    counts: dict[str, int]
    load_before: float
    load_after: float
    report_dir: str


def run(label: str, tier: int, extra: list[str]) -> Run:
    report_dir = tempfile.mkdtemp(prefix="nrop-bench-suite-")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "serial",
        "--tier-up-to",
        str(tier),
        "-q",
        "-p",
        "no:cacheprovider",
        "--report-dir",
        report_dir,
        *extra,
    ]
    print(f"[{label}] {' '.join(cmd)}", flush=True)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    counts = {kind: int(n) for n, kind in _COUNTS.findall(tail[0])}
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n")
    return Run(label, seconds, proc.returncode, counts, load_before, os.getloadavg()[0], report_dir)


def family_table(junit: Path) -> list[str]:
    """One line per family (``serial/test_<family>.py``): specs, outcomes, seconds of its tests."""
    seconds: dict[str, float] = defaultdict(float)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        family = next((part.removeprefix("test_") for part in module if part.startswith("test_")), "?")
        seconds[family] += float(case.get("time") or 0)
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        outcomes[family][kind] += 1
    lines = [f"{'family':<32} {'specs':>5} {'test s':>8}  outcomes"]
    for family in sorted(seconds, key=lambda f: -seconds[f]):
        counts = outcomes[family]
        text = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        lines.append(f"{family:<32} {sum(counts.values()):5d} {seconds[family]:8.1f}  {text}")
    total = sum(seconds.values())
    lines.append(f"{'all':<32} {sum(sum(c.values()) for c in outcomes.values()):5d} {total:8.1f}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("serial", "parallel"))
    parser.add_argument("--junit", type=Path, help="print the family table of this junit file and stop")
    args, extra = parser.parse_known_args()
    if args.junit:
        print("\n".join(family_table(args.junit)))
        return 0
    extra = [a for a in extra if a != "--"]
    runs: list[Run] = []
    if args.only != "parallel":
        runs.append(run("serial", args.tier, extra))
    if args.only != "serial":
        runs.append(run(f"-n {args.workers}", args.tier, ["-n", str(args.workers), *extra]))
    target = TARGET_S.get(args.tier)
    print(f"\nserial suite, tier0..tier{args.tier}" + (f" (target {target:.0f} s)" if target else ""))
    print(f"cores: {os.cpu_count()}")
    print(f"{'run':<10} {'wall s':>8} {'exit':>5} {'load 1m before/after':>21}  outcomes")
    for r in runs:
        outcomes = ", ".join(f"{n} {k}" for k, n in sorted(r.counts.items())) or "-"
        verdict = "" if target is None else ("  within target" if r.seconds <= target else "  OVER target")
        load = f"{r.load_before:.2f} / {r.load_after:.2f}"
        print(f"{r.label:<10} {r.seconds:8.1f} {r.exit_code:5d} {load:>21}  {outcomes}{verdict}")
    for r in runs:
        print(f"reports of {r.label}: {r.report_dir}")
        junit = Path(r.report_dir) / JUNIT
        if junit.exists():
            print(f"\nper family, {r.label}:")
            print("\n".join(family_table(junit)))
    if len(runs) == 2:
        print(f"ratio serial / -n {args.workers}: {runs[0].seconds / runs[1].seconds:.2f}x")
    return 0 if all(r.exit_code == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
