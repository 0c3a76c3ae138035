"""A scripted API server for the reflectors' tests: each list and each watch answers the next entry of a script.

Both reflectors (the scheduler's informers, asyncio; the exporter's terminal-pod watch, a
thread with the official client) run the same script (:func:`script`) and must send the
same requests (:data:`EXPECTED_REQUESTS`): client-go's rule, decided once in
``nrop.api.reflector``. :func:`loopback` serves any handler the same way (the REST client's
tests use it). ``tests/`` is on ``sys.path`` through its ``conftest.py``.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Obj = dict[str, Any]


def pod(name: str, rv: str) -> Obj:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}


def _status(code: int, reason: str, message: str) -> Obj:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}


@dataclass
class Script:
    """The list bodies in order; per watch, the events to stream before the server ends it, or
    None to hold it open (the end of the script)."""

    lists: list[Obj]
    watches: list[list[Obj] | None]
    requests: list[str] = field(default_factory=list)
    #: Set once a watch is held open: the client went through the whole script.
    done: threading.Event = field(default_factory=threading.Event)


def script() -> Script:
    """A list, a watch the server ends after an event and a bookmark, a watch that expires (in-stream
    410), a watch that fails (in-stream 500), then a watch held open."""
    return Script(
        lists=[
            {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": [pod("a", "5")]},
            {"kind": "List", "metadata": {"resourceVersion": "20"}, "items": [pod("a", "5"), pod("b", "11")]},
            {"kind": "List", "metadata": {"resourceVersion": "30"}, "items": [pod("b", "11")]},
        ],
        watches=[
            [
                {"type": "ADDED", "object": pod("b", "11")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
            ],
            [{"type": "ERROR", "object": _status(410, "Expired", "too old resource version: 15 (18)")}],
            [{"type": "ERROR", "object": _status(500, "InternalError", "boom")}],
            None,
        ],
    )


#: What a reflector asks of :func:`script`: it watches from the list's resourceVersion, again from
#: the bookmark's once the server ended the watch, lists again after the 410 and after the 500.
EXPECTED_REQUESTS = [
    "list rv=",
    "watch rv=10",
    "watch rv=15",
    "list rv=",
    "watch rv=20",
    "list rv=",
    "watch rv=30",
]


@contextmanager
def serving(scripted: Script) -> Iterator[str]:
    """Serve ``scripted`` on a loopback port; yields the server's URL."""
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            watching = query.get("watch", [""])[0].lower() in ("true", "1")
            rv = query.get("resourceVersion", [""])[0]
            scripted.requests.append(f"{'watch' if watching else 'list'} rv={rv}")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # HTTP/1.0 without a length: the body ends when the connection does
            if not watching:
                self.wfile.write(json.dumps(scripted.lists.pop(0)).encode())
                return
            events = scripted.watches.pop(0)
            if events is None:
                scripted.done.set()
                release.wait()
                return
            for event in events:
                self.wfile.write(json.dumps(event).encode() + b"\n")
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with loopback(Handler) as url:
        try:
            yield url
        finally:
            release.set()


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a loopback port, a thread per connection; yields the server's URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
