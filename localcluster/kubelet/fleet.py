"""The kubelets of a cluster: one per node of the profile, started and stopped together.

Also owns what the API server forwards to a node (``/api/v1/nodes/<name>/proxy/<path>``,
served in-process instead of over the kubelet's port 10250):

* ``configz``: the kubelet's configuration, as a real kubelet's ``/configz``;
* ``healthz``: ``ok``;
* ``pods``: the pods bound to the node, as a ``PodList`` (a real kubelet's ``/pods``);
* ``containerLogs/<namespace>/<pod>/<container>``: the container's log (``tailLines``,
  ``limitBytes``, ``timestamps``, ``previous`` as for ``pods/log``);
* ``numa``: this emulator's own per-NUMA-zone summary of allocatable vs. allocated
  resources (what ``nrop-cluster nodes`` prints; a real kubelet has no such endpoint);

and ``pods/<name>/exec`` (WebSocket, :mod:`.execstreams`; SPDY/3.1, :mod:`.execspdy`) into containers that run as processes.

Each node's container logs (:mod:`.containerlogs`) are registered in the API server's
``log_sources`` under the node's name, which ``pods/log`` reads; the logs of pods no kubelet of
the fleet runs (no node yet, or a Node object with no kubelet) are the fleet's own, under
:data:`~nrop.localcluster.apiserver.clients.NO_NODE`: empty unless the ``/debug/nrop/logs`` hook
wrote them.

:meth:`Fleet.restart` reboots one node with a new kubelet configuration (what the embedded
MachineConfig operator does to apply a KubeletConfig): the kubelet stops as at a shutdown (its
pods' processes end), and a new kubelet starts on the same node root and addresses. A reboot
loses every running container, so the CPU and memory manager checkpoints go with them (the
kubelet starts without them, as a real one must when the CPU manager policy changed: it refuses
a ``cpu_manager_state`` written by another policy) and the pods bound to the node are admitted
again under the new configuration. The Node keeps what others wrote on it (labels, taints,
annotations): a kubelet re-registering an existing Node only writes its status.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.clients import NO_NODE, LogQuery
from nrop.localcluster.kubelet import execspdy, execstreams
from nrop.localcluster.kubelet.containerlogs import ContainerLogs
from nrop.localcluster.kubelet.decisions.nodenetwork import NodeNetwork
from nrop.localcluster.kubelet.forkserver import ForkServer
from nrop.localcluster.kubelet.kubelet import Kubelet
from nrop.localcluster.kubelet.machine import KubeletConfig, NodeSpec
from nrop.localcluster.kubelet.processes import MAX_LINE

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["NODES_DIR", "Fleet", "node_root"]

log = logging.getLogger(__name__)

#: Node roots live in ``<state dir>/nodes/<node name>``.
NODES_DIR = "nodes"


def node_root(state_dir: Path, node_name: str) -> Path:
    return Path(state_dir) / NODES_DIR / node_name


class Fleet:
    """Every kubelet of the cluster; registers the ``nodes/proxy`` handler and the nodes' logs on the server."""

    def __init__(
        self, server: InProcessAPI, specs: Iterable[NodeSpec], state_dir: Path, **kubelet_options: Any
    ) -> None:
        self.server = server
        #: One fork server for the containers of every node (:mod:`.forkserver`).
        self.forks = ForkServer(MAX_LINE)
        self._options = {**kubelet_options, "forks": self.forks}
        self.kubelets: dict[str, Kubelet] = {}
        for index, spec in enumerate(specs):
            try:
                self.kubelets[spec.name] = Kubelet(
                    server,
                    spec,
                    node_root(state_dir, spec.name),
                    NodeNetwork.for_index(index),
                    **self._options,
                )
            except ValueError as exc:  # a socket path over the unix limit
                raise OSError(
                    errno.ENAMETOOLONG, f"node {spec.name}: {exc} (choose a shorter --state-dir)"
                ) from None
        self._started: list[Kubelet] = []
        #: The logs of pods that no kubelet of the fleet runs.
        self.unhosted_logs = ContainerLogs()

    async def start(self) -> None:
        if self.kubelets:
            try:
                await self.forks.start()  # its imports run while the kubelets start
            except OSError as exc:
                log.warning("no fork server (containers start through the launcher): %s", exc)
        self.server.proxies["nodes"] = self.proxy
        self.server.proxies["pods/exec"] = self.exec
        self.server.log_sources[NO_NODE] = self.unhosted_logs
        for name, kubelet in self.kubelets.items():
            self.server.log_sources[name] = kubelet.logs
        for kubelet in self.kubelets.values():
            self._started.append(kubelet)  # first: stop() also cleans up a half-started one
            await kubelet.start()

    async def restart(self, name: str, kubelet: KubeletConfig, *, downtime: float = 0.0) -> None:
        """Reboot node ``name``: its kubelet stops, and ``downtime`` seconds later starts again
        with configuration ``kubelet`` (re-registering the existing Node keeps what others wrote
        on it, see :meth:`~.nodereporting.NodeReporter.register`)."""
        old = self.kubelets[name]
        log.info("node %s: rebooting with a new kubelet configuration", name)
        await old.stop()
        if old in self._started:
            self._started.remove(old)
        await asyncio.sleep(downtime)
        new = Kubelet(
            self.server,
            dataclasses.replace(old.spec, kubelet=kubelet),
            old.root,
            old.network,
            logs=old.logs,  # the node's log files outlive its kubelet
            **self._options,
        )
        self.kubelets[name] = new
        self._started.append(new)
        await new.start()

    async def stop(self) -> None:
        started, self._started = self._started, []
        await asyncio.gather(*(k.stop() for k in started), return_exceptions=True)
        await self.forks.close()
        self.server.proxies.pop("nodes", None)
        self.server.proxies.pop("pods/exec", None)
        for name in (NO_NODE, *self.kubelets):
            self.server.log_sources.pop(name, None)

    async def exec(self, request: web.Request, namespace: str, name: str, _: str) -> web.StreamResponse:
        """``pods/<name>/exec`` as a WebSocket (:mod:`.execstreams`) or SPDY/3.1 (:mod:`.execspdy`) stream."""
        pod = self.server.store.get(("", "pods"), namespace, name)
        if pod is None:
            raise errors.NotFound.for_object("pods", "", name)
        spec = pod.get("spec") or {}
        kubelet = self.kubelets.get(spec.get("nodeName") or "")
        if kubelet is None:
            raise errors.BadRequest(f"pod {name} does not have a host assigned")
        query = request.query
        command = query.getall("command", [])
        if not command:
            raise errors.BadRequest("you must specify at least 1 command")
        container = query.get("container") or spec["containers"][0]["name"]
        # a mirror pod stands for its static pod, which the kubelet knows by the hash
        meta = pod["metadata"]
        uid = (meta.get("annotations") or {}).get("kubernetes.io/config.mirror") or meta["uid"]
        options = execstreams.ExecOptions.from_query(query)
        if options.streams_nothing:
            raise errors.BadRequest("you must specify at least 1 of stdin, stdout, stderr")
        process = kubelet.pods.exec_process(uid, container, tuple(command))
        if execspdy.is_spdy(request):
            return await execspdy.serve(request, process, kubelet.supervisor, command, options)
        return await execstreams.serve(request, process, kubelet.supervisor, command, options)

    async def proxy(
        self, request: web.Request, namespace: str, name: str, rest_path: str
    ) -> web.StreamResponse:
        """``nodes/<name>/proxy/<rest_path>``."""
        kubelet = self.kubelets.get(name)
        if kubelet is None:
            if self.server.store.get(("", "nodes"), "", name) is None:
                raise errors.NotFound.for_object("nodes", "", name)
            raise errors.ServiceUnavailable(f'no kubelet serves node "{name}"')
        if request.method != "GET":
            return web.Response(status=405, text="405 method not allowed\n")
        path = rest_path.strip("/")
        if path == "configz":
            return _json(kubelet.configz())
        if path == "numa":
            return _json(kubelet.numa())
        if path == "healthz":
            return web.Response(text="ok", content_type="text/plain")
        if path == "pods":
            items = [
                p
                for p in self.server.store.list(("", "pods"))
                if (p.get("spec") or {}).get("nodeName") == name
            ]
            return _json({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
        parts = path.split("/")
        if parts[0] == "containerLogs" and len(parts) == 4:
            return _container_log(kubelet.logs, request, *parts[1:])
        return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


def _container_log(
    logs: ContainerLogs, request: web.Request, namespace: str, pod: str, container: str
) -> web.Response:
    def number(key: str) -> int | None:
        value = request.query.get(key)
        return int(value) if value is not None and value.lstrip("-").isdigit() else None

    previous = request.query.get("previous", "").lower() == "true"
    if previous and not logs.has_previous(namespace, pod, container):
        return web.Response(
            status=404, text=f'previous terminated container "{container}" in pod "{pod}" not found\n'
        )
    query = LogQuery(
        container,
        previous=previous,
        tail_lines=number("tailLines"),
        limit_bytes=number("limitBytes"),
        timestamps=request.query.get("timestamps", "").lower() == "true",
    )
    return web.Response(body=logs.read(namespace, pod, query), content_type="text/plain")


def _json(obj: Any) -> web.Response:
    return web.Response(body=json.dumps(obj).encode(), content_type="application/json")
