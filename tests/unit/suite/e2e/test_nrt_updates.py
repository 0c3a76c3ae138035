"""Tests of nrop.suite.e2e.nrt.updates: the refresh period read from the operator objects (a table),
and ``GetUpdated`` on a fake cluster whose NRTs follow a script, one step per look."""

from __future__ import annotations

import inspect

import pytest
from nrt_samples import ScriptedNRTs, two_zone_nrt

from nrop.suite.e2e.nrt import updates as nrtupdates
from nrop.suite.e2e.wait.polling import WaitTimeout


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


def _reordered(nrt: dict, rv: str) -> dict:
    """``nrt`` re-published with each zone's resources in another order (a Go map refresh)."""
    out = {**nrt, "metadata": {**nrt["metadata"], "resourceVersion": rv}}
    out["zones"] = [{**z, "resources": list(reversed(z["resources"]))} for z in nrt["zones"]]
    return out


A0 = two_zone_nrt("a")


@pytest.mark.parametrize(
    ("later", "updated"),
    [
        pytest.param(A0, False, id="unchanged-same-resourceVersion"),
        pytest.param(two_zone_nrt("a", cpu0="1"), False, id="same-resourceVersion-other-data"),
        pytest.param(two_zone_nrt("a", rv="2"), False, id="re-published-identical"),
        pytest.param(two_zone_nrt("a", rv="2", cpu0="18.0"), False, id="re-published-same-quantities"),
        pytest.param(_reordered(A0, "2"), True, id="re-published-resources-reordered"),
        pytest.param(two_zone_nrt("a", rv="2", cpu1="10"), True, id="changed-zones"),
        pytest.param(two_zone_nrt("a", rv="2", pfp="pfp0v002"), True, id="changed-attributes"),
    ],
)
def test_get_updated_follows_upstreams_rule(later, updated) -> None:
    """``isEqualNRT``: updated only when re-published with other zones or attributes (in order)."""
    if updated:
        assert nrtupdates.get_updated(ScriptedNRTs({"a": [later]}), [A0], 5.0, interval=0.01) == [later]
        assert nrtupdates.get_updated_for_node(ScriptedNRTs({"a": [later]}), A0, 5.0, interval=0.01) == later
    else:
        with pytest.raises(WaitTimeout, match=r"NRTs \['a'\] to be updated within 0.05s"):
            nrtupdates.get_updated(ScriptedNRTs({"a": [later]}), [A0], 0.05, interval=0.01)
        with pytest.raises(WaitTimeout, match=r"NRT a to be updated within 0.05s"):
            nrtupdates.get_updated_for_node(ScriptedNRTs({"a": [later]}), A0, 0.05, interval=0.01)


def test_get_updated_returns_the_list_once_every_reference_nrt_changed() -> None:
    a0, b0 = two_zone_nrt("a"), two_zone_nrt("b")
    a1, b1 = two_zone_nrt("a", cpu0="10", rv="2"), two_zone_nrt("b", cpu1="10", rv="2")
    kube = ScriptedNRTs({"a": [a0, a1], "b": [b0, b0, b1]})
    assert nrtupdates.get_updated(kube, [a0, b0], 5.0, interval=0.01) == [a1, b1]
    assert kube.looks == {"a": 3, "b": 3}


def test_get_updated_of_nothing_is_the_list_after_one_interval() -> None:
    a0 = two_zone_nrt("a")
    kube = ScriptedNRTs({"a": [a0]})
    assert nrtupdates.get_updated(kube, [], 5.0, interval=0.01) == [a0]
    assert kube.looks == {"a": 1}


def test_get_updated_ends_when_a_reference_nrt_is_gone() -> None:
    a0 = two_zone_nrt("a")
    with pytest.raises(WaitTimeout, match=r"can no longer happen(?s:.*)missing=\['a'\]"):
        nrtupdates.get_updated(ScriptedNRTs({"a": [None]}), [a0], 30.0, interval=0.01)


def test_get_updated_for_node_looks_at_once() -> None:
    a0, a1 = two_zone_nrt("a"), two_zone_nrt("a", cpu0="10", rv="2")
    kube = ScriptedNRTs({"a": [a1]})
    assert nrtupdates.get_updated_for_node(kube, a0, 5.0, interval=0.01) == a1
    assert kube.looks == {"a": 1}
    with pytest.raises(WaitTimeout, match="can no longer happen"):
        nrtupdates.get_updated_for_node(ScriptedNRTs({"a": [None]}), a0, 30.0, interval=0.01)


@pytest.mark.parametrize("wait", [nrtupdates.get_updated, nrtupdates.get_updated_for_node])
def test_update_waits_poll_every_5s_by_default(wait) -> None:
    assert inspect.signature(wait).parameters["interval"].default == 5.0
