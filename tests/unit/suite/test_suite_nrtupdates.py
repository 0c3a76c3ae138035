"""Tests of nrop.suite.nrtupdates: the refresh period read from the operator objects (a table),
and ``GetUpdated`` on a fake cluster whose NRTs follow a script, one step per look."""

from __future__ import annotations

import math

import pytest
from suite_nrt_samples import ScriptedNRTs, two_zone_nrt

from nrop.suite import nrtupdates
from nrop.suite.waiting import WaitTimeout


@pytest.mark.parametrize(
    ("nrops", "seconds"),
    [
        ([], 10.0),
        ([{"spec": {"nodeGroups": [{"poolName": "worker"}]}}], 10.0),
        ([{"spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": "5s"}}]}}], 5.0),
        (
            [
                {
                    "spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": "5s"}}]},
                    "status": {"nodeGroups": [{"config": {"infoRefreshPeriod": "1m"}}]},
                }
            ],
            60.0,
        ),
        ([{"status": {"machineConfigPools": [{"config": {"infoRefreshPeriod": "20s"}}]}}], 20.0),
        ([{"spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": "soon"}}]}}], 10.0),
    ],
)
def test_refresh_period_of(nrops, seconds) -> None:
    assert nrtupdates.refresh_period_of(nrops) == seconds


def _nrop(period: str) -> dict:
    return {"spec": {"nodeGroups": [{"config": {"infoRefreshPeriod": period}}]}}


@pytest.mark.parametrize(("nrops", "grace"), [(None, 15.0), ([], 15.0), ([_nrop("30s")], 35.0)])
def test_republish_grace(nrops, grace) -> None:
    assert nrtupdates.republish_grace(ScriptedNRTs({}, nrops)) == grace


def test_get_updated_returns_the_list_once_every_reference_nrt_changed() -> None:
    a0, b0 = two_zone_nrt("a"), two_zone_nrt("b")
    a1, b1 = two_zone_nrt("a", cpu0="10", rv="2"), two_zone_nrt("b", cpu1="10", rv="2")
    kube = ScriptedNRTs({"a": [a0, a1], "b": [b0, b0, b1]})
    assert nrtupdates.get_updated(kube, [a0, b0], 5.0, interval=0.01, grace=math.inf) == [a1, b1]
    assert kube.looks == {"a": 3, "b": 3}


def test_get_updated_of_nothing_is_the_current_list() -> None:
    a0 = two_zone_nrt("a")
    assert nrtupdates.get_updated(ScriptedNRTs({"a": [a0]}), [], 5.0, interval=10.0) == [a0]


def test_get_updated_counts_a_republish_after_the_grace(caplog: pytest.LogCaptureFixture) -> None:
    a0 = two_zone_nrt("a")
    caplog.set_level("INFO", logger="nrop.suite.nrtupdates")
    assert nrtupdates.get_updated(ScriptedNRTs({"a": [a0]}), [a0], 5.0, interval=0.01, grace=0.05) == [a0]
    assert "re-published unchanged" in caplog.text
    with pytest.raises(WaitTimeout, match=r"NRTs \['a'\] to be updated within 0.05s"):
        nrtupdates.get_updated(ScriptedNRTs({"a": [a0]}), [a0], 0.05, interval=0.01, grace=math.inf)


def test_get_updated_ends_when_a_reference_nrt_is_gone() -> None:
    a0 = two_zone_nrt("a")
    with pytest.raises(WaitTimeout, match=r"can no longer happen(?s:.*)missing=\['a'\]"):
        nrtupdates.get_updated(ScriptedNRTs({"a": [None]}), [a0], 30.0, interval=0.01, grace=math.inf)


def test_get_updated_for_node() -> None:
    a0, a1 = two_zone_nrt("a"), two_zone_nrt("a", cpu0="10", rv="2")
    kube = ScriptedNRTs({"a": [a1]})
    assert nrtupdates.get_updated_for_node(kube, a0, 5.0, interval=0.01, grace=math.inf) == a1
    assert kube.looks == {"a": 1}  # first look at once
    with pytest.raises(WaitTimeout, match="can no longer happen"):
        nrtupdates.get_updated_for_node(ScriptedNRTs({"a": [None]}), a0, 30.0, interval=0.01, grace=math.inf)
