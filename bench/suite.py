"""Benchmark: wall time of the serial suite, as users feel it, against what upstream's windows allow.

Runs ``pytest serial --tier-up-to N`` as ``make e2e`` does (no ``-n``: the suite chooses its
workers; ``--workers N`` passes ``-n N``) on fresh embedded clusters, once per ``--tier``
(repeatable: ``--tier 0 --tier all`` runs tier0, then the whole suite: ``pytest serial`` with no
tier, upstream's untiered specs included), and prints side by side,
one row per run: the wall time; the sum of the spec times (what a serial run would wait);
the longest spec without its wait for a cluster, the floor no spread can beat; wall ÷ floor;
the workers the run used; the CPU seconds of the run's processes (pytest, its workers, their
clusters and everything those ran, as the kernel counts a waited-for process tree); the peak memory of the machine during the run above what it used
before (other jobs count too); the outcomes; the load average before and after; above them, the
machine's speed (:func:`machine_speed`, timed before the runs). Then the targets (tier0 within 100 s, the
whole suite within 6 minutes and 1.2 × its longest spec, memory within 12 GiB, on 2 cores)
and, from each tier's (last) run's junit, seconds and outcomes per family (upstream file). Each run writes
its reports (junit, report.html with the timeline, cluster logs) into its own temporary
directory, named in the output.

``--repeat N`` runs the tiers N times (tier by tier, then again), and adds one line per tier:
the least, the median and the most wall time and how many runs met the target. On a shared
2-core machine identical runs of tier0 differ by a tenth or more, so one run says little about
a target set in seconds; the median of several does.

``--update-durations`` writes the measured spec durations into the suite's ``durations.json``
(:data:`nrop.suite.plugin.distributing.DURATIONS_FILE`, which the suite plans its workers with),
merged over what is there (:func:`merged_durations`: a passed spec's time replaces its entry,
the median of its times when several runs measured it, ``--repeat``; a failed one's only raises
it), each less what its setup waited for its cluster to start (the JUnit property
``target_seconds``). ``--junit FILE`` (repeatable) takes earlier runs' junits instead of
running. Never run in CI: the
figures depend on the machine and its load.

    python bench/suite.py [--tier 0 [--tier all]] [--workers N] [--repeat N] [--update-durations] [-- extra pytest args]
    python bench/suite.py --junit REPORT_DIR/e2e-serial-run.xml [--junit ...] [--update-durations]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nrop.suite.plugin import distributing, lanes

ROOT = Path(__file__).resolve().parent.parent
JUNIT = "e2e-serial-run.xml"
#: ``--tier all``: no tier filter, every spec (tiered or not)
ALL_TIERS = 99
#: wall-time targets on the 2-core machine: tier0 (``make e2e``) and the whole suite
TARGET_S = {0: 100.0, ALL_TIERS: 360.0}
#: the whole suite: within this many times its longest spec, in this much memory
FLOOR_RATIO_TARGET = 1.2
MEMORY_TARGET = 12 * 2**30
_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")
_WORKERS = re.compile(r"nrop: (\d+) workers \(")
#: the suffix pytest-xdist's loadgroup used to add to node ids (``test_x[1]@group``), in old junit files
_GROUP_SUFFIX = re.compile(r"@[^@\[\]]*\]?$")
_SAMPLE_SECONDS = 0.5
#: the machine's speed as every table states it: seconds for this many pure-Python additions
#: (the suite's CPU-bound parts, cluster starts first, scale with it; its windows do not)
SPEED_ADDITIONS = 10**7


@dataclass(frozen=True)
class Case:
    """One test case of a junit file."""

    key: str  # nrop.suite.plugin.lanes.spec_key of its node id
    family: str
    seconds: float
    outcome: str  # passed | failure | error | skipped
    #: of ``seconds``, what its setup waited for its cluster to start (lanes.TARGET_SECONDS)
    waited: float = 0.0

    @property
    def own_seconds(self) -> float:
        """Its duration without the cluster start it waited for: what ``durations.json`` keeps."""
        return max(self.seconds - self.waited, 0.0)


def cases(junit: Path) -> list[Case]:
    """The test cases of a junit file, keyed as ``durations.json`` keys them."""
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
        name = _GROUP_SUFFIX.sub("", case.get("name", ""))
        key = "::".join([f"{parts[module]}.py", *parts[module + 1 :], name])
        outcome = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        waited = float(props.get(lanes.TARGET_SECONDS) or 0)
        found.append(
            Case(key, parts[module].removeprefix("test_"), float(case.get("time") or 0), outcome, waited)
        )
    return found


@dataclass
class Memory:
    """The machine's used memory (MemTotal - MemAvailable), sampled on a thread while a run goes."""

    before: int = 0
    peak: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @staticmethod
    def used() -> int:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        return (int(fields["MemTotal"].split()[0]) - int(fields["MemAvailable"].split()[0])) * 1024

    def start(self) -> None:
        self.before = self.peak = self.used()

        def sample() -> None:
            while not self._stop.wait(_SAMPLE_SECONDS):
                self.peak = max(self.peak, self.used())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        """The peak above what was used at the start."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.peak - self.before


@dataclass(frozen=True)
class Run:
    tier: int
    seconds: float
    exit_code: int
    counts: dict[str, int]
    workers: int
    memory: int
    #: CPU seconds (user + system) of the run's waited-for process tree
    cpu_seconds: float
    load_before: float
    load_after: float
    report_dir: Path

    @property
    def junit(self) -> Path:
        return self.report_dir / JUNIT


def _tiers(tier: int) -> str:
    return "all" if tier >= ALL_TIERS else f"tier0..{tier}"


def run(tier: int, extra: list[str]) -> Run:
    report_dir = Path(tempfile.mkdtemp(prefix="nrop-bench-suite-"))
    tiers = [] if tier >= ALL_TIERS else ["--tier-up-to", str(tier)]
    cmd = [sys.executable, "-m", "pytest", "serial", *tiers, "-p", "no:cacheprovider"]
    cmd += ["--report-dir", str(report_dir), *extra]
    print(f"[{_tiers(tier)}] {' '.join(cmd)}", flush=True)
    load_before = os.getloadavg()[0]
    memory = Memory()
    memory.start()
    started = time.monotonic()
    cpu_before = children_cpu()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    cpu = children_cpu() - cpu_before
    peak = memory.stop()
    lines = proc.stdout.strip().splitlines()
    counts = {kind: int(n) for n, kind in _COUNTS.findall(lines[-1] if lines else "")}
    workers = next((int(m.group(1)) for m in map(_WORKERS.match, lines) if m), 0)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n")
    return Run(
        tier=tier,
        seconds=seconds,
        exit_code=proc.returncode,
        counts=counts,
        workers=workers,
        memory=peak,
        cpu_seconds=cpu,
        load_before=load_before,
        load_after=os.getloadavg()[0],
        report_dir=report_dir,
    )


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended and were waited for, and theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def floor_of(found: list[Case]) -> Case | None:
    """The longest spec of a run (without its wait for a cluster): no spread of the specs ends the run sooner."""
    return max(found, key=lambda c: c.own_seconds, default=None)


def machine_speed(tries: int = 3) -> float:
    """CPU seconds this machine takes for :data:`SPEED_ADDITIONS` pure-Python additions at module
    level (as ``python3 -c`` runs them: the figure the tables in docs/defects.md quote), the best
    of ``tries``, timed before the runs: it says how a table's wall times compare with another
    machine's."""
    code = compile(f"total = 0\nfor i in range({SPEED_ADDITIONS}):\n    total += i\n", "<speed>", "exec")
    best = float("inf")
    for _ in range(tries):
        started = time.process_time()
        exec(code, {})
        best = min(best, time.process_time() - started)
    return best


