"""HTTP in and out for the API server's handlers: request parsing, content negotiation, JSON responses.

Owns what every handler (``server``'s verbs and ``subresources``) shares at the
wire: reading and decoding a request body (JSON, YAML, the protobuf kinds
``protobuf`` reads, the 3 MiB limit, upstream's 400/413/415 texts), the query
parameters of writes, deletes and selectors, which representation the
``Accept`` header asks for (object, ``Table`` or ``PartialObjectMetadata``),
and the JSON and ``kind: Status`` responses.  No state: a request in, values or
a response out.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from . import errors, protobuf, rbac
from .requestoptions import DeleteOptions, WriteOptions
from .selectors import parse_field_selector, parse_label_selector

Obj = dict[str, Any]
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
#: The largest request body accepted (kube-apiserver's 3 MiB).
MAX_BODY = 3 * 1024 * 1024

# -- responses ----------------------------------------------------------------------------------


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type=JSON, headers=headers)


def status_response(err: errors.StatusError) -> web.Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return json_response(err.status(), err.code, headers)


def partial_metadata(obj: Obj) -> Obj:
    """The ``PartialObjectMetadata`` form of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


# -- content negotiation ------------------------------------------------------------------------


def _accept_params(accept: str) -> list[dict[str, str]]:
    out = []
    for media in accept.split(","):
        pieces = [p.strip() for p in media.split(";")]
        params = {"type": pieces[0]}
        for piece in pieces[1:]:
            if "=" in piece:
                key, value = piece.split("=", 1)
                params[key.strip()] = value.strip()
        out.append(params)
    return out


def wanted_form(accept: str) -> str:
    """``table``, ``metadata`` or ``object``: what representation the client asks for."""
    for params in _accept_params(accept):
        if params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            if params.get("as") == "Table":
                return "table"
            if params.get("as") in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                return "metadata"
        if params["type"] in (JSON, "*/*", "application/*", "application/yaml"):
            return "object"
    return "object"


# -- query parameters ---------------------------------------------------------------------------


def query_bool(query: Any, name: str) -> bool | None:
    value = query.get(name)
    if value is None:
        return None
    return value.lower() in ("true", "1")


def selectors(request: web.Request) -> tuple[Any, Any]:
    """The parsed ``labelSelector`` and ``fieldSelector`` (None when absent)."""
    labels = request.query.get("labelSelector")
    fields = request.query.get("fieldSelector")
    return (
        parse_label_selector(labels) if labels else None,
        parse_field_selector(fields) if fields else None,
    )


#: RBAC's escalation check of the request being served (None when it needs none): the HTTP
#: handler sets it once the request is authorized, its writes run it (``WriteOptions.guard``).
WRITE_GUARD: web.RequestKey[rbac.WriteGuard | None] = web.RequestKey("rbac_write_guard")


def write_options(request: web.Request) -> WriteOptions:
    query = request.query
    dry = query.getall("dryRun", [])
    for value in dry:
        if value != "All":
            raise errors.BadRequest(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    validation_mode = query.get("fieldValidation", "Warn")
    if validation_mode not in ("Strict", "Warn", "Ignore"):
        raise errors.BadRequest(
            f'fieldValidation: Unsupported value: "{validation_mode}": '
            'supported values: "Ignore", "Strict", "Warn"'
        )
    return WriteOptions(
        dry_run=bool(dry),
        field_manager=query.get("fieldManager", ""),
        field_validation=validation_mode,
        guard=request.get(WRITE_GUARD),
    )


async def delete_options(request: web.Request) -> DeleteOptions:
    """``DeleteOptions`` from the body and the query (the query wins), checked as upstream."""
    body: Obj = {}
    if request.can_read_body:
        raw = await request.read()
        if raw.strip():
            decoded = decode_json(raw)
            if not isinstance(decoded, dict):
                raise errors.BadRequest("DeleteOptions must be an object")
            body = decoded
    query = request.query
    grace = body.get("gracePeriodSeconds")
    if "gracePeriodSeconds" in query:
        try:
            grace = int(query["gracePeriodSeconds"])
        except ValueError:
            raise errors.BadRequest("gracePeriodSeconds must be an integer") from None
    propagation = query.get("propagationPolicy") or body.get("propagationPolicy")
    orphan = query.get("orphanDependents")
    orphan_value = (orphan.lower() == "true") if orphan is not None else body.get("orphanDependents")
    if orphan_value is not None and propagation:
        raise errors.Invalid(
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
            f'"{propagation}": orphanDependents and deletionPropagation cannot be both set'
        )
    if orphan_value is True:
        propagation = "Orphan"
    elif orphan_value is False:
        propagation = "Background"
    if propagation not in (None, "Orphan", "Background", "Foreground"):
        raise errors.Invalid(
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
            f'"{propagation}": supported values: "Background", "Foreground", "Orphan"'
        )
    dry = query.getall("dryRun", []) or body.get("dryRun") or []
    for value in dry:
        if value != "All":
            raise errors.BadRequest(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return DeleteOptions(
        grace_period=grace,
        propagation=propagation,
        preconditions=dict(body.get("preconditions") or {}),
        dry_run=bool(dry),
    )


# -- request bodies -----------------------------------------------------------------------------


async def read_body(request: web.Request, *, patch: bool = False) -> tuple[Any, str]:
    """Decode a request body: (value, media type)."""
    content_type = (request.headers.get("Content-Type") or JSON).split(";")[0].strip().lower()
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise errors.RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY}")
    # StreamReader.read(n) returns what has arrived so far, not n bytes: read until EOF.
    received = bytearray()
    while len(received) <= MAX_BODY and (chunk := await request.content.read(MAX_BODY + 1 - len(received))):
        received += chunk
    raw = bytes(received)
    if len(raw) > MAX_BODY:
        raise errors.RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY}")
    if patch:
        if content_type == "application/apply-patch+yaml":
            return decode_yaml(raw), content_type
        return decode_json(raw), content_type
    if content_type == PROTOBUF or raw[:4] == protobuf.MAGIC:
        try:
            return protobuf.decode(raw), JSON
        except protobuf.UnsupportedKind as exc:
            raise _unknown_format(protobuf=str(exc)) from None
    if content_type in (JSON, ""):
        return decode_json(raw), content_type
    if content_type in ("application/yaml", "application/x-yaml"):
        return decode_yaml(raw), content_type
    raise _unknown_format()


def _unknown_format(*, protobuf: str = "") -> errors.UnsupportedMediaType:
    """Upstream's 415; for protobuf bodies of other kinds, what the embedded cluster reads and the workaround."""
    hint = (
        f" (protobuf request bodies are read for Namespace, ConfigMap, Secret, ServiceAccount and "
        f"SelfSubjectAccessReview only, not {protobuf}: use `kubectl create ... --dry-run=client -o yaml "
        "| kubectl apply -f -`)"
        if protobuf
        else ""
    )
    return errors.UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml" + hint
    )


def decode_json(raw: bytes) -> Any:
    if not raw.strip():
        raise errors.BadRequest("the request body is empty; expected a JSON object")
    if raw[:4] == protobuf.MAGIC:
        raise _unknown_format(protobuf="a patch")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.BadRequest(f"couldn't get version/kind; json parse error: {exc}") from None


def decode_yaml(raw: bytes) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise errors.BadRequest(f"error converting YAML to JSON: {exc}") from None
