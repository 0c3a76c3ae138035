"""``nrop-scheduler``: run the scheduling framework from a KubeSchedulerConfiguration file.

The process reads its configuration (errors name the field and exit 1), connects with
``clientConnection.kubeconfig`` / ``--kubeconfig``, else ``KUBECONFIG``, else the
in-cluster service account, optionally serves metrics, takes part in Lease leader
election when ``leaderElection.leaderElect`` is true (only the leader schedules; a candidate
has its caches synced and its queue filling meanwhile, unless ``delayCacheUntilActive``; losing
the lease ends the process with exit 1 so that its supervisor restarts it, as
kube-scheduler does), and stops cleanly on SIGTERM/SIGINT (exit 0).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import signal
import sys
from collections.abc import Sequence

from nrop.api.clientconfig import ClientConfigError, resolve_config
from nrop.sched.config import configuration as schedconfig
from nrop.sched.config.election import ElectionTiming
from nrop.sched.config.ratelimit import RateLimit
from nrop.sched.errors import ConfigError
from nrop.sched.framework import registry
from nrop.sched.kubeclient import KubeClient
from nrop.sched.leaderelection import LeaderElectionConfig, LeaderElector
from nrop.sched.metrics import SchedulerMetrics
from nrop.sched.scheduler import Scheduler

log = logging.getLogger("nrop.sched")

EXIT_LOST_LEASE = 1


def load_configuration(path: str) -> schedconfig.SchedulerConfiguration:
    return schedconfig.load(path, registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT)


def default_configuration() -> schedconfig.SchedulerConfiguration:
    """Upstream's defaults: one ``default-scheduler`` profile (what runs without ``--config``)."""
    doc = {"apiVersion": schedconfig.API_VERSION, "kind": schedconfig.KIND}
    return schedconfig.parse(doc, registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nrop-scheduler",
        description="A Kubernetes scheduler with the NodeResourceTopologyMatch plugin "
        "(the same framework as the embedded cluster's default-scheduler).",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1); without it, "
        "upstream's default profile 'default-scheduler'",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to use; overrides clientConnection.kubeconfig (else KUBECONFIG, else in-cluster)",
    )
    parser.add_argument(
        "--metrics-bind-address",
        metavar="HOST:PORT",
        default="",
        help="serve /metrics and /healthz there (port 0 picks a free port); off when empty (default)",
    )
    parser.add_argument(
        "--leader-elect",
        choices=("true", "false"),
        help="override leaderElection.leaderElect of the configuration",
    )
    parser.add_argument(
        "-v",
        "--verbosity",
        type=int,
        default=0,
        help="log verbosity: 0 info (default), 4 and above debug",
    )
    return parser


def _client(cfg: schedconfig.SchedulerConfiguration, kubeconfig: str | None) -> tuple[KubeClient, KubeClient]:
    explicit = kubeconfig or schedconfig.kubeconfig_source(cfg, {})
    connection = cfg.client_connection
    client = KubeClient(resolve_config(explicit), rate_limit=RateLimit(connection.qps, connection.burst))
    # kube-scheduler records events through a second client with its own budget.
    return client, client.with_rate_limit(RateLimit(connection.qps, connection.burst))


async def run(args: argparse.Namespace, cfg: schedconfig.SchedulerConfiguration) -> int:
    client, events_client = _client(cfg, args.kubeconfig)
    metrics = SchedulerMetrics()
    scheduler = Scheduler(cfg, client, metrics=metrics, events_client=events_client)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        if args.metrics_bind_address:
            port = await metrics.serve(args.metrics_bind_address)
            log.info("serving metrics on %s (port %d)", args.metrics_bind_address, port)
        election = cfg.leader_election
        if not election.leader_elect:
            await scheduler.start()
            await stop.wait()
            return 0
        # As kube-scheduler: unless delayCacheUntilActive, caches are synced and the queue
        # fills before the election, so a candidate queues pods in the order they come
        # while another instance leads.
        stopping = loop.create_task(stop.wait())
        if not cfg.delay_cache_until_active:
            preparing = loop.create_task(scheduler.prepare())
            await asyncio.wait({preparing, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not preparing.done():
                stopping.cancel()
                preparing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await preparing
                return 0
            preparing.result()
        elector = LeaderElector(
            client,
            LeaderElectionConfig(
                election.resource_namespace,
                election.resource_name,
                ElectionTiming(election.lease_duration, election.renew_deadline, election.retry_period),
                release_on_cancel=True,
            ),
        )

        async def lead() -> None:
            if cfg.delay_cache_until_active:
                await scheduler.prepare()
            scheduler.run()
            await asyncio.Event().wait()  # schedule until cancelled (lease lost or stopping)

        # The election ends on its own only when the lease is lost.
        election_task = loop.create_task(elector.run(lead, lambda: None))
        await asyncio.wait({election_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        lost = not stop.is_set()
        if lost:
            log.error("leaderelection lost")
        stopping.cancel()
        election_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await election_task
        return EXIT_LOST_LEASE if lost else 0
    finally:
        await scheduler.stop()
        await metrics.close()
        await events_client.close()
        await client.close()
        log.info("scheduler stopped")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbosity >= 4 else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        cfg = load_configuration(args.config) if args.config else default_configuration()
    except ConfigError as exc:
        print(f"nrop-scheduler: invalid configuration: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    if args.leader_elect is not None:
        election = dataclasses.replace(cfg.leader_election, leader_elect=args.leader_elect == "true")
        cfg = dataclasses.replace(cfg, leader_election=election)
    try:
        return asyncio.run(run(args, cfg))
    except ClientConfigError as exc:
        print(f"nrop-scheduler: {exc}", file=sys.stderr)  # noqa: T201
        return 1


if __name__ == "__main__":
    sys.exit(main())
