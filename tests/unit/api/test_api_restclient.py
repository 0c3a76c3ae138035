"""The blocking REST client against a real HTTP/1.1 server on loopback: bodies, headers, typed
errors, kept-alive connections the server closes, timeouts and watches."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from scriptedapi import loopback

from nrop.api import restclient
from nrop.api.clientconfig import ClientConfig
from nrop.api.restapi import ApiConnectionError, ApiError, GoneError, NotFoundError
from nrop.api.restclient import RestClient


@dataclass
class Seen:
    """What the server saw: one entry per request, and the client ports it came from."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)


Route = Callable[[BaseHTTPRequestHandler, bytes], None]


def reply(handler: BaseHTTPRequestHandler, code: int, body: Any, *, close: bool = False) -> None:
    data = json.dumps(body).encode() if body is not None else b""
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()
    if close:  # without saying so (no "Connection: close"), as a server ending an idle connection
        handler.close_connection = True


@contextmanager
def serving(route: Route) -> Iterator[tuple[str, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen.requests.append(
                {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
            )
            seen.ports.append(self.client_address[1])
            route(self, body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with loopback(Handler) as url:
        yield url, seen


def client(url: str, **kwargs: Any) -> RestClient:
    return RestClient(ClientConfig(server=url, token="t0k"), user_agent="tester/1.0", **kwargs)


def test_a_request_sends_json_with_the_token_and_returns_the_decoded_body() -> None:
    with serving(lambda h, body: reply(h, 201, {"echo": json.loads(body)})) as (url, seen):
        api = client(url)
        got = api.request("POST", "/api/v1/pods", params={"fieldSelector": "a=b,c!=d"}, body={"x": 1})
    assert got == {"echo": {"x": 1}}
    (sent,) = seen.requests
    assert sent["path"] == "/api/v1/pods?fieldSelector=a%3Db%2Cc%21%3Dd"
    assert sent["headers"]["Authorization"] == "Bearer t0k"
    assert sent["headers"]["User-Agent"] == "tester/1.0"
    assert sent["headers"]["Content-Type"] == "application/json"
    assert sent["headers"]["Accept"] == "application/json"


def test_a_get_sends_no_content_type_and_an_empty_body_is_none() -> None:
    with serving(lambda h, body: reply(h, 200, None)) as (url, seen):
        assert client(url).request("GET", "/x") is None
    assert "Content-Type" not in seen.requests[0]["headers"]


@pytest.mark.parametrize(
    ("code", "body", "error", "reason", "message"),
    [
        pytest.param(
            404,
            {"kind": "Status", "code": 404, "reason": "NotFound", "message": 'pods "p" not found'},
            NotFoundError,
            "NotFound",
            'pods "p" not found',
            id="status",
        ),
        pytest.param(503, ["not", "a", "status"], ApiError, "ServiceUnavailable", "", id="not-a-status"),
    ],
)
def test_an_error_response_becomes_its_typed_error(
    code: int, body: Any, error: type[ApiError], reason: str, message: str
) -> None:
    with serving(lambda h, _: reply(h, code, body)) as (url, _seen), pytest.raises(error) as info:
        client(url).request("GET", "/api/v1/namespaces/ns/pods/p")
    assert (info.value.status, info.value.reason) == (code, reason)
    assert message in info.value.message


def test_requests_of_a_thread_share_one_kept_alive_connection() -> None:
    with serving(lambda h, _: reply(h, 200, {})) as (url, seen):
        api = client(url)
        for _ in range(3):
            api.request("GET", "/x")
        other: list[Any] = []
        thread = threading.Thread(target=lambda: other.append(api.request("GET", "/y")))
        thread.start()
        thread.join()
        api.close()
    assert len(set(seen.ports[:3])) == 1
    assert seen.ports[3] != seen.ports[0]


@pytest.mark.parametrize("seen_before_use", [True, False], ids=["noticed-idle", "found-on-send"])
def test_a_connection_the_server_closed_while_idle_is_replaced(
    seen_before_use: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not seen_before_use:  # the close races the request: it is sent once more
        monkeypatch.setattr(restclient, "_closed_by_peer", lambda sock: False)
    with serving(lambda h, _: reply(h, 200, {"n": len(seen.requests)}, close=True)) as (url, seen):
        api = client(url)
        assert api.request("PUT", "/x", body={}) == {"n": 1}
        time.sleep(0.1)  # the server's close reaches the client
        assert api.request("PUT", "/x", body={}) == {"n": 2}
    assert len(seen.requests) == 2
    assert seen.ports[0] != seen.ports[1]


def test_no_server_and_no_answer_are_connection_errors() -> None:
    with serving(lambda h, _: reply(h, 200, {})) as (url, _seen):
        pass  # closed: nothing listens on its port any more
    with pytest.raises(ApiConnectionError) as info:
        client(url).request("GET", "/api/v1/nodes")
    assert info.value.status == 0 and info.value.message.startswith("GET /api/v1/nodes: ")

    release = threading.Event()
    with serving(lambda h, _: release.wait(5)) as (url, _seen):
        with pytest.raises(ApiConnectionError, match=r"GET /slow: timed out after 0.2s"):
            client(url).request("GET", "/slow", timeout=0.2)
        release.set()


def _stream(events: list[dict[str, Any]], hold: threading.Event | None = None) -> Route:
    def route(handler: BaseHTTPRequestHandler, _: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for event in events:
            line = json.dumps(event).encode() + b"\n"
            handler.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            handler.wfile.flush()
        if hold is not None:
            hold.wait(5)
        handler.wfile.write(b"0\r\n\r\n")

    return route


def test_a_watch_yields_its_events_until_the_server_ends_it() -> None:
    events = [
        {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "2"}}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "3"}}},
    ]
    with serving(_stream(events)) as (url, seen):
        got = list(client(url).watch("/api/v1/pods", params={"resourceVersion": "1"}, timeout_seconds=300))
    assert got == [(e["type"], e["object"]) for e in events]
    assert seen.requests[0]["path"] == "/api/v1/pods?resourceVersion=1&watch=true&timeoutSeconds=300"


def test_an_error_event_is_raised_as_its_typed_error() -> None:
    expired = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    with (
        serving(_stream([{"type": "ERROR", "object": expired}])) as (url, _seen),
        pytest.raises(GoneError, match="too old resource version"),
    ):
        list(client(url).watch("/api/v1/pods"))


def test_closing_a_watch_from_another_thread_ends_it_quietly() -> None:
    hold = threading.Event()
    first = {"type": "ADDED", "object": {"metadata": {"name": "a"}}}
    with serving(_stream([first], hold)) as (url, _seen):
        watch = client(url).watch("/api/v1/pods")
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.extend(watch))
        reader.start()
        time.sleep(0.2)
        watch.close()
        reader.join(5)
        hold.set()
    assert not reader.is_alive()
    assert got == [("ADDED", first["object"])]
