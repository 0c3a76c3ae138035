"""The embedded MachineConfig operator: KubeletConfigs applied to pools of nodes by rebooting them.

Plays the part of OpenShift's machine-config-operator that the NUMA specs exercise, so that a
KubeletConfig change is a roll-out of seconds instead of an hour of node reboots:

* :func:`install` serves ``machineconfigpools``, ``kubeletconfigs`` and ``machineconfigs``
  (``machineconfiguration.openshift.io/v1``, cluster scoped, status subresource, schemas as
  loose as upstream's), creates the default pools ``master`` and ``worker`` as an OpenShift
  cluster has them, and a KubeletConfig ``worker-numa-topology`` for the ``worker`` pool that
  states its nodes' topology manager policy and scope (the cluster-provided KubeletConfig a
  NUMA-tuned OpenShift cluster has, which upstream's suite uses with
  ``E2E_NROP_INSTALL_SKIP_KC``), and ``master-numa-topology`` likewise when the masters are
  schedulable workers (compact clusters);
* :class:`MachineConfigOperator` renders each pool (its KubeletConfigs merged, and the
  MachineConfig objects its ``machineConfigSelector`` selects, named ``rendered-<pool>-<hash>``;
  the pool's ``configuration.source`` lists them by name with the generated ones), reports each KubeletConfig's condition (``Success``, or
  ``Failure`` with the reason it cannot apply), moves the nodes' ``desiredConfig`` one node at a
  time, and plays each node's machine-config daemon: the node's kubelet stops, stays down
  :data:`REBOOT_DOWNTIME` seconds (a profile's ``machineConfig.rebootSeconds``) and starts with the rendered configuration
  (:meth:`~..kubelet.fleet.Fleet.restart`), then ``currentConfig``
  follows and the node's ``state`` goes back to ``Done``; the pool status (machine counts,
  ``Updated``/``Updating``, ``configuration``) is written as MCO writes it.

Decisions are in :mod:`.machineconfigs`; this module reads the store and writes through the
API. Differences from MCO: the rendered configs are kept in memory (no ``rendered-*`` objects),
the content of a MachineConfig object (files, units, kernel arguments) changes nothing on the
emulated nodes beyond the reboot that applies it, no drain or cordon before a reboot, no KubeletConfig finalizer, ``maxUnavailable`` and ``paused``
are not read (one node at a time, always).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nrop.api.metatime import rfc3339
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions import machineconfigs as mc
from nrop.localcluster.controllers.decisions.crds import cluster_crd
from nrop.localcluster.controllers.reconciling import Controller, kind_of
from nrop.localcluster.kubelet.decisions.nodestatus import node_labels
from nrop.localcluster.kubelet.machine import NodeSpec

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI
    from nrop.localcluster.kubelet.fleet import Fleet

__all__ = ["GROUP", "INITIAL_KUBELETCONFIG", "MachineConfigOperator", "booted_specs", "install"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
GROUP = "machineconfiguration.openshift.io"
API_VERSION = f"{GROUP}/v1"
_MCPS = (GROUP, "machineconfigpools")
_KCS = (GROUP, "kubeletconfigs")
_MCS = (GROUP, "machineconfigs")
_NODES = ("", "nodes")
_APISERVERS = ("config.openshift.io", "apiservers")
_KEY = "pools"
_FIELD_MANAGER = "machine-config-operator"
#: The KubeletConfig the embedded cluster starts with (the ``worker`` pool's topology manager settings).
INITIAL_KUBELETCONFIG = "worker-numa-topology"
_ROLE_LABEL = "machineconfiguration.openshift.io/role"
#: Seconds a rebooting node stays down: a roll-out of a pool lasts long enough that a client
#: polling every second sees it ``Updating`` (upstream's specs wait for that before ``Updated``).
REBOOT_DOWNTIME = 2.0
#: MCO's node controller syncs a pool this long after the event that concerns it
#: (``defaultUpdateDelay``, "a pause to deal with churn"): a client that reads a pool right after
#: changing a node or a KubeletConfig reads it as it was, as upstream's MCP waits expect.
UPDATE_DELAY = 5.0
_POOL_LABEL = "pools.operator.machineconfiguration.openshift.io/"
_WORKER_ROLE = "node-role.kubernetes.io/worker"
_CLUSTER = "cluster"


_SELECTOR = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _crd(kind: str, plural: str, short_names: list[str], spec_properties: Mapping[str, Any]) -> Obj:
    return cluster_crd(GROUP, kind, plural, short_names=short_names, spec_properties=spec_properties)


CRDS = (
    _crd(
        "MachineConfigPool",
        "machineconfigpools",
        ["mcp"],
        {
            "machineConfigSelector": _SELECTOR,
            "nodeSelector": _SELECTOR,
            "paused": {"type": "boolean"},
            "maxUnavailable": {"x-kubernetes-int-or-string": True},
            "configuration": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    ),
    _crd(
        "KubeletConfig",
        "kubeletconfigs",
        [],
        {
            "machineConfigPoolSelector": _SELECTOR,
            "kubeletConfig": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "autoSizingReserved": {"type": "boolean"},
            "logLevel": {"type": "integer"},
            "tlsSecurityProfile": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    ),
    _crd(
        "MachineConfig",
        "machineconfigs",
        ["mc"],
        {
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "extensions": {"type": "array", "items": {"type": "string"}},
            "fips": {"type": "boolean"},
            "kernelArguments": {"type": "array", "items": {"type": "string"}},
            "kernelType": {"type": "string"},
            "osImageURL": {"type": "string"},
        },
    ),
)


def default_pools() -> list[Obj]:
    """The pools every OpenShift cluster has."""
    pools = []
    for role in (mc.MASTER, mc.WORKER):
        labels = {f"{GROUP}/mco-built-in": "", f"{_POOL_LABEL}{role}": ""}
        if role == mc.MASTER:
            labels["operator.machineconfiguration.openshift.io/required-for-upgrade"] = ""
        pools.append(
            {
                "apiVersion": API_VERSION,
                "kind": "MachineConfigPool",
                "metadata": {"name": role, "labels": labels},
                "spec": {
                    "machineConfigSelector": {"matchLabels": {_ROLE_LABEL: role}},
                    "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{role}": ""}},
                    "paused": False,
                },
            }
        )
    return pools


def initial_kubeletconfig(node: NodeSpec, pool: str = mc.WORKER) -> Obj:
    """A KubeletConfig ``<pool>-numa-topology`` for ``pool`` stating its nodes' topology manager settings."""
    return {
        "apiVersion": API_VERSION,
        "kind": "KubeletConfig",
        "metadata": {"name": INITIAL_KUBELETCONFIG if pool == mc.WORKER else f"{pool}-numa-topology"},
        "spec": {
            "machineConfigPoolSelector": {"matchLabels": {f"{_POOL_LABEL}{pool}": ""}},
            "kubeletConfig": {
                "topologyManagerPolicy": node.kubelet.topology_manager_policy,
                "topologyManagerScope": node.kubelet.topology_manager_scope,
            },
        },
    }


