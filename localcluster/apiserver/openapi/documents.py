"""The generated OpenAPI v3 documents: ``/openapi/v3`` and one document per group/version.

kubectl's ``--validate=strict`` (the default of ``apply``, ``create -f`` and
``replace``) asks the v3 root for the object's group/version and looks for a
PATCH operation carrying the object's ``x-kubernetes-group-version-kind`` and a
``fieldValidation`` query parameter.  When it finds one it leaves validation to
the server and sends ``?fieldValidation=Strict``; otherwise it falls back to the
protobuf v2 document, which this server does not serve.  So every served kind,
custom resources included, gets upstream-shaped paths and operations here.

``components.schemas`` carries real schemas (built-ins converted from the
kubernetes-validate JSON-Schema definitions by ``openapischemas``, custom
resources from their CRD version's ``openAPIV3Schema`` here) so ``kubectl
explain`` works too.

Everything here is pure and memoised: the server asks for the root and the
documents on every ``kubectl apply``.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.localcluster.apiserver.openapi.definitions import KUBE_VERSION, Definitions, load
from nrop.localcluster.apiserver.openapi.schemas import COMPONENTS_REF, closure, converted_definition

__all__ = [
    "ServedKind",
    "document_hash",
    "gv_path",
    "openapi_document",
    "openapi_root",
    "schema_name",
]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_OBJECT_META = _META + "ObjectMeta"
_LIST_META = _META + "ListMeta"
_STATUS = _META + "Status"
_DELETE_OPTIONS = _META + "DeleteOptions"
_PATCH = _META + "Patch"


@dataclass(frozen=True)
class ServedKind:
    """One kind served under a group/version, as discovery lists it.

    ``schema`` is None for built-ins (their definition comes from kubernetes-validate)
    and a CRD version's ``openAPIV3Schema`` for custom resources.  It takes part in
    equality and hashing, so a changed CRD schema gives a new document.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    schema: dict[str, Any] | None = None

    def __hash__(self) -> int:
        # Equality still compares every field; the hash only needs to be consistent with it.
        return hash((self.group, self.version, self.kind, self.plural, self._fingerprint))

    @functools.cached_property
    def _fingerprint(self) -> str:
        return "" if self.schema is None else json.dumps(self.schema, sort_keys=True, separators=(",", ":"))

    @property
    def custom(self) -> bool:
        return self.schema is not None


def gv_path(group: str, version: str) -> str:
    """The v3 root key of a group/version: ``api/v1`` or ``apis/<group>/<version>``."""
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def document_hash(doc: dict[str, Any]) -> str:
    """Upper-case hex SHA-512 of the document's canonical JSON, as upstream puts in ``?hash=``."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha512(text.encode()).hexdigest().upper()


def openapi_root(
    kinds: Iterable[ServedKind],
    version_hash: Callable[[str], str] | None = None,
    *,
    defs: Definitions | None = None,
) -> dict[str, Any]:
    """The ``/openapi/v3`` discovery document listing every served group/version.

    ``version_hash`` is called with a root key (``api/v1``, ``apis/apps/v1``) and
    returns that document's hash; without it the documents are built (memoised)
    and hashed with :func:`document_hash`.
    """
    by_gv: dict[tuple[str, str], list[ServedKind]] = {}
    for kind in kinds:
        by_gv.setdefault((kind.group, kind.version), []).append(kind)
    paths: dict[str, Any] = {}
    for (group, version), members in sorted(by_gv.items()):
        key = gv_path(group, version)
        if version_hash is not None:
            digest = version_hash(key)
        else:
            digest = _cached_hash(group, version, members, defs or load())
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


# --------------------------------------------------------------------------- memoisation

_DOC_CACHE_SIZE = 128
_doc_cache: OrderedDict[tuple[Any, ...], tuple[Definitions, dict[str, Any], list[str]]] = OrderedDict()


def _doc_key(group: str, version: str, kinds: Sequence[ServedKind], defs: Definitions) -> tuple[Any, ...]:
    members = [k for k in kinds if (k.group, k.version) == (group, version)]
    return (group, version, tuple(sorted(members, key=lambda k: (k.plural, k.kind))), id(defs))


def _cache_entry(
    group: str, version: str, kinds: Sequence[ServedKind], defs: Definitions
) -> tuple[Definitions, dict[str, Any], list[str]]:
    key = _doc_key(group, version, kinds, defs)
    entry = _doc_cache.get(key)
    if entry is not None and entry[0] is defs:
        _doc_cache.move_to_end(key)
        return entry
    entry = (defs, _build_document(group, version, key[2], defs), [])
    _doc_cache[key] = entry
    while len(_doc_cache) > _DOC_CACHE_SIZE:
        _doc_cache.popitem(last=False)
    return entry


def _cached_hash(group: str, version: str, kinds: Sequence[ServedKind], defs: Definitions) -> str:
    _, doc, hashes = _cache_entry(group, version, kinds, defs)
    if not hashes:
        hashes.append(document_hash(doc))
    return hashes[0]


def openapi_document(
    group: str, version: str, kinds: Sequence[ServedKind], defs: Definitions | None = None
) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group/version (kinds of other group/versions are ignored).

    The result is memoised and shared: callers must not mutate it.
    """
    return _cache_entry(group, version, kinds, defs or load())[1]


