"""Running the embedded cluster: state directory, TLS, the API server, lifecycle loops, kubelets, kubeconfig.

``LocalCluster`` is what ``nrop-cluster up`` runs in the foreground and what
tests start in a background thread.  It binds 127.0.0.1 only, generates a CA
per cluster, and writes the admin kubeconfig atomically once the server
answers and every node of the profile is registered Ready (one emulated kubelet
per node, node roots under ``<state dir>/nodes/``), so whoever waits for the file
can use it at once.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from nrop.api.clientconfig import ClientConfig
from nrop.localcluster.apiserver import kubeconfig, tls
from nrop.localcluster.apiserver.lifecycle import Lifecycle, bootstrap, publish_kubernetes_service
from nrop.localcluster.apiserver.listening import HTTPSSite
from nrop.localcluster.apiserver.server import APIServer
from nrop.localcluster.controllers import ControllerManager, ControllerSettings, clustermonitoring
from nrop.localcluster.controllers.machineconfigoperator import MachineConfigOperator, booted_specs
from nrop.localcluster.controllers.machineconfigoperator import install as install_machine_configs
from nrop.localcluster.controllers.olmoperator import install as install_olm
from nrop.localcluster.controllers.openshiftconfig import install as install_openshift_config
from nrop.localcluster.controllers.openshiftconfig import install_platform as install_openshift_platform
from nrop.localcluster.kubelet.decisions.entrypoints import DEFAULT_OWN_IMAGES, RuntimeConfig
from nrop.localcluster.kubelet.fleet import Fleet
from nrop.localcluster.profiles import Profile, load_profile
from nrop.sched.kubeclient import KubeClient
from nrop.sched.main import default_configuration
from nrop.sched.scheduler import Scheduler

log = logging.getLogger(__name__)


@dataclass
class ClusterConfig:
    profile: str = "default"
    state_dir: Path | None = None
    kubeconfig: Path | None = None
    port: int = 0
    host: str = "127.0.0.1"
    bookmark_interval: float = 60.0
    history_size: int = 50_000
    #: Images that run as real processes (fnmatch patterns; see kubelet/decisions/entrypoints.py).
    own_images: tuple[str, ...] = DEFAULT_OWN_IMAGES
    controllers: ControllerSettings = field(default_factory=ControllerSettings)
    #: Run the project's scheduler in-process as ``default-scheduler`` (upstream's default profile).
    default_scheduler: bool = True
    #: Serve the OpenShift APIs the specs use: MachineConfigPools and KubeletConfigs, applied by
    #: rebooting the kubelets (see controllers/machineconfigoperator.py), and the cluster type's
    #: Infrastructure and Scheduler objects (controllers/openshiftconfig.py); on a profile of the
    #: OpenShift flavour also its ClusterVersion and the monitoring namespace's Prometheus pod
    #: (clustermonitoring.py).
    machine_configs: bool = True


class LocalCluster:
    """One embedded cluster; ``start``/``stop`` inside an event loop, or ``run_in_thread``."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self.profile: Profile = load_profile(config.profile)
        self._temporary_state = config.state_dir is None
        self.state_dir = Path(config.state_dir or tempfile.mkdtemp(prefix="nrop-cluster-"))
        self.kubeconfig_path = Path(config.kubeconfig or self.state_dir / "kubeconfig")
        self.server = APIServer(bookmark_interval=config.bookmark_interval, history_size=config.history_size)
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._lifecycle: Lifecycle | None = None
        self.controllers: ControllerManager | None = None
        self.fleet: Fleet | None = None
        self.machine_configs: MachineConfigOperator | None = None
        self.scheduler: Scheduler | None = None
        self.ca_pem = b""

    async def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        log.info("starting API server (state in %s)", self.state_dir)
        ca = tls.generate_ca("nrop-local-ca")
        server_pair = tls.issue_server_cert(ca)
        ca.write_pair(self.state_dir / "pki", "ca")
        self.ca_pem = ca.cert_pem
        bootstrap(self.server)
        # handler_cancellation: a watch whose client went away must end (and unsubscribe) at once,
        # not linger until an event it would send; store writes never await, so none is cut in half.
        self._runner = web.AppRunner(
            self.server.app(),
            access_log=None,
            handle_signals=False,
            handler_cancellation=True,
            # Open watches and log follows never finish on their own: give them a moment, then cut.
            shutdown_timeout=2.0,
        )
        await self._runner.setup()
        site = HTTPSSite(self._runner, self.config.host, self.config.port, tls.ssl_context(server_pair))
        await site.start()
        port = self._runner.addresses[0][1]
        self.server.address = f"{self.config.host}:{port}"
        self.url = f"https://{self.config.host}:{port}"
        publish_kubernetes_service(self.server, self.config.host, port)
        self._lifecycle = Lifecycle(self.server)
        self._lifecycle.start()
        install_olm(self.server)
        self.controllers = ControllerManager(self.server, self.config.controllers, ca_pem=self.ca_pem)
        self.controllers.start()
        nodes = self.profile.nodes()
        self.fleet = Fleet(
            self.server,
            booted_specs(nodes) if self.config.machine_configs else nodes,
            self.state_dir,
            ca_pem=self.ca_pem,
            runtime=RuntimeConfig.for_this_environment(self.config.own_images),
        )
        await self.fleet.start()
        if self.config.machine_configs:
            install_openshift_config(self.server, self.profile.nodes(), self.url)
            if self.profile.openshift_version:
                install_openshift_platform(self.server, self.profile.openshift_version)
                clustermonitoring.install(self.server)
            install_machine_configs(self.server, self.profile.nodes())
            self.machine_configs = MachineConfigOperator(
                self.server, self.server.clock, self.fleet, reboot_downtime=self.profile.reboot_seconds
            )
            self.machine_configs.start()
        if self.config.default_scheduler:
            await self._start_default_scheduler()
        config = kubeconfig.render_kubeconfig(self.url, self.ca_pem, self.server.authn.admin_token)
        kubeconfig.write_kubeconfig(self.kubeconfig_path, config)
        log.info("API server ready at %s", self.url)

    async def _start_default_scheduler(self) -> None:
        """The same framework as ``nrop-scheduler``, talking HTTPS to this server like any client."""
        client = KubeClient(
            ClientConfig(
                self.url, ca_data=self.ca_pem, token=self.server.authn.admin_token, source="embedded"
            ),
            rate_limit=None,
            user_agent="default-scheduler",
        )
        self.scheduler = Scheduler(default_configuration(), client)
        log.info("starting the default scheduler")
        await self.scheduler.start()

    async def stop(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
            await self.scheduler.client.close()
        if self.controllers is not None:
            await self.controllers.stop()
        if self.machine_configs is not None:
            await self.machine_configs.stop()
        if self.fleet is not None:
            await self.fleet.stop()
        if self._lifecycle is not None:
            await self._lifecycle.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._temporary_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        log.info("cluster stopped")


class ClusterThread:
    """A cluster running in a background thread with its own event loop (for tests and benches)."""

    def __init__(self, config: ClusterConfig) -> None:
        self.cluster = LocalCluster(config)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nrop-cluster", daemon=True)
        self._started = False

    def __enter__(self) -> LocalCluster:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.cluster.start(), self._loop).result(timeout=60)
        self._started = True
        return self.cluster

    def call(self, fn, *args):  # type: ignore[no-untyped-def]
        """Run ``fn(*args)`` on the cluster's loop (the store is not thread-safe) and return its result."""

        async def runner():  # type: ignore[no-untyped-def]
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(runner(), self._loop).result(timeout=30)

    def __exit__(self, *exc: object) -> None:
        if self._started:
            asyncio.run_coroutine_threadsafe(self.cluster.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
