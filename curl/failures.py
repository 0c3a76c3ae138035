"""curl's exit codes (``CURLcode``) and the messages curl 7.76.1 prints with them.

A failed transfer is a :class:`Failure`: the exit code and the text after ``curl: (N)``. The
functions here turn what the network part met (a name that did not resolve, a refused or
timed-out connection, a certificate that did not verify, a TLS handshake that failed, an HTTP
error status) into curl's code and wording; ``transfer`` raises them and ``main`` prints
``curl: (N) message`` unless ``-s``. For a certificate that does not verify curl adds a
paragraph after the line (:data:`CA_CERT_HINT`).

Pure: exceptions and figures in, failures out.
"""

from __future__ import annotations

import os
import ssl

__all__ = [
    "CA_CERT_HINT",
    "COULDNT_CONNECT",
    "COULDNT_RESOLVE_HOST",
    "GOT_NOTHING",
    "HTTP_RETURNED_ERROR",
    "OPERATION_TIMEDOUT",
    "PARTIAL_FILE",
    "PEER_FAILED_VERIFICATION",
    "RECV_ERROR",
    "SEND_ERROR",
    "SSL_CONNECT_ERROR",
    "UNSUPPORTED_PROTOCOL",
    "URL_MALFORMAT",
    "WRITE_ERROR",
    "Failure",
    "connect_failed",
    "connect_timed_out",
    "empty_reply",
    "http_error",
    "not_http",
    "not_resolved",
    "partial",
    "receive_failed",
    "send_failed",
    "tls_failed",
    "transfer_timed_out",
    "write_failed",
]

UNSUPPORTED_PROTOCOL = 1
URL_MALFORMAT = 3
COULDNT_RESOLVE_HOST = 6
COULDNT_CONNECT = 7
PARTIAL_FILE = 18
HTTP_RETURNED_ERROR = 22
WRITE_ERROR = 23
OPERATION_TIMEDOUT = 28
SSL_CONNECT_ERROR = 35
GOT_NOTHING = 52
SEND_ERROR = 55
RECV_ERROR = 56
PEER_FAILED_VERIFICATION = 60

#: What curl prints after the message of a certificate that does not verify (``CURL_CA_CERT_ERRORMSG``).
CA_CERT_HINT = (
    "More details here: https://curl.se/docs/sslcerts.html\n"
    "\n"
    "curl failed to verify the legitimacy of the server and therefore could not\n"
    "establish a secure connection to it. To learn more about this situation and\n"
    "how to fix it, please visit the web page mentioned above.\n"
)
#: OpenSSL's ``X509_V_ERR_HOSTNAME_MISMATCH`` and ``X509_V_ERR_IP_ADDRESS_MISMATCH``: curl checks the name itself and words it its way.
_NAME_MISMATCHES = frozenset({62, 64})


class Failure(Exception):
    """A transfer that failed: curl's exit code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Failure) and (other.code, other.message) == (self.code, self.message)

    def __hash__(self) -> int:
        return hash((self.code, self.message))

    def __repr__(self) -> str:
        return f"Failure({self.code}, {self.message!r})"

    def line(self) -> str:
        """The line curl prints on stderr."""
        return f"curl: ({self.code}) {self.message}"

    @property
    def hint(self) -> str:
        """What curl prints after the line (its certificate paragraph), or nothing."""
        return CA_CERT_HINT if self.code == PEER_FAILED_VERIFICATION else ""


def _strerror(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else str(exc)


def not_resolved(host: str) -> Failure:
    return Failure(COULDNT_RESOLVE_HOST, f"Could not resolve host: {host}")


def connect_failed(host: str, port: int, exc: OSError) -> Failure:
    """``connect()`` failed (refused, unreachable): the URL's host and port, the system's text."""
    return Failure(COULDNT_CONNECT, f"Failed to connect to {host} port {port}: {_strerror(exc)}")


def connect_timed_out(elapsed: float, *, handshake: bool = False) -> Failure:
    """The connection phase outlived ``--connect-timeout`` (``elapsed`` seconds), in TCP or in TLS."""
    if handshake:
        return Failure(OPERATION_TIMEDOUT, "SSL connection timeout")
    return Failure(OPERATION_TIMEDOUT, f"Connection timed out after {round(elapsed * 1000)} milliseconds")


def transfer_timed_out(elapsed: float, received: int) -> Failure:
    """The whole transfer outlived ``--max-time``."""
    return Failure(
        OPERATION_TIMEDOUT,
        f"Operation timed out after {round(elapsed * 1000)} milliseconds with {received} bytes received",
    )


def tls_failed(exc: OSError, host: str, port: int) -> Failure:
    """The TLS handshake failed: 60 for a certificate that does not verify, else 35."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        if exc.verify_code in _NAME_MISMATCHES:
            return Failure(
                PEER_FAILED_VERIFICATION,
                f"SSL: no alternative certificate subject name matches target host name '{host}'",
            )
        return Failure(PEER_FAILED_VERIFICATION, f"SSL certificate problem: {exc.verify_message}")
    where = f"in connection to {host}:{port} "
    if isinstance(exc, ssl.SSLEOFError) or (not isinstance(exc, ssl.SSLError) and exc.errno is None):
        return Failure(SSL_CONNECT_ERROR, f"OpenSSL SSL_connect: SSL_ERROR_SYSCALL {where}")
    if isinstance(exc, ssl.SSLError):
        reason = (exc.reason or str(exc)).lower().replace("_", " ")
        return Failure(SSL_CONNECT_ERROR, f"error:{exc.library or 'SSL'} routines::{reason}")
    return Failure(SSL_CONNECT_ERROR, f"OpenSSL SSL_connect: {_strerror(exc)} {where}")


def send_failed(exc: OSError) -> Failure:
    return Failure(SEND_ERROR, f"Send failure: {_strerror(exc)}")


def receive_failed(exc: OSError) -> Failure:
    return Failure(RECV_ERROR, f"Recv failure: {_strerror(exc)}")


def empty_reply() -> Failure:
    """The server closed the connection without answering."""
    return Failure(GOT_NOTHING, "Empty reply from server")


def not_http() -> Failure:
    """The answer does not start with an HTTP status line (curl refuses HTTP/0.9 by default)."""
    return Failure(UNSUPPORTED_PROTOCOL, "Received HTTP/0.9 when not allowed")


def write_failed(written: int, length: int) -> Failure:
    """The body could not be written where ``-o`` (or stdout) points."""
    return Failure(WRITE_ERROR, f"Failed writing body ({written} != {length})")


def http_error(status: int, reason: str) -> Failure:
    """``-f`` and a status of 400 or more: curl quotes the status line after the HTTP version."""
    return Failure(HTTP_RETURNED_ERROR, f"The requested URL returned error: {status} {reason}".rstrip())


def partial(remaining: int | None) -> Failure:
    """The connection closed before the body announced was complete."""
    if remaining is None:
        return Failure(PARTIAL_FILE, "transfer closed with outstanding read data remaining")
    return Failure(PARTIAL_FILE, f"transfer closed with {remaining} bytes remaining to read")
