"""HTTP in and out for the API server's handlers: request parsing, negotiated responses.

Owns what every handler (``server``'s verbs and ``subresources``) shares at the
wire: reading and decoding a request body (JSON, YAML or Kubernetes protobuf as its
``Content-Type`` says, the 3 MiB limit, upstream's 400/413/415 texts), the query
parameters of writes, deletes and selectors, and responses in the media type and
representation ``negotiation`` picks from ``Accept`` (JSON, YAML or protobuf; the
object, a ``Table`` or ``PartialObjectMetadata``), ``kind: Status`` errors included.
No state: a request in, values or a response out.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from nrop.localcluster.apiserver import errors, rbac
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.decisions.selectors import parse_field_selector, parse_label_selector
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.wire import negotiation, protobuf
from nrop.localcluster.apiserver.wire.negotiation import JSON, PROTOBUF, YAML, Endpoint, Outcome

Obj = dict[str, Any]
#: The largest request body accepted (kube-apiserver's 3 MiB).
MAX_BODY = 3 * 1024 * 1024

# -- responses ----------------------------------------------------------------------------------


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON body whatever the ``Accept`` (discovery, version, OpenAPI and debug documents)."""
    return web.Response(body=dumps(obj), status=status, content_type=JSON, headers=headers)


def encode(obj: Obj, media_type: str) -> bytes:
    """An object in a served media type (protobuf only for kinds with a message)."""
    if media_type == PROTOBUF:
        try:
            return protobuf.encode(obj)
        except protobuf.Undecodable as exc:
            raise errors.NotAcceptable(
                f"object {obj.get('kind', '')} does not implement the protobuf marshalling interface "
                f"and cannot be encoded to a protobuf message: {exc}"
            ) from None
    if media_type == YAML:
        return yaml.safe_dump(obj, default_flow_style=False, sort_keys=True, allow_unicode=True).encode()
    return dumps(obj)


def negotiated(request: web.Request, endpoint: Endpoint = Endpoint.BUILTIN) -> Outcome:
    """The media type and representation the request's ``Accept`` gets (406 when none is served)."""
    return negotiation.negotiate(request.headers.get("Accept", ""), endpoint)


def respond(
    outcome: Outcome, obj: Obj, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """An object (or a list, a Table, a Status...) in the negotiated media type."""
    response = web.Response(body=encode(obj, outcome.media_type), status=status, headers=headers)
    response.content_type = outcome.media_type
    return response


def status_response(err: errors.StatusError, request: web.Request | None = None) -> web.Response:
    """A ``kind: Status`` error, in protobuf or YAML when the client asks (``ErrorNegotiated``)."""
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    try:
        outcome = negotiated(request, Endpoint.ERROR) if request is not None else Outcome(JSON)
    except errors.NotAcceptable:
        outcome = Outcome(JSON)
    return respond(outcome, err.status(), err.code, headers)


def partial_metadata(obj: Obj) -> Obj:
    """The ``PartialObjectMetadata`` form of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


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
            media_type = negotiation.input_media_type(request.headers.get("Content-Type", ""))
            decoded = decode_body(raw, media_type)
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


async def read_body(
    request: web.Request, *, patch: bool = False, kind: Kind | None = None
) -> tuple[Any, str]:
    """Decode a request body: (value, media type); ``kind``: the kind the endpoint takes."""
    content_type = (request.headers.get("Content-Type") or JSON).split(";")[0].strip().lower()
    media_type = content_type if patch else negotiation.input_media_type(content_type)
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
    return decode_body(raw, media_type, kind), media_type


def decode_body(raw: bytes, media_type: str, kind: Kind | None = None) -> Any:
    """A body in a served media type as its JSON form; upstream's 400 when it does not decode."""
    if media_type == YAML:
        return decode_yaml(raw)
    if media_type != PROTOBUF:
        return decode_json(raw)
    api_version = body_kind = ""
    try:
        api_version, body_kind = protobuf.type_meta(raw)
        if kind is not None and kind.custom:
            # A CR has no message: upstream's decoder fails on the unstructured object it decodes into.
            raise protobuf.Undecodable(
                "object *unstructured.Unstructured does not implement the protobuf marshalling "
                "interface and cannot be encoded to a protobuf message"
            )
        return protobuf.decode(raw)
    except protobuf.Undecodable as exc:
        if kind is None or not body_kind:
            raise errors.BadRequest(str(exc)) from None
        # handlers.transformDecodeError: what the body said it was, and what the endpoint takes.
        version = api_version.rpartition("/")[2]
        raise errors.BadRequest(
            f'{body_kind} in version "{version}" cannot be handled as a {kind.kind}: {exc}'
        ) from None


def decode_json(raw: bytes) -> Any:
    if not raw.strip():
        raise errors.BadRequest("the request body is empty; expected a JSON object")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.BadRequest(f"couldn't get version/kind; json parse error: {exc}") from None


def decode_yaml(raw: bytes) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise errors.BadRequest(f"error converting YAML to JSON: {exc}") from None
