"""Content negotiation: upstream's choices of media type and representation, as tables."""

from __future__ import annotations

import pytest

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.wire.negotiation import (
    JSON,
    PROTOBUF,
    YAML,
    Endpoint,
    Outcome,
    input_media_type,
    negotiate,
    parse_accept,
)

B, C, E = Endpoint.BUILTIN, Endpoint.CUSTOM, Endpoint.ERROR
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
PROTO_TABLE = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"
PROTO_META = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
CLIENT_GO = "application/vnd.kubernetes.protobuf, application/json"
NOT_ACCEPTABLE = (
    "only the following media types are accepted: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)

OUTCOMES = [
    pytest.param("", B, Outcome(JSON), id="no-accept-is-json"),
    pytest.param(CLIENT_GO, B, Outcome(PROTOBUF), id="client-go-builtin"),
    pytest.param(CLIENT_GO, C, Outcome(JSON), id="client-go-cr-falls-back-to-json"),
    pytest.param(CLIENT_GO, E, Outcome(PROTOBUF), id="client-go-error-of-a-cr-is-protobuf"),
    pytest.param(
        "application/json, application/vnd.kubernetes.protobuf", B, Outcome(JSON), id="client-order"
    ),
    pytest.param(
        "application/json;q=0.5, application/vnd.kubernetes.protobuf", B, Outcome(PROTOBUF), id="q-wins"
    ),
    pytest.param(
        "*/*, application/vnd.kubernetes.protobuf", B, Outcome(PROTOBUF), id="specific-before-wildcard"
    ),
    pytest.param("*/*", C, Outcome(JSON), id="wildcard-is-json"),
    pytest.param("application/*", B, Outcome(JSON), id="subtype-wildcard"),
    pytest.param("application/yaml", B, Outcome(YAML), id="yaml"),
    pytest.param(f"{TABLE}, application/json", B, Outcome(JSON, "Table"), id="table"),
    pytest.param(f"{TABLE}, application/json", C, Outcome(JSON, "Table"), id="table-of-cr"),
    pytest.param(f"{PROTO_TABLE}, application/json", B, Outcome(JSON), id="protobuf-table-skipped"),
    pytest.param(
        f"{PROTO_META}, application/json",
        B,
        Outcome(PROTOBUF, "PartialObjectMetadataList"),
        id="protobuf-metadata",
    ),
    pytest.param(
        f"{PROTO_META}, application/json",
        C,
        Outcome(PROTOBUF, "PartialObjectMetadataList"),
        id="protobuf-metadata-of-cr",
    ),
    pytest.param(
        "application/json;as=Pod;v=v1;g=meta.k8s.io, application/yaml",
        B,
        Outcome(YAML),
        id="unknown-conversion-skipped",
    ),
    pytest.param(f"{TABLE}, application/json", E, Outcome(JSON), id="errors-are-never-converted"),
    pytest.param("application/vnd.kubernetes.protobuf;stream=watch", B, Outcome(PROTOBUF), id="watch-stream"),
    pytest.param(
        "application/yaml;stream=watch, application/json", B, Outcome(JSON), id="yaml-has-no-stream"
    ),
    pytest.param("application/json;sv=v2, application/yaml", B, Outcome(YAML), id="unknown-server-version"),
    pytest.param("application/json;pretty=1", B, Outcome(JSON), id="unrecognized-parameters-ignored"),
]


@pytest.mark.parametrize(("accept", "endpoint", "expected"), OUTCOMES)
def test_negotiate(accept: str, endpoint: Endpoint, expected: Outcome) -> None:
    assert negotiate(accept, endpoint) == expected


NOT_ACCEPTED = [
    pytest.param("application/vnd.kubernetes.protobuf", C, id="protobuf-only-for-a-cr"),
    pytest.param("text/plain", B, id="unknown-type"),
    pytest.param(PROTO_TABLE, B, id="protobuf-table-only"),
    pytest.param("application/vnd.kubernetes.protobuf;stream=other", B, id="unknown-stream"),
]


@pytest.mark.parametrize(("accept", "endpoint"), NOT_ACCEPTED)
def test_not_acceptable(accept: str, endpoint: Endpoint) -> None:
    with pytest.raises(errors.NotAcceptable) as caught:
        negotiate(accept, endpoint)
    assert str(caught.value) == NOT_ACCEPTABLE
    assert caught.value.code == 406


ORDERS = [
    pytest.param("a/b, c/d", ["a/b", "c/d"], id="client-order-kept"),
    pytest.param("a/b;q=0.1, c/d", ["c/d", "a/b"], id="by-q"),
    pytest.param("*/*, a/*, a/b", ["a/b", "a/*", "*/*"], id="by-specificity"),
    pytest.param("a, */*, a/b/c, a/b", ["a/b", "*/*"], id="malformed-dropped"),
    pytest.param(" a/b ; x = y ", ["a/b"], id="spaces"),
]


@pytest.mark.parametrize(("header", "expected"), ORDERS)
def test_parse_accept_orders_as_goautoneg(header: str, expected: list[str]) -> None:
    assert [f"{c.type}/{c.subtype}" for c in parse_accept(header)] == expected


def test_parse_accept_params() -> None:
    (clause,) = parse_accept("application/json;as=Table;g=meta.k8s.io;q=0.9;bad")
    assert (clause.q, clause.params) == (pytest.approx(0.9), {"as": "Table", "g": "meta.k8s.io"})


INPUTS = [
    pytest.param("", JSON, id="none-is-json"),
    pytest.param("application/json; charset=utf-8", JSON, id="json-with-charset"),
    pytest.param("application/yaml", YAML, id="yaml"),
    pytest.param("application/vnd.kubernetes.protobuf", PROTOBUF, id="protobuf"),
]


@pytest.mark.parametrize(("content_type", "expected"), INPUTS)
def test_input_media_type(content_type: str, expected: str) -> None:
    assert input_media_type(content_type) == expected


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-yaml", "application/cbor"])
def test_unknown_input_media_type_is_415(content_type: str) -> None:
    with pytest.raises(errors.UnsupportedMediaType) as caught:
        input_media_type(content_type)
    assert str(caught.value) == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