def speed_line(seconds: float) -> str:
    """How every table states the machine it ran on."""
    return f"machine speed: {SPEED_ADDITIONS:,} Python additions in {seconds:.2f} s"


def figures(runs: list[Run]) -> list[str]:
    """One row per run: wall, sum of spec times, the floor, wall ÷ floor, workers, CPU, memory, outcomes, load."""
    head = (
        f"{'tier':<8} {'wall s':>7} {'specs s':>8} {'floor s':>8} {'wall/floor':>10} {'workers':>7} "
        f"{'CPU s':>6} {'peak GiB':>8} {'load 1m':>11}  floor spec; outcomes"
    )
    rows = [head]
    for r in runs:
        found = cases(r.junit) if r.junit.exists() else []
        longest = floor_of(found)
        floor = longest.own_seconds if longest else 0.0
        ratio = f"{r.seconds / floor:.2f}" if floor else "-"
        outcomes = ", ".join(f"{n} {k}" for k, n in sorted(r.counts.items())) or "-"
        tiers = _tiers(r.tier)
        rows.append(
            f"{tiers:<8} {r.seconds:7.1f} {sum(c.seconds for c in found):8.1f} {floor:8.1f} {ratio:>10} "
            f"{r.workers or 'serial':>7} {r.cpu_seconds:6.0f} {r.memory / 2**30:8.2f} "
            f"{r.load_before:5.2f}/{r.load_after:<5.2f}  "
            f"{longest.key if longest else '-'}; {outcomes}"
        )
    return rows


