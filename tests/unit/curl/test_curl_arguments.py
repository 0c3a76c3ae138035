"""curl's command line and URLs: the subset the image's curl implements, read as curl 7.76.1 reads them."""

from __future__ import annotations

import pytest

from nrop.curl.arguments import (
    DEFAULT_CONNECT_TIMEOUT,
    SUPPORTED,
    Invocation,
    Target,
    UsageError,
    parse,
    target,
)
from nrop.curl.failures import Failure

HINT = "curl: try 'curl --help' or 'curl --manual' for more information"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["http://a/"], Invocation("http://a/"), id="url-only"),
        pytest.param(
            ["-k", "https://127.0.0.1:2112/metrics"],
            Invocation("https://127.0.0.1:2112/metrics", insecure=True),
            id="upstream-85770",
        ),
        pytest.param(
            ["--connect-timeout", "5", "http://127.0.0.1:6443"],
            Invocation("http://127.0.0.1:6443", connect_timeout=5.0),
            id="upstream-85771",
        ),
        pytest.param(
            ["--connect-timeout", "2.5", "u"], Invocation("u", connect_timeout=2.5), id="fractional-timeout"
        ),
        pytest.param(
            ["-sSfk", "u"],
            Invocation("u", insecure=True, silent=True, show_error=True, fail=True),
            id="bundled",
        ),
        pytest.param(
            ["--silent", "--show-error", "--fail", "--insecure", "u"],
            Invocation("u", insecure=True, silent=True, show_error=True, fail=True),
            id="long-flags",
        ),
        pytest.param(["-o", "out", "u"], Invocation("u", output="out"), id="output-next-word"),
        pytest.param(["-oout", "u"], Invocation("u", output="out"), id="output-same-word"),
        pytest.param(
            ["-so", "out", "u"], Invocation("u", silent=True, output="out"), id="output-ends-bundle"
        ),
        pytest.param(
            ["-sofile", "u"], Invocation("u", silent=True, output="file"), id="output-rest-of-bundle"
        ),
        pytest.param(["--output", "-", "u"], Invocation("u", output="-"), id="output-stdout"),
        pytest.param(["-m", "3", "u"], Invocation("u", max_time=3.0), id="max-time"),
        pytest.param(["u", "--max-time", "0.5"], Invocation("u", max_time=0.5), id="option-after-url"),
    ],
)
def test_parse(argv: list[str], expected: Invocation) -> None:
    assert parse(argv) == expected


def test_default_connect_timeout_is_curls() -> None:
    assert parse(["u"]).connect_timeout == DEFAULT_CONNECT_TIMEOUT == 300.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param([], "curl: no URL specified!", id="no-url"),
        pytest.param(["-s"], "curl: no URL specified!", id="options-only"),
        pytest.param(
            ["--connect-timeout"], "curl: option --connect-timeout: requires parameter", id="missing-value"
        ),
        pytest.param(["u", "-o"], "curl: option -o: requires parameter", id="missing-short-value"),
        pytest.param(
            ["--connect-timeout", "5s", "u"],
            "curl: option --connect-timeout: expected a proper numerical parameter",
            id="not-a-number",
        ),
        pytest.param(
            ["--connect-timeout", "nan", "u"],
            "curl: option --connect-timeout: expected a proper numerical parameter",
            id="nan",
        ),
        pytest.param(
            ["-m", "1_0", "u"],
            "curl: option -m: expected a proper numerical parameter",
            id="python-underscores",
        ),
        pytest.param(
            ["--max-time", "-1", "u"],
            "curl: option --max-time: expected a positive numerical parameter",
            id="negative",
        ),
        pytest.param(
            ["-L", "u"],
            f"curl: option -L: is not supported by this curl (it implements {SUPPORTED})",
            id="short",
        ),
        pytest.param(
            ["--connect-timeout=5", "u"],
            f"curl: option --connect-timeout=5: is not supported by this curl (it implements {SUPPORTED})",
            id="long-never-takes-equals",
        ),
        pytest.param(
            ["-kv", "u"],
            f"curl: option -v: is not supported by this curl (it implements {SUPPORTED})",
            id="in-bundle",
        ),
        pytest.param(["a", "b"], "curl: 2 URLs given: this curl fetches one URL per run", id="two-urls"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse(argv)
    assert caught.value.lines == (message, HINT)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param(
            "https://127.0.0.1:2112/metrics", Target("https", "127.0.0.1", 2112, "/metrics"), id="metrics"
        ),
        pytest.param("http://127.0.0.1:6443", Target("http", "127.0.0.1", 6443, "/"), id="no-path"),
        pytest.param(
            "HTTP://Example.COM/a?b=c#frag",
            Target("http", "example.com", 80, "/a?b=c"),
            id="query-no-fragment",
        ),
        pytest.param("example.com:8080/x", Target("http", "example.com", 8080, "/x"), id="no-scheme-is-http"),
        pytest.param("https://[::1]/", Target("https", "::1", 443, "/"), id="ipv6"),
    ],
)
def test_target(url: str, expected: Target) -> None:
    assert target(url) == expected


@pytest.mark.parametrize(
    ("url", "failure"),
    [
        pytest.param(
            "ftp://host/", Failure(1, 'Protocol "ftp" not supported or disabled in libcurl'), id="ftp"
        ),
        pytest.param("http://", Failure(3, "URL using bad/illegal format or missing URL"), id="no-host"),
        pytest.param(
            "http://h:99999/", Failure(3, "URL using bad/illegal format or missing URL"), id="bad-port"
        ),
        pytest.param(
            "http://h:x/", Failure(3, "URL using bad/illegal format or missing URL"), id="port-not-number"
        ),
        pytest.param("http://a b/", Failure(3, "URL using bad/illegal format or missing URL"), id="space"),
        pytest.param(
            "http://u:p@h/",
            Failure(3, "URL with user credentials: not supported by this curl"),
            id="credentials",
        ),
    ],
)
def test_bad_urls(url: str, failure: Failure) -> None:
    assert target(url) == failure


@pytest.mark.parametrize(
    ("given", "header"),
    [
        pytest.param(Target("http", "h", 80, "/"), "h", id="http-default-port"),
        pytest.param(Target("https", "h", 443, "/"), "h", id="https-default-port"),
        pytest.param(Target("https", "h", 80, "/"), "h:80", id="other-port"),
        pytest.param(Target("http", "::1", 8080, "/"), "[::1]:8080", id="ipv6"),
    ],
)
def test_host_header(given: Target, header: str) -> None:
    assert given.host_header == header


@pytest.mark.parametrize(
    ("argv", "shows"),
    [
        pytest.param(["u"], True, id="default"),
        pytest.param(["-s", "u"], False, id="silent"),
        pytest.param(["-sS", "u"], True, id="silent-show-error"),
    ],
)
def test_error_messages_shown(argv: list[str], shows: bool) -> None:
    assert parse(argv).shows_errors is shows
