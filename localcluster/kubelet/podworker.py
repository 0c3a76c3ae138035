"""The runtime side of one admitted pod: its :class:`.podruntime.PodRun`, and the real processes,
volumes, kubeconfig, logs and probes of its process containers.

A thin I/O shell, driven by the kubelet's event loop (one event at a time):

* the pod directory ``<node root>/var/lib/kubelet/pods/<uid>/`` holds the pod-directory
  volumes (:mod:`.volumes`; projected service-account tokens are replaced at
  :data:`.volumes.TOKEN_REFRESH_FRACTION` of their lifetime, as the kubelet's token manager
  does), without mount namespaces a kubeconfig for the pod's service account
  (``kubeconfig``: a token minted by the API server's issuer, bound to the pod; valid for a
  year, like the extended tokens upstream gives kubelets), and per container
  ``containers/<name>/``: the working directory, ``HOME`` and the termination message file;
* which containers run as processes and what the others simulate is decided once per pod
  (:mod:`.entrypoints`, :mod:`.knownimages`, :mod:`.simulation`); the simulated ones whose
  program the runtime does not know are :attr:`PodWorker.unknown_programs`;
* :meth:`PodWorker.sync` acts on what the pod run asks for: starts the containers to
  create (environment by :mod:`.containerenv`, command by :mod:`.entrypoints`, in a mount
  namespace of their own holding the container's mounts (:func:`.volumes.mount_plan`) or,
  where the machine refuses those, with paths rewritten to their host side, the paths a
  program reads by default passed as flags (:data:`.knownimages.DEFAULT_PATH_FLAGS`) and
  ``KUBECONFIG`` pointing at the pod's kubeconfig; output into the pod log,
  ``PYTHONUNBUFFERED=1`` and ``PATH``/``HOME``/``HOSTNAME`` as an image would set them, the
  ``PATH`` starting with the container's ``bin`` directory of its image's executables
  (:mod:`.imagebin`), and the pod's address as its loopback for the image's ``curl``) and
  kills the containers to stop (SIGTERM, SIGKILL after the grace period, at least 2 s as the
  kubelet's ``minimumGracePeriodInSeconds``);
* process exits and probe results come back through the kubelet's queue as
  ``("EXITED", ...)`` and ``("PROBE", ...)`` items, so that they are handled in order with
  the API events; a container that could not be created is retried every
  :data:`SYNC_RETRY` seconds (the pod worker's back-off period);
* each running process container gets one probe loop per probe (:mod:`.probing`,
  thresholds by :mod:`.probes`): startup first, liveness and readiness once started.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nrop.curl.destinations import POD_LOOPBACK_VAR
from nrop.localcluster.apiserver import kubeconfig
from nrop.localcluster.apiserver.clients import LogQuery
from nrop.localcluster.clock import Clock
from nrop.localcluster.kubelet import imagebin, podsite, volumes
from nrop.localcluster.kubelet.decisions import containerenv
from nrop.localcluster.kubelet.decisions.entrypoints import (
    EntryPoint,
    RuntimeConfig,
    entry_point,
    image_executables,
)
from nrop.localcluster.kubelet.decisions.pleg import Relists
from nrop.localcluster.kubelet.decisions.podruntime import (
    FALLBACK_LOG_BYTES,
    FALLBACK_LOG_LINES,
    MAX_MESSAGE_BYTES,
    ContainerRef,
    PodRun,
    termination_message,
)
from nrop.localcluster.kubelet.decisions.probes import (
    ProbeError,
    ProbeKind,
    ProbeSpec,
    ProbeTracker,
    container_probes,
)
from nrop.localcluster.kubelet.decisions.simulation import PROCESS, Behaviour, behaviour_of
from nrop.localcluster.kubelet.knownimages import DEFAULT_PATH_FLAGS, container_argv, known_image
from nrop.localcluster.kubelet.probing import ProbeTarget, run_probe
from nrop.localcluster.kubelet.processes import Handle, ProcessSpec, Supervisor

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI
    from nrop.localcluster.kubelet.containerlogs import ContainerLogs

__all__ = ["MINIMUM_GRACE", "SYNC_RETRY", "PodWorker", "RuntimeContext", "pods_dir", "service_env"]

log = logging.getLogger(__name__)

#: The kubelet's ``minimumGracePeriodInSeconds`` for killing a container.
MINIMUM_GRACE = 2.0
#: Seconds before a container that could not be created is tried again.
SYNC_RETRY = 10.0
#: Validity of the pods' service-account tokens (upstream extends kubelet tokens to a year).
TOKEN_SECONDS = 365 * 24 * 3600
_DEFAULT_GRACE = 30.0
_PODS_DIR = Path("var/lib/kubelet/pods")

Obj = dict[str, Any]
#: Puts an item on the kubelet's queue (from the event loop).
Enqueue = Callable[[tuple[Any, ...]], None]


@dataclass(frozen=True)
class RuntimeContext:
    """What the pods of one node share: the API server, the node, the runtime configuration."""

    server: InProcessAPI
    logs: ContainerLogs
    node_name: str
    root: Path
    host_ip: str
    config: RuntimeConfig
    supervisor: Supervisor
    api_url: str
    ca_pem: bytes
    clock: Clock
    #: The node's PLEG relists, when the kubelet sees a simulated container's exit.
    relists: Relists
    enqueue: Enqueue
    allocatable: Callable[[], Mapping[str, str]]
    #: Whether process containers get a mount namespace of their own (else: path rewriting).
    mount_namespaces: bool

    def pod_dir(self, uid: str) -> Path:
        return self.root / _PODS_DIR / uid


def pods_dir(root: Path) -> Path:
    return root / _PODS_DIR


def service_env(api_url: str) -> dict[str, str]:
    """The variables the kubelet gives every container for the ``default/kubernetes`` Service."""
    host, _, port = api_url.removeprefix("https://").rpartition(":")
    address = f"tcp://{host}:{port}"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": address,
        f"KUBERNETES_PORT_{port}_TCP": address,
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": port,
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


class _Unavailable(Exception):
    """A container cannot be created yet: ``(reason, message)``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class PodWorker:
    """One admitted pod on the node."""

    def __init__(self, ctx: RuntimeContext, pod: Obj, pod_ip: str, now: datetime) -> None:
        self.ctx = ctx
        self.pod = copy.deepcopy(pod)
        meta, spec = self.pod["metadata"], self.pod.get("spec") or {}
        self.uid, self.namespace, self.name = meta["uid"], meta["namespace"], meta["name"]
        self.pod_ip = pod_ip
        self.dir = ctx.pod_dir(self.uid)
        self._specs: dict[str, tuple[str, Obj]] = {}  # name -> (field path, container spec)
        for field, entries in (
            ("initContainers", spec.get("initContainers")),
            ("containers", spec.get("containers")),
        ):
            for index, container in enumerate(entries or ()):
                self._specs[container["name"]] = (f"spec.{field}[{index}]", container)
        #: What each container runs: ``command`` and ``args`` completed by its image's defaults.
        self._argv: dict[str, tuple[list[str], list[str]]] = {}
        self._behaviours: dict[str, Behaviour] = {}
        #: What a ``PATH`` lookup in each process container finds (its ``bin`` directory).
        self._executables: dict[str, Mapping[str, Path]] = {}
        for name, (_, c) in self._specs.items():
            image = str(c.get("image", ""))
            command, args = self._argv[name] = container_argv(c, known_image(image, ctx.config.images))
            executables = image_executables(image, ctx.config)
            if executables is not None:
                self._executables[name] = executables
            self._behaviours[name] = PROCESS if executables is not None else behaviour_of([*command, *args])
        self._processes = frozenset(n for n, b in self._behaviours.items() if b.process)
        #: Simulated containers whose program the runtime does not know (they stand in as ``pause``).
        self.unknown_programs = frozenset(n for n, b in self._behaviours.items() if not b.known)
        # after a reboot the node's logs know the containers it ran: they start again at the next count
        counts = {n: ctx.logs.next_restart_count(self.namespace, self.name, self.uid, n) for n in self._specs}
        self.run = PodRun(self.pod, now, self._behaviours, seen=ctx.relists.after, restart_counts=counts)
        self._handles: dict[str, tuple[str, Handle]] = {}  # name -> (container id, process)
        self._probes: dict[str, list[asyncio.Task[None]]] = {}
        self._grace: dict[str, float] = {}
        self._retry: asyncio.TimerHandle | None = None
        self._token_refresh: asyncio.TimerHandle | None = None
        self._kubeconfig: Path | None = None
        self._planned: dict[str, volumes.PlannedVolume] | None = None
        self._closed = False  # the pod is gone: late output is dropped, nothing is retried

    # -- queries ------------------------------------------------------------------------------

    @property
    def processes_left(self) -> bool:
        return bool(self._handles)

    @property
    def pod_grace(self) -> float:
        value = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        return float(value) if isinstance(value, int) else _DEFAULT_GRACE

    def update(self, pod: Obj) -> None:
        """The pod object changed (labels, annotations: what the downward API shows next)."""
        self.pod = copy.deepcopy(pod)

    # -- acting on the pod run ----------------------------------------------------------------

    async def sync(self) -> None:
        """Start the containers to create, kill the containers to stop."""
        now = self.ctx.clock.now()
        for ref in self.run.to_stop():
            current = self._handles.get(ref.name)
            if current is not None and current[0] == ref.container_id:
                grace = max(MINIMUM_GRACE, self._grace.get(ref.name, self.pod_grace))
                self.ctx.supervisor.terminate(current[1], grace)
        waiting = False
        attempted: set[tuple[str, str]] = set()
        while True:
            # A container that fails to start may be due for an immediate restart: go again.
            refs = [
                ref
                for ref in self.run.to_create()
                if (ref.name, ref.container_id) not in attempted and ref.name not in self._handles
            ]
            if not refs:
                break
            for ref in refs:
                attempted.add((ref.name, ref.container_id))
                try:
                    await self._create(ref, now)
                except _Unavailable as unavailable:
                    waiting = True
                    self.run.create_failed(
                        ref.name, ref.container_id, unavailable.reason, unavailable.message, now
                    )
                    log.info(
                        "pod %s/%s container %s: %s", self.namespace, self.name, ref.name, unavailable.message
                    )
        if waiting and self._retry is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._retry = loop.call_later(SYNC_RETRY, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        self.ctx.enqueue(("SYNC", self.uid))

    def simulated_started(self, name: str, restart_count: int) -> None:
        """A simulated container (re)started: a fresh log instance holding what its ``echo`` prints."""
        if name in self._processes or name not in self._specs:
            return
        logs = self.ctx.logs
        logs.started(self.namespace, self.name, self.uid, name, restart_count)
        output = self._behaviours[name].output
        if output:
            logs.append(self.namespace, self.name, name, output)

    def kill(self, name: str, cid: str, grace: float | None, now: datetime) -> bool:
        """A failed liveness/startup probe: the container is stopped (then restarted per policy)."""
        if not self.run.kill(name, cid, now):
            return False
        self._grace[name] = grace if grace is not None else self.pod_grace
        self._cancel_probes(name)
        return True

    def terminate(self, grace: float, now: datetime) -> None:
        """Graceful deletion with ``grace`` seconds."""
        for name in self._specs:
            self._grace[name] = grace
            self._cancel_probes(name)
        self.run.terminate(now)

    def exited(self, name: str, cid: str, code: int, now: datetime) -> bool:
        """A process ended: record it (with its termination message) in the pod run."""
        current = self._handles.get(name)
        if current is not None and current[0] == cid:
            del self._handles[name]
        self._cancel_probes(name)
        self._grace.pop(name, None)
        self.ctx.logs.close(self.namespace, self.name, name)
        return self.run.exited(name, cid, code, now, self._termination_message(name, code))

    def abandon(self) -> None:
        """Stop probing and retrying; the kubelet's supervisor ends the processes."""
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._token_refresh is not None:
            self._token_refresh.cancel()
            self._token_refresh = None
        for name in list(self._probes):
            self._cancel_probes(name)

    async def close(self) -> None:
        """The pod is gone: stop its processes (SIGTERM, then SIGKILL after 2 s), remove its directory."""
        self.abandon()
        handles = [handle for _, handle in self._handles.values()]
        for handle in handles:
            self.ctx.supervisor.terminate(handle, MINIMUM_GRACE)
        for handle in handles:
            await handle.done.wait()
        self._handles.clear()
        await asyncio.to_thread(shutil.rmtree, self.dir, True)

    # -- creating a process container -----------------------------------------------------------

    def _lookup(self, plural: str) -> Callable[[str], Obj | None]:
        def get(name: str) -> Obj | None:
            return self.ctx.server.store.get(("", plural), self.namespace, name)

        return get

    def _facts(self) -> containerenv.DownwardFacts:
        return containerenv.DownwardFacts(self.pod_ip, self.ctx.host_ip, self.ctx.allocatable())

    def _service_account(self) -> str | None:
        """The pod's service account, or ``None`` when its token is not to be mounted."""
        spec = self.pod.get("spec") or {}
        name = str(spec.get("serviceAccountName") or "default")
        sa = self._lookup("serviceaccounts")(name)
        if sa is None:
            raise _Unavailable(
                "ContainerCreating", f'failed to fetch token: serviceaccounts "{name}" not found'
            )
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        return None if automount is False else name

    def _issue(self, audiences: list[str], seconds: int) -> str:
        spec = self.pod.get("spec") or {}
        name = str(spec.get("serviceAccountName") or "default")
        sa = self._lookup("serviceaccounts")(name)
        if sa is None:
            raise volumes.VolumeError(f'failed to fetch token: serviceaccounts "{name}" not found')
        issued = self.ctx.server.authn.issue(
            self.namespace,
            name,
            sa["metadata"]["uid"],
            audiences=audiences or None,
            expiration_seconds=seconds,
            bound={"kind": "Pod", "name": self.name, "uid": self.uid},
            now=self.ctx.clock.now().timestamp(),
        )
        return issued.token

    def _write_volume(self, volume: volumes.PlannedVolume) -> None:
        files = volumes.volume_files(
            volume, self.pod, self._facts(), self._lookup("configmaps"), self._lookup("secrets"), self._issue
        )
        volumes.materialise(volume, files)

    def _schedule_token_refresh(self) -> None:
        """Replace the projected tokens when :func:`.volumes.token_refresh_delay` says."""
        delay = volumes.token_refresh_delay((self._planned or {}).values())
        if delay is None or self._token_refresh is not None or self._closed:
            return
        self._token_refresh = asyncio.get_running_loop().call_later(delay, self._refresh_tokens)

    def _refresh_tokens(self) -> None:
        self._token_refresh = None
        if self._closed:
            return
        for volume in (self._planned or {}).values():
            if volumes.token_lifetime(volume) is None:
                continue
            try:
                self._write_volume(volume)
            except (volumes.VolumeError, OSError) as exc:
                log.warning(
                    "pod %s/%s: refreshing volume %s failed: %s", self.namespace, self.name, volume.name, exc
                )
        self._schedule_token_refresh()

    def _prepare_sandbox(self) -> None:
        """Volumes (planned once, written at every start) and, without mount namespaces, the
        service-account kubeconfig (a real kubelet sets no ``KUBECONFIG``: in a namespace of
        its own the container finds its projected token where in-cluster clients look)."""
        try:
            if self._planned is None:
                self._planned = volumes.plan_volumes(self.pod, self.ctx.root, self.dir)
            for volume in self._planned.values():
                self._write_volume(volume)
        except volumes.VolumeError as exc:
            raise _Unavailable("ContainerCreating", f"MountVolume.SetUp failed: {exc}") from None
        self._schedule_token_refresh()
        name = None if self.ctx.mount_namespaces else self._service_account()
        if name is None:
            self._kubeconfig = None
            return
        token = self._issue([], TOKEN_SECONDS)
        config = kubeconfig.render_kubeconfig(
            self.ctx.api_url,
            self.ctx.ca_pem,
            token,
            user=f"system:serviceaccount:{self.namespace}:{name}",
            namespace=self.namespace,
        )
        self._kubeconfig = kubeconfig.write_kubeconfig(self.dir / "kubeconfig", config)

    def _container_dir(self, name: str) -> Path:
        return self.dir / "containers" / name

    def _image_env(self, name: str) -> dict[str, str]:
        hostname = self.ctx.node_name if (self.pod.get("spec") or {}).get("hostNetwork") else self.name
        env = {
            "PATH": f"{self._container_dir(name) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self._container_dir(name)),
            "HOSTNAME": hostname,
            "PYTHONUNBUFFERED": "1",
            "LANG": "C.UTF-8",
            # no network namespace: the container's loopback is its pod's address (nrop.curl.destinations)
            POD_LOOPBACK_VAR: self.pod_ip,
        }
        if self._kubeconfig is not None:
            env["KUBECONFIG"] = str(self._kubeconfig)
        env.update(service_env(self.ctx.api_url))
        return env

    def _process(self, name: str, command: list[str], args: list[str]) -> ProcessSpec | str:
        """The process of container ``name`` running ``command`` + ``args``, or why it cannot run."""
        where, container = self._specs[name]
        try:
            env = containerenv.container_env(
                container, self.pod, self._facts(), self._lookup("configmaps"), self._lookup("secrets")
            )
        except containerenv.ConfigError as exc:
            raise _Unavailable(exc.reason, str(exc)) from None
        container_dir = self._container_dir(name)
        planned = self._planned or {}
        try:
            mounts = volumes.mount_plan(container, planned, self.ctx.root, container_dir, where)
        except volumes.VolumeError as exc:
            raise _Unavailable("CreateContainerConfigError", str(exc)) from None
        resolved = entry_point(
            str(container.get("image", "")),
            containerenv.expand_command(command, env),
            containerenv.expand_command(args, env),
            self.ctx.config,
        )
        if not isinstance(resolved, EntryPoint):
            return resolved.message
        environment = self._image_env(name)
        if self.ctx.mount_namespaces:
            volumes.create_missing_sources(mounts)
            environment.update(env)
            return ProcessSpec(
                resolved.argv,
                environment,
                container_dir,
                rootfs=container_dir / "rootfs",
                mounts=tuple(mounts),
            )
        # No mount namespace: the container's paths are rewritten to the host's (:mod:`.volumes`).
        paths = volumes.container_paths(container, planned, self.ctx.root, container_dir, where)
        environment.update({key: volumes.rewrite(value, paths) for key, value in env.items()})
        account_dir = paths.get(podsite.SERVICE_ACCOUNT_DIR)
        if account_dir is not None:
            site = podsite.write_site(container_dir / "python", account_dir).parent
            environment["PYTHONPATH"] = ":".join(filter(None, (str(site), environment.get("PYTHONPATH"))))
        defaults = DEFAULT_PATH_FLAGS.get(resolved.program, ())
        argv = (resolved.argv[0], *volumes.rewrite_all([*defaults, *resolved.argv[1:]], paths))
        return ProcessSpec(argv, environment, container_dir)

    async def _create(self, ref: ContainerRef, now: datetime) -> None:
        name, cid = ref.name, ref.container_id
        self._prepare_sandbox()
        container_dir = self._container_dir(name)
        container_dir.mkdir(parents=True, exist_ok=True)
        (container_dir / "termination-log").write_bytes(b"")
        imagebin.populate(container_dir / "bin", self._executables.get(name, {}), self.ctx.config.bin_dir)
        probes = self._probe_specs(name)
        spec = self._process(name, *self._argv[name])
        logs = self.ctx.logs
        logs.started(self.namespace, self.name, self.uid, name, ref.restart_count)
        if isinstance(spec, str):
            self.run.start_failed(name, cid, spec, now)
            return
        enqueue, uid = self.ctx.enqueue, self.uid

        def on_line(text: str) -> None:
            if not self._closed:
                logs.append(self.namespace, self.name, name, text)

        def on_exit(code: int) -> None:
            enqueue(("EXITED", uid, name, cid, code))

        try:
            handle = await self.ctx.supervisor.start(spec, on_line, on_exit)
        except OSError as exc:
            self.run.start_failed(name, cid, f"failed to start container process: {exc}", now)
            return
        self._handles[name] = (cid, handle)
        self.run.created(name, cid, self.ctx.clock.now())
        log.info("pod %s/%s container %s: pid %d", self.namespace, self.name, name, handle.pid)
        self._start_probes(name, cid, probes)

    def _termination_message(self, name: str, code: int) -> str:
        _, container = self._specs[name]
        path = self._container_dir(name) / "termination-log"
        try:
            with path.open("rb") as fh:
                file_text: str | None = fh.read(MAX_MESSAGE_BYTES).decode(errors="replace")
        except OSError:
            file_text = None
        policy = str(container.get("terminationMessagePolicy") or "File")
        tail = ""
        if policy == "FallbackToLogsOnError" and code != 0 and not file_text:
            query = LogQuery(name, tail_lines=FALLBACK_LOG_LINES, limit_bytes=FALLBACK_LOG_BYTES)
            tail = self.ctx.logs.read(self.namespace, self.name, query).decode(errors="replace")
        return termination_message(policy, code, file_text, tail)

    # -- probes -------------------------------------------------------------------------------

    def _probe_specs(self, name: str) -> tuple[ProbeSpec, ...]:
        where, container = self._specs[name]
        try:
            return container_probes(container, where)
        except ProbeError as exc:
            raise _Unavailable("CreateContainerConfigError", str(exc)) from None

    def _start_probes(self, name: str, cid: str, specs: tuple[ProbeSpec, ...]) -> None:
        self._probes[name] = [
            asyncio.create_task(
                self._probe_loop(name, cid, spec), name=f"probe-{self.name}-{name}-{spec.kind}"
            )
            for spec in specs
        ]

    def _cancel_probes(self, name: str) -> None:
        for task in self._probes.pop(name, ()):
            task.cancel()

    def _container_started(self, name: str, cid: str) -> bool:
        return any(c.name == name and c.container_id == cid and c.started for c in self.run.containers)

    async def _probe_loop(self, name: str, cid: str, spec: ProbeSpec) -> None:
        _, container = self._specs[name]
        target = ProbeTarget(
            pod_ip=self.pod_ip,
            ports=container.get("ports") or (),
            exec_process=lambda command: self._exec_process(name, command),
            supervisor=self.ctx.supervisor,
        )
        tracker = ProbeTracker(spec)
        loop = asyncio.get_running_loop()
        began = loop.time()
        while not tracker.on_hold:
            started = self._container_started(name, cid)
            gated = started if spec.kind != ProbeKind.STARTUP else not started
            if gated and loop.time() - began >= spec.initial_delay:
                success, message = await run_probe(spec, target)
                if tracker.record(success):
                    self.ctx.enqueue(("PROBE", self.uid, name, cid, spec, tracker.result, message))
                if spec.kind == ProbeKind.STARTUP and tracker.result:
                    return
            await asyncio.sleep(spec.period)

    def exec_process(self, name: str, command: tuple[str, ...]) -> ProcessSpec | str:
        """``pods/exec`` into container ``name``: its process, or why there is none."""
        if name not in self._specs:
            return f"container {name} is not valid for pod {self.name}"
        if name not in self._processes:
            image = self._specs[name][1].get("image", "")
            return (
                f'container "{name}" (image "{image}") is simulated by the embedded cluster: only '
                "containers of images whose programs it runs (the project's own image, and upstream's "
                "images in its table) are processes and accept exec"
            )
        if name not in self._handles:
            return f'container "{name}" is not running'
        return self._exec_process(name, command)

    def _exec_process(self, name: str, command: tuple[str, ...]) -> ProcessSpec | str:
        try:
            return self._process(name, list(command), [])
        except _Unavailable as exc:
            return exc.message
