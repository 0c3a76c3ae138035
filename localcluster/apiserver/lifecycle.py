"""Object lifecycles the control plane completes: namespace deletion, garbage collection, CRD cleanup,
event expiry.

These play kube-controller-manager's namespace and garbage-collector
controllers and apiextensions' CRD finalizer.  They react to store events and
act through the REST verbs (with the system identity), so finalizers,
propagation policies and watch events behave as on a real cluster:

- a terminating namespace has its content deleted, its conditions set, then
  ``kubernetes`` removed from ``spec.finalizers`` and the namespace removed;
- a dependent whose owners (matched by uid) are all gone is deleted; one that
  keeps some owners loses the dangling references; ``foregroundDeletion`` and
  ``orphan`` finalizers are completed;
- a deleted CRD has its custom resources deleted before it goes;
- an Event not written for :data:`EVENT_TTL` seconds is deleted, as etcd's lease on it expires
  (kube-apiserver ``--event-ttl``, 1 hour).

Also here: the objects a fresh cluster starts with (system namespaces, the
default RBAC policy, the system priority classes).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from nrop.localcluster.apiserver import errors, rbac
from nrop.localcluster.apiserver.crd.establishing import CRD_CLEANUP_FINALIZER
from nrop.localcluster.apiserver.decisions.deletion import FOREGROUND, ORPHAN
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.store import WatchEvent

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.registry import Kind, Registry
    from nrop.localcluster.apiserver.rest import Rest
    from nrop.localcluster.apiserver.store import Store

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_EVENTS = ("", "events")
#: Seconds an Event lives after its last write (kube-apiserver's default ``--event-ttl``).
EVENT_TTL = 3600.0
_NAMESPACES = ("", "namespaces")
#: The namespaces every cluster has from the start (created by :func:`bootstrap`).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)


class ServerState(Protocol):
    """What the lifecycle works on: the API server's store, its REST verbs and its kinds."""

    @property
    def store(self) -> Store: ...

    @property
    def rest(self) -> Rest: ...

    @property
    def registry(self) -> Registry: ...


