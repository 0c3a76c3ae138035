"""The exporter's terminal-pod watch against a scripted server: the requests client-go's reflector
rule makes, the same as the scheduler's informers make (tests/unit/sched/test_sched_informers.py;
the rule itself is tested in tests/unit/api/test_api_reflector.py)."""

from __future__ import annotations

import logging

import pytest
from scriptedapi import EXPECTED_REQUESTS, script, serving

from nrop.api.clientconfig import ClientConfig
from nrop.api.restclient import RestClient
from nrop.rte.terminalpods import TerminalPods


def test_the_terminal_pod_watch_follows_the_reflector_rule_with_one_line_per_fault(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted = script()
    caplog.set_level(logging.INFO, logger=TerminalPods.__module__)
    with serving(scripted) as url:
        watcher = TerminalPods(RestClient(ClientConfig(server=url), user_agent="test"), "node-0")
        watcher.start()
        try:
            assert scripted.done.wait(10)  # the 500 costs client-go's first back-off, 0.8 s
            assert watcher.synced.is_set()
            assert watcher.current() == {("ns", "b")}
        finally:
            watcher.stop()
    assert scripted.requests == EXPECTED_REQUESTS
    what = "terminal pods of node node-0"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", f"{what}: 1 at start"),
        ("INFO", f"{what}: watch expired (410 Expired: too old resource version: 15 (18)); re-listing"),
        ("WARNING", f"cannot list/watch {what}: 500 InternalError: boom; retrying in 0.8s"),
        ("INFO", f"watching {what} recovered after 1 failed attempts"),
    ]
