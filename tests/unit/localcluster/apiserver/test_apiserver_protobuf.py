"""Kubernetes protobuf: byte for byte what client-go writes, and the JSON Go prints for what it reads.

``protobuf_golden.json`` holds, per object, what a Go program built against the pinned upstream's
vendor tree (k8s.io/api, apimachinery and apiextensions-apiserver v0.35.3) printed for it: the
object decoded from JSON by the scheme's universal deserializer, then the bytes of
``protobuf.NewSerializer(scheme, scheme).Encode``, the ``encoding/json`` output of the same Go
struct, and for two of them the ``;stream=watch`` frame (``streaming.NewEncoder`` over
``protobuf.LengthDelimitedFramer`` and the raw serializer) of a ``metav1.WatchEvent``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nrop.localcluster.apiserver.wire import protobuf

GOLDEN: list[dict[str, Any]] = json.loads((Path(__file__).parent / "protobuf_golden.json").read_text())
BY_NAME = [pytest.param(entry, id=entry["name"]) for entry in GOLDEN]
FRAMES = [pytest.param(entry, id=entry["name"]) for entry in GOLDEN if "watch" in entry]


@pytest.mark.parametrize("entry", BY_NAME)
def test_encode_writes_the_bytes_go_writes(entry: dict[str, Any]) -> None:
    assert protobuf.encode(entry["object"]).hex() == entry["protobuf"]


@pytest.mark.parametrize("entry", BY_NAME)
def test_decode_gives_the_json_go_prints(entry: dict[str, Any]) -> None:
    assert protobuf.decode(bytes.fromhex(entry["protobuf"])) == entry["go_json"]


@pytest.mark.parametrize("entry", BY_NAME)
def test_go_json_round_trips_unchanged(entry: dict[str, Any]) -> None:
    """JSON -> protobuf -> JSON is the identity on objects in Go's JSON form (what clients send)."""
    encoded = protobuf.encode(entry["go_json"])
    assert encoded.hex() == entry["protobuf"]
    assert protobuf.decode(encoded) == entry["go_json"]


@pytest.mark.parametrize("entry", FRAMES)
def test_watch_frames_are_length_prefixed_watch_events(entry: dict[str, Any]) -> None:
    frame = protobuf.watch_frame(entry["watch"]["type"], entry["object"])
    assert frame.hex() == entry["watch"]["frame"]
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4


# -- hand-converted types ---------------------------------------------------------------------------------

GO_JSON_OF = [
    pytest.param(
        {"metadata": {"name": "x", "creationTimestamp": None}},
        {"metadata": {"name": "x"}},
        id="zero-creationTimestamp-omitted-omitzero",
    ),
    pytest.param(
        {"metadata": {"name": "x"}, "data": {}, "binaryData": {"k": ""}},
        {"metadata": {"name": "x"}, "binaryData": {"k": ""}},
        id="empty-map-omitted-empty-bytes-kept",
    ),
    pytest.param(
        {"metadata": {"name": "x"}, "immutable": False},
        {"metadata": {"name": "x"}, "immutable": False},
        id="pointer-to-false-kept",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), GO_JSON_OF)
def test_configmap_fields_follow_go_json_rules(obj: dict[str, Any], expected: dict[str, Any]) -> None:
    full = {"apiVersion": "v1", "kind": "ConfigMap", **obj}
    assert protobuf.decode(protobuf.encode(full)) == {"apiVersion": "v1", "kind": "ConfigMap", **expected}


