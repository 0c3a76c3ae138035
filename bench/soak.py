"""Soak benchmark: the serial suite's tier0, round after round, on one embedded cluster.

Starts one ``nrop-cluster up`` (profile ``default``) and runs ``pytest serial --tier-up-to 0``
against its kubeconfig ``--rounds`` times (each round installs the stack with ``--setup`` and
removes it with ``--teardown``, as a CI job reusing a cluster would). The suite recognises the
cluster as an embedded one (its ``/version``) and uses the embedded timings and devices, as on
the clusters it starts itself; there is no container-scope profile (those specs skip). After
each round it
prints the outcome counts, the wall time, and the cluster's footprint: the resident memory
(RSS) summed over the ``nrop-cluster`` process and every process below it (the operands the
emulated kubelets run), the open file descriptors of that tree and its process count, taken
after the teardown: a process left there is a leak.

Memory must not grow round over round by more than ``--max-growth`` (5 %) once the first
round has warmed the caches: round 2 is the baseline, and every later round is compared with
the one before it. The last line says whether the soak held (exit status 0) or names the
rounds that failed or grew (exit status 1). Never run in CI: it takes ten tier0 runs.

    python bench/soak.py [--rounds 10] [--max-growth 0.05] [-- extra pytest args]
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nrop.suite.plugin import target  # noqa: E402  (after the path: run as a script from the checkout)

_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|error|errors)")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Footprint:
    """The cluster process tree at one moment."""

    rss_bytes: int
    fds: int
    processes: int


@dataclass(frozen=True)
class Round:
    number: int
    seconds: float
    returncode: int
    counts: dict[str, int]
    footprint: Footprint


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def footprint(root_pid: int) -> Footprint:
    """RSS, open fds and process count of ``root_pid`` and all its descendants (from /proc)."""
    rss = fds = count = 0
    pending = [root_pid]
    while pending:
        pid = pending.pop()
        try:
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
            fds += sum(1 for _ in Path(f"/proc/{pid}/fd").iterdir())
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
        count += 1
        pending += _children(pid)
    return Footprint(rss, fds, count)


def growth_failures(rounds: list[Round], max_growth: float) -> list[str]:
    """Rounds (from the third on) whose RSS grew more than ``max_growth`` over the round before."""
    failures = []
    for before, after in itertools.pairwise(rounds[1:]):
        ratio = after.footprint.rss_bytes / before.footprint.rss_bytes - 1
        if ratio > max_growth:
            failures.append(f"round {after.number} grew {ratio:+.1%} over round {before.number}")
    return failures


def run_round(
    number: int, kubeconfig: Path, reports: Path, extra: list[str]
) -> subprocess.CompletedProcess[str]:
    report_dir = reports / f"round-{number:02d}"
    cmd = [
        sys.executable, "-m", "pytest", "serial", "--tier-up-to", "0", "--kubeconfig", str(kubeconfig),
        "--setup", "--teardown", "--report-dir", str(report_dir), "-p", "no:cacheprovider", *extra,
    ]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--max-growth", type=float, default=0.05)
    parser.add_argument("extra", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()

    reports = Path(tempfile.mkdtemp(prefix="nrop-soak-"))
    print(f"reports and cluster state in {reports}", flush=True)
    cluster = target.start(
        "default", reports / "cluster", progress=lambda line: print(f"  {line}", flush=True)
    )
    print(f"cluster up in {cluster.started_in:.0f}s: {footprint(cluster.process.pid)}", flush=True)
    rounds: list[Round] = []
    try:
        print(
            f"{'round':>5} {'wall s':>7} {'outcome':<28} {'RSS MiB':>8} {'vs prev':>8} {'fds':>5} {'procs':>5}"
        )
        for number in range(1, args.rounds + 1):
            began = time.monotonic()
            proc = run_round(number, cluster.kubeconfig, reports, args.extra)
            counts = {
                kind: int(n)
                for n, kind in _COUNTS.findall(proc.stdout.splitlines()[-1] if proc.stdout else "")
            }
            now = Round(
                number, time.monotonic() - began, proc.returncode, counts, footprint(cluster.process.pid)
            )
            prev = rounds[-1].footprint.rss_bytes if rounds else 0
            delta = f"{now.footprint.rss_bytes / prev - 1:+.1%}" if prev else "-"
            outcome = ", ".join(f"{n} {k}" for k, n in counts.items()) or f"exit {proc.returncode}"
            print(
                f"{number:>5} {now.seconds:>7.0f} {outcome:<28} {now.footprint.rss_bytes / 2**20:>8.0f} "
                f"{delta:>8} {now.footprint.fds:>5} {now.footprint.processes:>5}",
                flush=True,
            )
            rounds.append(now)
    finally:
        cluster.stop()
    failed = [f"round {r.number} exited {r.returncode}" for r in rounds if r.returncode != 0]
    problems = failed + growth_failures(rounds, args.max_growth)
    passed = sum(1 for r in rounds if r.returncode == 0)
    if problems:
        print(f"soak FAILED ({passed}/{len(rounds)} rounds passed): " + "; ".join(problems))
        return 1
    first, last = rounds[1].footprint if len(rounds) > 1 else rounds[0].footprint, rounds[-1].footprint
    print(
        f"soak held: {passed}/{len(rounds)} rounds passed; RSS {first.rss_bytes / 2**20:.0f} -> "
        f"{last.rss_bytes / 2**20:.0f} MiB from round 2, fds {first.fds} -> {last.fds}, "
        f"growth under {args.max_growth:.0%} per round"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
