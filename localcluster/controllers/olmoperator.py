"""The embedded OLM: Subscriptions and ClusterServiceVersions turned into the operator's Deployments.

Plays the part of operator-lifecycle-manager (OLM) an operator installed through a Subscription
needs, so that the clients that look for OLM's objects (upstream's
``test/internal/envvar``, ``kubectl get subscriptions,csv``) find them served and acted on:

* :func:`install` serves ``subscriptions`` and ``clusterserviceversions``
  (``operators.coreos.com/v1alpha1``) and ``operatorgroups`` (``v1``) from the CRDs of
  :mod:`nrop.api.crds`; every profile has them, empty unless someone installs through OLM;
* :class:`OLMOperator` records on each Subscription whose ``startingCSV`` is in its namespace the
  ``currentCSV``/``installedCSV``/``state: AtLatestKnown`` the catalog operator would, and moves
  each CSV through ``Pending`` → ``InstallReady`` → ``Installing`` → ``Succeeded``, creating or
  updating the Deployments of its install strategy with the owning Subscription's
  ``spec.config`` applied (events as OLM records them). A change of the Subscription's config,
  of a Deployment, or a deleted Deployment sends the CSV back to install; the Deployments carry a
  non-blocking owner reference to the CSV, so deleting the CSV deletes them (garbage collector).

Decisions are in :mod:`.clusterserviceversions`; this module reads the store and writes through
the API.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from nrop.api import crds
from nrop.api.metatime import rfc3339
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions import clusterserviceversions as olm
from nrop.localcluster.controllers.reconciling import Controller, key_of, kind_of, split_key

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["CRD_MANIFESTS", "GROUP", "OLMOperator", "install"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
GROUP = "operators.coreos.com"
#: The CRD manifests of :mod:`nrop.api.crds` the embedded OLM serves.
CRD_MANIFESTS = ("subscriptions", "clusterserviceversions", "operatorgroups")
_CSVS = (GROUP, "clusterserviceversions")
_SUBS = (GROUP, "subscriptions")
_OGS = (GROUP, "operatorgroups")
_DEPLOYMENTS = ("apps", "deployments")
_FIELD_MANAGER = "olm-operator"
_CSV_KEY = "csv:"
_SUB_KEY = "sub:"


def install(server: InProcessAPI) -> None:
    """Serve OLM's kinds (the CRDs are created as any client would, and established at once)."""
    opts = WriteOptions(field_manager=_FIELD_MANAGER)
    crd_kind = kind_of(server, "apiextensions.k8s.io", "customresourcedefinitions")
    for name in CRD_MANIFESTS:
        server.rest.create(crd_kind, "", crds.load(name), opts)


def _kind(server: InProcessAPI, version: str, plural: str) -> Kind:
    kind = server.registry.lookup(GROUP, version, plural)
    if kind is None:
        raise RuntimeError(f"the API server does not serve {plural}.{GROUP}/{version}: call install() first")
    return kind


