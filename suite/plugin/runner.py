"""The suite runner ``nrop-e2e``: runs the serial suite the way upstream's run script and image do.

It is the test image's entry point and a convenience for CI jobs. Every flag maps onto an option of the
pytest plugin (``nrop.suite.plugin.entrypoint``), which also reads the ``E2E_*`` environment twins, so
``nrop-e2e --tier-up-to 1`` and ``E2E_NROP_TIER_UPTO=1 pytest serial`` select the same specs.
Arguments after ``--`` go to pytest unchanged.

Exit codes follow pytest's: 0 only when nothing failed; 1 tests failed; 2 interrupted; 3 internal error;
4 usage error (an empty selection is one: the runner never exits 5).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from nrop.api.images import IMAGE_VAR
from nrop.suite.install.stack import INSTALL_VIA
from nrop.suite.plugin.options import DEFAULT_REPORT_DIR

#: Where allure results go, inside the report directory.
ALLURE_DIR = "allure-results"
#: pytest's "no tests collected".
_NO_TESTS = 5
_USAGE_ERROR = 4


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nrop-e2e",
        description=(
            "Run the serial suite of numaresources-operator-tests against the cluster in KUBECONFIG, "
            "or against an embedded cluster started for the run when none is given."
        ),
        epilog="Other arguments (or all after '--') are passed to pytest. Every option has an environment twin, read by the plugin.",
    )
    p.add_argument(
        "--tests",
        help="the serial tests directory [env E2E_NROP_TESTS_DIR; default: ./serial]",
    )
    p.add_argument("--kubeconfig", help="target cluster [env KUBECONFIG; none: an embedded cluster]")
    p.add_argument(
        "--cluster-profile", help="embedded cluster profile [env E2E_NROP_CLUSTER_PROFILE; default: default]"
    )
    p.add_argument(
        "--setup",
        action="store_true",
        default=None,
        help="install the stack through the operator first [env E2E_NROP_SETUP]",
    )
    p.add_argument(
        "--no-setup", dest="setup", action="store_false", help="use the stack already on the cluster"
    )
    p.add_argument(
        "--teardown",
        action="store_true",
        default=None,
        help="uninstall the stack at the end [env E2E_NROP_TEARDOWN]",
    )
    p.add_argument("--no-teardown", dest="teardown", action="store_false", help="leave the stack installed")
    p.add_argument(
        "--install-via",
        choices=INSTALL_VIA,
        help="how --setup installs the operator: its manifests, or a Subscription and CSV for OLM "
        "[env E2E_NROP_INSTALL_VIA; default: direct]",
    )
    p.add_argument(
        "--image",
        help="the project's image --setup installs [env E2E_NROP_IMAGE; default: "
        "localhost/numaresources-operator-tests:latest]",
    )
    p.add_argument(
        "--tier-up-to", metavar="N", help="run tier0..tierN [env E2E_NROP_TIER_UPTO, E2E_SERIAL_TIER_UPTO]"
    )
    p.add_argument(
        "--label-filter", metavar="EXPR", help="Ginkgo label-filter expression [env E2E_NROP_LABEL_FILTER]"
    )
    p.add_argument(
        "--focus",
        metavar="REGEX",
        action="append",
        help="run specs whose description matches (repeatable) [env E2E_SERIAL_FOCUS]",
    )
    p.add_argument(
        "--skip",
        metavar="REGEX",
        action="append",
        help="skip specs whose description matches (repeatable) [env E2E_SERIAL_SKIP]",
    )
    p.add_argument(
        "--report-dir",
        metavar="DIR",
        help="junit e2e-serial-run.xml, report.html and allure-results/ [env E2E_NROP_REPORT_DIR; default: /tmp/artifacts/nrop]",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the selected specs with tiers and test_ids, run nothing"
    )
    p.add_argument(
        "-n",
        "--numprocesses",
        metavar="N",
        help="xdist workers, each with its own embedded clusters (default: as many as the selection and "
        "the machine call for; 0: serially)",
    )
    p.add_argument(
        "--keep-namespace-on-failure",
        action="store_true",
        help="leave a failed test's namespace for inspection",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="one line per test")
    return p


def pytest_args(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The pytest command line and the environment additions for a runner command line (pure)."""
    own, _, extra = _split(argv)
    ns, unknown = _parser().parse_known_args(own)
    extra = [*unknown, *extra]  # pytest's own options pass through, with or without '--'
    args: list[str] = [ns.tests or environ.get("E2E_NROP_TESTS_DIR") or "serial"]
    for flag, value in (
        ("--kubeconfig", ns.kubeconfig),
        ("--cluster-profile", ns.cluster_profile),
        ("--install-via", ns.install_via),
        ("--tier-up-to", ns.tier_up_to),
        ("--label-filter", ns.label_filter),
        ("--report-dir", ns.report_dir),
        ("-n", ns.numprocesses),
    ):
        if value is not None:
            args += [flag, value]
    for flag, values in (("--focus", ns.focus), ("--skip", ns.skip)):
        for value in values or ():
            args += [flag, value]
    if ns.setup is not None:
        args.append("--setup" if ns.setup else "--no-setup")
    if ns.teardown is not None:
        args.append("--teardown" if ns.teardown else "--no-teardown")
    if ns.dry_run:
        args.append("--dry-run-specs")
    if ns.keep_namespace_on_failure:
        args.append("--keep-namespace-on-failure")
    if ns.verbose:
        args.append("-v")
    if not any(a == "--alluredir" or a.startswith("--alluredir=") for a in extra):
        report_dir = Path(ns.report_dir or environ.get("E2E_NROP_REPORT_DIR") or DEFAULT_REPORT_DIR)
        args.append(f"--alluredir={report_dir / ALLURE_DIR}")
    env = {IMAGE_VAR: ns.image} if ns.image else {}
    return args + list(extra), env


def _split(argv: Sequence[str]) -> tuple[list[str], str, list[str]]:
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], "--", argv[i + 1 :]
    return argv, "", []


#: Our wheel's modules live under the namespace package ``nrop`` (no ``__init__``); pytest, looking
#: for the plugin's modules to rewrite, strips that first folder and marks ``operator``, the
#: standard-library module, which it cannot rewrite. Nothing of ours is affected: mute that line.
REWRITE_NOISE = (
    "ignore:Module already imported so cannot be rewritten; operator:pytest.PytestAssertRewriteWarning"
)


def main(argv: Sequence[str] | None = None) -> int:
    import pytest

    args, env = pytest_args(sys.argv[1:] if argv is None else argv, os.environ)
    os.environ.update(env)
    if not Path(args[0]).is_dir():
        sys.stderr.write(
            f"nrop-e2e: no serial tests at {args[0]!r} (use --tests DIR or E2E_NROP_TESTS_DIR)" + "\n"
        )
        return _USAGE_ERROR
    code = int(pytest.main(["-W", REWRITE_NOISE, *args]))
    if code == _NO_TESTS:
        sys.stderr.write(
            "nrop-e2e: the selection matched no spec; see --dry-run and the labels in README.tests.md" + "\n"
        )
        return _USAGE_ERROR
    return code
