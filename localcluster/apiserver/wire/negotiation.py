"""Content negotiation as kube-apiserver does it: which media type and representation a request gets.

Upstream's ``handlers/negotiation``: the ``Accept`` header is parsed and ordered as
``goautoneg`` does (by ``q``, then specificity, otherwise in the client's order), and the
first clause the endpoint allows wins. Every endpoint serves ``application/json``,
``application/yaml`` and ``application/vnd.kubernetes.protobuf`` (JSON and protobuf also as
watch streams), with the restrictions of ``RequestScope``:

* custom resources are JSON or YAML only (``StandardSerializers`` leave protobuf out), so a
  protobuf clause is skipped for them, and an ``Accept`` of protobuf alone is a 406;
* ``as=Table`` (``g=meta.k8s.io``, ``v=v1``/``v1beta1``) is JSON or YAML only, so a
  protobuf Table clause is skipped too; ``as=PartialObjectMetadata[List]`` is any type;
  any other ``as`` is skipped;
* errors (``ErrorNegotiated``) take any media type but no conversion, whatever the kind.

A request body's ``Content-Type`` picks its decoder the same way
(``NegotiateInputSerializerForMediaType``): none means JSON, unknown ones are a 415.

Pure: header strings in, an :class:`Outcome` (or an error carrying upstream's text) out.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from nrop.localcluster.apiserver import errors

__all__ = [
    "JSON",
    "PROTOBUF",
    "SERVED",
    "YAML",
    "Clause",
    "Endpoint",
    "Outcome",
    "input_media_type",
    "negotiate",
    "parse_accept",
]

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
#: What every endpoint serves, in upstream's order (it is the order of the 406/415 texts).
SERVED = (JSON, YAML, PROTOBUF)
_STREAMS = (JSON, PROTOBUF)
_META_VERSIONS = (("meta.k8s.io", "v1"), ("meta.k8s.io", "v1beta1"))


class Endpoint(enum.Enum):
    """Whose restrictions apply (``RequestScope`` of a built-in kind or a CR, or none for errors)."""

    BUILTIN = "builtin"
    CUSTOM = "custom"
    ERROR = "error"


@dataclass(frozen=True)
class Clause:
    """One ``Accept`` clause."""

    type: str
    subtype: str
    q: float = 1.0
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """The negotiated media type and conversion (``""``, ``Table``, ``PartialObjectMetadata[List]``)."""

    media_type: str
    convert: str = ""


def _less(a: Clause, b: Clause) -> bool:
    """goautoneg's ``acceptSlice.Less``."""
    if a.q > b.q:
        return True
    if a.type != "*" and b.type == "*":
        return True
    return a.subtype != "*" and b.subtype == "*"


def parse_accept(header: str) -> list[Clause]:
    """goautoneg's ``ParseAccept``: malformed clauses dropped, then sorted as its ``sort.Sort``
    does for such short lists (an insertion sort, so equal clauses keep the client's order)."""
    clauses: list[Clause] = []
    for raw in header.split(","):
        part = raw.strip(" ")
        if not part:
            continue
        media, *param_parts = part.split(";")
        type_, _, subtype = media.partition("/")
        type_ = type_.strip(" ")
        if not subtype:
            if type_ != "*":
                continue
            subtype = "*"
        elif "/" in subtype:
            continue
        q, params = 1.0, {}
        for param in param_parts:
            key, sep, value = param.partition("=")
            if not sep or "=" in value:
                continue
            key = key.strip(" ")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value.strip(" ")
        clauses.append(Clause(type_, subtype.strip(" "), q, params))
    for i in range(1, len(clauses)):
        j = i
        while j > 0 and _less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def _allowed(params: dict[str, str], media_type: str, endpoint: Endpoint) -> Outcome | None:
    """``acceptMediaTypeOptions`` with the endpoint's restrictions: the outcome, or None to skip."""
    convert = None
    if {"as", "g", "v"} & params.keys():
        convert = (params.get("g", ""), params.get("v", ""), params.get("as", ""))
    stream = params.get("stream", "")
    if stream and (media_type not in _STREAMS or stream != "watch"):
        return None
    server_version = params.get("sv", "")
    if server_version and (endpoint is Endpoint.ERROR or server_version != "v1"):
        return None
    if convert is None:
        if endpoint is Endpoint.CUSTOM and media_type == PROTOBUF:
            return None
        return Outcome(media_type)
    group, version, kind = convert
    if endpoint is Endpoint.ERROR or (group, version) not in _META_VERSIONS:
        return None
    if kind == "Table":
        return Outcome(media_type, kind) if media_type in (JSON, YAML) else None
    if kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
        return Outcome(media_type, kind)
    return None


def negotiate(accept: str, endpoint: Endpoint = Endpoint.BUILTIN) -> Outcome:
    """``NegotiateOutputMediaType``: the first allowed clause, JSON when there is no header;
    :class:`errors.NotAcceptable` (406, upstream's text) when no clause is allowed."""
    if not accept:
        return Outcome(JSON)
    for clause in parse_accept(accept):
        for media_type in SERVED:
            served_type, _, served_subtype = media_type.partition("/")
            if (clause.type == served_type and clause.subtype in (served_subtype, "*")) or (
                clause.type == "*" and clause.subtype == "*"
            ):
                outcome = _allowed(clause.params, media_type, endpoint)
                if outcome is not None:
                    return outcome
    raise errors.NotAcceptable(f"only the following media types are accepted: {', '.join(SERVED)}")


def input_media_type(content_type: str) -> str:
    """The served media type a ``Content-Type`` names (JSON when empty); 415 otherwise."""
    media = (content_type or JSON).split(";", 1)[0].strip().lower()
    if media in SERVED:
        return media
    raise errors.UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(SERVED)
    )