def bootstrap(server: ServerState) -> None:
    """Create what every cluster has before anyone talks to it."""
    rest, registry = server.rest, server.registry
    system = WriteOptions(field_manager="kube-apiserver")
    namespaces = registry.lookup("", "v1", "namespaces")
    assert namespaces is not None
    for name in SYSTEM_NAMESPACES:
        rest.create(namespaces, "", {"metadata": {"name": name}}, system)
    for plural, objs in (
        ("clusterroles", rbac.BOOTSTRAP_CLUSTER_ROLES),
        ("clusterrolebindings", rbac.BOOTSTRAP_CLUSTER_ROLE_BINDINGS),
    ):
        kind = registry.lookup("rbac.authorization.k8s.io", "v1", plural)
        assert kind is not None
        for obj in objs:
            rest.create(kind, "", copy.deepcopy(obj), system)
    priority = registry.lookup("scheduling.k8s.io", "v1", "priorityclasses")
    assert priority is not None
    for name, value, description in (
        (
            "system-node-critical",
            2000001000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2000000000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ):
        rest.create(
            priority,
            "",
            {"metadata": {"name": name}, "value": value, "description": description, "globalDefault": False},
            system,
        )


def publish_kubernetes_service(server: ServerState, host: str, port: int) -> None:
    """The ``default/kubernetes`` Service and its Endpoints: where in-cluster clients find the server.

    Upstream's service has a cluster IP that kube-proxy forwards to the server; nothing
    forwards here, so the Service names the server's own loopback address and port, the
    same values pods get in ``KUBERNETES_SERVICE_HOST`` / ``KUBERNETES_SERVICE_PORT``.
    """
    system = WriteOptions(field_manager="kube-apiserver")
    services = server.registry.lookup("", "v1", "services")
    endpoints = server.registry.lookup("", "v1", "endpoints")
    assert services is not None and endpoints is not None
    labels = {"component": "apiserver", "provider": "kubernetes"}
    service = {
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": host,
            "clusterIPs": [host],
            "ports": [{"name": "https", "port": port, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    }
    server.rest.create(services, "default", service, system)
    subsets = [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    body = {"metadata": {"name": "kubernetes", "namespace": "default", "labels": labels}, "subsets": subsets}
    server.rest.create(endpoints, "default", body, system)


class Lifecycle:
    """The background loop that finishes deletions the API only starts."""

    def __init__(
        self,
        server: ServerState,
        period: float = 0.5,
        event_ttl: float = EVENT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self.period = period
        self.event_ttl = event_ttl
        self._clock = clock
        # Events by (namespace, name): the time of their last write, oldest first.
        self._event_writes: dict[tuple[str, str], float] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe = server.store.subscribe(None, self._on_event)
        self._orphan_checks: set[str] = set()
        # Objects being deleted (resource, namespace, name): the only ones a sweep visits.
        self._deleting: set[tuple[tuple[str, str], str, str]] = set()

    def _on_event(self, event: WatchEvent) -> None:
        meta = event.obj.get("metadata", {})
        where = (event.resource, meta.get("namespace", ""), meta.get("name", ""))
        if event.resource == _EVENTS:
            key = (where[1], where[2])
            self._event_writes.pop(key, None)  # re-inserted last: the dict stays in write order
            if event.type != "DELETED":
                self._event_writes[key] = self._clock()
        if event.type == "DELETED":
            self._deleting.discard(where)
        elif meta.get("deletionTimestamp"):
            self._deleting.add(where)
        if event.type == "DELETED" or meta.get("deletionTimestamp") or meta.get("ownerReferences"):
            if meta.get("ownerReferences") and event.type != "DELETED":
                self._orphan_checks.add(meta.get("uid", ""))
            if event.type == "DELETED":
                # The dependents of a vanished owner must be re-examined: they may be orphans now.
                for _, dependent in self.server.store.dependents(meta.get("uid", "")):
                    self._orphan_checks.add(dependent["metadata"].get("uid", ""))
            self._wake.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="lifecycle")

    async def stop(self) -> None:
        self._unsubscribe()
        if self._task is not None:
            # Python 3.11's wait_for swallows a cancel that races with the wake-up event, and
            # the loop would then run forever: cancel until the task has really ended.
            while not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=0.1)

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.period)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                self.sweep()
            except Exception:
                log.exception("lifecycle sweep failed; retrying")
            await asyncio.sleep(0)

    def sweep(self) -> None:
        """One pass: expired events, dangling owners, foreground/orphan finalizers, CRDs and
        namespaces being deleted."""
        self._expire_events()
        checks, self._orphan_checks = self._orphan_checks, set()
        for uid in checks:
            found = self.server.store.by_uid(uid)
            if found is not None:
                self._collect_if_orphaned(found[0], found[1])
        for where in sorted(self._deleting):
            resource, namespace, name = where
            obj = self.server.store.get(resource, namespace, name)
            kind = self._kind_of(resource)
            if obj is None or kind is None or not obj["metadata"].get("deletionTimestamp"):
                self._deleting.discard(where)
                continue
            finalizers = obj["metadata"].get("finalizers") or ()
            if FOREGROUND in finalizers:
                self._foreground(kind, obj)
            elif ORPHAN in finalizers:
                self._orphan(kind, obj)
            elif kind.storage == _CRDS and CRD_CLEANUP_FINALIZER in finalizers:
                self._cleanup_crd(kind, obj)
            elif kind.storage == _NAMESPACES:
                self._finish_namespace(obj)

    def _expire_events(self) -> None:
        deadline = self._clock() - self.event_ttl
        expired = []
        for key, written in self._event_writes.items():
            if written > deadline:
                break  # write order: the rest are younger
            expired.append(key)
        kind = self._kind_of(_EVENTS) if expired else None
        for namespace, name in expired:
            self._event_writes.pop((namespace, name), None)
            obj = self.server.store.get(_EVENTS, namespace, name)
            if kind is not None and obj is not None:
                self._delete(kind, obj, "Background")

    # -- garbage collection ------------------------------------------------------------------

    def _owner_exists(self, dependent: Obj, ref: Obj) -> bool:
        found = self.server.store.by_uid(ref.get("uid", ""))
        if found is None:
            return False
        owner = found[1]
        if owner.get("kind") != ref.get("kind"):
            return False
        dep_ns = dependent["metadata"].get("namespace", "")
        owner_ns = owner["metadata"].get("namespace", "")
        # A namespaced owner only counts for dependents in its own namespace.
        return not owner_ns or owner_ns == dep_ns

    def _collect_if_orphaned(self, resource: tuple[str, str], obj: Obj) -> None:
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs or obj["metadata"].get("deletionTimestamp"):
            return
        alive = [r for r in refs if self._owner_exists(obj, r)]
        kind = self._kind_of(resource)
        if kind is None:
            return
        if not alive:
            policy = "Foreground" if self._owner_deleting_in_foreground(refs) else "Background"
            self._delete(kind, obj, policy)
        elif len(alive) != len(refs):
            self._set_owner_refs(kind, obj, alive)

    def _owner_deleting_in_foreground(self, refs: list[Obj]) -> bool:
        for ref in refs:
            found = self.server.store.by_uid(ref.get("uid", ""))
            if found and FOREGROUND in (found[1]["metadata"].get("finalizers") or ()):
                return True
        return False

    def _kind_of(self, resource: tuple[str, str]) -> Kind | None:
        for kind in self.server.registry.storage_kinds():
            if kind.storage == resource:
                return kind
        return None

    def _delete(self, kind: Kind, obj: Obj, policy: str) -> None:
        meta = obj["metadata"]
        try:
            self.server.rest.delete(
                kind,
                meta.get("namespace", ""),
                meta["name"],
                DeleteOptions(propagation=policy, preconditions={"uid": meta.get("uid", "")}),
            )
        except (errors.NotFound, errors.Conflict):
            pass

    def _set_owner_refs(self, kind: Kind, obj: Obj, refs: list[Obj]) -> None:
        updated = copy.deepcopy(obj)
        if refs:
            updated["metadata"]["ownerReferences"] = refs
        else:
            updated["metadata"].pop("ownerReferences", None)
        try:
            self.server.rest.commit_update(
                kind, updated, obj, WriteOptions(field_manager="garbage-collector")
            )
        except (errors.NotFound, errors.Conflict):
            pass

    def _remove_finalizer(self, kind: Kind, obj: Obj, finalizer: str) -> None:
        current = self.server.store.get(
            kind.storage, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        )
        if current is None:
            return
        updated = copy.deepcopy(current)
        updated["metadata"]["finalizers"] = [
            f for f in current["metadata"].get("finalizers") or () if f != finalizer
        ]
        if not updated["metadata"]["finalizers"]:
            del updated["metadata"]["finalizers"]
        try:
            self.server.rest.commit_update(
                kind, updated, current, WriteOptions(field_manager="garbage-collector")
            )
        except (errors.NotFound, errors.Conflict):
            pass

    def _foreground(self, kind: Kind, owner: Obj) -> None:
        uid = owner["metadata"]["uid"]
        blocking = False
        for resource, dependent in self.server.store.dependents(uid):
            dep_kind = self._kind_of(resource)
            if dep_kind is None:
                continue
            refs = dependent["metadata"].get("ownerReferences") or []
            ref = next((r for r in refs if r.get("uid") == uid), {})
            if ref.get("blockOwnerDeletion"):
                blocking = True
            if not dependent["metadata"].get("deletionTimestamp"):
                others = [r for r in refs if r.get("uid") != uid and self._owner_exists(dependent, r)]
                if others:
                    self._set_owner_refs(dep_kind, dependent, others)
                else:
                    self._delete(dep_kind, dependent, "Foreground")
        if not blocking:
            self._remove_finalizer(kind, owner, FOREGROUND)

    def _orphan(self, kind: Kind, owner: Obj) -> None:
        uid = owner["metadata"]["uid"]
        for resource, dependent in self.server.store.dependents(uid):
            dep_kind = self._kind_of(resource)
            if dep_kind is not None:
                refs = [r for r in dependent["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
                self._set_owner_refs(dep_kind, dependent, refs)
        self._remove_finalizer(kind, owner, ORPHAN)

    # -- CRDs -------------------------------------------------------------------------------------

    def _cleanup_crd(self, kind: Kind, crd: Obj) -> None:
        custom = self.server.registry.custom_kinds(crd["metadata"]["name"])
        remaining = 0
        for cr_kind in custom[:1]:
            for obj in self.server.store.list(cr_kind.storage):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self._delete(cr_kind, obj, "Background")
        if remaining == 0:
            self._remove_finalizer(kind, crd, CRD_CLEANUP_FINALIZER)

    # -- namespaces ---------------------------------------------------------------------------------

    def _finish_namespace(self, ns: Obj) -> None:
        name = ns["metadata"]["name"]
        remaining: dict[str, int] = {}
        finalizers_left: set[str] = set()
        for kind in self.server.registry.storage_kinds():
            if not kind.namespaced:
                continue
            for obj in self.server.store.list(kind.storage, name):
                remaining[kind.group_resource] = remaining.get(kind.group_resource, 0) + 1
                finalizers_left.update(obj["metadata"].get("finalizers") or ())
                if not obj["metadata"].get("deletionTimestamp"):
                    self._delete(kind, obj, "Background")
        self._set_namespace_conditions(ns, remaining, finalizers_left)
        if remaining:
            return
        current = self.server.store.get(_NAMESPACES, "", name)
        if current is None:
            return
        spec_finalizers = (current.get("spec") or {}).get("finalizers") or []
        if "kubernetes" in spec_finalizers:
            updated = copy.deepcopy(current)
            updated["spec"]["finalizers"] = [f for f in spec_finalizers if f != "kubernetes"]
            current = self.server.store.update(_NAMESPACES, updated, current)
        maybe_remove_namespace(self.server, current)

    def _set_namespace_conditions(self, ns: Obj, remaining: dict[str, int], finalizers: set[str]) -> None:
        now = self.server.rest.now()
        wanted = {
            "NamespaceDeletionDiscoveryFailure": (
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            "NamespaceDeletionGroupVersionParsingFailure": (
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            "NamespaceDeletionContentFailure": (
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            "NamespaceContentRemaining": (
                (
                    "True",
                    "SomeResourcesRemain",
                    "Some resources are remaining: "
                    + ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items())),
                )
                if remaining
                else ("False", "ContentRemoved", "All content successfully removed")
            ),
            "NamespaceFinalizersRemaining": (
                (
                    "True",
                    "SomeFinalizersRemain",
                    "Some content in the namespace has finalizers remaining: "
                    + ", ".join(sorted(finalizers)),
                )
                if finalizers
                else ("False", "ContentHasNoFinalizers", "All content-preserving finalizers finished")
            ),
        }
        old = {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or ()}
        conditions = []
        for ctype in _CONDITION_TYPES:
            status, reason, message = wanted[ctype]
            previous = old.get(ctype)
            since = previous["lastTransitionTime"] if previous and previous["status"] == status else now
            conditions.append(
                {
                    "type": ctype,
                    "status": status,
                    "lastTransitionTime": since,
                    "reason": reason,
                    "message": message,
                }
            )
        if [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in conditions] == [
            {k: v for k, v in c.items() if k != "lastTransitionTime"}
            for c in (ns.get("status") or {}).get("conditions") or ()
        ]:
            return
        current = self.server.store.get(_NAMESPACES, "", ns["metadata"]["name"])
        if current is None:
            return
        updated = copy.deepcopy(current)
        updated.setdefault("status", {})["conditions"] = conditions
        self.server.store.update(_NAMESPACES, updated, current)


def maybe_remove_namespace(server: ServerState, ns: Obj) -> Obj | None:
    """Delete a terminating namespace once both finalizer lists are empty; returns its final state."""
    meta = ns["metadata"]
    if not meta.get("deletionTimestamp"):
        return None
    if (ns.get("spec") or {}).get("finalizers") or meta.get("finalizers"):
        return None
    return server.store.delete(_NAMESPACES, copy.deepcopy(ns), ns)
