"""Kubernetes protobuf over HTTP: what client-go's requests get from the embedded API server.

client-go sends ``Accept: application/vnd.kubernetes.protobuf, application/json`` and protobuf
bodies for built-in kinds. Each test sends such raw requests (urllib3, the official client's
pool, its kubeconfig credentials) and checks the media type, the status and the decoded body
(with the server's codec, whose bytes ``tests/unit/localcluster/apiserver/test_apiserver_protobuf.py`` pins
against Go's), and the JSON view of the same objects. Negotiation follows kube-apiserver:
custom resources are JSON only (406 for an ``Accept`` of protobuf alone), errors come back in
protobuf when accepted, ``as=Table`` is JSON only, ``PartialObjectMetadata`` is any type.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from nrop.localcluster.apiserver.wire import protobuf

Obj = dict[str, Any]
PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO = f"{PROTOBUF}, application/json"
GROUP = "proto.nrop.io"
CRD_NAME = f"things.{GROUP}"
THINGS = f"/apis/{GROUP}/v1/namespaces/{{ns}}/things"


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    raw: bytes

    def obj(self) -> Obj:
        if self.content_type.startswith(PROTOBUF):
            return protobuf.decode(self.raw)
        return json.loads(self.raw)


@pytest.fixture(scope="module")
def send(api_client):  # type: ignore[no-untyped-def]
    configuration = api_client.configuration
    authorization = configuration.api_key.get("authorization") or configuration.api_key.get("BearerToken")

    def request(
        method: str,
        path: str,
        *,
        accept: str = CLIENT_GO,
        body: bytes | None = None,
        content_type: str = PROTOBUF,
    ) -> Reply:
        headers = {"Accept": accept, "Authorization": authorization or ""}
        if body is not None:
            headers["Content-Type"] = content_type
        response = api_client.rest_client.pool_manager.request(
            method, configuration.host + path, body=body, headers=headers, preload_content=True
        )
        return Reply(response.status, response.headers.get("Content-Type", ""), response.data)

    return request


@pytest.fixture(scope="module")
def things(api_client) -> str:  # type: ignore[no-untyped-def]
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    ext = client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(crd)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        conditions = (ext.read_custom_resource_definition(CRD_NAME).status.conditions) or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            return CRD_NAME
        time.sleep(0.1)
    raise AssertionError(f"expected CRD {CRD_NAME} to be Established")


@pytest.fixture
def thing(api_client, things: str, namespace: str) -> str:  # type: ignore[no-untyped-def]
    """A Thing in the test's namespace (deleted with it)."""
    custom = client.CustomObjectsApi(api_client)
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"n": 1}}
    custom.create_namespaced_custom_object(GROUP, "v1", namespace, "things", body)
    return "t"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


