"""Go's ``tlsRecordHeaderLooksLikeHTTP``: which first bytes of a connection to a TLS port get Go's 400."""

from __future__ import annotations

import pytest

from nrop.api.plainhttp import ANSWER, First, classify


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        pytest.param(b"GET / HTTP/1.1\r\n", First.PLAIN_HTTP, id="curl-get-root"),
        pytest.param(b"GET /metrics HTTP/1.1\r\n", First.PLAIN_HTTP, id="get-path"),
        pytest.param(b"HEAD / HTTP/1.1", First.PLAIN_HTTP, id="head"),
        pytest.param(b"POST /x HTTP/1.1", First.PLAIN_HTTP, id="post"),
        pytest.param(b"PUT /x HTTP/1.1", First.PLAIN_HTTP, id="put"),
        pytest.param(b"OPTIONS * HTTP/1.1", First.PLAIN_HTTP, id="options"),
        pytest.param(b"GET /", First.PLAIN_HTTP, id="exactly-the-header"),
        pytest.param(b"DELETE /x HTTP/1.1", First.TLS, id="delete-not-recognised-as-in-go"),
        pytest.param(b"GET http://x/ HTTP/1.1", First.TLS, id="absolute-form-not-recognised-as-in-go"),
        pytest.param(b"\x16\x03\x01\x02\x00\x01", First.TLS, id="client-hello"),
        pytest.param(b"\x16", First.TLS, id="tls-after-one-byte"),
        pytest.param(b"GE", First.MORE, id="maybe-http"),
        pytest.param(b"OPTI", First.MORE, id="maybe-options"),
        pytest.param(b"", First.MORE, id="nothing-yet"),
        pytest.param(b"SSH-2.0", First.TLS, id="other-protocol"),
    ],
)
def test_classify(first: bytes, expected: First) -> None:
    assert classify(first) is expected


def test_answer_is_gos() -> None:
    assert ANSWER == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
