"""Running the operator: client, leader election, metrics, and kopf with its controllers.

kopf watches the two CRs and the objects they own cluster-wide (and, where the cluster serves
``machineconfiguration.openshift.io/v1``, KubeletConfigs); its handlers call the controllers'
``reconcile`` functions. Where the cluster serves ``config.openshift.io/v1`` APIServer, its TLS
profile, read at start, sets the exporters' metrics TLS flags, and a change of it stops the
process (exit 0) so that its pod restarts with the new one (:mod:`tlsprofilewatcher`). kopf's own peering is off (``standalone``): one
replica leads through the Lease ``0e2a6bd3.openshift-kni.io`` (upstream's election id) instead. The platform is
detected once at start, as upstream's operator does (:func:`detect_platform`).

Stopping is bounded as controller-runtime's manager bounds it: once the operator stops (a
signal, the stop flag, or one of kopf's root tasks failing, such as a watch the ClusterRole
forbids), its handlers get :data:`GRACEFUL_SHUTDOWN_SECONDS` to end; past that the process exits
1 (:func:`exit_when_stuck`, and kopf's own ``ultimate_exiting_timeout`` where kopf stops without
the flag), so that the kubelet restarts it instead of leaving a process that reconciles nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from nrop.api.clientconfig import ClientConfigError, resolve_config
from nrop.api.leases import candidate_identity
from nrop.api.platform import Platform, platform_of
from nrop.api.tlsprofiles import ProfileError, TLSProfileSpec
from nrop.operator import (
    kubeletconfigcontroller,
    metrics,
    numaresourcesoperator,
    numaresourcesscheduler,
    tlsprofilewatcher,
)
from nrop.operator.decisions import naming
from nrop.operator.kubeapi import Api, kind, load_client
from nrop.operator.leaderelection import LeaderElector
from nrop.operator.reconciling import Context, resync_forever
from nrop.operator.requeueing import Requeue
from nrop.operator.serving import serve_health, serve_metrics

__all__ = [
    "GRACEFUL_SHUTDOWN_SECONDS",
    "RESYNC_SECONDS",
    "Options",
    "build_registry",
    "detect_platform",
    "exit_when_stuck",
    "run",
]

log = logging.getLogger(__name__)
#: Periodic re-reconciliation of every CR, by one loop for the process
#: (:func:`~nrop.operator.reconciling.resync_forever`): controller-runtime's default ``SyncPeriod``
#: (upstream sets none). Events of the CRs and of what they own or watch, and the requeues of
#: steps in progress or failed (:mod:`~nrop.operator.requeueing`), do the rest.
RESYNC_SECONDS = 10 * 3600.0
#: controller-runtime's default ``GracefulShutdownTimeout`` (upstream sets none): how long the
#: handlers get to end once the operator stops; past it the manager's ``Start`` returns "failed
#: waiting for all runnables to end within grace period" and upstream's main exits 1.
GRACEFUL_SHUTDOWN_SECONDS = 30.0
CLUSTERVERSION = kind("config.openshift.io/v1", "ClusterVersion")
INFRASTRUCTURE = kind("config.openshift.io/v1", "Infrastructure")


@dataclass(frozen=True)
class Options:
    namespace: str
    kubeconfig: str | None
    image: str
    metrics_address: str = ""
    probe_address: str = ""
    leader_elect: bool = True
    verbosity: int = 2


def build_registry(
    ctx: Context,
    kubeconfig: str | None,
    *,
    kubeletconfigs: bool = False,
    tls_profile: TLSProfileSpec | None = None,
    stop: threading.Event | None = None,
) -> kopf.OperatorRegistry:
    """kopf's handlers; ``kubeletconfigs``: the cluster serves MCO KubeletConfigs (their controller runs);
    ``tls_profile``: the APIServer's profile at start, whose change sets ``stop`` (kopf's stop flag);
    ``stop`` is also set when kopf stops for a signal."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        # The settings every other request of the operator uses (--kubeconfig, KUBECONFIG, or in
        # a pod KUBERNETES_SERVICE_HOST/PORT and the projected token, as controller-runtime's
        # rest.InClusterConfig), read again at each login: kopf logs in again after a 401, and
        # a rotated token is then the one on disk.
        cfg = resolve_config(kubeconfig)
        return kopf.ConnectionInfo(
            server=cfg.server,
            ca_data=cfg.ca_data,
            insecure=cfg.insecure or None,
            token=cfg.token or None,
            certificate_data=cfg.client_cert_data,
            private_key_data=cfg.client_key_data,
            default_namespace=cfg.namespace,
        )

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.level = logging.WARNING
        settings.watching.server_timeout = 60
        settings.watching.client_timeout = 90
        settings.persistence.finalizer = naming.FINALIZER
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
            prefix="nodetopology.openshift.io"
        )
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix="nodetopology.openshift.io"
        )
        settings.execution.max_workers = 8
        # kopf stopping on its own (a failed root task, a signal) kills the process past this;
        # a stop by the flag is bounded by exit_when_stuck
        settings.process.ultimate_exiting_timeout = GRACEFUL_SHUTDOWN_SECONDS

    numaresourcesoperator.register(registry, ctx)
    numaresourcesscheduler.register(registry, ctx)
    if kubeletconfigs:
        kubeletconfigcontroller.register(registry, ctx)
    if tls_profile is not None:

        def restart(old: TLSProfileSpec, new: TLSProfileSpec) -> None:
            log.info(
                "TLS profile changed, triggering graceful shutdown to reload: old profile %s, new profile %s",
                old,
                new,
            )
            if stop is not None:
                stop.set()

        tlsprofilewatcher.register(registry, tls_profile, restart)
    if stop is not None:

        @kopf.on.cleanup(registry=registry)
        def release_stop_flag(**_: Any) -> None:
            # kopf waits for a threading.Event stop flag on a thread of the loop's executor, and
            # asyncio.run joins that thread before it returns: stopped by SIGTERM instead of the
            # flag, the process would hang until the kubelet's SIGKILL (controller-runtime's
            # manager returns on the signal). Setting the flag lets that thread and ours end.
            stop.set()

    return registry


