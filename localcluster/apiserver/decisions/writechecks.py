"""The checks every create and update runs on the object before it is committed.

In upstream's order: the body's type meta and namespace against the request
(:meth:`WriteChecks.admit_body`), object metadata (names, labels, annotations:
:meth:`WriteChecks.validate_meta`), then the kind's schema
(:meth:`WriteChecks.validate`): a custom resource is pruned, defaulted and
validated against its CRD's structural schema and CEL rules, a built-in against
its definition and the pod-spec rules of ``nrop.api``.  Unknown fields fail a
``Strict`` write or become ``Warning`` headers per ``fieldValidation``.  The
compiled CRD schemas are cached per CRD version.
"""

from __future__ import annotations

import copy
from typing import Any

from nrop.api.status import Cause
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.crd import celrules, structural
from nrop.localcluster.apiserver.crd import schema as crdschema
from nrop.localcluster.apiserver.crd.establishing import CRDS
from nrop.localcluster.apiserver.decisions import validation
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.openapi.definitions import Definitions
from nrop.localcluster.apiserver.registry import Kind

Obj = dict[str, Any]


class WriteChecks:
    """Body, metadata and schema checks, over the built-in definitions and the CRDs' schemas."""

    def __init__(self, defs: Definitions) -> None:
        self.defs = defs
        self._schemas: dict[tuple[str, str], tuple[dict[str, Any], structural.CustomResourceSchema]] = {}

    def admit_body(self, kind: Kind, namespace: str, body: Any) -> Obj:
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

    def validate_meta(self, kind: Kind, obj: Obj) -> None:
        causes = validation.validate_object_meta(obj["metadata"], kind.namespaced, kind.name_rule)
        if causes:
            raise errors.Invalid.for_fields(kind.kind, kind.group, obj["metadata"].get("name", ""), causes)

    def validate(self, kind: Kind, obj: Obj, old: Obj | None, opts: WriteOptions) -> None:
        """Schema checks: pruning/defaulting/validation for custom resources, definitions for built-ins."""
        name = obj["metadata"].get("name", "")
        unknown: list[str] = []
        causes: list[Cause] = []
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
        if kind.storage == CRDS:
            causes = causes + crdschema.validate_crd(obj)
        if not causes and not kind.custom:
            causes = validation.pod_spec_causes(kind.group, kind.kind, obj)
        if unknown:
            if opts.field_validation == "Strict":
                raise validation.strict_decoding_error(unknown)
            if opts.field_validation == "Warn":
                opts.warnings.extend(validation.warning_headers(unknown))
        if old is not None and kind.storage == CRDS and obj["spec"].get("group") != old["spec"].get("group"):
            causes.append(errors.invalid("spec.group", obj["spec"].get("group"), "field is immutable"))
        if causes:
            raise errors.Invalid.for_fields(kind.kind, kind.group, name, causes)

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