def _length_delimited(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of a message by number (the last of each)."""
    fields, pos = {}, 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        fields[key >> 3], pos = data[pos : pos + size], pos + size
    return fields


def watch_events(stream: bytes) -> list[tuple[str, bytes]]:
    """``(type, object body)`` of each frame: a 4-byte length, then WatchEvent{1 type, 2 RawExtension{1 raw}}."""
    events = []
    while stream:
        size = int.from_bytes(stream[:4], "big")
        event, stream = _length_delimited(stream[4 : 4 + size]), stream[4 + size :]
        events.append((event[1].decode(), _length_delimited(event[2])[1]))
    return events


def deployment(namespace: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": namespace, "labels": {"app": "d"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "registry.example/d:1"}]},
            },
        },
    }


def test_create_and_get_a_deployment_in_protobuf(send, namespace: str) -> None:  # type: ignore[no-untyped-def]
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    created = send("POST", path, body=protobuf.encode(deployment(namespace)))
    assert (created.status, created.content_type) == (201, PROTOBUF)
    obj = created.obj()
    assert (obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) == ("apps/v1", "Deployment", "d")
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/d:1"
    as_json = send("GET", f"{path}/d", accept="application/json")
    assert as_json.content_type == "application/json"
    stored = as_json.obj()
    assert stored["spec"]["replicas"] == 2
    assert stored["metadata"]["uid"] == obj["metadata"]["uid"]
    assert (
        send("GET", f"{path}/d").obj()["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    )


def test_list_is_a_protobuf_list(send, namespace: str) -> None:  # type: ignore[no-untyped-def]
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "binaryData": {"x": "AAE="},
        }
        assert send("POST", path, body=protobuf.encode(body)).status == 201
    listed = send("GET", path)
    assert listed.content_type == PROTOBUF
    obj = listed.obj()
    assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMapList")
    assert [(i["metadata"]["name"], i["binaryData"]) for i in obj["items"]] == [
        ("a", {"x": "AAE="}),
        ("b", {"x": "AAE="}),
    ]
    assert obj["metadata"]["resourceVersion"]


def test_watch_streams_length_prefixed_watch_events(send, namespace: str) -> None:  # type: ignore[no-untyped-def]
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    send(
        "POST",
        path,
        body=protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}),
    )
    watched = send("GET", f"{path}?watch=1&timeoutSeconds=1")
    assert watched.content_type == f"{PROTOBUF};stream=watch"
    size = int.from_bytes(watched.raw[:4], "big")
    assert watched.raw[: 4 + size] == protobuf.watch_frame("ADDED", send("GET", f"{path}/w").obj())
    assert [event_type for event_type, _ in watch_events(watched.raw)] == ["ADDED"]


def test_errors_are_protobuf_status_when_accepted(send, namespace: str) -> None:  # type: ignore[no-untyped-def]
    missing = send("GET", f"/api/v1/namespaces/{namespace}/configmaps/nope")
    assert (missing.status, missing.content_type) == (404, PROTOBUF)
    assert missing.obj() == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"},
        "code": 404,
    }


def test_delete_options_in_protobuf(send, namespace: str) -> None:  # type: ignore[no-untyped-def]
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    send(
        "POST",
        path,
        body=protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone"}}),
    )
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "not-the-uid"}}
    refused = send("DELETE", f"{path}/gone", body=protobuf.encode(options))
    assert refused.status == 409
    assert "Precondition failed: UID in precondition: not-the-uid" in refused.obj()["message"]
    deleted = send(
        "DELETE", f"{path}/gone", body=protobuf.encode({"apiVersion": "v1", "kind": "DeleteOptions"})
    )
    assert (deleted.status, deleted.obj()["status"]) == (200, "Success")


def test_custom_resources_are_json_only(send, namespace: str, thing: str) -> None:  # type: ignore[no-untyped-def]
    path = THINGS.format(ns=namespace)
    fallback = send("GET", f"{path}/{thing}")
    assert (fallback.status, fallback.content_type) == (200, "application/json")
    assert fallback.obj()["spec"] == {"n": 1}
    refused = send("GET", f"{path}/{thing}", accept=PROTOBUF)
    assert (refused.status, refused.content_type) == (406, PROTOBUF)
    assert refused.obj()["message"] == (
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
    # k8s\x00, Unknown{typeMeta{proto.nrop.io/v1, Thing}}: a CR has no message to decode into.
    body = b"k8s\x00\x0a\x19\x0a\x10proto.nrop.io/v1\x12\x05Thing"
    created = send("POST", path, body=body)
    assert (created.status, created.content_type) == (400, PROTOBUF)
    assert created.obj()["message"] == (
        'Thing in version "v1" cannot be handled as a Thing: object *unstructured.Unstructured does not '
        "implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
    )


def test_partial_object_metadata_in_protobuf_also_for_custom_resources(  # type: ignore[no-untyped-def]
    send, namespace: str, thing: str
) -> None:
    accept = f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
    listed = send("GET", THINGS.format(ns=namespace), accept=accept)
    assert listed.content_type == PROTOBUF
    obj = listed.obj()
    assert (obj["apiVersion"], obj["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    assert [i["metadata"]["name"] for i in obj["items"]] == [thing]


def test_tables_are_json_even_after_a_protobuf_table_clause(send, namespace: str) -> None:  # type: ignore[no-untyped-def]
    accept = f"{PROTOBUF};as=Table;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1, application/json"
    table = send("GET", f"/api/v1/namespaces/{namespace}/configmaps", accept=accept)
    assert (table.content_type, table.obj()["kind"]) == ("application/json", "Table")


def test_metadata_watch_of_custom_resources_in_protobuf_with_bookmarks(  # type: ignore[no-untyped-def]
    send, namespace: str, thing: str
) -> None:
    accept = f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
    query = "?watch=1&timeoutSeconds=2&allowWatchBookmarks=true"
    watched = send("GET", THINGS.format(ns=namespace) + query, accept=accept)
    assert watched.content_type == f"{PROTOBUF};stream=watch"
    events = [(event_type, protobuf.decode(body)) for event_type, body in watch_events(watched.raw)]
    assert events[0][0] == "ADDED"
    assert (events[0][1]["kind"], events[0][1]["metadata"]["name"]) == ("PartialObjectMetadata", thing)
    bookmarks = [obj for kind, obj in events if kind == "BOOKMARK"]
    assert bookmarks, events