def tuned_pool_members(specs: Iterable[NodeSpec]) -> dict[str, list[NodeSpec]]:
    """The nodes of each default pool that a NUMA-tuned cluster gives a KubeletConfig: the
    ``worker`` pool's, and the ``master`` pool's when its masters are schedulable (they carry the
    worker role, as on a compact cluster)."""
    members: dict[str, list[NodeSpec]] = {}
    for spec in specs:
        labels = node_labels(spec)
        pool = mc.pool_of_node(labels, default_pools())[0]
        if pool == mc.WORKER or (pool == mc.MASTER and _WORKER_ROLE in labels):
            members.setdefault(pool, []).append(spec)
    return members


def install(server: InProcessAPI, specs: Iterable[NodeSpec]) -> None:
    """Serve the MachineConfig kinds and create the default pools and, for each pool of
    :func:`tuned_pool_members` whose nodes agree on their topology manager settings, its initial
    KubeletConfig."""
    opts = WriteOptions(field_manager=_FIELD_MANAGER)
    crd_kind = kind_of(server, "apiextensions.k8s.io", "customresourcedefinitions")
    for crd in CRDS:
        server.rest.create(crd_kind, "", copy.deepcopy(crd), opts)
    mcp_kind = kind_of(server, GROUP, "machineconfigpools")
    for pool in default_pools():
        server.rest.create(mcp_kind, "", pool, opts)
    for pool, nodes in sorted(tuned_pool_members(specs).items(), key=lambda item: item[0] != mc.WORKER):
        settings = {(s.kubelet.topology_manager_policy, s.kubelet.topology_manager_scope) for s in nodes}
        if len(settings) > 1:
            # One KubeletConfig for the pool would change some of its kubelets at once.
            log.info(
                "%s nodes differ in topology manager settings %s: no initial KubeletConfig",
                pool,
                sorted(settings),
            )
            continue
        server.rest.create(
            kind_of(server, GROUP, "kubeletconfigs"), "", initial_kubeletconfig(nodes[0], pool), opts
        )


def cluster_tls_profile(apiserver: Mapping[str, Any] | None) -> Obj | None:
    """The ``tlsSecurityProfile`` of ``APIServer/cluster`` (None: unset, Intermediate)."""
    return ((apiserver or {}).get("spec") or {}).get("tlsSecurityProfile")


