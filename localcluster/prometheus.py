"""``nrop-prometheus``: the Prometheus pod of the embedded OpenShift flavour's monitoring.

Upstream's specs use OpenShift's Prometheus pod only as a network peer (a pod of
``openshift-monitoring`` that reaches the operator's and the exporters' metrics endpoints), so
this program serves what a Prometheus server answers before any query: its management
endpoints ``/-/healthy`` and ``/-/ready`` (Prometheus' own texts), on ``--web.listen-address``
as Prometheus takes it. It scrapes nothing and stores nothing; other paths get Go's
``404 page not found``. SIGTERM stops it with exit code 0, as Prometheus does.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType

__all__ = ["ANSWERS", "main", "parse_listen_address"]

log = logging.getLogger("nrop-prometheus")

#: Path -> body of the endpoints served (status 200).
ANSWERS = {
    "/-/healthy": "Prometheus Server is Healthy.\n",
    "/-/ready": "Prometheus Server is Ready.\n",
}


def parse_listen_address(text: str) -> tuple[str, int]:
    """``host:port`` (``:port`` for every address), as ``--web.listen-address`` takes it."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"invalid listen address {text!r}: want host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


class _Handler(BaseHTTPRequestHandler):
    server_version = "Prometheus"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        text = ANSWERS.get(path)
        status = 200 if text is not None else 404
        payload = (text if text is not None else "404 page not found\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nrop-prometheus", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--web.listen-address", dest="listen", type=parse_listen_address, default="0.0.0.0:9090"
    )
    args, unknown = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if unknown:
        log.info("ignoring flags this stand-in does not implement: %s", " ".join(unknown))
    host, port = args.listen
    server = ThreadingHTTPServer((host, port), _Handler)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("Server is ready to receive web requests on %s:%d", host, port)
    server.serve_forever()
    server.server_close()
    log.info("See you next time!")
    return 0