def detect_platform(api: Api) -> Platform:
    """Upstream's ``detect.PlatformFromEnv`` through :mod:`nrop.api.platform`: ClusterVersions
    (a cluster that does not serve them is Kubernetes), then ``Infrastructure/cluster``."""
    if not api.serves(CLUSTERVERSION):
        return Platform.KUBERNETES
    count = len(api.list(CLUSTERVERSION))
    return platform_of(count, api.get(INFRASTRUCTURE, "cluster") if count else None)


def exit_when_stuck(
    stop: threading.Event, grace: float = GRACEFUL_SHUTDOWN_SECONDS, exit: Callable[[int], object] = os._exit
) -> None:
    """Thread body (a daemon: a process that ends in time ends it): once ``stop`` is set, wait
    ``grace`` seconds, then log controller-runtime's message and ``exit(1)``."""
    stop.wait()
    time.sleep(grace)
    log.error(
        "problem running manager: failed waiting for all runnables to end within grace period of %gs", grace
    )
    logging.shutdown()
    exit(1)


def run(options: Options, environ: Mapping[str, str]) -> int:
    try:
        api = Api(load_client(options.kubeconfig))
    except ClientConfigError as exc:
        log.error("cannot connect to the API server: %s", exc)
        return 1
    try:
        tls = tlsprofilewatcher.startup(api)
    except ProfileError as exc:
        log.error("%s", exc)
        return 1
    platform = detect_platform(api)
    log.info("platform detection: %s", platform)
    ctx = Context(
        api=api,
        namespace=options.namespace,
        image=options.image,
        environ=dict(environ),
        metrics_tls=tls.metrics_tls,
        platform=platform,
    )
    stop = threading.Event()
    threading.Thread(target=exit_when_stuck, args=(stop,), name="shutdown-bound", daemon=True).start()
    ctx.requeue = Requeue(stop)
    metrics.declare((numaresourcesoperator.CONTROLLER, numaresourcesscheduler.CONTROLLER))
    if options.metrics_address:
        serve_metrics(options.metrics_address, stop)
    if options.probe_address:
        serve_health(options.probe_address, stop)
    if options.leader_elect:
        identity = candidate_identity(environ.get(naming.ENV_POD_NAME) or socket.gethostname())
        elector = LeaderElector(api, options.namespace, naming.LEADER_ELECTION_ID, identity)
        if not elector.acquire(stop):
            return 0
        threading.Thread(target=elector.keep, args=(stop,), name="lease", daemon=True).start()
    log.info("reconciling in namespace %s with image %s", options.namespace, options.image)
    controllers = (
        (numaresourcesoperator.NROP, lambda name: numaresourcesoperator.reconcile(ctx, name)),
        (numaresourcesscheduler.NRS, lambda name: numaresourcesscheduler.reconcile(ctx, name)),
    )
    threading.Thread(
        target=resync_forever, args=(ctx, controllers, RESYNC_SECONDS, stop), name="resync", daemon=True
    ).start()
    threading.Thread(target=ctx.requeue.run, name="requeue", daemon=True).start()
    try:
        kubeletconfigs = api.has_api(kubeletconfigcontroller.GROUP_VERSION)
        if kubeletconfigs:
            log.info(
                "the cluster serves %s: the KubeletConfig controller runs",
                kubeletconfigcontroller.GROUP_VERSION,
            )
        kopf.run(
            registry=build_registry(
                ctx, options.kubeconfig, kubeletconfigs=kubeletconfigs, tls_profile=tls.profile, stop=stop
            ),
            clusterwide=True,
            standalone=True,
            stop_flag=stop,
        )
    finally:
        stop.set()  # the Lease is left to expire (upstream's manager does not release it)
    return 0