def booted_specs(specs: Iterable[NodeSpec]) -> list[NodeSpec]:
    """The nodes as an OpenShift cluster boots them: their kubelets serve with the TLS settings of
    the cluster's initial profile (Intermediate), which every pool's rendered config carries."""
    tls = mc.tls_payload(None)
    return [dataclasses.replace(spec, kubelet=mc.overlay_kubelet(spec, tls)) for spec in specs]


def _ready(node: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )


class MachineConfigOperator(Controller):
    """Renders the pools and rolls their nodes (one key: every pool is synced together)."""

    name = "machine-config-operator"
    reaction_delay = UPDATE_DELAY

    def __init__(
        self, server: InProcessAPI, clock: Clock, fleet: Fleet, *, reboot_downtime: float | None = None
    ) -> None:
        super().__init__(server, clock)
        self.reboot_downtime = REBOOT_DOWNTIME if reboot_downtime is None else reboot_downtime
        self.opts = WriteOptions(field_manager=_FIELD_MANAGER)
        self.fleet = fleet
        #: Each node's profile configuration: what a pool's KubeletConfigs are laid over.
        self.profile_specs = {name: kubelet.spec for name, kubelet in fleet.kubelets.items()}
        self.node_kind = kind_of(server, "", "nodes")
        self.mcp_kind = kind_of(server, GROUP, "machineconfigpools")
        self.kc_kind = kind_of(server, GROUP, "kubeletconfigs")
        #: rendered config name -> the merged KubeletConfig payload it stands for.
        self._rendered: dict[str, Obj] = {}
        self._updating: dict[str, asyncio.Task[None]] = {}
        #: (node, rendered config) updates that failed: the node stays Degraded on them.
        self._failed: set[tuple[str, str]] = set()
        #: (node, problem) of nodes in no pool already logged.
        self._reported: set[tuple[str, str]] = set()

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return (
            (_MCPS, lambda _: [_KEY]),
            (_KCS, lambda _: [_KEY]),
            (_MCS, lambda _: [_KEY]),
            (_NODES, lambda _: [_KEY]),
            (_APISERVERS, lambda _: [_KEY]),
        )

    def initial_keys(self) -> Iterable[str]:
        return [_KEY]

    async def stop(self) -> None:
        tasks = list(self._updating.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        await super().stop()

    # -- sync ----------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        now = rfc3339(self.clock.now())
        pools = self.store.list(_MCPS)
        nodes = self.store.list(_NODES)
        members: dict[str, list[Obj]] = defaultdict(list)
        for node in nodes:
            pool, problem = mc.pool_of_node(node["metadata"].get("labels") or {}, pools)
            if problem and (node["metadata"]["name"], problem) not in self._reported:
                self._reported.add((node["metadata"]["name"], problem))
                log.warning("node %s %s", node["metadata"]["name"], problem)
            elif pool is not None:
                members[pool].append(node)
        specs = {
            pool: [
                self.profile_specs[n["metadata"]["name"]]
                for n in found
                if n["metadata"]["name"] in self.profile_specs
            ]
            for pool, found in members.items()
        }
        payloads: dict[str, list[Obj]] = defaultdict(list)
        kcs = sorted(
            self.store.list(_KCS),
            key=lambda kc: (kc["metadata"].get("creationTimestamp", ""), kc["metadata"]["name"]),
        )
        for kc in kcs:
            if kc["metadata"].get("deletionTimestamp"):
                continue
            targets = mc.kubeletconfig_pools(kc, pools)
            problem = mc.kubeletconfig_problem(kc, targets, specs)
            self._write_kc_status(kc, problem, now)
            if problem:
                continue
            for pool in targets:
                payloads[pool].append(mc.payload_of(kc))
        cluster_tls = mc.tls_payload(cluster_tls_profile(self.store.get(_APISERVERS, "", _CLUSTER)))
        machine_configs = self.store.list(_MCS)
        for pool in pools:
            selected = mc.selected_machine_configs(pool, machine_configs)
            self._sync_pool(
                pool, members.get(pool["metadata"]["name"], []), payloads, selected, cluster_tls, now
            )

    def _sync_pool(
        self,
        pool: Obj,
        nodes: list[Obj],
        payloads: Mapping[str, list[Obj]],
        selected: list[Mapping[str, Any]],
        cluster_tls: Obj,
        now: str,
    ) -> None:
        name = pool["metadata"]["name"]
        overlay = mc.merge_payloads([cluster_tls, *payloads.get(name, [])])
        target = mc.rendered_name(name, overlay, selected)
        self._rendered[target] = overlay
        states = [self._node_state(node, name, target) for node in nodes]
        for node_name in mc.nodes_to_update(states, target):
            log.info("pool %s: node %s to %s", name, node_name, target)
            self._annotate(node_name, {mc.DESIRED_CONFIG: target, mc.STATE: mc.STATE_WORKING})
        states = [self._node_state(self.store.get(_NODES, "", s.name) or {}, name, target) for s in states]
        for state in states:
            if state.current != state.desired and state.name not in self._updating:
                self._start_update(state.name, state.desired)
        sources = mc.generated_sources(
            name, len(payloads.get(name, [])), [m["metadata"]["name"] for m in selected]
        )
        status = mc.pool_status(pool, states, target, sources, now)
        spec_configuration = {"name": target, "source": status["configuration"]["source"]}
        if (pool.get("spec") or {}).get("configuration") != spec_configuration:
            updated = copy.deepcopy(pool)
            updated.setdefault("spec", {})["configuration"] = spec_configuration
            pool = self.update(self.mcp_kind, updated)
            status["observedGeneration"] = pool["metadata"].get("generation", 1)
        if pool.get("status") != status:
            updated = copy.deepcopy(pool)
            updated["status"] = status
            self.update(self.mcp_kind, updated, status=True)

    def _node_state(self, node: Obj, pool: str, target: str) -> mc.NodeState:
        meta = node.get("metadata") or {}
        name = meta.get("name", "")
        annotations = meta.get("annotations") or {}
        if mc.CURRENT_CONFIG not in annotations:
            # First sight: the node runs its profile configuration, the pool's without KubeletConfigs
            # (or the target itself when that changes nothing).
            booted = mc.rendered_name(pool, {})
            self._rendered.setdefault(booted, {})
            kubelet = self.fleet.kubelets.get(name)
            spec = self.profile_specs.get(name)
            if kubelet is not None and spec is not None:
                try:
                    if mc.overlay_kubelet(spec, self._rendered[target]) == kubelet.spec.kubelet:
                        booted = target
                except ValueError:
                    pass
            annotations = {mc.CURRENT_CONFIG: booted, mc.DESIRED_CONFIG: booted, mc.STATE: mc.STATE_DONE}
            self._annotate(name, annotations)
        return mc.NodeState(
            name,
            annotations.get(mc.CURRENT_CONFIG, ""),
            annotations.get(mc.DESIRED_CONFIG, ""),
            annotations.get(mc.STATE, ""),
            _ready(node),
        )

    def _annotate(self, node_name: str, values: Mapping[str, str]) -> None:
        node = self.store.get(_NODES, "", node_name)
        if node is None:
            return
        current = node["metadata"].get("annotations") or {}
        if all(current.get(k) == v for k, v in values.items()):
            return
        updated = copy.deepcopy(node)
        updated["metadata"]["annotations"] = {**current, **values}
        self.update(self.node_kind, updated)

    def _write_kc_status(self, kc: Obj, problem: str, now: str) -> None:
        status = kc.get("status") or {}
        condition = mc.kubeletconfig_condition(problem, now)
        old = next(iter(status.get("conditions") or ()), None)
        if old is not None and all(old.get(k) == condition[k] for k in ("type", "status", "message")):
            condition["lastTransitionTime"] = old.get("lastTransitionTime", now)
        wanted = {"observedGeneration": kc["metadata"].get("generation", 1), "conditions": [condition]}
        if status == wanted:
            return
        if problem:
            log.info("KubeletConfig %s: %s", kc["metadata"]["name"], problem)
        updated = copy.deepcopy(kc)
        updated["status"] = wanted
        self.update(self.kc_kind, updated, status=True)

    # -- the node's daemon --------------------------------------------------------------------

    def _start_update(self, node_name: str, rendered: str) -> None:
        if (
            node_name not in self.fleet.kubelets
            or rendered not in self._rendered
            or (node_name, rendered) in self._failed
        ):
            return
        task = asyncio.get_running_loop().create_task(
            self._update(node_name, rendered), name=f"mcd-{node_name}"
        )
        self._updating[node_name] = task

    async def _update(self, node_name: str, rendered: str) -> None:
        """Reboot ``node_name`` into ``rendered``, then record it as its current config."""
        try:
            kubelet = mc.overlay_kubelet(self.profile_specs[node_name], self._rendered[rendered])
            await self.fleet.restart(node_name, kubelet, downtime=self.reboot_downtime)
            self._annotate(node_name, {mc.CURRENT_CONFIG: rendered, mc.STATE: mc.STATE_DONE})
            log.info("node %s: updated to %s", node_name, rendered)
        except (ValueError, errors.StatusError, OSError) as exc:
            log.exception("node %s: update to %s failed", node_name, rendered)
            self._failed.add((node_name, rendered))
            self._annotate(node_name, {mc.STATE: mc.STATE_DEGRADED, mc.REASON: str(exc)})
        finally:
            self._updating.pop(node_name, None)
            self.enqueue_after(_KEY, self.reaction_delay)
