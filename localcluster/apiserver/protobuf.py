"""Protobuf request bodies of the few kinds kubectl's generators send that way.

``kubectl create namespace|configmap|secret|serviceaccount`` and ``kubectl auth can-i``
send ``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00`` and a
``runtime.Unknown`` (1 typeMeta {1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding,
4 contentType) whose ``raw`` is the object. :func:`decode` turns such a body into the JSON
object the rest of the server handles, with hand-written field tables (the field numbers
of ``k8s.io/api`` ``generated.proto``, which never change) for Namespace, ConfigMap,
Secret, ServiceAccount and SelfSubjectAccessReview; other kinds raise
:class:`UnsupportedKind`.

Pure: bytes in, dicts out.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MAGIC", "UnsupportedKind", "decode"]

MAGIC = b"k8s\x00"
Obj = dict[str, Any]


class UnsupportedKind(ValueError):
    """A protobuf body this server cannot read (an unknown kind, or malformed)."""


# -- wire format ----------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise UnsupportedKind("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(field number, wire type, value)``: ints for varints, bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        else:
            if wire == 2:
                size, pos = _varint(data, pos)
            elif wire in (1, 5):
                size = 8 if wire == 1 else 4
            else:
                raise UnsupportedKind(f"unsupported wire type {wire}")
            if pos + size > len(data):
                raise UnsupportedKind("a truncated message")
            value, pos = data[pos : pos + size], pos + size
        yield number, wire, value


# -- field tables -----------------------------------------------------------------------------

Decoder = Callable[[Any], Any]


def _string(value: bytes) -> str:
    return value.decode()


def _bool(value: int) -> bool:
    return bool(value)


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _map(value_decoder: Decoder) -> Decoder:
    def entry(value: bytes) -> tuple[str, Any]:
        parts = {number: raw for number, _, raw in _fields(value)}
        return _string(parts.get(1, b"")), value_decoder(parts.get(2, b""))

    return entry


#: name -> (number, decoder, kind) where kind is "one", "list" or "map".
Table = dict[int, tuple[str, Decoder, str]]


def _message(table: Table) -> Decoder:
    def decode(value: bytes) -> Obj:
        out: Obj = {}
        for number, _, raw in _fields(value):
            if number not in table:
                continue  # fields this server does not need (uid, timestamps, managedFields...)
            name, decoder, kind = table[number]
            if kind == "map":
                key, item = decoder(raw)
                out.setdefault(name, {})[key] = item
            elif kind == "list":
                out.setdefault(name, []).append(decoder(raw))
            else:
                value = decoder(raw)
                if value != "":  # Go writes empty strings; JSON omits them (omitempty), so defaults apply
                    out[name] = value
        return out

    return decode


_OBJECT_META = _message(
    {
        1: ("name", _string, "one"),
        2: ("generateName", _string, "one"),
        3: ("namespace", _string, "one"),
        11: ("labels", _map(_string), "map"),
        12: ("annotations", _map(_string), "map"),
        14: ("finalizers", _string, "list"),
    }
)
_KINDS: dict[tuple[str, str], Decoder] = {
    ("v1", "Namespace"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: ("spec", _message({1: ("finalizers", _string, "list")}), "one"),
        }
    ),
    ("v1", "ConfigMap"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: ("data", _map(_string), "map"),
            3: ("binaryData", _map(_b64), "map"),
            4: ("immutable", _bool, "one"),
        }
    ),
    ("v1", "Secret"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: ("data", _map(_b64), "map"),
            3: ("type", _string, "one"),
            4: ("stringData", _map(_string), "map"),
            5: ("immutable", _bool, "one"),
        }
    ),
    ("v1", "ServiceAccount"): _message(
        {1: ("metadata", _OBJECT_META, "one"), 4: ("automountServiceAccountToken", _bool, "one")}
    ),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: (
                "spec",
                _message(
                    {
                        1: (
                            "resourceAttributes",
                            _message(
                                {
                                    1: ("namespace", _string, "one"),
                                    2: ("verb", _string, "one"),
                                    3: ("group", _string, "one"),
                                    4: ("version", _string, "one"),
                                    5: ("resource", _string, "one"),
                                    6: ("subresource", _string, "one"),
                                    7: ("name", _string, "one"),
                                }
                            ),
                            "one",
                        ),
                        2: (
                            "nonResourceAttributes",
                            _message({1: ("path", _string, "one"), 2: ("verb", _string, "one")}),
                            "one",
                        ),
                    }
                ),
                "one",
            ),
        }
    ),
}


def decode(body: bytes) -> Obj:
    """The JSON form of a ``k8s\\x00``-framed protobuf object; :class:`UnsupportedKind` otherwise."""
    if not body.startswith(MAGIC):
        raise UnsupportedKind("no k8s protobuf magic")
    envelope = {number: raw for number, _, raw in _fields(body[len(MAGIC) :])}
    type_meta = {number: raw for number, _, raw in _fields(envelope.get(1, b""))}
    api_version, kind = _string(type_meta.get(1, b"")), _string(type_meta.get(2, b""))
    if envelope.get(3):
        raise UnsupportedKind(f"content encoding {_string(envelope[3])!r}")
    decoder = _KINDS.get((api_version, kind))
    if decoder is None:
        raise UnsupportedKind(f"{kind or 'an object'} ({api_version or 'no apiVersion'})")
    obj = decoder(envelope.get(2, b""))
    return {"apiVersion": api_version, "kind": kind, **obj}