# --------------------------------------------------------------------------- schemas of served kinds


def schema_name(kind: ServedKind, defs: Definitions) -> str:
    """The ``components.schemas`` name of a kind (upstream's REST-friendly name for CRs)."""
    if not kind.custom:
        name = defs.for_gvk(kind.group, kind.version, kind.kind)
        if name is not None:
            return name
    return _rest_friendly(kind.group, kind.version, kind.kind)


def _rest_friendly(group: str, version: str, kind: str) -> str:
    reversed_group = ".".join(reversed(group.split("."))) if group else "core"
    return f"{reversed_group}.{version}.{kind}"


def _custom_schema(kind: ServedKind) -> dict[str, Any]:
    """A CRD schema completed the way upstream publishes it: typed meta fields and the GVK."""
    base = copy.deepcopy(kind.schema) if kind.schema else {}
    if not base.get("properties") and "x-kubernetes-preserve-unknown-fields" not in base:
        base["x-kubernetes-preserve-unknown-fields"] = True
    props = dict(base.get("properties") or {})
    props["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    props["kind"] = {"description": _KIND_DOC, "type": "string"}
    props["metadata"] = {"allOf": [{"$ref": COMPONENTS_REF + _OBJECT_META}], "description": _METADATA_DOC}
    base["properties"] = dict(sorted(props.items()))
    base["type"] = "object"
    base["x-kubernetes-group-version-kind"] = [_gvk(kind.group, kind.version, kind.kind)]
    return base


def _custom_list_schema(kind: ServedKind, item_name: str) -> dict[str, Any]:
    return {
        "description": f"{kind.kind}List is a list of {kind.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "items": {
                "description": f"List of {kind.plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "type": "array",
                "items": {"$ref": COMPONENTS_REF + item_name},
            },
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {"allOf": [{"$ref": COMPONENTS_REF + _LIST_META}], "description": _LIST_METADATA_DOC},
        },
        "x-kubernetes-group-version-kind": [_gvk(kind.group, kind.version, kind.kind + "List")],
    }


_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer "
    "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_DOC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_LIST_METADATA_DOC = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#lists-and-simple-lists"
)


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


# --------------------------------------------------------------------------- paths and operations


