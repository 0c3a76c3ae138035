"""Where a URL's host connects: a container's loopback is its pod in the embedded cluster, except the API server."""

from __future__ import annotations

import pytest

from nrop.curl.destinations import POD_LOOPBACK_VAR, connect_host

POD = {
    POD_LOOPBACK_VAR: "127.16.3.7",
    "KUBERNETES_SERVICE_HOST": "127.0.0.1",
    "KUBERNETES_SERVICE_PORT": "6443",
}


@pytest.mark.parametrize(
    ("host", "port", "environ", "expected"),
    [
        pytest.param("127.0.0.1", 2112, POD, "127.16.3.7", id="pod-loopback-is-the-pod"),
        pytest.param("localhost", 8080, POD, "127.16.3.7", id="localhost"),
        pytest.param("LOCALHOST", 8080, POD, "127.16.3.7", id="localhost-any-case"),
        pytest.param("::1", 8080, POD, "127.16.3.7", id="ipv6-loopback"),
        pytest.param("127.0.0.1", 6443, POD, "127.0.0.1", id="api-server-stays"),
        pytest.param("127.0.0.2", 2112, POD, "127.0.0.2", id="other-loopback-address"),
        pytest.param("127.16.9.9", 2112, POD, "127.16.9.9", id="another-pod"),
        pytest.param("example.com", 80, POD, "example.com", id="names"),
        pytest.param("127.0.0.1", 2112, {}, "127.0.0.1", id="real-cluster-or-machine"),
        pytest.param("127.0.0.1", 2112, {POD_LOOPBACK_VAR: ""}, "127.0.0.1", id="empty-variable"),
    ],
)
def test_connect_host(host: str, port: int, environ: dict[str, str], expected: str) -> None:
    assert connect_host(host, port, environ) == expected