class OLMOperator(Controller):
    """OLM's catalog and olm operators for Subscriptions naming a CSV of their namespace."""

    name = "olm-operator"

    def __init__(
        self, server: InProcessAPI, clock: Clock, *, install_timeout: float = olm.INSTALL_TIMEOUT
    ) -> None:
        super().__init__(server, clock)
        self.install_timeout = install_timeout
        self.opts = WriteOptions(field_manager=_FIELD_MANAGER)
        self.csv_kind = _kind(server, "v1alpha1", "clusterserviceversions")
        self.sub_kind = _kind(server, "v1alpha1", "subscriptions")
        self.d_kind = kind_of(server, "apps", "deployments")

    # -- events in ------------------------------------------------------------------------------

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return (
            (_CSVS, self._csv_keys),
            (_SUBS, self._sub_keys),
            (_OGS, self._og_keys),
            (_DEPLOYMENTS, self._deployment_keys),
        )

    def initial_keys(self) -> Iterable[str]:
        return [
            *(_CSV_KEY + key_of(c) for c in self.store.list(_CSVS)),
            *(_SUB_KEY + key_of(s) for s in self.store.list(_SUBS)),
        ]

    def _csv_keys(self, event: WatchEvent) -> list[str]:
        meta = event.obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        subs = [
            _SUB_KEY + key_of(s)
            for s in self.store.list(_SUBS, namespace)
            if (s.get("spec") or {}).get("startingCSV") == name
        ]
        # The Subscription first: the CSV is rendered with the config of the Subscription that installed it.
        return [*subs, _CSV_KEY + f"{namespace}/{name}"]

    def _sub_keys(self, event: WatchEvent) -> list[str]:
        namespace = event.obj["metadata"].get("namespace", "")
        named = {
            (event.obj.get("spec") or {}).get("startingCSV"),
            (event.obj.get("status") or {}).get("installedCSV"),
        }
        if event.old is not None:
            named.add((event.old.get("status") or {}).get("installedCSV"))
        return [
            _SUB_KEY + key_of(event.obj),
            *(_CSV_KEY + f"{namespace}/{n}" for n in sorted(n for n in named if n)),
        ]

    def _og_keys(self, event: WatchEvent) -> list[str]:
        namespace = event.obj["metadata"].get("namespace", "")
        return [_CSV_KEY + key_of(c) for c in self.store.list(_CSVS, namespace)]

    def _deployment_keys(self, event: WatchEvent) -> list[str]:
        labels = event.obj["metadata"].get("labels") or {}
        if labels.get(olm.OWNER_KIND) != olm.CSV_KIND or not labels.get(olm.OWNER):
            return []
        return [_CSV_KEY + f"{labels.get(olm.OWNER_NAMESPACE, '')}/{labels[olm.OWNER]}"]

    # -- sync ------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        if key.startswith(_SUB_KEY):
            self._sync_subscription(*split_key(key.removeprefix(_SUB_KEY)))
        elif key.startswith(_CSV_KEY):
            self._sync_csv(*split_key(key.removeprefix(_CSV_KEY)))

    def _sync_subscription(self, namespace: str, name: str) -> None:
        sub = self.store.get(_SUBS, namespace, name)
        if sub is None or sub["metadata"].get("deletionTimestamp"):
            return
        names = [c["metadata"]["name"] for c in self.store.list(_CSVS, namespace)]
        status = olm.subscription_status(sub, names, rfc3339(self.clock.now()))
        if status is not None:
            self.update(self.sub_kind, {**copy.deepcopy(sub), "status": status}, status=True)
            log.info("subscription %s/%s: installed CSV %s", namespace, name, status["installedCSV"])

    def _sync_csv(self, namespace: str, name: str) -> None:
        csv = self.store.get(_CSVS, namespace, name)
        if csv is None or csv["metadata"].get("deletionTimestamp"):
            return
        sub = olm.owner_subscription(self.store.list(_SUBS, namespace), name)
        desired = olm.render_deployments(csv, sub)
        owner = olm.owner_labels(csv)
        existing = {
            d["metadata"]["name"]: d
            for d in self.store.list(_DEPLOYMENTS, namespace)
            if all((d["metadata"].get("labels") or {}).get(k) == v for k, v in owner.items())
        }
        problem = olm.install_problem(desired, existing)
        now = self.clock.now()
        step = olm.next_phase(csv, len(self.store.list(_OGS, namespace)), problem, now, self.install_timeout)
        if step is None:
            self._requeue_installing(csv, now)
            return
        if step.install:
            try:
                self._install(namespace, desired, existing)
            except errors.StatusError as err:
                step = olm.Phase("Failed", "InstallComponentFailed", f"install strategy failed: {err}")
        status = olm.phase_status(csv.get("status") or {}, step, rfc3339(now))
        stored = self.update(self.csv_kind, {**copy.deepcopy(csv), "status": status}, status=True)
        self.recorder.event(csv, "Warning" if step.phase == "Failed" else "Normal", step.reason, step.message)
        log.info("csv %s/%s: %s (%s) %s", namespace, name, step.phase, step.reason, step.message)
        self._requeue_installing(stored, now)

    def _requeue_installing(self, csv: Obj, now: datetime) -> None:
        """An ``Installing`` CSV is looked at again when its install times out (whole-second stamps:
        at least a second later)."""
        left = olm.install_time_left(csv, now, self.install_timeout)
        if left is not None:
            self.enqueue_after(_CSV_KEY + key_of(csv), max(left, 1.0))

    def _install(self, namespace: str, desired: list[Obj], owned: dict[str, Obj]) -> None:
        """``installDeployments`` (create, or update whatever has the name) and ``cleanupOrphanedDeployments``."""
        for want in desired:
            name = want["metadata"]["name"]
            have = self.store.get(_DEPLOYMENTS, namespace, name)
            if have is None:
                self.rest.create(self.d_kind, namespace, copy.deepcopy(want), self.opts)
                continue
            body = copy.deepcopy(have)
            body["spec"] = copy.deepcopy(want["spec"])
            body["metadata"]["labels"] = dict(want["metadata"]["labels"])
            refs = list(body["metadata"].get("ownerReferences") or ())
            for ref in want["metadata"]["ownerReferences"]:
                if not any(r.get("uid") == ref["uid"] for r in refs):
                    refs.append(ref)
            body["metadata"]["ownerReferences"] = refs
            self.update(self.d_kind, body)
        wanted = {d["metadata"]["name"] for d in desired}
        for name, dp in owned.items():
            if name not in wanted:
                log.info("found an orphaned deployment %s in namespace %s", name, namespace)
                self.delete(self.d_kind, dp)
