"""The scheduler's picture of the cluster: nodes and the pods on them, including assumed pods.

Upstream's scheduler cache, reduced to what a single-threaded asyncio scheduler needs.
A pod the scheduler has just placed is *assumed* on its node at once, before the
binding reaches the API server, so the next pod's cycle already counts it (no double
booking between reserve and bind).  When the watch later reports the pod bound, the
assumed copy is replaced by the real one; when binding fails, it is forgotten.

Scheduling cycles never await, so cycles read the live :class:`NodeInfo` objects: no
snapshot copy is needed for consistency within a cycle.  ``node_infos()`` keeps a list
in a stable order (nodes by name) and rebuilds it only when the set of nodes changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nrop.sched.framework.interface import NodeInfo, Obj, PodInfo, pod_key, to_resources

log = logging.getLogger(__name__)


def _node_name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@dataclass(slots=True)
class _PodState:
    node: str
    assumed: bool


class SchedulerCache:
    """Nodes by name, each with its pods; pods by key with the node they count against."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        # Pods seen bound to a node the cache does not know yet (watch order is per resource).
        self._orphans: dict[str, list[PodInfo]] = {}
        self._ordered: list[NodeInfo] | None = None

    # --------------------------------------------------------------------------- nodes

    def add_or_update_node(self, node: Obj) -> NodeInfo:
        name = _node_name(node)
        info = self._nodes.get(name)
        if info is None:
            info = NodeInfo.of(node)
            for pod_info in self._orphans.pop(name, []):
                info.add_pod(pod_info)
            self._nodes[name] = info
            self._ordered = None
        else:
            info.node = node
            info.allocatable = to_resources((node.get("status") or {}).get("allocatable"))
            info.generation += 1
        return info

    def remove_node(self, node: Obj) -> None:
        name = _node_name(node)
        info = self._nodes.pop(name, None)
        if info is not None:
            # Its pods stay known: they are deleted by the API (GC) and reported then.
            self._orphans[name] = list(info.pods)
            self._ordered = None

    def node_info(self, name: str) -> NodeInfo | None:
        return self._nodes.get(name)

    def node_infos(self) -> list[NodeInfo]:
        if self._ordered is None:
            self._ordered = [self._nodes[n] for n in sorted(self._nodes)]
        return self._ordered

    def node_count(self) -> int:
        return len(self._nodes)

    # --------------------------------------------------------------------------- pods

    def assume(self, pod: Obj, node: str) -> None:
        """Count a pod the scheduler placed against ``node`` until the API confirms or binding fails."""
        key = pod_key(pod)
        if key in self._pods:
            raise ValueError(f"pod {key} is already in the scheduler cache")
        self._place(PodInfo.of(pod), node)
        self._pods[key] = _PodState(node, assumed=True)

    def forget(self, pod: Obj) -> None:
        """Undo :meth:`assume` after a failed reserve or bind."""
        key = pod_key(pod)
        state = self._pods.get(key)
        if state is None or not state.assumed:
            return
        self._unplace(key, state.node)
        del self._pods[key]

    def is_assumed(self, pod: Obj) -> bool:
        state = self._pods.get(pod_key(pod))
        return state is not None and state.assumed

    def add_or_update_pod(self, pod: Obj) -> None:
        """A pod the API reports bound (``spec.nodeName`` set); terminal pods free their resources."""
        key = pod_key(pod)
        node = (pod.get("spec") or {}).get("nodeName") or ""
        state = self._pods.get(key)
        if state is not None:
            self._unplace(key, state.node)
            del self._pods[key]
        if not node or is_terminal(pod):
            return
        self._place(PodInfo.of(pod), node)
        self._pods[key] = _PodState(node, assumed=False)

    def remove_pod(self, pod: Obj) -> None:
        key = pod_key(pod)
        state = self._pods.pop(key, None)
        if state is not None:
            self._unplace(key, state.node)

    def pod_count(self) -> int:
        return len(self._pods)

    def _place(self, pod_info: PodInfo, node: str) -> None:
        info = self._nodes.get(node)
        if info is None:
            self._orphans.setdefault(node, []).append(pod_info)
        else:
            info.add_pod(pod_info)

    def _unplace(self, key: str, node: str) -> None:
        info = self._nodes.get(node)
        if info is not None:
            info.remove_pod(key)
            return
        orphans = self._orphans.get(node, [])
        self._orphans[node] = [p for p in orphans if p.key != key]
        if not self._orphans[node]:
            del self._orphans[node]
