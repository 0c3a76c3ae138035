"""Protobuf request bodies: the kinds kubectl's generators send, decoded to their JSON form."""

from __future__ import annotations

import re
from typing import Any

import pytest

from nrop.localcluster.apiserver.protobuf import UnsupportedKind, decode


def varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def field(number: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return field(number, field(1, key) + field(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return (
        b"k8s\x00"
        + field(1, field(1, api_version) + field(2, kind))
        + field(2, raw)
        + field(3, "")
        + field(4, "")
    )


META = field(1, field(1, "x") + field(3, "ns") + entry(11, "app", "a") + field(5, "ignored-uid"))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            envelope(
                "v1", "ConfigMap", META + entry(2, "a", "b") + entry(3, "bin", b"\x00\x01") + field(4, 1)
            ),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "a"}},
                "data": {"a": "b"},
                "binaryData": {"bin": "AAE="},
                "immutable": True,
            },
            id="configmap",
        ),
        pytest.param(
            envelope("v1", "Secret", META + entry(2, "x", b"y") + field(3, "")),
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "a"}},
                "data": {"x": "eQ=="},
            },
            id="secret-empty-type-omitted",
        ),
        pytest.param(
            envelope("v1", "Namespace", field(1, field(1, "n")) + field(2, field(1, "kubernetes"))),
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "n"},
                "spec": {"finalizers": ["kubernetes"]},
            },
            id="namespace",
        ),
        pytest.param(
            envelope(
                "authorization.k8s.io/v1",
                "SelfSubjectAccessReview",
                field(2, field(1, field(1, "ns") + field(2, "list") + field(5, "pods"))),
            ),
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"namespace": "ns", "verb": "list", "resource": "pods"}},
            },
            id="access-review",
        ),
    ],
)
def test_decode(body: bytes, expected: dict[str, Any]) -> None:
    assert decode(body) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(envelope("apps/v1", "Deployment", b""), "Deployment (apps/v1)", id="unread-kind"),
        pytest.param(b"{}", "no k8s protobuf magic", id="json"),
        pytest.param(b"k8s\x00\x0a\x20\x0a", "a truncated message", id="truncated"),
    ],
)
def test_refused(body: bytes, message: str) -> None:
    with pytest.raises(UnsupportedKind, match=re.escape(message)):
        decode(body)
