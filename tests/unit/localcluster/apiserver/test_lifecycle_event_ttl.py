"""Events expire an hour after their last write, as etcd's lease on them does (``--event-ttl``)."""

from __future__ import annotations

from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.lifecycle import EVENT_TTL, Lifecycle, bootstrap
from nrop.localcluster.apiserver.server import APIServer

EVENTS = ("", "events")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _event(name: str, count: int = 1) -> dict:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled",
        "message": "m",
        "count": count,
    }


def test_events_expire_after_their_last_write() -> None:
    server = APIServer()
    bootstrap(server)
    clock = Clock()
    lifecycle = Lifecycle(server, period=60.0, clock=clock)
    events = server.registry.lookup("", "v1", "events")
    assert events is not None
    server.rest.create(events, "default", _event("old"), WriteOptions())
    clock.now = 600.0
    server.rest.create(events, "default", _event("renewed"), WriteOptions())
    clock.now = 1200.0
    renewed = server.store.get(EVENTS, "default", "renewed")
    assert renewed is not None
    server.rest.update(events, "default", "renewed", {**renewed, "count": 2}, WriteOptions())

    clock.now = EVENT_TTL  # "old" is exactly an hour old
    lifecycle.sweep()
    assert server.store.get(EVENTS, "default", "old") is None
    assert server.store.get(EVENTS, "default", "renewed") is not None

    clock.now = 1200.0 + EVENT_TTL - 1  # the update renewed it
    lifecycle.sweep()
    assert server.store.get(EVENTS, "default", "renewed") is not None
    clock.now = 1200.0 + EVENT_TTL
    lifecycle.sweep()
    assert server.store.get(EVENTS, "default", "renewed") is None
