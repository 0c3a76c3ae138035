"""The scheduler's informers against a scripted server: the requests client-go's reflector rule makes
(the rule itself is tested in tests/unit/api/test_api_reflector.py; the exporter's terminal-pod
watch runs the same script in tests/unit/rte/test_rte_terminalpods.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from scriptedapi import EXPECTED_REQUESTS, script, serving

from nrop.api.backoff import Backoff
from nrop.api.clientconfig import ClientConfig
from nrop.api.restapi import Resource
from nrop.sched.informers import Informer
from nrop.sched.kubeclient import KubeClient


def test_the_informer_follows_the_reflector_rule_with_one_line_per_fault(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted = script()
    seen: list[tuple[str, str]] = []

    async def scenario(url: str) -> Informer:
        api = KubeClient(ClientConfig(server=url), rate_limit=None)
        informer = Informer(api, Resource("", "v1", "pods"), backoff=Backoff(initial=0.05))
        informer.add_handler(lambda event, obj, _old: seen.append((event, obj["metadata"]["name"])))
        informer.start()
        try:
            await asyncio.wait_for(asyncio.to_thread(scripted.done.wait), 10)
        finally:
            await informer.close()
            await api.close()
        return informer

    with caplog.at_level(logging.INFO, logger="nrop.sched.informers"), serving(scripted) as url:
        informer = asyncio.run(scenario(url))
    assert scripted.requests == EXPECTED_REQUESTS
    assert informer.lists == 3
    assert informer.resource_version == "30"
    assert [o["metadata"]["name"] for o in informer.list()] == ["b"]
    # The relists after the 410 and the 500 changed nothing the handlers had not been told.
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "pods.v1: watch expired (too old resource version: 15 (18)); re-listing"),
        ("WARNING", "pods.v1: watch failed: 500 InternalError: boom; re-listing in 0.1s"),
    ]
