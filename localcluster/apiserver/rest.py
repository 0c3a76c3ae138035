"""The REST verbs on single objects with upstream semantics: get, create, update, patch, delete.

This owns the generic registry-store behaviour of kube-apiserver: system
metadata on create, optimistic concurrency, preserved system fields on update,
status subresources, generation, no-op writes, finalizers and graceful pod
deletion, and dry runs.  The checks a write runs before it is committed are
``writechecks``'s, CRD establishment is ``crdestablishing``'s, the rules of
DELETE are ``deletion``'s and LIST is ``listing``'s.  The HTTP layer parses
requests into calls here; controllers call it directly with the system
identity, so they obey the same rules.
"""

from __future__ import annotations

import copy
import random
import uuid
from datetime import timedelta
from typing import Any

from nrop.api.metatime import rfc3339
from nrop.api.status import Cause
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.crd import conversion
from nrop.localcluster.apiserver.crd import establishing as crdestablishing
from nrop.localcluster.apiserver.crd.establishing import CRDS
from nrop.localcluster.apiserver.decisions import admission, deletion, patching, strategies
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.decisions.writechecks import WriteChecks
from nrop.localcluster.apiserver.openapi.definitions import Definitions
from nrop.localcluster.apiserver.registry import Kind, Registry
from nrop.localcluster.apiserver.store import Store
from nrop.localcluster.clock import Clock

