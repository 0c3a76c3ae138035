"""Kubernetes protobuf, ``application/vnd.kubernetes.protobuf``, to and from the stored JSON form.

The one conversion between the wire form client-go uses for built-in kinds and the JSON
objects the rest of the server handles. A body is the magic ``k8s\\x00`` and a
``runtime.Unknown`` (1 typeMeta {1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding,
4 contentType) whose ``raw`` is the object's message; a watch frame is a 4-byte
big-endian length and a ``WatchEvent`` (1 type, 2 object: a ``RawExtension`` whose raw is
such a body).

The conversion is generic, driven by the messages' descriptors (``nrop.api.kubeproto``,
upstream's ``generated.proto``) and by how Go encodes each field (``go_fields``): JSON
names (proto names but for inlined structs and a few like ``$ref``), ``omitempty`` and
``omitzero``, and pointers. It writes what gogo's generated ``Marshal`` writes — every
non-pointer field, zero or not — and reads what ``encoding/json`` would print for the
decoded Go struct, so a Go client's bytes and JSON both round-trip. Types with their own
JSON form are converted by hand: ``resource.Quantity`` (a string), ``metav1.Time``
(seconds; RFC 3339 in JSON, ``null`` when zero), ``MicroTime``, ``Duration``,
``intstr.IntOrString``, raw JSON (``RawExtension``, ``FieldsV1``, apiextensions ``JSON``),
the ``JSONSchemaPropsOr*`` unions and the named string slices (``ExtraValue``).

Pure: bytes in, dicts out (and back).
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from nrop.api import kubeproto
from nrop.api.metatime import from_unix_nanos, parse_time, rfc3339, rfc3339_micro

__all__ = ["MAGIC", "Undecodable", "decode", "encode", "type_meta", "watch_frame"]

MAGIC = b"k8s\x00"
Obj = dict[str, Any]

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_RUNTIME = "k8s.io.apimachinery.pkg.runtime"
_EXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
_PROPS = f"{_EXT}.JSONSchemaProps"
#: Proto package prefix of each served API group (``<prefix>.<version>.<Kind>``).
_GROUPS = {
    "": "k8s.io.api.core",
    "apps": "k8s.io.api.apps",
    "batch": "k8s.io.api.batch",
    "policy": "k8s.io.api.policy",
    "rbac.authorization.k8s.io": "k8s.io.api.rbac",
    "coordination.k8s.io": "k8s.io.api.coordination",
    "events.k8s.io": "k8s.io.api.events",
    "scheduling.k8s.io": "k8s.io.api.scheduling",
    "node.k8s.io": "k8s.io.api.node",
    "authorization.k8s.io": "k8s.io.api.authorization",
    "authentication.k8s.io": "k8s.io.api.authentication",
    "autoscaling": "k8s.io.api.autoscaling",
    "apiextensions.k8s.io": "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions",
    "meta.k8s.io": "k8s.io.apimachinery.pkg.apis.meta",
}


class Undecodable(ValueError):
    """A protobuf body this server cannot read: no magic, malformed, or a kind it does not know."""


# -- kinds ----------------------------------------------------------------------------------------


def _descriptor(api_version: str, kind: str) -> Descriptor | None:
    """The message of a kind: its group's, else meta's (``Status``, ``DeleteOptions``... every
    group registers those, as ``metav1.AddToGroupVersion`` does)."""
    group, _, version = api_version.rpartition("/")
    prefix = _GROUPS.get(group)
    found = kubeproto.message_descriptor(f"{prefix}.{version}.{kind}") if prefix else None
    return found or kubeproto.message_descriptor(f"{_META}.{kind}")


# -- Go's JSON forms of the hand-converted types ------------------------------------------------------

_DURATION_UNITS = (
    ("h", 3600 * 10**9),
    ("m", 60 * 10**9),
    ("s", 10**9),
    ("ms", 10**6),
    ("us", 10**3),
    ("µs", 10**3),
    ("ns", 1),
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")


def _parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string (``1h2m3.5s``)."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return 0
    units = dict(_DURATION_UNITS)
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * units[match.group(2)]
        pos = match.end()
    if pos != len(body) or not body:
        raise Undecodable(f'time: invalid duration "{text}"')
    return sign * round(total)


def _format_duration(ns: int) -> str:
    """Go's ``time.Duration.String``."""
    if ns == 0:
        return "0s"
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns < 10**9:
        for unit, size in (("ns", 1), ("µs", 10**3), ("ms", 10**6)):
            if ns < size * 1000:
                return sign + _decimal(ns, size) + unit
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _decimal(rest, 10**9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(value: int, size: int) -> str:
    whole, frac = divmod(value, size)
    if not frac:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def _parse_time(text: str) -> tuple[int, int]:
    moment = parse_time(text)
    return int(moment.timestamp() // 1), moment.microsecond * 1000


def _format_time(seconds: int, nanos: int = 0, *, micro: bool = False) -> str:
    moment = from_unix_nanos(seconds * 1_000_000_000 + nanos)
    return rfc3339_micro(moment) if micro else rfc3339(moment)


# -- JSON -> message ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    """One message field and what Go does with it."""

    name: str
    json: str  # "" when inlined
    pointer: bool
    omitempty: bool
    omitzero: bool
    message: str  # full name of the (map value's) message type, "" for scalars
    repeated: bool
    is_map: bool
    scalar_in: Callable[[Any], Any]  # JSON -> proto of a (map value's) scalar
    scalar_out: Callable[[Any], Any]
    default: Any


def _bytes_in(value: Any) -> bytes:
    return base64.b64decode(value) if isinstance(value, str) else bytes(value)


def _string_in(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _bytes_out(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _json_number(value: float) -> int | float:
    """Go prints a whole float64 without a fraction."""
    return int(value) if value.is_integer() else value


def _same(value: Any) -> Any:
    return value


def _converters(fd: FieldDescriptor) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return _bytes_in, _bytes_out
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return float, _json_number
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return bool, _same
    if fd.type == FieldDescriptor.TYPE_STRING:
        return _string_in, _same
    return int, _same


@cache
def _plan(descriptor: Descriptor) -> tuple[_Field, ...]:
    go = kubeproto.go_fields().get(descriptor.full_name, {})
    fields = []
    for fd in descriptor.fields:
        json_name, flags = go.get(fd.name, (fd.name, "e"))
        is_map = fd.message_type is not None and fd.message_type.GetOptions().map_entry
        element = fd.message_type.fields_by_name["value"] if is_map else fd
        scalar_in, scalar_out = _converters(element)
        fields.append(
            _Field(
                name=fd.name,
                json=json_name,
                pointer="p" in flags or fd.type == FieldDescriptor.TYPE_BYTES,
                omitempty="e" in flags,
                omitzero="z" in flags,
                message=element.message_type.full_name if element.message_type is not None else "",
                repeated=fd.is_repeated,
                is_map=is_map,
                scalar_in=scalar_in,
                scalar_out=scalar_out,
                default=fd.default_value if not fd.is_repeated else None,
            )
        )
    return tuple(fields)


@cache
def _by_json(descriptor: Descriptor) -> tuple[dict[str, _Field], tuple[_Field, ...]]:
    """A message's fields by JSON name, and its inlined structs."""
    fields = _plan(descriptor)
    return {f.json: f for f in fields if f.json}, tuple(f for f in fields if not f.json)


@cache
def _zero(descriptor: Descriptor) -> Message:
    """The message gogo writes for a zero Go struct: every non-pointer field, recursively."""
    msg = GetMessageClass(descriptor)()
    for f in _plan(descriptor):
        if f.repeated or f.pointer:
            continue
        if f.message:
            _message_in(getattr(msg, f.name), f.message, None)
        else:
            setattr(msg, f.name, f.default)
    return msg


def _message_in(msg: Message, name: str, value: Any) -> None:
    special = _SPECIALS.get(name)
    if special:
        msg.SetInParent()
        special[0](msg, value)
    else:
        msg.CopyFrom(_zero(msg.DESCRIPTOR))
        if value:
            _fill(msg, value)


def _fill(msg: Message, obj: Obj) -> None:
    """Set the fields of a zero message (:func:`_zero`) from its Go JSON form."""
    by_json, inlined = _by_json(msg.DESCRIPTOR)
    for key, value in obj.items():
        f = by_json.get(key)
        if f is None or value is None:  # unknown, or null: Go's zero value, already there
            continue
        if f.is_map:
            target = getattr(msg, f.name)
            if f.message:
                for entry, item in value.items():
                    _message_in(target[entry], f.message, item)
            else:
                for entry, item in value.items():
                    target[entry] = f.scalar_in(item)
        elif f.repeated:
            target = getattr(msg, f.name)
            if f.message:
                for item in value:
                    _message_in(target.add(), f.message, item)
            else:
                target.extend(map(f.scalar_in, value))
        elif f.message:
            _message_in(getattr(msg, f.name), f.message, value)
        else:
            setattr(msg, f.name, f.scalar_in(value))
    for f in inlined:  # an inlined struct's fields sit in this object
        _fill(getattr(msg, f.name), obj)


def to_message(obj: Obj) -> Message:
    """The message of an object, by its ``apiVersion`` and ``kind``."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    descriptor = _descriptor(api_version, kind)
    if descriptor is None:
        raise Undecodable(f'no kind "{kind}" is registered for version "{api_version}"')
    msg = GetMessageClass(descriptor)()
    msg.CopyFrom(_zero(descriptor))
    _fill(msg, obj)
    return msg


# -- message -> JSON ---------------------------------------------------------------------------------


def _message_out(msg: Message, name: str) -> Any:
    special = _SPECIALS.get(name)
    return special[1](msg) if special else from_message(msg)


def _is_zero(value: Any) -> bool:
    return value is None or value in ("", 0, False, {}, [])


def from_message(msg: Message) -> Obj:
    """The Go JSON form of a message (what ``encoding/json`` prints for the decoded struct)."""
    out: Obj = {}
    for f in _plan(msg.DESCRIPTOR):
        if not f.json:
            inlined = _message_out(getattr(msg, f.name), f.message)
            if isinstance(inlined, dict):
                out.update(inlined)
            continue
        if f.is_map:
            entries = getattr(msg, f.name)
            if f.message:
                value: Any = {k: _message_out(v, f.message) for k, v in entries.items()}
            else:
                value = {k: f.scalar_out(v) for k, v in entries.items()}
            empty = not value  # a map or slice with no entries decodes as nil: null, or omitted
        elif f.repeated:
            items = getattr(msg, f.name)
            if f.message:
                value = [_message_out(item, f.message) for item in items]
            else:
                value = [f.scalar_out(item) for item in items]
            empty = not value
        elif f.pointer:  # nil unless set; a set pointer is printed even when it points to zero
            if msg.HasField(f.name):
                value = getattr(msg, f.name)
                out[f.json] = _message_out(value, f.message) if f.message else f.scalar_out(value)
                continue
            empty = True
        elif f.message:  # a struct: omitempty never omits it, omitzero does when zero
            value = _message_out(getattr(msg, f.name), f.message)
            if not (f.omitzero and _is_zero(value)):
                out[f.json] = value
            continue
        else:
            value = f.scalar_out(getattr(msg, f.name))
            empty = _is_zero(value)
        if empty:
            if not f.omitempty:
                out[f.json] = None if (f.is_map or f.repeated or f.pointer) else value
            continue
        out[f.json] = value
    return out


# -- hand-converted types: (JSON -> message, message -> JSON) by message name ------------------------------


def _quantity_in(msg: Any, value: Any) -> None:
    msg.string = "0" if value is None else str(value)


def _time_in(msg: Any, value: Any) -> None:
    if value:  # zero (null) is an empty message: Go's Time.Marshal writes nothing for it
        msg.seconds, _ = _parse_time(value)
        msg.nanos = 0


def _micro_time_in(msg: Any, value: Any) -> None:
    if value:
        msg.seconds, msg.nanos = _parse_time(value)


def _time_out(msg: Any, *, micro: bool = False) -> str | None:
    if not msg.ListFields():
        return None
    return _format_time(msg.seconds, msg.nanos, micro=micro)


def _duration_in(msg: Any, value: Any) -> None:
    msg.duration = _parse_duration(value) if value else 0


def _int_or_string_in(msg: Any, value: Any) -> None:
    is_str = isinstance(value, str)
    msg.type = 1 if is_str else 0
    msg.intVal = 0 if is_str or value is None else int(value)
    msg.strVal = value if is_str else ""


def _raw_in(field: str) -> Callable[[Any, Any], None]:
    def fill(msg: Any, value: Any) -> None:
        if value is not None:
            setattr(msg, field, orjson.dumps(value))

    return fill


def _raw_out(field: str) -> Callable[[Any], Any]:
    def read(msg: Any) -> Any:
        raw = getattr(msg, field)
        return orjson.loads(raw) if raw else None

    return read


def _props_or_bool_in(msg: Any, value: Any) -> None:
    msg.allows = value is not False
    if isinstance(value, dict):
        _message_in(msg.schema, _PROPS, value)


def _props_or_bool_out(msg: Any) -> Any:
    return from_message(msg.schema) if msg.HasField("schema") else bool(msg.allows)


def _props_or_array_in(msg: Any, value: Any) -> None:
    if isinstance(value, dict):
        _message_in(msg.schema, _PROPS, value)
    elif isinstance(value, list):
        for item in value:
            _message_in(msg.jSONSchemas.add(), _PROPS, item)


def _props_or_array_out(msg: Any) -> Any:
    if len(msg.jSONSchemas):
        return [from_message(m) for m in msg.jSONSchemas]
    return from_message(msg.schema) if msg.HasField("schema") else None


def _props_or_strings_in(msg: Any, value: Any) -> None:
    if isinstance(value, dict):
        _message_in(msg.schema, _PROPS, value)
    elif isinstance(value, list):
        msg.property.extend(value)


def _props_or_strings_out(msg: Any) -> Any:
    if len(msg.property):
        return list(msg.property)
    return from_message(msg.schema) if msg.HasField("schema") else None


def _strings_in(msg: Any, value: Any) -> None:
    msg.items.extend(value or ())


def _strings_out(msg: Any) -> list[str] | None:
    return list(msg.items) or None  # a named []string: nil when empty


_SPECIALS: dict[str, tuple[Callable[[Any, Any], None], Callable[[Any], Any]]] = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": (_quantity_in, lambda msg: msg.string or "0"),
    f"{_META}.Time": (_time_in, _time_out),
    f"{_META}.MicroTime": (_micro_time_in, lambda msg: _time_out(msg, micro=True)),
    f"{_META}.Duration": (_duration_in, lambda msg: _format_duration(msg.duration)),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": (
        _int_or_string_in,
        lambda msg: msg.strVal if msg.type == 1 else msg.intVal,
    ),
    f"{_RUNTIME}.RawExtension": (_raw_in("raw"), _raw_out("raw")),
    f"{_META}.FieldsV1": (_raw_in("Raw"), _raw_out("Raw")),
    f"{_EXT}.JSON": (_raw_in("raw"), _raw_out("raw")),
    f"{_EXT}.JSONSchemaPropsOrBool": (_props_or_bool_in, _props_or_bool_out),
    f"{_EXT}.JSONSchemaPropsOrArray": (_props_or_array_in, _props_or_array_out),
    f"{_EXT}.JSONSchemaPropsOrStringArray": (_props_or_strings_in, _props_or_strings_out),
    f"{_META}.Verbs": (_strings_in, _strings_out),
    "k8s.io.api.authorization.v1.ExtraValue": (_strings_in, _strings_out),
    "k8s.io.api.authentication.v1.ExtraValue": (_strings_in, _strings_out),
}


# -- bodies -----------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """``k8s\\x00`` + ``runtime.Unknown``: typeMeta, raw, and the two empty content fields Go writes."""
    type_meta = _bytes_field(1, api_version.encode()) + _bytes_field(2, kind.encode())
    return MAGIC + _bytes_field(1, type_meta) + _bytes_field(2, raw) + b"\x1a\x00\x22\x00"


def encode(obj: Obj) -> bytes:
    """The ``k8s\\x00``-framed protobuf body of an object; :class:`Undecodable` for kinds with no message."""
    raw = to_message(obj).SerializeToString(deterministic=True)
    return _envelope(obj["apiVersion"], obj["kind"], raw)


def watch_frame(event_type: str, obj: Obj) -> bytes:
    """One event of a ``;stream=watch`` response: length prefix and ``WatchEvent``."""
    event = _bytes_field(1, event_type.encode()) + _bytes_field(2, _bytes_field(1, encode(obj)))
    return struct.pack(">I", len(event)) + event


def _unknown(body: bytes) -> tuple[str, str, bytes, str]:
    """``(apiVersion, kind, raw, contentEncoding)`` of a framed body."""
    if not body.startswith(MAGIC):
        raise Undecodable(
            f"provided data does not appear to be a protobuf message, expected prefix {list(MAGIC)}"
        )
    if len(body) == len(MAGIC):
        raise Undecodable("empty body")
    envelope = GetMessageClass(kubeproto.message_descriptor(f"{_RUNTIME}.Unknown"))()  # type: ignore[arg-type]
    try:
        envelope.ParseFromString(body[len(MAGIC) :])
    except DecodeError as exc:
        raise Undecodable(str(exc) or "malformed protobuf") from None
    meta = envelope.typeMeta
    return meta.apiVersion, meta.kind, envelope.raw, envelope.contentEncoding


def type_meta(body: bytes) -> tuple[str, str]:
    """``(apiVersion, kind)`` of a framed body's envelope, whatever its kind."""
    api_version, kind, _, _ = _unknown(body)
    return api_version, kind


def decode(body: bytes) -> Obj:
    """The JSON form of a ``k8s\\x00``-framed protobuf object (with its ``apiVersion`` and ``kind``)."""
    api_version, kind, raw, encoding = _unknown(body)
    if encoding:
        raise Undecodable(f"content encoding {encoding!r}")
    descriptor = _descriptor(api_version, kind)
    if not kind:
        raise Undecodable("Object 'Kind' is missing in protobuf")
    if descriptor is None:
        raise Undecodable(f'no kind "{kind}" is registered for version "{api_version}"')
    msg = GetMessageClass(descriptor)()
    try:
        msg.ParseFromString(raw)
    except DecodeError as exc:
        raise Undecodable(str(exc) or "malformed protobuf") from None
    return {"apiVersion": api_version, "kind": kind, **from_message(msg)}