SPECIAL_TYPES = [
    pytest.param(
        "v1", "Service", {"spec": {"ports": [{"port": 80}]}}, "spec.ports.0.targetPort", 0, id="intstr-zero"
    ),
    pytest.param(
        "v1",
        "Service",
        {"spec": {"ports": [{"port": 80, "targetPort": "web"}]}},
        "spec.ports.0.targetPort",
        "web",
        id="intstr-string",
    ),
    pytest.param(
        "v1",
        "Node",
        {"status": {"capacity": {"cpu": 4}}},
        "status.capacity.cpu",
        "4",
        id="quantity-from-number",
    ),
    pytest.param(
        "coordination.k8s.io/v1",
        "Lease",
        {"spec": {"renewTime": "2026-01-02T03:04:05.5Z"}},
        "spec.renewTime",
        "2026-01-02T03:04:05.500000Z",
        id="microtime",
    ),
    pytest.param(
        "v1",
        "Pod",
        {"status": {"startTime": "2026-01-02T03:04:05.9Z"}},
        "status.startTime",
        "2026-01-02T03:04:05Z",
        id="time-keeps-seconds",
    ),
    pytest.param("v1", "Event", {"eventTime": None}, "eventTime", None, id="zero-microtime-null"),
    pytest.param(
        "apps/v1",
        "ControllerRevision",
        {"data": [1, {"a": None}]},
        "data",
        [1, {"a": None}],
        id="raw-extension",
    ),
]


def _at(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


@pytest.mark.parametrize(("api_version", "kind", "obj", "path", "expected"), SPECIAL_TYPES)
def test_hand_converted_types(
    api_version: str, kind: str, obj: dict[str, Any], path: str, expected: Any
) -> None:
    decoded = protobuf.decode(protobuf.encode({"apiVersion": api_version, "kind": kind, **obj}))
    assert _at(decoded, path) == expected


DURATIONS = [
    pytest.param("0s", 0, id="zero"),
    pytest.param("1h0m0s", 3600 * 10**9, id="hour"),
    pytest.param("1m30s", 90 * 10**9, id="minutes"),
    pytest.param("1.5s", 1_500_000_000, id="fraction"),
    pytest.param("2ms", 2_000_000, id="milliseconds"),
    pytest.param("-3s", -3 * 10**9, id="negative"),
]


@pytest.mark.parametrize(("text", "nanoseconds"), DURATIONS)
def test_durations_are_go_duration_strings(text: str, nanoseconds: int) -> None:
    assert protobuf._parse_duration(text) == nanoseconds
    assert protobuf._format_duration(nanoseconds) == text


# -- what cannot be read ------------------------------------------------------------------------------------

UNDECODABLE = [
    pytest.param(b'{"kind": "Pod"}', "provided data does not appear to be a protobuf message", id="json"),
    pytest.param(b"k8s\x00", "empty body", id="magic-only"),
    pytest.param(
        b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Widget",
        'no kind "Widget" is registered for version "v1"',
        id="unknown-kind",
    ),
    pytest.param(b"k8s\x00\x0a\x04\x0a\x02v1", "Object 'Kind' is missing", id="no-kind"),
    pytest.param(b"k8s\x00\x0a\xff", "Error parsing message", id="truncated"),
]


@pytest.mark.parametrize(("body", "message"), UNDECODABLE)
def test_undecodable_bodies(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.Undecodable, match=message):
        protobuf.decode(body)


NO_MESSAGE = [
    pytest.param({"apiVersion": "x.io/v1", "kind": "Widget"}, id="custom-resource"),
    pytest.param({"apiVersion": "v1", "kind": "Widget"}, id="unknown-core-kind"),
]


@pytest.mark.parametrize("obj", NO_MESSAGE)
def test_kinds_without_a_message_are_not_encoded(obj: dict[str, Any]) -> None:
    with pytest.raises(
        protobuf.Undecodable, match=f'no kind "Widget" is registered for version "{obj["apiVersion"]}"'
    ):
        protobuf.encode(obj)


def test_meta_kinds_are_read_in_any_group() -> None:
    """client-go writes DeleteOptions with the group version of the client it is sent by."""
    body = protobuf.encode({"apiVersion": "apps/v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan"})
    assert protobuf.decode(body) == {
        "apiVersion": "apps/v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Orphan",
    }