Obj = dict[str, Any]
#: The API group of each resource admission reads.
_ADMISSION_GROUPS = {"runtimeclasses": "node.k8s.io", "priorityclasses": "scheduling.k8s.io"}

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Rest:
    """The verbs, over a store and a registry."""

    def __init__(self, store: Store, registry: Registry, defs: Definitions, clock: Clock) -> None:
        self.store = store
        self.registry = registry
        self.defs = defs
        self.clock = clock
        self.checks = WriteChecks(defs)

    # -- helpers ------------------------------------------------------------------

    def now(self) -> str:
        return rfc3339(self.clock.now())

    def _not_found(self, kind: Kind, name: str) -> errors.NotFound:
        return errors.NotFound.for_object(kind.plural, kind.group, name)

    def get(self, kind: Kind, namespace: str, name: str) -> Obj:
        obj = self.store.get(kind.storage, namespace, name)
        if obj is None:
            raise self._not_found(kind, name)
        return conversion.served(kind, obj)

    def require_namespace(self, kind: Kind, namespace: str, name: str, *, creating: bool) -> None:
        if not kind.namespaced:
            return
        ns = self.store.get(("", "namespaces"), "", namespace)
        if ns is None:
            raise errors.NotFound.for_object("namespaces", "", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            raise errors.Forbidden(
                f'{kind.plural} "{name}" is forbidden: unable to create new content in namespace '
                f"{namespace} because it is being terminated",
                name=name,
                group=kind.group,
                kind=kind.plural,
                causes=[
                    Cause(
                        "NamespaceTerminating",
                        f"namespace {namespace} is being terminated",
                        "metadata.namespace",
                    )
                ],
            )

    # -- create -----------------------------------------------------------------------

    def create(self, kind: Kind, namespace: str, body: Any, opts: WriteOptions) -> Obj:
        obj = self.checks.admit_body(kind, namespace, body)
        if opts.guard is not None:
            opts.guard(obj, None)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise errors.BadRequest("resourceVersion should not be set on objects to be created")
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if generated:
            meta["name"] = meta["generateName"] + "".join(random.choices(NAME_CHARS, k=5))
        name = meta.get("name", "")
        self.checks.validate_meta(kind, obj)
        self.require_namespace(kind, namespace, name, creating=True)
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation", "managedFields"):
            meta.pop(key, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.now()
        strategies.prepare_create(kind, obj)
        if kind.storage == ("", "pods"):
            admission.admit_pod(obj, self._admission_lookup, lister=self._admission_list)
        self.checks.validate(kind, obj, None, opts)
        if kind.storage == CRDS:
            crdestablishing.prepare_create(obj, self.now())
        if self.store.get(kind.storage, meta.get("namespace", ""), name) is not None:
            if generated:
                raise errors.AlreadyExists(
                    f'{kind.group_resource} "{name}" already exists, the server was not able to '
                    "generate a unique name for the object",
                    name=name,
                    group=kind.group,
                    kind=kind.plural,
                )
            raise errors.AlreadyExists.for_object(kind.plural, kind.group, name)
        self._track_manager(obj, opts, "Update", kind)
        if opts.dry_run:
            meta["resourceVersion"] = ""
            return conversion.served(kind, obj)
        stored = self.store.create(kind.storage, conversion.stored(kind, obj))
        crdestablishing.publish(self.registry, kind, stored, None)
        return conversion.served(kind, stored)

    def _admission_lookup(self, plural: str, namespace: str, name: str) -> Obj | None:
        return self.store.get((_ADMISSION_GROUPS.get(plural, ""), plural), namespace, name)

    def _admission_list(self, plural: str) -> list[Obj]:
        return self.store.list((_ADMISSION_GROUPS.get(plural, ""), plural))

    def _track_manager(self, obj: Obj, opts: WriteOptions, operation: str, kind: Kind) -> None:
        """A minimal ``managedFields`` entry per manager (no field sets are tracked)."""
        if not opts.field_manager:
            return
        entries = [
            e for e in obj["metadata"].get("managedFields") or () if e.get("manager") != opts.field_manager
        ]
        entries.append(
            {
                "manager": opts.field_manager,
                "operation": operation,
                "apiVersion": kind.group_version,
                "time": self.now(),
                "fieldsType": "FieldsV1",
                "fieldsV1": {},
            }
        )
        obj["metadata"]["managedFields"] = entries

    # -- update -----------------------------------------------------------------------

    def update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        body: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[Obj, bool]:
        """PUT: returns the stored object and whether it was created (create-on-update kinds)."""
        obj = self.checks.admit_body(kind, namespace, body)
        body_name = obj["metadata"].get("name")
        if body_name and body_name != name:
            raise errors.BadRequest(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        obj["metadata"]["name"] = name
        old = self.store.get(kind.storage, namespace if kind.namespaced else "", name)
        if old is None:
            if kind.create_on_update and not subresource:
                obj["metadata"].pop("resourceVersion", None)
                return self.create(kind, namespace, obj, opts), True
            raise self._not_found(kind, name)
        rv = obj["metadata"].get("resourceVersion")
        if not rv and kind.custom and not subresource:
            raise errors.Invalid.for_fields(
                kind.kind,
                kind.group,
                name,
                # Upstream prints the unset uint64 with %#v, hence "0x0" rather than "0".
                [
                    Cause(
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                        "metadata.resourceVersion",
                    )
                ],
            )
        return self.commit_update(kind, obj, old, opts, subresource=subresource), False

    def commit_update(
        self, kind: Kind, obj: Obj, old: Obj, opts: WriteOptions, *, subresource: str = ""
    ) -> Obj:
        """The shared end of PUT and PATCH: preconditions, preserved fields, strategy, no-op check."""
        if opts.guard is not None and not subresource:
            opts.guard(obj, old)
        meta = obj["metadata"]
        name = old["metadata"]["name"]
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.Conflict.modified(kind.plural, kind.group, name)
        if subresource == "status":
            obj = strategies.status_only(obj, old)
            meta = obj["metadata"]
        elif kind.has("status"):
            if "status" in old:
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)
        old_meta = old["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise errors.Invalid.for_fields(
                kind.kind,
                kind.group,
                name,
                [errors.invalid("metadata.uid", meta["uid"], "field is immutable")],
            )
        for key in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
            if added:
                raise errors.Invalid.for_fields(
                    kind.kind,
                    kind.group,
                    name,
                    [
                        errors.forbidden(
                            "metadata.finalizers",
                            "no new finalizers can be added if the object is being deleted",
                        )
                    ],
                )
        if subresource != "status":
            self.checks.validate_meta(kind, obj)
        strategies.prepare_update(kind, obj, old, subresource=subresource)
        self.checks.validate(kind, obj, old, opts)
        if kind.storage == CRDS and subresource != "status":
            crdestablishing.prepare_update(obj, self.now())
        meta["resourceVersion"] = old_meta["resourceVersion"]
        self._track_manager(obj, opts, "Update", kind)
        if _same(obj, conversion.served(kind, old)):
            return conversion.served(kind, old)
        if opts.dry_run:
            return conversion.served(kind, obj)
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
            and not deletion.held_by_spec(kind, obj)
        ):
            stored = self.store.delete(kind.storage, conversion.stored(kind, obj), old)
            crdestablishing.publish(self.registry, kind, None, stored)
            return conversion.served(kind, stored)
        stored = self.store.update(kind.storage, conversion.stored(kind, obj), old)
        crdestablishing.publish(self.registry, kind, stored, old)
        return conversion.served(kind, stored)

    # -- patch -------------------------------------------------------------------------

    def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[Obj, bool]:
        """PATCH of any type; returns the stored object and whether an apply created it."""
        ns = namespace if kind.namespaced else ""
        for _attempt in range(8):
            old = self.store.get(kind.storage, ns, name)
            if old is None:
                if patch_type == "apply":
                    if not isinstance(patch, dict):
                        raise errors.BadRequest("apply patches must be objects")
                    body = copy.deepcopy(patch)
                    body.setdefault("metadata", {})["name"] = name
                    return self.create(kind, namespace, body, opts), True
                raise self._not_found(kind, name)
            current = conversion.served(kind, old)
            patched = self._apply_patch(kind, current, patch_type, patch)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise errors.BadRequest("the patched object must be an object with metadata")
            patched["metadata"]["name"] = name
            if kind.namespaced:
                patched["metadata"]["namespace"] = namespace
            precondition = patch_type != "json" and _patch_sets_rv(patch)
            if not precondition:
                patched["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            obj = self.checks.admit_body(kind, namespace, patched)
            try:
                return self.commit_update(kind, obj, old, opts, subresource=subresource), False
            except errors.Conflict:
                if precondition or patch_type == "json":
                    raise
        raise errors.Conflict.modified(kind.plural, kind.group, name)

    def _apply_patch(self, kind: Kind, current: Obj, patch_type: str, patch: Any) -> Any:
        if patch_type == "json":
            return patching.apply_json_patch(current, patch)
        if patch_type == "merge":
            return patching.apply_merge_patch(current, patch)
        def_name = None if kind.custom else self.defs.for_gvk(kind.group, kind.version, kind.kind)
        if patch_type == "strategic":
            if def_name is None:
                patching.patch_type_for("application/strategic-merge-patch+json", builtin=False)
            return patching.apply_strategic_merge_patch(current, patch, self.defs.get(def_name), self.defs)
        # Server-side apply, simplified: merge the applied configuration into the live object
        # (strategically for built-ins), without field ownership or conflict detection.
        if not isinstance(patch, dict):
            raise errors.BadRequest("apply patches must be objects")
        if def_name is not None:
            return patching.apply_strategic_merge_patch(current, patch, self.defs.get(def_name), self.defs)
        return patching.apply_merge_patch(current, patch)

    # -- delete ------------------------------------------------------------------------

    def delete(self, kind: Kind, namespace: str, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        """DELETE: returns the object (final or terminating) and whether it is gone."""
        ns = namespace if kind.namespaced else ""
        old = self.store.get(kind.storage, ns, name)
        if old is None:
            raise self._not_found(kind, name)
        meta = old["metadata"]
        deletion.check_preconditions(kind, meta, opts.preconditions)
        obj = copy.deepcopy(old)
        new_meta = obj["metadata"]
        finalizers = deletion.finalizers_for(new_meta.get("finalizers") or [], opts.propagation)
        grace = deletion.grace_period(kind, old, opts)
        held = deletion.held_by_spec(kind, old)
        if not finalizers and grace == 0 and not held:
            if opts.dry_run:
                return conversion.served(kind, old), True
            stored = self.store.delete(kind.storage, obj, old)
            crdestablishing.publish(self.registry, kind, None, stored)
            return conversion.served(kind, stored), True
        if meta.get("deletionTimestamp"):
            current_grace = meta.get("deletionGracePeriodSeconds") or 0
            if grace >= current_grace and set(finalizers) == set(meta.get("finalizers") or ()):
                return conversion.served(kind, old), False  # a repeated DELETE changes nothing
            grace = min(grace, current_grace)
        else:
            new_meta["deletionTimestamp"] = rfc3339(self.clock.now() + timedelta(seconds=grace))
        new_meta["deletionGracePeriodSeconds"] = grace
        if finalizers:
            new_meta["finalizers"] = finalizers
        if kind.storage == ("", "namespaces"):
            obj.setdefault("status", {})["phase"] = "Terminating"
        if opts.dry_run:
            return conversion.served(kind, obj), False
        if not finalizers and grace == 0 and not held:
            stored = self.store.delete(kind.storage, obj, old)
            crdestablishing.publish(self.registry, kind, None, stored)
            return conversion.served(kind, stored), True
        stored = self.store.update(kind.storage, obj, old)
        return conversion.served(kind, stored), False


def _same(a: Obj, b: Obj) -> bool:
    """Equal but for resourceVersion and managedFields timestamps (a no-op write)."""

    def strip(o: Obj) -> Obj:
        meta = {k: v for k, v in o["metadata"].items() if k not in ("resourceVersion", "managedFields")}
        return {**o, "metadata": meta}

    return strip(a) == strip(b)


def _patch_sets_rv(patch: Any) -> bool:
    return isinstance(patch, dict) and bool((patch.get("metadata") or {}).get("resourceVersion"))