def spread(runs: Iterable[Run]) -> list[str]:
    """One line per tier run more than once: least, median and most wall time, CPU seconds, and
    how many runs met the tier's target."""
    by_tier: dict[int, list[Run]] = defaultdict(list)
    for r in runs:
        by_tier[r.tier].append(r)
    lines = []
    for tier, repeated in by_tier.items():
        if len(repeated) < 2:
            continue
        walls = sorted(r.seconds for r in repeated)
        cpus = sorted(r.cpu_seconds for r in repeated)
        line = (
            f"{_tiers(tier)}: {len(repeated)} runs, wall least/median/most "
            f"{walls[0]:.1f}/{statistics.median(walls):.1f}/{walls[-1]:.1f} s, "
            f"CPU {cpus[0]:.0f}/{statistics.median(cpus):.0f}/{cpus[-1]:.0f} s"
        )
        target = TARGET_S.get(min(tier, ALL_TIERS))
        if target is not None:
            within = sum(1 for wall in walls if wall <= target)
            verdict = "within" if statistics.median(walls) <= target else "OVER"
            line += f"; median {verdict} {target:.0f}s, {within} of {len(walls)} runs within"
        lines.append(line)
    return lines


def verdicts(r: Run) -> list[str]:
    """The run against its targets."""
    out = []
    target = TARGET_S.get(min(r.tier, ALL_TIERS))
    if target is not None:
        out.append(f"wall {r.seconds:.0f}s {'within' if r.seconds <= target else 'OVER'} {target:.0f}s")
    if r.tier >= ALL_TIERS:
        longest = floor_of(cases(r.junit)) if r.junit.exists() else None
        if longest is not None:
            limit = FLOOR_RATIO_TARGET * longest.own_seconds
            out.append(f"wall {'within' if r.seconds <= limit else 'OVER'} {FLOOR_RATIO_TARGET}x the floor")
        out.append(
            f"memory {'within' if r.memory <= MEMORY_TARGET else 'OVER'} {MEMORY_TARGET / 2**30:.0f} GiB"
        )
    return out


def family_table(junit: Path) -> list[str]:
    """One line per family (``serial/test_<family>.py``): specs, outcomes, seconds of its tests."""
    seconds: dict[str, float] = defaultdict(float)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for case in cases(junit):
        seconds[case.family] += case.seconds
        outcomes[case.family][case.outcome] += 1
    lines = [f"{'family':<32} {'specs':>5} {'test s':>8}  outcomes"]
    for family in sorted(seconds, key=lambda f: -seconds[f]):
        counts = outcomes[family]
        text = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        lines.append(f"{family:<32} {sum(counts.values()):5d} {seconds[family]:8.1f}  {text}")
    total = sum(seconds.values())
    lines.append(f"{'all':<32} {sum(sum(c.values()) for c in outcomes.values()):5d} {total:8.1f}")
    return lines


