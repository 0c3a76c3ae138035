"""The image's curl against real local servers: HTTP and HTTPS, curl's output, messages and exit codes.

Servers on 127.0.0.1: an HTTP/1.1 server (a body, a 404, a chunked body, a body cut short), the
same behind TLS with a certificate of a test CA (and one self-signed), raw sockets that answer
nothing, something that is not HTTP, or Go's answer to plain HTTP on a TLS port; a port nobody
listens on and a listener whose backlog is full (connections time out). Most cases run the
program's :func:`nrop.curl.main.run` in this process; certificate verification runs the console
script with ``SSL_CERT_FILE`` naming the test CA, as curl reads it too.
"""

from __future__ import annotations

import datetime
import io
import ipaddress
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nrop.curl.destinations import POD_LOOPBACK_VAR
from nrop.curl.failures import CA_CERT_HINT
from nrop.curl.main import run

BODY = b"rte_noderesourcetopology_writes_total 3\nrte_wakeup_delay_milliseconds 0\n"
GO_PLAINTEXT_ANSWER = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
CURL = Path(sys.executable).parent / "nrop-curl"


# -- certificates -------------------------------------------------------------------------------------


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    sans: list[str],
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, signer = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
    if issuer is None and not sans:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    if sans:
        names: list[x509.GeneralName] = []
        for san in sans:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                names.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("pki")
    ca_key, server_key, other_key, self_key = _key(), _key(), _key(), _key()
    ca = _cert("test-ca", ca_key, None, [])
    files = {
        "ca": _pem(ca),
        "server.crt": _pem(_cert("server", server_key, ("test-ca", ca_key), ["localhost", "127.0.0.1"])),
        "server.key": _key_pem(server_key),
        "other.crt": _pem(_cert("other", other_key, ("test-ca", ca_key), ["other.example"])),
        "other.key": _key_pem(other_key),
        "self.crt": _pem(_cert("self", self_key, None, ["127.0.0.1"])),
        "self.key": _key_pem(self_key),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = directory / name
        paths[name].write_bytes(data)
    return paths


# -- servers -------------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests: list[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:
        self.requests.append((self.requestline, dict(self.headers.items())))
        if self.path == "/metrics":
            self._send(200, BODY)
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (BODY[:10], BODY[10:]):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/short":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.close_connection = True
        elif self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.wfile.flush()
            time.sleep(3)
        else:
            self._send(404, b"404 page not found\n")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        del request, client_address  # a client speaking TLS to the plain server, on purpose


def _http_server(context: ssl.SSLContext | None) -> Iterator[tuple[int, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    handler = type("Handler", (_Handler,), {"requests": seen})
    server = _QuietServer(("127.0.0.1", 0), handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def http() -> Iterator[tuple[int, list[tuple[str, dict[str, str]]]]]:
    yield from _http_server(None)


def _tls(pki: dict[str, Path], name: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki[f"{name}.crt"], pki[f"{name}.key"])
    return context


@pytest.fixture(scope="module")
def https(pki: dict[str, Path]) -> Iterator[tuple[int, list[tuple[str, dict[str, str]]]]]:
    yield from _http_server(_tls(pki, "server"))


@pytest.fixture(scope="module")
def other_name(pki: dict[str, Path]) -> Iterator[tuple[int, list[tuple[str, dict[str, str]]]]]:
    yield from _http_server(_tls(pki, "other"))


@pytest.fixture(scope="module")
def self_signed(pki: dict[str, Path]) -> Iterator[tuple[int, list[tuple[str, dict[str, str]]]]]:
    yield from _http_server(_tls(pki, "self"))


def _raw_server(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                answer(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk


@pytest.fixture
def raw() -> Iterator[Callable[[Callable[[socket.socket], None]], int]]:
    started: list[Iterator[int]] = []

    def start(answer: Callable[[socket.socket], None]) -> int:
        server = _raw_server(answer)
        started.append(server)
        return next(server)

    yield start
    for server in started:
        next(server, None)


@pytest.fixture
def unused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


@pytest.fixture
def full_backlog() -> Iterator[int]:
    """A listener nobody accepts on, its backlog full: the next connection attempt times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    for _ in range(8):
        client = socket.socket()
        client.settimeout(0.2)
        held.append(client)
        try:
            client.connect(("127.0.0.1", port))
        except TimeoutError:
            break
    else:
        pytest.skip("this machine accepts connections beyond a full backlog")
    yield port
    for client in held:
        client.close()
    listener.close()


# -- runs ----------------------------------------------------------------------------------------------


def curl(*argv: str, environ: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    stdout, stderr = io.BytesIO(), io.BytesIO()
    code = run(list(argv), stdout, stderr, environ or {})
    return code, stdout.getvalue(), stderr.getvalue().decode()


def test_body_to_stdout(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    port, seen = http
    assert curl(f"http://127.0.0.1:{port}/metrics") == (0, BODY, "")
    line, headers = seen[-1]
    assert line == "GET /metrics HTTP/1.1"
    assert headers == {"Host": f"127.0.0.1:{port}", "User-Agent": "curl/7.76.1", "Accept": "*/*"}


def test_error_status_without_fail_is_success(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    assert curl(f"http://127.0.0.1:{http[0]}/nothing") == (0, b"404 page not found\n", "")


def test_fail_on_error_status(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    assert curl("-f", f"http://127.0.0.1:{http[0]}/nothing") == (
        22,
        b"",
        "curl: (22) The requested URL returned error: 404 Not Found\n",
    )


def test_silent_hides_errors_and_show_error_brings_them_back(
    http: tuple[int, list[tuple[str, dict[str, str]]]],
) -> None:
    url = f"http://127.0.0.1:{http[0]}/nothing"
    assert curl("-sf", url) == (22, b"", "")
    assert curl("-sSf", url)[2] == "curl: (22) The requested URL returned error: 404 Not Found\n"


def test_chunked_body(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    assert curl(f"http://127.0.0.1:{http[0]}/chunked") == (0, BODY, "")


def test_body_cut_short(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    assert curl(f"http://127.0.0.1:{http[0]}/short") == (
        18,
        b"x" * 10,
        "curl: (18) transfer closed with 90 bytes remaining to read\n",
    )


def test_max_time(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    code, body, err = curl("-m", "0.5", f"http://127.0.0.1:{http[0]}/slow")
    assert (code, body) == (28, b"x" * 10)
    assert err.startswith("curl: (28) Operation timed out after ")
    assert err.endswith(" milliseconds with 10 bytes received\n")


def test_output_file(http: tuple[int, list[tuple[str, dict[str, str]]]], tmp_path: Path) -> None:
    out = tmp_path / "metrics"
    assert curl("-o", str(out), f"http://127.0.0.1:{http[0]}/metrics") == (0, b"", "")
    assert out.read_bytes() == BODY


def test_output_file_not_created_when_failing(
    http: tuple[int, list[tuple[str, dict[str, str]]]], tmp_path: Path
) -> None:
    out = tmp_path / "page"
    assert curl("-sfo", str(out), f"http://127.0.0.1:{http[0]}/nothing")[0] == 22
    assert not out.exists()


def test_output_file_that_cannot_be_created(
    http: tuple[int, list[tuple[str, dict[str, str]]]], tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "file"
    assert curl("-o", str(out), f"http://127.0.0.1:{http[0]}/metrics") == (
        23,
        b"",
        f"Warning: Failed to create the file {out}: No such file or directory\n"
        f"curl: (23) Failed writing body (0 != {len(BODY)})\n",
    )


def test_https_insecure(https: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    assert curl("-k", f"https://127.0.0.1:{https[0]}/metrics") == (0, BODY, "")


def test_https_self_signed_without_insecure(
    self_signed: tuple[int, list[tuple[str, dict[str, str]]]],
) -> None:
    code, body, err = curl(f"https://127.0.0.1:{self_signed[0]}/metrics")
    assert (code, body) == (60, b"")
    first, rest = err.split("\n", 1)
    assert first.startswith("curl: (60) SSL certificate problem: self")
    assert first.endswith("signed certificate")
    assert rest == CA_CERT_HINT
    assert curl("-k", f"https://127.0.0.1:{self_signed[0]}/metrics") == (0, BODY, "")


def _console(*argv: str, ca: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(CURL), *argv], capture_output=True, timeout=30, check=False, env={"SSL_CERT_FILE": str(ca)}
    )


def test_https_verified_against_the_ca_store(
    https: tuple[int, list[tuple[str, dict[str, str]]]], pki: dict[str, Path]
) -> None:
    done = _console(f"https://localhost:{https[0]}/metrics", ca=pki["ca"])
    assert (done.returncode, done.stdout, done.stderr) == (0, BODY, b"")


def test_https_name_mismatch(
    other_name: tuple[int, list[tuple[str, dict[str, str]]]], pki: dict[str, Path]
) -> None:
    done = _console(f"https://127.0.0.1:{other_name[0]}/metrics", ca=pki["ca"])
    assert (done.returncode, done.stdout) == (60, b"")
    assert done.stderr.decode() == (
        "curl: (60) SSL: no alternative certificate subject name matches target host name '127.0.0.1'\n"
        + CA_CERT_HINT
    )


def test_plain_http_to_a_go_https_server(raw: Callable[[Callable[[socket.socket], None]], int]) -> None:
    """Go's net/http answers plain HTTP on a TLS port with a 400: curl prints it and succeeds."""

    def answer(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(GO_PLAINTEXT_ANSWER)

    port = raw(answer)
    assert curl("--connect-timeout", "5", f"http://127.0.0.1:{port}") == (
        0,
        b"Client sent an HTTP request to an HTTPS server.\n",
        "",
    )


def test_empty_reply(raw: Callable[[Callable[[socket.socket], None]], int]) -> None:
    port = raw(_read_request)
    assert curl(f"http://127.0.0.1:{port}/") == (52, b"", "curl: (52) Empty reply from server\n")


def test_not_http(raw: Callable[[Callable[[socket.socket], None]], int]) -> None:
    def answer(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    port = raw(answer)
    assert curl(f"http://127.0.0.1:{port}/") == (1, b"", "curl: (1) Received HTTP/0.9 when not allowed\n")


def test_https_to_plain_http(http: tuple[int, list[tuple[str, dict[str, str]]]]) -> None:
    code, _, err = curl("-k", f"https://127.0.0.1:{http[0]}/")
    assert code == 35
    assert err.startswith("curl: (35) ")


def test_tls_handshake_timeout(raw: Callable[[Callable[[socket.socket], None]], int]) -> None:
    port = raw(lambda conn: time.sleep(2))
    started = time.monotonic()
    assert curl("-k", "--connect-timeout", "0.5", f"https://127.0.0.1:{port}/") == (
        28,
        b"",
        "curl: (28) SSL connection timeout\n",
    )
    assert time.monotonic() - started < 1.5


def test_connection_refused(unused_port: int) -> None:
    assert curl(f"http://127.0.0.1:{unused_port}/") == (
        7,
        b"",
        f"curl: (7) Failed to connect to 127.0.0.1 port {unused_port}: Connection refused\n",
    )


def test_connect_timeout(full_backlog: int) -> None:
    code, body, err = curl("--connect-timeout", "0.5", f"http://127.0.0.1:{full_backlog}/")
    assert (code, body) == (28, b"")
    assert err.startswith("curl: (28) Connection timed out after ")
    milliseconds = int(err.split("after ")[1].split(" ")[0])
    assert 450 <= milliseconds < 1500


def test_name_not_resolved() -> None:
    assert curl("http://nosuchhost.invalid/") == (
        6,
        b"",
        "curl: (6) Could not resolve host: nosuchhost.invalid\n",
    )


def test_usage_error_exit_code() -> None:
    assert curl() == (
        2,
        b"",
        "curl: no URL specified!\ncurl: try 'curl --help' or 'curl --manual' for more information\n",
    )


def test_pod_loopback(http: tuple[int, list[tuple[str, dict[str, str]]]], unused_port: int) -> None:
    """In an embedded cluster's container, 127.0.0.1 is the pod's address; the Host header stays."""
    port, seen = http
    environ = {POD_LOOPBACK_VAR: "127.0.0.1"}
    assert curl(f"http://localhost:{port}/metrics", environ=environ) == (0, BODY, "")
    assert seen[-1][1]["Host"] == f"localhost:{port}"
    refused = curl(f"http://127.0.0.1:{unused_port}/", environ={POD_LOOPBACK_VAR: "127.0.0.1"})
    assert refused[2] == f"curl: (7) Failed to connect to 127.0.0.1 port {unused_port}: Connection refused\n"
