"""Command line of the operator (``numaresources-operator``).

* ``numaresources-operator [run] [--namespace N] [--kubeconfig F] ...`` runs the controllers;
* ``numaresources-operator render [--namespace N] [--image I] [--env K=V ...]`` prints the
  install manifests as a YAML stream for ``kubectl apply -f -``;
* ``numaresources-operator --inspect-features`` prints the active feature topics as JSON,
  as upstream's operator binary does (the suites' ``mkginkgolabelfilter`` input);
* ``numaresources-operator version`` (or ``--version``) prints the version.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
from collections.abc import Sequence
from typing import Final

import yaml

from nrop.api.distribution import package_version
from nrop.api.images import DEFAULT_IMAGE
from nrop.operator.decisions import naming
from nrop.operator.decisions.manifests import install_manifests

__all__ = ["FEATURES_VERSION", "TOPICS", "build_parser", "main"]

PROG: Final = "numaresources-operator"
#: The feature topics of the suites this operator supports (upstream's ``_topics.json``).
TOPICS: Final = (
    "config", "nonreg", "hostlevel", "resacct", "cache", "stall", "schedrst", "rtetols", "overhead",
    "wlplacement", "unsched", "nonrt", "taint", "nodelabel", "byres", "tmpol", "schedattrwatch",
    "ngpoolname", "nganns", "metrics", "nrtcrdanns", "netpols", "introspection", "mgselinuxcollect",
    "tlscompliance", "preemption",
)  # fmt: skip
FEATURES_VERSION: Final = "v5.0.0"


def _env_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="The NUMA resources operator: reconciles NUMAResourcesOperator (resource topology "
        "exporters) and NUMAResourcesScheduler (the NUMA-aware secondary scheduler).",
    )
    parser.add_argument(
        "--inspect-features", action="store_true", help="print the supported feature topics as JSON and exit"
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="{run,render,version}")

    run = commands.add_parser("run", help="run the controllers (the default)")
    _run_flags(run)
    render = commands.add_parser("render", help="print the install manifests as a YAML stream")
    render.add_argument(
        "--namespace", default=naming.NAMESPACE, help=f"operator namespace (default {naming.NAMESPACE})"
    )
    render.add_argument("--image", default=DEFAULT_IMAGE, help=f"operator image (default {DEFAULT_IMAGE})")
    render.add_argument(
        "--env",
        action="append",
        type=_env_pair,
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of the operator container (repeatable), e.g. SCHEDULER_IMAGE_VALIDATION=false",
    )
    commands.add_parser("version", help="print the version")
    # Flags of ``run`` are also accepted without the subcommand.
    _run_flags(parser, defaults_only=True)
    return parser


def _run_flags(parser: argparse.ArgumentParser, defaults_only: bool = False) -> None:
    kwargs = {"default": argparse.SUPPRESS} if defaults_only else {}
    parser.add_argument(
        "--namespace",
        help="namespace of the operands (default: env NAMESPACE, else numaresources)",
        **({"default": argparse.SUPPRESS} if defaults_only else {"default": None}),
    )
    parser.add_argument(
        "--kubeconfig", help="kubeconfig file (default: KUBECONFIG, else in-cluster)", **kwargs
    )
    parser.add_argument(
        "--image",
        help="image of the operands (default: env NROP_OPERATOR_IMAGE, else the default image)",
        **kwargs,
    )
    parser.add_argument(
        "--metrics-bind-address",
        help="serve Prometheus metrics on HOST:PORT (empty: off; default: off)",
        **kwargs,
    )
    parser.add_argument(
        "--health-probe-bind-address", help="serve /healthz on HOST:PORT (empty: off; default: off)", **kwargs
    )
    parser.add_argument(
        "--leader-elect",
        choices=("true", "false"),
        help="elect a leader through the Lease 0e2a6bd3.openshift-kni.io (default: true)",
        **kwargs,
    )
    parser.add_argument(
        "-v", "--verbosity", type=int, help="log verbosity: 4 and above is debug (default 2)", **kwargs
    )


def _render(args: argparse.Namespace) -> int:
    docs = install_manifests(args.namespace, args.image, dict(args.env) or None)
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
    return 0


def _features() -> str:
    return json.dumps({"metadata": {"version": FEATURES_VERSION}, "active": list(TOPICS)})


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.version or args.command == "version":
        sys.stdout.write(f"{PROG} {package_version()} python{platform.python_version()}\n")
        return 0
    if args.inspect_features:
        sys.stdout.write(_features() + "\n")
        return 0
    if args.command == "render":
        return _render(args)
    # kopf imports the official Kubernetes client, when it is installed, only to recognise its
    # models in what handlers return; the operator's handlers use plain dicts, and the import
    # costs about half a CPU-second at every start (bench/README.md). None in sys.modules makes
    # that import fail, as it does where the client is not installed.
    sys.modules.setdefault("kubernetes", None)  # type: ignore[arg-type]
    from nrop.operator.running import Options, run

    options = Options(
        namespace=getattr(args, "namespace", None)
        or os.environ.get(naming.ENV_NAMESPACE)
        or naming.NAMESPACE,
        kubeconfig=getattr(args, "kubeconfig", None),
        image=getattr(args, "image", None) or os.environ.get(naming.ENV_OPERATOR_IMAGE) or DEFAULT_IMAGE,
        metrics_address=getattr(args, "metrics_bind_address", None) or "",
        probe_address=getattr(args, "health_probe_bind_address", None) or "",
        leader_elect=(getattr(args, "leader_elect", None) or "true") == "true",
        verbosity=getattr(args, "verbosity", None) or 2,
    )
    logging.basicConfig(
        level=logging.DEBUG if options.verbosity >= 4 else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if options.verbosity < 4:
        # kopf logs every handler run at INFO, aiohttp every probe: keep the operator's own lines.
        for noisy in ("kopf", "aiohttp.access"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    return run(options, os.environ)
