"""The command line and the URL, read as curl 7.76.1 reads them.

Options (short ones may be bundled, ``-sSf``; a short option taking a value takes the rest of
its word or the next word, ``-ofile``/``-o file``; long ones never take ``=value``):

* ``-k``/``--insecure``: no certificate verification;
* ``-s``/``--silent``: no error messages (``-S``/``--show-error`` brings them back);
* ``-f``/``--fail``: an HTTP status of 400 or more is exit code 22, without the body;
* ``-o``/``--output FILE``: the body to ``FILE`` (``-`` is stdout);
* ``--connect-timeout SECONDS``: the limit of the connection phase (TCP and TLS), 300 s by
  default as in curl;
* ``-m``/``--max-time SECONDS``: the limit of the whole transfer.

Any other option is refused (exit 2, as curl refuses an unknown one) with a message naming the
subset, rather than silently ignored. One URL; without a scheme it is ``http``, as curl guesses.

Pure: :func:`parse` turns ``argv`` into an :class:`Invocation` or raises :class:`UsageError`;
:func:`target` turns a URL into a :class:`Target` or a :class:`.failures.Failure`.
"""

from __future__ import annotations

import ipaddress
import math
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nrop.curl.failures import UNSUPPORTED_PROTOCOL, URL_MALFORMAT, Failure

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "SUPPORTED",
    "USAGE_EXIT",
    "Invocation",
    "Target",
    "UsageError",
    "parse",
    "target",
]

#: curl's default limit of the connection phase (``DEFAULT_CONNECT_TIMEOUT``, 300 000 ms).
DEFAULT_CONNECT_TIMEOUT = 300.0
#: curl's exit code for a bad command line (``PARAM_*`` errors).
USAGE_EXIT = 2
#: What this curl implements, for the message refusing the rest.
SUPPORTED = (
    "-k/--insecure, -s/--silent, -S/--show-error, -f/--fail, -o/--output, --connect-timeout, -m/--max-time"
)
_HINT = "curl: try 'curl --help' or 'curl --manual' for more information"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Invocation:
    """What the command line asks for."""

    url: str
    insecure: bool = False
    silent: bool = False
    show_error: bool = False
    fail: bool = False
    #: Where the body goes: ``None`` or ``-`` for stdout.
    output: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    max_time: float | None = None

    @property
    def shows_errors(self) -> bool:
        """Whether ``curl: (N) ...`` lines are printed (``-s`` hides them, ``-S`` shows them again)."""
        return not self.silent or self.show_error


@dataclass(frozen=True)
class Target:
    """Where a URL points."""

    scheme: str
    #: As written in the URL (an IPv6 address without its brackets).
    host: str
    port: int
    #: Path and query as sent on the request line (at least ``/``).
    path: str

    @property
    def host_header(self) -> str:
        """The ``Host:`` header: the port only when it is not the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


class UsageError(Exception):
    """A bad command line: curl's message lines, exit code :data:`USAGE_EXIT`."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lines = (f"curl: {message}", _HINT)


# -- the command line -----------------------------------------------------------------------------

_FLAGS = {
    "k": "insecure",
    "s": "silent",
    "S": "show_error",
    "f": "fail",
    "insecure": "insecure",
    "silent": "silent",
    "show-error": "show_error",
    "fail": "fail",
}
_VALUED = {
    "o": "output",
    "m": "max_time",
    "output": "output",
    "connect-timeout": "connect_timeout",
    "max-time": "max_time",
}


def _number(option: str, text: str) -> float:
    try:
        value = float(text) if "_" not in text else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UsageError(f"option {option}: expected a proper numerical parameter")
    if value < 0:
        raise UsageError(f"option {option}: expected a positive numerical parameter")
    return value


def _unsupported(option: str) -> UsageError:
    return UsageError(f"option {option}: is not supported by this curl (it implements {SUPPORTED})")


def _set(fields: dict[str, Any], field: str, option: str, value: str) -> None:
    if field == "output":
        fields[field] = value
    else:
        fields[field] = _number(option, value)


def parse(argv: Sequence[str]) -> Invocation:
    """The :class:`Invocation` of ``argv`` (without the program name)."""
    fields: dict[str, Any] = {}
    urls: list[str] = []
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word.startswith("--") and len(word) > 2:
            name = word[2:]
            option = word
            if name in _FLAGS:
                fields[_FLAGS[name]] = True
            elif name in _VALUED:
                if index >= len(words):
                    raise UsageError(f"option {option}: requires parameter")
                _set(fields, _VALUED[name], option, words[index])
                index += 1
            else:
                raise _unsupported(option)
        elif word.startswith("-") and len(word) > 1:
            letters = word[1:]
            for position, letter in enumerate(letters):
                option = f"-{letter}"
                if letter in _FLAGS:
                    fields[_FLAGS[letter]] = True
                elif letter in _VALUED:
                    rest = letters[position + 1 :]
                    if rest:
                        value = rest
                    elif index < len(words):
                        value = words[index]
                        index += 1
                    else:
                        raise UsageError(f"option {option}: requires parameter")
                    _set(fields, _VALUED[letter], option, value)
                    break
                else:
                    raise _unsupported(option)
        else:
            urls.append(word)
    if not urls:
        raise UsageError("no URL specified!")
    if len(urls) > 1:
        raise UsageError(f"{len(urls)} URLs given: this curl fetches one URL per run")
    return Invocation(url=urls[0], **fields)


# -- the URL --------------------------------------------------------------------------------------


def _bad_url() -> Failure:
    return Failure(URL_MALFORMAT, "URL using bad/illegal format or missing URL")


def target(url: str) -> Target | Failure:
    """Where ``url`` points; a :class:`.failures.Failure` when curl would refuse it."""
    text = url
    scheme, sep, _ = text.partition("://")
    if not sep:
        text = f"http://{text}"
        scheme = "http"
    scheme = scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return Failure(UNSUPPORTED_PROTOCOL, f'Protocol "{scheme}" not supported or disabled in libcurl')
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:
        return _bad_url()
    host = parts.hostname or ""
    if not host or any(c.isspace() for c in text):
        return _bad_url()
    if parts.username is not None:
        return Failure(URL_MALFORMAT, "URL with user credentials: not supported by this curl")
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return _bad_url()
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(scheme, host, port if port is not None else _DEFAULT_PORTS[scheme], path)