def _param(name: str, where: str, schema_type: str, description: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": schema_type}
    if schema_type == "string":
        schema["uniqueItems"] = True
    out: dict[str, Any] = {"description": description, "in": where, "name": name, "schema": schema}
    if where == "path":
        out["required"] = True
    return out


# name, location, type, description (abridged from upstream's parameter texts)
_PARAM_ROWS = (
    ("name", "path", "string", "name of the resource"),
    ("namespace", "path", "string", "object name and auth scope, such as for teams and projects"),
    ("pretty", "query", "string", "If 'true', then the output is pretty printed."),
    ("dryRun", "query", "string", "When present, indicates that modifications should not be persisted."),
    (
        "fieldManager",
        "query",
        "string",
        "fieldManager is a name associated with the actor making these changes.",
    ),
    (
        "fieldValidation",
        "query",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request containing unknown "
        "or duplicate fields. Valid values are: - Ignore, - Warn (the default), - Strict",
    ),
    ("force", "query", "boolean", 'Force is going to "force" Apply requests.'),
    (
        "gracePeriodSeconds",
        "query",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    ("orphanDependents", "query", "boolean", "Deprecated: please use the PropagationPolicy."),
    ("propagationPolicy", "query", "string", "Whether and how garbage collection will be performed."),
    (
        "allowWatchBookmarks",
        "query",
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK".',
    ),
    ("continue", "query", "string", "The continue option should be set when retrieving more results."),
    ("fieldSelector", "query", "string", "A selector to restrict the returned objects by their fields."),
    ("labelSelector", "query", "string", "A selector to restrict the returned objects by their labels."),
    ("limit", "query", "integer", "limit is a maximum number of responses to return for a list call."),
    ("resourceVersion", "query", "string", "resourceVersion constrains what resource versions may serve."),
    (
        "resourceVersionMatch",
        "query",
        "string",
        "resourceVersionMatch determines how resourceVersion applies.",
    ),
    (
        "sendInitialEvents",
        "query",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    ("timeoutSeconds", "query", "integer", "Timeout for the list/watch call."),
    (
        "watch",
        "query",
        "boolean",
        "Watch for changes to the described resources and return them as a stream.",
    ),
)
_P = {row[0]: _param(*row) for row in _PARAM_ROWS}
_LIST = "allowWatchBookmarks continue fieldSelector labelSelector limit resourceVersion resourceVersionMatch"
_LIST_TAIL = "sendInitialEvents timeoutSeconds"


@dataclass(frozen=True)
class _Action:
    """An ``x-kubernetes-action``: operationId verb, description, query parameters, response codes."""

    word: str
    description: str
    params: str
    codes: str


_ACTIONS = {
    "get": _Action("read", "read the specified {kind}", "", "200"),
    "list": _Action("list", "list or watch objects of kind {kind}", f"{_LIST} {_LIST_TAIL} watch", "200"),
    "post": _Action("create", "create a {kind}", "dryRun fieldManager fieldValidation", "200 201 202"),
    "put": _Action(
        "replace", "replace the specified {kind}", "dryRun fieldManager fieldValidation", "200 201"
    ),
    "patch": _Action(
        "patch",
        "partially update the specified {kind}",
        "dryRun fieldManager fieldValidation force",
        "200 201",
    ),
    "delete": _Action(
        "delete", "delete a {kind}", "dryRun gracePeriodSeconds orphanDependents propagationPolicy", "200 202"
    ),
    "deletecollection": _Action(
        "deletecollection",
        "delete collection of {kind}",
        f"{_LIST} {_LIST_TAIL} dryRun gracePeriodSeconds orphanDependents propagationPolicy",
        "200",
    ),
}
_CODE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


@dataclass(frozen=True)
class _Sub:
    """How upstream publishes one subresource: its verbs and the GVK/definition of its body."""

    verbs: tuple[str, ...]
    group: str | None = None  # None: the parent kind's GVK and schema
    version: str = ""
    kind: str = ""


_SUBRESOURCES = {
    "status": _Sub(("get", "put", "patch")),
    "scale": _Sub(("get", "put", "patch"), "autoscaling", "v1", "Scale"),
    "binding": _Sub(("post",), "", "v1", "Binding"),
    "eviction": _Sub(("post",), "policy", "v1", "Eviction"),
    "finalize": _Sub(("put",)),
    "token": _Sub(("post",), "authentication.k8s.io", "v1", "TokenRequest"),
}


def _camel(word: str) -> str:
    return word[:1].upper() + word[1:]


def _group_word(group: str) -> str:
    if not group:
        return "Core"
    trimmed = group.removesuffix(".k8s.io")
    return "".join(_camel(part) for part in re.split(r"[.\-]", trimmed) if part)


def _tag(group: str, version: str) -> str:
    word = _group_word(group)
    return f"{word[:1].lower()}{word[1:]}_{version}"


@dataclass
class _Ctx:
    group: str
    version: str
    defs: Definitions
    roots: set[str]
    custom_schemas: dict[str, dict[str, Any]]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": COMPONENTS_REF + name}


def _media(custom: bool) -> tuple[str, ...]:
    if custom:
        return ("application/json", "application/yaml")
    return ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")


@dataclass(frozen=True)
class _Target:
    """What an operation acts on: the kind it is listed under, the GVK and the body/result schemas."""

    label: str
    gvk: dict[str, str]
    body: str
    custom: bool
    namespaced: bool


def _operation(
    ctx: _Ctx, action: str, target: _Target, result: str, *, all_namespaces: bool = False, suffix: str = ""
) -> dict[str, Any]:
    spec = _ACTIONS[action]
    scope = "Namespaced" if target.namespaced and not all_namespaces else ""
    tail = "ForAllNamespaces" if all_namespaces else ""
    group_word = _group_word(ctx.group)
    media = _media(target.custom)
    responses: dict[str, Any] = {
        code: {"content": {m: {"schema": _ref(result)} for m in media}, "description": _CODE_TEXT[code]}
        for code in spec.codes.split()
    }
    responses["401"] = {"description": "Unauthorized"}
    op: dict[str, Any] = {
        "description": spec.description.format(kind=target.label + suffix),
        "operationId": f"{spec.word}{group_word}{_camel(ctx.version)}{scope}{target.label}{suffix}{tail}",
        "parameters": [_P[p] for p in spec.params.split()],
        "responses": responses,
        "tags": [_tag(ctx.group, ctx.version)],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": target.gvk,
    }
    if action in ("post", "put"):
        op["requestBody"] = {"content": {"*/*": {"schema": _ref(target.body)}}, "required": True}
    elif action == "patch":
        types = _PATCH_TYPES[:-1] if target.custom else _PATCH_TYPES  # no strategic merge for CRs
        op["requestBody"] = {"content": {t: {"schema": _ref(_PATCH)} for t in types}, "required": True}
    elif action in ("delete", "deletecollection"):
        op["requestBody"] = {"content": {"*/*": {"schema": _ref(_DELETE_OPTIONS)}}}
    return op


def _kind_paths(ctx: _Ctx, kind: ServedKind, paths: dict[str, Any]) -> None:
    defs = ctx.defs
    name = schema_name(kind, defs)
    list_name = None if kind.custom else defs.for_gvk(kind.group, kind.version, kind.kind + "List")
    if kind.custom or name not in defs.defs:
        ctx.custom_schemas[name] = _custom_schema(kind)
        ctx.roots.add(_OBJECT_META)
    else:
        ctx.roots.add(name)
    if list_name is None:
        list_name = name + "List"
        ctx.custom_schemas[list_name] = _custom_list_schema(kind, name)
        ctx.roots.add(_LIST_META)
    else:
        ctx.roots.add(list_name)

    prefix = "/" + gv_path(kind.group, kind.version)
    scope_prefix = prefix + "/namespaces/{namespace}" if kind.namespaced else prefix
    scope_params = [_P["namespace"]] if kind.namespaced else []
    gvk = _gvk(kind.group, kind.version, kind.kind)
    target = _Target(kind.kind, gvk, name, kind.custom, kind.namespaced)

    collection = f"{scope_prefix}/{kind.plural}"
    paths[collection] = {
        "delete": _operation(ctx, "deletecollection", target, _STATUS),
        "get": _operation(ctx, "list", target, list_name),
        "parameters": [*scope_params, _P["pretty"]],
        "post": _operation(ctx, "post", target, name),
    }
    item = f"{collection}/{{name}}"
    paths[item] = {
        "delete": _operation(ctx, "delete", target, _STATUS),
        "get": _operation(ctx, "get", target, name),
        "parameters": [_P["name"], *scope_params, _P["pretty"]],
        "patch": _operation(ctx, "patch", target, name),
        "put": _operation(ctx, "put", target, name),
    }
    if kind.namespaced:
        paths[f"{prefix}/{kind.plural}"] = {
            "get": _operation(ctx, "list", target, list_name, all_namespaces=True),
            "parameters": [_P["pretty"]],
        }
    for sub_name in kind.subresources:
        sub = _SUBRESOURCES.get(sub_name)
        if sub is None:
            continue  # connect-style subresources (exec, log, proxy, ...) carry no schema
        sub_target = target
        if sub.group is not None:
            body_name = defs.for_gvk(sub.group, sub.version, sub.kind)
            if body_name is None:
                continue
            sub_gvk = _gvk(sub.group, sub.version, sub.kind)
            sub_target = _Target(kind.kind, sub_gvk, body_name, kind.custom, kind.namespaced)
            ctx.roots.add(body_name)
        entry: dict[str, Any] = {"parameters": [_P["name"], *scope_params, _P["pretty"]]}
        for verb in sub.verbs:
            entry[verb] = _operation(ctx, verb, sub_target, sub_target.body, suffix=_camel(sub_name))
        paths[f"{item}/{sub_name}"] = entry


def _build_document(
    group: str, version: str, kinds: tuple[ServedKind, ...], defs: Definitions
) -> dict[str, Any]:
    ctx = _Ctx(group, version, defs, {_STATUS, _DELETE_OPTIONS, _PATCH}, {})
    paths: dict[str, Any] = {}
    for kind in kinds:
        _kind_paths(ctx, kind, paths)
    schemas: dict[str, Any] = {
        name: converted_definition(defs, name) for name in sorted(closure(defs, ctx.roots))
    }
    schemas.update(ctx.custom_schemas)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{KUBE_VERSION}"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }
