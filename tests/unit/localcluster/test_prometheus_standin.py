"""``nrop-prometheus``, the OpenShift flavour's Prometheus pod: its flags and its answers."""

from __future__ import annotations

import argparse
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from nrop.localcluster import prometheus


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.17.0.5:9090", ("127.17.0.5", 9090)),
        (":9090", ("0.0.0.0", 9090)),
        ("[::1]:9091", ("::1", 9091)),
        ("9090", None),
        ("host:", None),
        ("host:70000", None),
    ],
)
def test_parse_listen_address(text: str, expected: tuple[str, int] | None) -> None:
    if expected is None:
        with pytest.raises(argparse.ArgumentTypeError, match="want host:port"):
            prometheus.parse_listen_address(text)
    else:
        assert prometheus.parse_listen_address(text) == expected


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), prometheus._Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/-/ready", 200, "Prometheus Server is Ready.\n"),
        ("/-/healthy", 200, "Prometheus Server is Healthy.\n"),
        ("/-/ready?x=1", 200, "Prometheus Server is Ready.\n"),
        ("/api/v1/query", 404, "404 page not found\n"),
    ],
)
def test_answers(server: str, path: str, status: int, body: str) -> None:
    try:
        with urllib.request.urlopen(server + path, timeout=5) as response:
            got = (response.status, response.read().decode())
    except urllib.error.HTTPError as err:
        got = (err.code, err.read().decode())
    assert got == (status, body)
