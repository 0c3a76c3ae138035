"""The suite's command-line options, their environment twins, and the one function that resolves them.

Every option has an environment twin (upstream's runner variables keep working as legacy
spellings), and precedence is resolved in :func:`resolve` only: command line, then the
environment, then the default. A bad value raises ``pytest.UsageError`` naming where it
came from and what would be accepted.

| option | environment | default |
|---|---|---|
| ``--kubeconfig PATH`` | ``KUBECONFIG`` | none: start the embedded cluster |
| ``--cluster-profile P`` | ``E2E_NROP_CLUSTER_PROFILE`` | ``default`` |
| ``--setup`` / ``--no-setup`` | ``E2E_NROP_SETUP`` | on for the embedded cluster, off for a kubeconfig |
| ``--teardown`` / ``--no-teardown`` | ``E2E_NROP_TEARDOWN`` | off (an embedded cluster is stopped instead) |
| ``--install-via M`` (``direct``, ``olm``) | ``E2E_NROP_INSTALL_VIA`` | ``direct`` |
| ``--tier-up-to N`` | ``E2E_NROP_TIER_UPTO`` (legacy ``E2E_SERIAL_TIER_UPTO``) | every tier |
| ``--label-filter Q`` | ``E2E_NROP_LABEL_FILTER`` | everything |
| ``--focus RE`` (repeatable) | ``E2E_SERIAL_FOCUS`` | everything |
| ``--skip RE`` (repeatable) | ``E2E_SERIAL_SKIP`` | nothing |
| ``--report-dir D`` | ``E2E_NROP_REPORT_DIR`` | ``/tmp/artifacts/nrop`` |
| ``--keep-namespace-on-failure`` | ``E2E_NROP_KEEP_NAMESPACE_ON_FAILURE`` | off |
| ``--spec-durations FILE`` | ``E2E_NROP_SPEC_DURATIONS`` | the measured ``durations.json`` of the suite |
| ``--dry-run-specs`` | | off |
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nrop.suite.install.stack import INSTALL_VIA
from nrop.suite.plugin import labelfilter, labels

__all__ = [
    "DEFAULT_PROFILE",
    "DEFAULT_REPORT_DIR",
    "OPTION_DESTS",
    "SELECTION_FLAGS",
    "SuiteOptions",
    "add_options",
    "resolve",
]

DEFAULT_PROFILE = "default"
DEFAULT_REPORT_DIR = Path("/tmp/artifacts/nrop")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})

# option dests that mean "this is a run of the serial suite" when given on the command line
SELECTION_FLAGS = (
    "nrop_kubeconfig",
    "nrop_cluster_profile",
    "nrop_setup",
    "nrop_teardown",
    "nrop_install_via",
    "nrop_tier_up_to",
    "nrop_label_filter",
    "nrop_focus",
    "nrop_skip",
    "nrop_report_dir",
    "nrop_dry_run",
)
#: Every option :func:`add_options` declares, by ``dest``: what :func:`resolve` reads from the command line.
OPTION_DESTS = (*SELECTION_FLAGS, "nrop_keep_namespace", "nrop_spec_durations")


@dataclass(frozen=True)
class SuiteOptions:
    """The resolved options of one run."""

    kubeconfig: Path | None = None
    cluster_profile: str = DEFAULT_PROFILE
    setup: bool | None = None
    teardown: bool | None = None
    #: How ``--setup`` installs the operator: ``direct`` (its manifests) or ``olm`` (Subscription + CSV).
    install_via: str = "direct"
    tier_up_to: int | None = None
    label_filter: str = ""
    focus: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    report_dir: Path = DEFAULT_REPORT_DIR
    keep_namespace_on_failure: bool = False
    dry_run: bool = False
    #: The spec durations the run is planned with (``None``: the suite's measured ``durations.json``).
    spec_durations: Path | None = None
    #: The kubeconfig's cluster is an embedded one started elsewhere (``nrop-cluster up``).
    embedded_server: bool = False

    @property
    def embedded(self) -> bool:
        """This run starts its own embedded clusters (no kubeconfig)."""
        return self.kubeconfig is None

    @property
    def emulated(self) -> bool:
        """The target is an embedded cluster, started by this run or given by kubeconfig: its
        exporters publish within a second, so the suite uses the embedded timings there."""
        return self.embedded or self.embedded_server

    @property
    def target(self) -> str:
        return "embedded" if self.emulated else "kubeconfig"

    @property
    def do_setup(self) -> bool:
        return self.embedded if self.setup is None else self.setup

    @property
    def do_teardown(self) -> bool:
        # Off by default on the embedded cluster too: it is stopped right after AfterSuite, and
        # removing the stack from it first would only cost every lane's end (the uninstall is
        # tested on its own, tests/e2e/test_suite_stack_e2e.py).
        return bool(self.teardown)

    @property
    def selection_filter(self) -> str:
        """``--tier-up-to`` and ``--label-filter`` as one Ginkgo label filter (both must hold)."""
        parts: list[str] = []
        if self.tier_up_to is not None:
            parts.append(" || ".join(labels.tier_labels_up_to(self.tier_up_to)))
        if self.label_filter.strip():
            parts.append(self.label_filter)
        if len(parts) == 1:
            return parts[0]
        return " && ".join(f"({part})" for part in parts)

    @property
    def selects(self) -> bool:
        """Whether any selection option narrows the specs."""
        return bool(self.selection_filter or self.focus or self.skip)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nrop", "serial suite of NUMA-aware scheduling (nrop)")
    group.addoption(
        "--kubeconfig",
        dest="nrop_kubeconfig",
        metavar="PATH",
        help="run against this cluster (env KUBECONFIG); without it the embedded cluster is started",
    )
    group.addoption(
        "--cluster-profile",
        dest="nrop_cluster_profile",
        metavar="PROFILE",
        help=f"embedded cluster profile for specs without a scope label "
        f"(env E2E_NROP_CLUSTER_PROFILE, default {DEFAULT_PROFILE})",
    )
    group.addoption(
        "--setup",
        dest="nrop_setup",
        action="store_const",
        const=True,
        help="install the operator and create the NROP/NRS CRs before the suite (env E2E_NROP_SETUP; "
        "default on for the embedded cluster, off for a kubeconfig)",
    )
    group.addoption(
        "--no-setup",
        dest="nrop_setup",
        action="store_const",
        const=False,
        help="use the stack already installed on the cluster",
    )
    group.addoption(
        "--teardown",
        dest="nrop_teardown",
        action="store_const",
        const=True,
        help="remove the CRs and the operator after the suite (env E2E_NROP_TEARDOWN; default off)",
    )
    group.addoption(
        "--no-teardown",
        dest="nrop_teardown",
        action="store_const",
        const=False,
        help="leave the stack installed after the suite",
    )
    group.addoption(
        "--install-via",
        dest="nrop_install_via",
        choices=INSTALL_VIA,
        help="how --setup installs the operator: 'direct' applies its manifests, 'olm' creates an "
        "OperatorGroup, a ClusterServiceVersion and a Subscription for OLM to render its Deployment "
        "(env E2E_NROP_INSTALL_VIA, default direct)",
    )
    group.addoption(
        "--tier-up-to",
        dest="nrop_tier_up_to",
        metavar="N",
        help="run specs of tier0..tierN only (env E2E_NROP_TIER_UPTO, legacy E2E_SERIAL_TIER_UPTO)",
    )
    group.addoption(
        "--label-filter",
        dest="nrop_label_filter",
        metavar="QUERY",
        help="Ginkgo label filter, e.g. 'tier0 && !feature: containsAny {cache,stall}' "
        "(env E2E_NROP_LABEL_FILTER)",
    )
    group.addoption(
        "--focus",
        dest="nrop_focus",
        action="append",
        metavar="REGEX",
        help="run only specs whose full text matches (repeatable; env E2E_SERIAL_FOCUS)",
    )
    group.addoption(
        "--skip",
        dest="nrop_skip",
        action="append",
        metavar="REGEX",
        help="drop specs whose full text matches (repeatable; env E2E_SERIAL_SKIP)",
    )
    group.addoption(
        "--report-dir",
        dest="nrop_report_dir",
        metavar="DIR",
        help=f"where e2e-serial-run.xml goes (env E2E_NROP_REPORT_DIR, default {DEFAULT_REPORT_DIR})",
    )
    group.addoption(
        "--keep-namespace-on-failure",
        dest="nrop_keep_namespace",
        action="store_const",
        const=True,
        help="keep the test namespace of a failed spec (env E2E_NROP_KEEP_NAMESPACE_ON_FAILURE)",
    )
    group.addoption(
        "--spec-durations",
        dest="nrop_spec_durations",
        metavar="FILE",
        help="plan the workers' lanes with these spec durations (JSON, by spec key; env E2E_NROP_SPEC_DURATIONS, "
        "default the suite's measured durations.json)",
    )
    group.addoption("--dry-run-specs", dest="nrop_dry_run", action="store_true", default=None,
                    help="list the selected specs (full text and labels) and exit without running them")  # fmt: skip


def _bool(value: str, source: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise pytest.UsageError(f"{source}={value!r} is not a boolean: use true or false")


def _pick(cli: Mapping[str, Any], environ: Mapping[str, str], dest: str, *env_names: str) -> tuple[Any, str]:
    """The first value given, command line first, with the name of where it came from."""
    value = cli.get(dest)
    if value is not None:
        return value, "--" + dest.removeprefix("nrop_").replace("_", "-")
    for name in env_names:
        if name in environ:
            return environ[name], name
    return None, ""


def _regexes(value: Any, source: str) -> tuple[str, ...]:
    patterns = tuple(value) if isinstance(value, (list, tuple)) else ((value,) if value else ())
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise pytest.UsageError(f"{source}={pattern!r} is not a valid regular expression: {exc}") from exc
    return patterns


def resolve(cli: Mapping[str, Any], environ: Mapping[str, str]) -> SuiteOptions:
    """Resolve every option: command line (``cli``, None when absent) > ``environ`` > default."""
    kubeconfig, source = _pick(cli, environ, "nrop_kubeconfig", "KUBECONFIG")
    kube_path: Path | None = None
    if kubeconfig:
        first = str(kubeconfig).split(":")[0]
        kube_path = Path(first).expanduser()
        if not kube_path.is_file():
            raise pytest.UsageError(
                f"{source}={kubeconfig!r}: no such file; unset it to run against the embedded cluster"
            )

    profile, _ = _pick(cli, environ, "nrop_cluster_profile", "E2E_NROP_CLUSTER_PROFILE")

    flags: dict[str, bool | None] = {}
    for dest, env in (("nrop_setup", "E2E_NROP_SETUP"), ("nrop_teardown", "E2E_NROP_TEARDOWN")):
        value, source = _pick(cli, environ, dest, env)
        flags[dest] = value if isinstance(value, bool) or value is None else _bool(value, source)

    install_via, source = _pick(cli, environ, "nrop_install_via", "E2E_NROP_INSTALL_VIA")
    install_via = str(install_via or "direct").strip().lower()
    if install_via not in INSTALL_VIA:
        raise pytest.UsageError(f"{source}={install_via!r}: expected one of {', '.join(INSTALL_VIA)}")

    tier_value, source = _pick(cli, environ, "nrop_tier_up_to", "E2E_NROP_TIER_UPTO", "E2E_SERIAL_TIER_UPTO")
    tier: int | None = None
    if tier_value not in (None, ""):
        text = str(tier_value).strip().removeprefix("tier")
        if not text.isdigit() or int(text) >= len(labels.TIERS):
            raise pytest.UsageError(
                f"{source}={tier_value!r}: expected a tier number 0..{len(labels.TIERS) - 1}"
            )
        tier = int(text)

    label_filter, source = _pick(cli, environ, "nrop_label_filter", "E2E_NROP_LABEL_FILTER")
    label_filter = label_filter or ""
    try:
        labelfilter.parse(label_filter)
    except labelfilter.LabelFilterError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from exc

    focus, focus_source = _pick(cli, environ, "nrop_focus", "E2E_SERIAL_FOCUS")
    skip, skip_source = _pick(cli, environ, "nrop_skip", "E2E_SERIAL_SKIP")

    report_dir, _ = _pick(cli, environ, "nrop_report_dir", "E2E_NROP_REPORT_DIR")
    keep, source = _pick(cli, environ, "nrop_keep_namespace", "E2E_NROP_KEEP_NAMESPACE_ON_FAILURE")
    keep_flag = keep if isinstance(keep, bool) else (_bool(keep, source) if keep is not None else False)

    durations, source = _pick(cli, environ, "nrop_spec_durations", "E2E_NROP_SPEC_DURATIONS")
    durations_path = Path(durations).expanduser() if durations else None
    if durations_path is not None and not durations_path.is_file():
        raise pytest.UsageError(f"{source}={durations!r}: no such file")

    return SuiteOptions(
        kubeconfig=kube_path,
        cluster_profile=profile or DEFAULT_PROFILE,
        setup=flags["nrop_setup"],
        teardown=flags["nrop_teardown"],
        install_via=install_via,
        tier_up_to=tier,
        label_filter=label_filter,
        focus=_regexes(focus, focus_source),
        skip=_regexes(skip, skip_source),
        report_dir=Path(report_dir).expanduser() if report_dir else DEFAULT_REPORT_DIR,
        keep_namespace_on_failure=keep_flag,
        dry_run=bool(cli.get("nrop_dry_run")),
        spec_durations=durations_path,
    )
