"""The scheduler's informers: store keys, what a re-list tells handlers, back-off, the reflector's error path."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from aiohttp import web

from nrop.sched.clientconfig import ClientConfig
from nrop.sched.informers import ADDED, DELETED, MODIFIED, Backoff, Informer, object_key, relist_changes
from nrop.sched.kubeclient import KubeClient, Resource


def obj(name: str, rv: str, namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("item", "key"),
    [
        pytest.param(obj("p", "1"), "ns/p", id="namespaced"),
        pytest.param(obj("n1", "1", namespace=None), "n1", id="cluster-scoped"),
    ],
)
def test_object_key(item: dict[str, Any], key: str) -> None:
    assert object_key(item) == key


@pytest.mark.parametrize(
    ("before", "listed", "expected"),
    [
        pytest.param({}, [obj("a", "1")], [(ADDED, "ns/a", None)], id="first-list-adds"),
        pytest.param({"ns/a": obj("a", "1")}, [obj("a", "1")], [], id="unchanged-is-silent"),
        pytest.param(
            {"ns/a": obj("a", "1")}, [obj("a", "5")], [(MODIFIED, "ns/a", "1")], id="new-rv-modifies"
        ),
        pytest.param({"ns/a": obj("a", "1")}, [], [(DELETED, "ns/a", "1")], id="missing-deletes"),
        pytest.param(
            {"ns/a": obj("a", "1"), "ns/b": obj("b", "2")},
            [obj("b", "7"), obj("c", "8")],
            [(MODIFIED, "ns/b", "2"), (ADDED, "ns/c", None), (DELETED, "ns/a", "1")],
            id="mixed",
        ),
    ],
)
def test_relist_changes(
    before: dict[str, dict[str, Any]],
    listed: list[dict[str, Any]],
    expected: list[tuple[str, str, str | None]],
) -> None:
    store, changes = relist_changes(before, listed)
    assert store == {object_key(o): o for o in listed}
    got = [
        (kind, object_key(new), old["metadata"]["resourceVersion"] if old is not None else None)
        for kind, new, old in changes
    ]
    assert got == expected


def test_backoff_doubles_to_the_cap_and_resets() -> None:
    backoff = Backoff(initial=0.8, factor=2, maximum=5)
    assert [backoff.next_delay() for _ in range(5)] == [0.8, 1.6, 3.2, 5, 5]
    backoff.reset()
    assert backoff.next_delay() == 0.8


# ------------------------------------------------------------------------------ the reflector's error path


def test_watch_failure_relists_after_backoff_with_a_clear_line(caplog: pytest.LogCaptureFixture) -> None:
    """A scripted server: the first watch fails with a 500, the second streams one event."""
    calls: list[str] = []
    served = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            calls.append(f"list rv={request.query.get('resourceVersion', '')}")
            body = {"kind": "ConfigMapList", "metadata": {"resourceVersion": "10"}, "items": [obj("a", "5")]}
            return web.json_response(body)
        calls.append(f"watch rv={request.query['resourceVersion']}")
        if sum(c.startswith("watch") for c in calls) == 1:
            status = {
                "kind": "Status",
                "status": "Failure",
                "code": 500,
                "reason": "InternalError",
                "message": "boom",
            }
            return web.json_response(status, status=500)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(orjson.dumps({"type": "ADDED", "object": obj("b", "11")}) + b"\n")
        served.set()
        await asyncio.Event().wait()  # hold the stream open until the client goes
        return response

    async def scenario() -> Informer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        api = KubeClient(ClientConfig(server=f"http://127.0.0.1:{port}"), rate_limit=None)
        informer = Informer(api, Resource("", "v1", "configmaps"), backoff=Backoff(initial=0.05))
        informer.start()
        try:
            await asyncio.wait_for(served.wait(), 10)
            await asyncio.sleep(0.05)
        finally:
            await informer.close()
            await api.close()
            await runner.cleanup()
        return informer

    with caplog.at_level(logging.WARNING, logger="nrop.sched.informers"):
        informer = asyncio.run(scenario())
    assert calls == ["list rv=", "watch rv=10", "list rv=", "watch rv=10"]
    assert informer.lists == 2
    assert sorted(o["metadata"]["name"] for o in informer.list()) == ["a", "b"]
    assert informer.resource_version == "11"
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("configmaps.v1: watch failed: 500 InternalError: boom; re-listing in ")
