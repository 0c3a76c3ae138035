"""The REST verbs with upstream semantics: create, get, list, update, patch, delete.

This owns the generic registry-store behaviour of kube-apiserver: system
metadata on create, optimistic concurrency, preserved system fields on update,
status subresources, generation, no-op writes, finalizers and graceful pod
deletion, dry runs, and the CRD-driven pruning/defaulting/validation of custom
resources.  The HTTP layer parses requests into calls here; controllers call it
directly with the system identity, so they obey the same rules.
"""

from __future__ import annotations

import base64
import copy
import logging
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson

from nrop.localcluster.clock import Clock, rfc3339

from . import admission, celrules, conversion, crdschema, errors, patching, strategies, structural, validation
from .definitions import Definitions
from .registry import Kind, Registry, kinds_from_crd
from .selectors import (
    FieldSelector,
    LabelSelector,
    check_field_selector,
    object_fields,
    supported_fields,
)
from .store import Store

log = logging.getLogger(__name__)

Obj = dict[str, Any]
#: The API group of each resource admission reads.
_ADMISSION_GROUPS = {"runtimeclasses": "node.k8s.io", "priorityclasses": "scheduling.k8s.io"}

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
MAX_BODY = 3 * 1024 * 1024


@dataclass
class WriteOptions:
    """Options common to write requests (query parameters)."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"
    warnings: list[str] = field(default_factory=list)
    #: Checks the object about to be written against the stored one (``None`` on create) before
    #: anything else; the HTTP layer sets RBAC's escalation check here (``rbac.write_guard``).
    guard: Callable[[Obj, Obj | None], None] | None = None


@dataclass
class DeleteOptions:
    grace_period: int | None = None
    propagation: str | None = None
    preconditions: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False


@dataclass
class ListResult:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


class Rest:
    """The verbs, over a store and a registry."""

    def __init__(self, store: Store, registry: Registry, defs: Definitions, clock: Clock) -> None:
        self.store = store
        self.registry = registry
        self.defs = defs
        self.clock = clock
        self._schemas: dict[tuple[str, str], tuple[dict[str, Any], structural.CustomResourceSchema]] = {}

    # -- helpers ------------------------------------------------------------------

    def now(self) -> str:
        return rfc3339(self.clock.now())

    def _output(self, kind: Kind, obj: Obj) -> Obj:
        """The stored object as served in ``kind``'s version (custom resources may differ)."""
        if kind.custom and obj.get("apiVersion") != kind.group_version:
            obj = {**obj, "apiVersion": kind.group_version}
        elif kind.storage_plural:
            obj = conversion.to_view(kind.group, obj)
        return obj

    @staticmethod
    def stored_form(kind: Kind, obj: Obj) -> Obj:
        """An object written through ``kind`` in its stored shape (views such as events.k8s.io)."""
        return conversion.to_storage(kind.group, obj) if kind.storage_plural else obj

    def _not_found(self, kind: Kind, name: str) -> errors.NotFound:
        return errors.NotFound.for_object(kind.plural, kind.group, name)

    def get(self, kind: Kind, namespace: str, name: str) -> Obj:
        obj = self.store.get(kind.storage, namespace, name)
        if obj is None:
            raise self._not_found(kind, name)
        return self._output(kind, obj)

    def _schema(self, kind: Kind) -> structural.CustomResourceSchema | None:
        schema = (kind.crd_version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            return None
        key = (kind.crd_name, kind.version)
        cached = self._schemas.get(key)
        if cached is None or cached[0] is not schema:
            cached = (schema, crdschema.custom_resource_schema(kind.crd, kind.version))
            self._schemas[key] = cached
        return cached[1]

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
                    errors.Cause(
                        "NamespaceTerminating",
                        f"namespace {namespace} is being terminated",
                        "metadata.namespace",
                    )
                ],
            )

    # -- list -----------------------------------------------------------------------

    def list(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        if fields is not None:
            check_field_selector(fields, self.selectable(kind), kind.plural)
        snapshot_rv = self.store.rv
        start = ""
        if continue_token:
            snapshot_rv, start = _decode_continue(continue_token)
        elif resource_version and resource_version != "0":
            requested = _parse_rv(resource_version)
            if requested > self.store.rv:
                raise errors.ServerTimeout(
                    f"Timeout: Too large resource version: {requested}, current: {self.store.rv}",
                    retry_after=1,
                )
            if resource_version_match == "Exact":
                snapshot_rv = requested
        objs = self.store.snapshot(kind.storage, namespace, snapshot_rv)
        matched: list[Obj] = []
        remaining = 0
        next_start = ""
        for obj in objs:
            meta = obj["metadata"]
            if start and (meta.get("namespace", ""), meta["name"]) <= _split_key(start):
                continue
            if not self.matches(kind, obj, labels, fields):
                continue
            if limit and len(matched) >= limit:
                remaining += 1
                continue
            matched.append(obj)
        token = ""
        if remaining and matched:
            last = matched[-1]["metadata"]
            next_start = f"{last.get('namespace', '')}/{last['name']}"
            token = _encode_continue(snapshot_rv, next_start)
        return ListResult(
            items=[self._output(kind, o) for o in matched],
            resource_version=str(snapshot_rv),
            continue_token=token,
            remaining=remaining if token else None,
        )

    def selectable(self, kind: Kind) -> frozenset[str]:
        extra = crdschema.selectable_fields(kind.crd, kind.version) if kind.custom else {}
        return supported_fields(*kind.storage) | frozenset(extra)

    def matches(
        self, kind: Kind, obj: Obj, labels: LabelSelector | None, fields: FieldSelector | None
    ) -> bool:
        if labels is not None and not labels.matches(obj["metadata"].get("labels") or {}):
            return False
        if fields is not None:
            extra = crdschema.selectable_fields(kind.crd, kind.version) if kind.custom else None
            if not fields.matches(object_fields(*kind.storage, obj, extra)):
                return False
        return True

    # -- create -----------------------------------------------------------------------

    def create(self, kind: Kind, namespace: str, body: Any, opts: WriteOptions) -> Obj:
        obj = self._admit_body(kind, namespace, body)
        if opts.guard is not None:
            opts.guard(obj, None)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise errors.BadRequest("resourceVersion should not be set on objects to be created")
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if generated:
            meta["name"] = meta["generateName"] + "".join(random.choices(NAME_CHARS, k=5))
        name = meta.get("name", "")
        self._validate_meta(kind, obj)
        self.require_namespace(kind, namespace, name, creating=True)
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation", "managedFields"):
            meta.pop(key, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.now()
        strategies.prepare_create(kind, obj)
        if kind.storage == ("", "pods"):
            admission.admit_pod(obj, self._admission_lookup, lister=self._admission_list)
        self._validate(kind, obj, None, opts)
        self._before_create(kind, obj)
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
            return self._output(kind, obj)
        stored = self.store.create(kind.storage, self.stored_form(kind, obj))
        self._after_write(kind, stored, None)
        return self._output(kind, stored)

    def _admission_lookup(self, plural: str, namespace: str, name: str) -> Obj | None:
        return self.store.get((_ADMISSION_GROUPS.get(plural, ""), plural), namespace, name)

    def _admission_list(self, plural: str) -> list[Obj]:
        return self.store.list((_ADMISSION_GROUPS.get(plural, ""), plural))

    def _admit_body(self, kind: Kind, namespace: str, body: Any) -> Obj:
        """Type meta and namespace checks shared by create and update; returns a private copy."""
        if not isinstance(body, dict):
            raise errors.BadRequest(f"the body of the request must be a {kind.kind} object")
        obj = copy.deepcopy(body)
        api_version = obj.get("apiVersion") or kind.group_version
        if api_version != kind.group_version:
            raise errors.BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({kind.group_version})"
            )
        obj_kind = obj.get("kind") or kind.kind
        if obj_kind != kind.kind:
            raise errors.BadRequest(
                f"the kind in the data ({obj_kind}) does not match the expected kind ({kind.kind})"
            )
        obj["apiVersion"], obj["kind"] = api_version, obj_kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.BadRequest("metadata must be an object")
        if kind.namespaced:
            body_ns = meta.get("namespace") or namespace
            if body_ns != namespace:
                raise errors.BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        return obj

    def _validate_meta(self, kind: Kind, obj: Obj) -> None:
        causes = validation.validate_object_meta(obj["metadata"], kind.namespaced, kind.name_rule)
        if causes:
            raise errors.Invalid.for_fields(kind.kind, kind.group, obj["metadata"].get("name", ""), causes)

    def _validate(self, kind: Kind, obj: Obj, old: Obj | None, opts: WriteOptions) -> None:
        """Schema checks: pruning/defaulting/validation for custom resources, definitions for built-ins."""
        name = obj["metadata"].get("name", "")
        unknown: list[str] = []
        causes: list[errors.Cause] = []
        if kind.custom:
            schema = self._schema(kind)
            if schema is not None:
                unknown = schema.prune(obj)
                schema.default(obj)
                causes = schema.validate(obj)
                causes += celrules.validate_rules(schema.source, obj, old, causes)
        else:
            def_name = self.defs.for_gvk(kind.group, kind.version, kind.kind)
            if def_name is not None:
                result = validation.validate_builtin(self.defs, def_name, obj, stored=True)
                causes, unknown = result.errors, result.unknown_fields
                # Keep what upstream's decoder keeps: no unknown fields (Strict fails below),
                # timestamps re-encoded as RFC 3339 UTC.
                obj.clear()
                obj.update(result.pruned)
        if kind.storage == ("apiextensions.k8s.io", "customresourcedefinitions"):
            causes = causes + crdschema.validate_crd(obj)
        if not causes and not kind.custom:
            causes = validation.pod_spec_causes(kind.group, kind.kind, obj)
        if unknown:
            if opts.field_validation == "Strict":
                raise validation.strict_decoding_error(unknown)
            if opts.field_validation == "Warn":
                opts.warnings.extend(validation.warning_headers(unknown))
        is_crd = kind.storage == ("apiextensions.k8s.io", "customresourcedefinitions")
        if old is not None and is_crd and obj["spec"].get("group") != old["spec"].get("group"):
            causes.append(errors.invalid("spec.group", obj["spec"].get("group"), "field is immutable"))
        if causes:
            raise errors.Invalid.for_fields(kind.kind, kind.group, name, causes)

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

    def _before_create(self, kind: Kind, obj: Obj) -> None:
        if kind.storage == ("apiextensions.k8s.io", "customresourcedefinitions"):
            obj.update(crdschema.crd_defaults(obj))
            finalizers = obj["metadata"].setdefault("finalizers", [])
            if CRD_CLEANUP_FINALIZER not in finalizers:
                finalizers.append(CRD_CLEANUP_FINALIZER)
            self._establish(obj)

    def _establish(self, crd: Obj) -> None:
        """Accept the CRD's names and mark it Established (the real server does so within ms)."""
        now = self.now()
        conditions = [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": now,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": now,
            },
        ]
        old = {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or ()}
        for cond in conditions:
            if cond["type"] in old and old[cond["type"]]["status"] == "True":
                cond["lastTransitionTime"] = old[cond["type"]]["lastTransitionTime"]
        storage = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
        crd["status"] = {
            "acceptedNames": crdschema.accepted_names(crd),
            "conditions": conditions,
            "storedVersions": sorted(
                set((crd.get("status") or {}).get("storedVersions") or []) | set(storage)
            ),
        }

    def _after_write(self, kind: Kind, obj: Obj | None, old: Obj | None) -> None:
        """Side effects of a committed write on the registry (CRDs publish their kinds)."""
        if kind.storage != ("apiextensions.k8s.io", "customresourcedefinitions"):
            return
        crd = obj or old
        assert crd is not None
        name = crd["metadata"]["name"]
        if obj is None:
            self.registry.set_custom(name, [])
        else:
            self.registry.set_custom(name, kinds_from_crd(obj))

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
        obj = self._admit_body(kind, namespace, body)
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
                    errors.Cause(
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
            self._validate_meta(kind, obj)
        strategies.prepare_update(kind, obj, old, subresource=subresource)
        self._validate(kind, obj, old, opts)
        if kind.storage == ("apiextensions.k8s.io", "customresourcedefinitions") and subresource != "status":
            obj.update({"spec": crdschema.crd_defaults(obj)["spec"]})
            self._establish(obj)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        self._track_manager(obj, opts, "Update", kind)
        if _same(obj, self._output(kind, old)):
            return self._output(kind, old)
        if opts.dry_run:
            return self._output(kind, obj)
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
            and not _spec_finalizers(kind, obj)
        ):
            stored = self.store.delete(kind.storage, self.stored_form(kind, obj), old)
            self._after_write(kind, None, stored)
            return self._output(kind, stored)
        stored = self.store.update(kind.storage, self.stored_form(kind, obj), old)
        self._after_write(kind, stored, old)
        return self._output(kind, stored)

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
        force: bool = False,
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
            current = self._output(kind, old)
            patched = self._apply_patch(kind, current, patch_type, patch)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise errors.BadRequest("the patched object must be an object with metadata")
            patched["metadata"]["name"] = name
            if kind.namespaced:
                patched["metadata"]["namespace"] = namespace
            precondition = patch_type != "json" and _patch_sets_rv(patch)
            if not precondition:
                patched["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            obj = self._admit_body(kind, namespace, patched)
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
        pre = opts.preconditions
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise errors.Conflict(
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
                name=name,
                group=kind.group,
                kind=kind.plural,
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.Conflict(
                "Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
                name=name,
                group=kind.group,
                kind=kind.plural,
            )
        obj = copy.deepcopy(old)
        new_meta = obj["metadata"]
        finalizers = list(new_meta.get("finalizers") or ())
        if opts.propagation == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        elif opts.propagation == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        grace = self._grace(kind, old, opts)
        held = _spec_finalizers(kind, old)
        if not finalizers and grace == 0 and not held:
            if opts.dry_run:
                return self._output(kind, old), True
            stored = self.store.delete(kind.storage, obj, old)
            self._after_write(kind, None, stored)
            return self._output(kind, stored), True
        if meta.get("deletionTimestamp"):
            current_grace = meta.get("deletionGracePeriodSeconds") or 0
            if grace >= current_grace and set(finalizers) == set(meta.get("finalizers") or ()):
                return self._output(kind, old), False  # a repeated DELETE changes nothing
            grace = min(grace, current_grace)
        else:
            new_meta["deletionTimestamp"] = rfc3339(self.clock.now() + timedelta(seconds=grace))
        new_meta["deletionGracePeriodSeconds"] = grace
        if finalizers:
            new_meta["finalizers"] = finalizers
        if kind.storage == ("", "namespaces"):
            obj.setdefault("status", {})["phase"] = "Terminating"
        if opts.dry_run:
            return self._output(kind, obj), False
        if not finalizers and grace == 0 and not held:
            stored = self.store.delete(kind.storage, obj, old)
            self._after_write(kind, None, stored)
            return self._output(kind, stored), True
        stored = self.store.update(kind.storage, obj, old)
        return self._output(kind, stored), False

    def _grace(self, kind: Kind, obj: Obj, opts: DeleteOptions) -> int:
        """Upstream's graceful deletion applies to pods bound to a node and not yet terminal."""
        if kind.storage != ("", "pods"):
            return 0
        if not obj.get("spec", {}).get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        if opts.grace_period is not None:
            return max(0, opts.grace_period)
        spec_grace = obj["spec"].get("terminationGracePeriodSeconds")
        return 30 if spec_grace is None else int(spec_grace)


def _same(a: Obj, b: Obj) -> bool:
    """Equal but for resourceVersion and managedFields timestamps (a no-op write)."""

    def strip(o: Obj) -> Obj:
        meta = {k: v for k, v in o["metadata"].items() if k not in ("resourceVersion", "managedFields")}
        return {**o, "metadata": meta}

    return strip(a) == strip(b)


def _spec_finalizers(kind: Kind, obj: Obj) -> bool:
    """Namespaces are also held by ``spec.finalizers`` (``kubernetes``, removed by the namespace controller)."""
    return kind.storage == ("", "namespaces") and bool((obj.get("spec") or {}).get("finalizers"))


def _patch_sets_rv(patch: Any) -> bool:
    return isinstance(patch, dict) and bool((patch.get("metadata") or {}).get("resourceVersion"))


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise errors.BadRequest(
            f'resourceVersion: Invalid value: "{text}": must be a decimal integer'
        ) from None
    if value < 0:
        raise errors.BadRequest(f'resourceVersion: Invalid value: "{text}": must be non-negative')
    return value


def _encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        return int(data["rv"]), str(data["start"])
    except Exception:
        raise errors.BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None


def _split_key(start: str) -> tuple[str, str]:
    namespace, _, name = start.partition("/")
    return namespace, name
