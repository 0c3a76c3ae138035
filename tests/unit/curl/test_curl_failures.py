"""curl's exit codes and messages for what the network part meets."""

from __future__ import annotations

import errno
import ssl

import pytest

from nrop.curl import failures
from nrop.curl.failures import CA_CERT_HINT, Failure


def _verify_error(code: int, message: str) -> ssl.SSLCertVerificationError:
    exc = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    exc.verify_code = code
    exc.verify_message = message
    return exc


def _ssl_error(library: str, reason: str) -> ssl.SSLError:
    exc = ssl.SSLError(1, f"[{library}: {reason}] ...")
    exc.library = library
    exc.reason = reason
    return exc


@pytest.mark.parametrize(
    ("failure", "line"),
    [
        pytest.param(
            failures.not_resolved("nosuch"), "curl: (6) Could not resolve host: nosuch", id="resolve"
        ),
        pytest.param(
            failures.connect_failed("127.0.0.1", 1, ConnectionRefusedError(errno.ECONNREFUSED, "x")),
            "curl: (7) Failed to connect to 127.0.0.1 port 1: Connection refused",
            id="refused",
        ),
        pytest.param(
            failures.connect_failed("h", 80, OSError(errno.EHOSTUNREACH, "x")),
            "curl: (7) Failed to connect to h port 80: No route to host",
            id="unreachable",
        ),
        pytest.param(
            failures.connect_timed_out(5.0012),
            "curl: (28) Connection timed out after 5001 milliseconds",
            id="connect-timeout",
        ),
        pytest.param(
            failures.connect_timed_out(5.0, handshake=True),
            "curl: (28) SSL connection timeout",
            id="tls-timeout",
        ),
        pytest.param(
            failures.transfer_timed_out(2.0, 10),
            "curl: (28) Operation timed out after 2000 milliseconds with 10 bytes received",
            id="max-time",
        ),
        pytest.param(
            failures.http_error(404, "Not Found"),
            "curl: (22) The requested URL returned error: 404 Not Found",
            id="fail-404",
        ),
        pytest.param(
            failures.http_error(500, ""),
            "curl: (22) The requested URL returned error: 500",
            id="fail-no-reason",
        ),
        pytest.param(
            failures.tls_failed(_verify_error(18, "self-signed certificate"), "h", 443),
            "curl: (60) SSL certificate problem: self-signed certificate",
            id="self-signed",
        ),
        pytest.param(
            failures.tls_failed(_verify_error(62, "hostname mismatch"), "127.0.0.1", 443),
            "curl: (60) SSL: no alternative certificate subject name matches target host name '127.0.0.1'",
            id="name-mismatch",
        ),
        pytest.param(
            failures.tls_failed(_ssl_error("SSL", "WRONG_VERSION_NUMBER"), "h", 80),
            "curl: (35) error:SSL routines::wrong version number",
            id="not-tls",
        ),
        pytest.param(
            failures.tls_failed(ssl.SSLEOFError(8, "EOF"), "h", 443),
            "curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to h:443 ",
            id="eof-in-handshake",
        ),
        pytest.param(
            failures.tls_failed(ConnectionResetError(errno.ECONNRESET, "x"), "h", 443),
            "curl: (35) OpenSSL SSL_connect: Connection reset by peer in connection to h:443 ",
            id="reset-in-handshake",
        ),
        pytest.param(failures.empty_reply(), "curl: (52) Empty reply from server", id="empty-reply"),
        pytest.param(failures.not_http(), "curl: (1) Received HTTP/0.9 when not allowed", id="not-http"),
        pytest.param(
            failures.receive_failed(ConnectionResetError(errno.ECONNRESET, "x")),
            "curl: (56) Recv failure: Connection reset by peer",
            id="reset",
        ),
        pytest.param(
            failures.send_failed(BrokenPipeError(errno.EPIPE, "x")),
            "curl: (55) Send failure: Broken pipe",
            id="send",
        ),
        pytest.param(
            failures.partial(12),
            "curl: (18) transfer closed with 12 bytes remaining to read",
            id="short-body",
        ),
        pytest.param(
            failures.partial(None),
            "curl: (18) transfer closed with outstanding read data remaining",
            id="short-chunked-body",
        ),
        pytest.param(failures.write_failed(0, 42), "curl: (23) Failed writing body (0 != 42)", id="write"),
    ],
)
def test_failure_lines(failure: Failure, line: str) -> None:
    assert failure.line() == line
    assert failure.code == int(line.split("(")[1].split(")", maxsplit=1)[0])


@pytest.mark.parametrize(
    ("failure", "hint"),
    [
        pytest.param(failures.tls_failed(_verify_error(18, "x"), "h", 443), CA_CERT_HINT, id="certificate"),
        pytest.param(failures.empty_reply(), "", id="other"),
    ],
)
def test_certificate_hint(failure: Failure, hint: str) -> None:
    assert failure.hint == hint