def merged_durations(known: Mapping[str, float], measured: Iterable[Case]) -> dict[str, float]:
    """``known`` with what the runs measured: a passed spec's entry becomes the median of its
    passed runs (one run: its time; several: a run slowed by the machine's other jobs does not
    set it alone); a failed one's only raises it (a failure may end a spec early, but a spec that
    fails every run, as 84316 on the embedded cluster, costs its failing time and must be
    planned so); errors and skips say nothing about a spec's length."""
    passed: defaultdict[str, list[float]] = defaultdict(list)
    failed: defaultdict[str, list[float]] = defaultdict(list)
    for case in measured:
        if case.outcome in ("passed", "failure"):
            (passed if case.outcome == "passed" else failed)[case.key].append(round(case.own_seconds, 1))
    merged = dict(known)
    for key, seconds in passed.items():
        merged[key] = round(statistics.median(seconds), 1)
    for key, seconds in failed.items():
        if key not in passed and max(seconds) > merged.get(key, 0.0):
            merged[key] = max(seconds)
    return dict(sorted(merged.items()))


def update_durations(junits: list[Path], path: Path = distributing.DURATIONS_FILE) -> int:
    """Merge the junits' measured durations into ``path`` (:func:`merged_durations`); how many changed."""
    known = distributing.load_durations(path)
    merged = merged_durations(known, [c for j in junits for c in cases(j)])
    path.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    return sum(1 for key, seconds in merged.items() if known.get(key) != seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tier",
        type=lambda value: ALL_TIERS if value == "all" else int(value),
        action="append",
        help="highest tier of a run, or all (every spec); repeatable; default 0",
    )
    parser.add_argument(
        "--workers", type=int, help="pass -n N (default: the suite chooses, as make e2e does)"
    )
    parser.add_argument(
        "--update-durations", action="store_true", help="write the spec durations into the suite"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="run the tiers this many times and print their spread"
    )
    parser.add_argument(
        "--junit", type=Path, action="append", help="an earlier run's junit (repeatable): its figures, no run"
    )
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    if args.junit:
        for junit in args.junit:
            found = cases(junit)
            longest = floor_of(found)
            print(f"{junit}:")
            print("\n".join(family_table(junit)))
            if longest is not None:
                print(
                    f"sum of spec times {sum(c.seconds for c in found):.1f}s, floor {longest.own_seconds:.1f}s ({longest.key})"
                )
        if args.update_durations:
            print(f"durations: {update_durations(args.junit)} specs changed in {distributing.DURATIONS_FILE}")
        return 0
    if args.workers is not None:
        extra = ["-n", str(args.workers), *extra]
    speed = machine_speed()
    if args.repeat < 1:
        parser.error(f"--repeat must be 1 or more, not {args.repeat}")
    runs = [run(tier, extra) for _ in range(args.repeat) for tier in args.tier or [0]]
    print(f"\nserial suite on {os.cpu_count()} cores; {speed_line(speed)}")
    print("\n".join(figures(runs)))
    for r in runs:
        print(f"{_tiers(r.tier)}: " + "; ".join(verdicts(r)) + f" (reports: {r.report_dir})")
    for line in spread(runs):
        print(line)
    for r in {r.tier: r for r in runs}.values():  # the last run of each tier
        if r.junit.exists():
            print(f"\nper family, {_tiers(r.tier)}:")
            print("\n".join(family_table(r.junit)))
    if args.update_durations:
        junits = [r.junit for r in runs if r.junit.exists()]
        print(f"\ndurations: {update_durations(junits)} specs changed in {distributing.DURATIONS_FILE}")
    return 0 if all(r.exit_code == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
