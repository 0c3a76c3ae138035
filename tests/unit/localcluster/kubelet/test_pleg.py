"""Table tests of the kubelet's PLEG relists (``kubelet/decisions/pleg.py``) and of a pod run
whose simulated exits are seen at them (``kubelet/decisions/podruntime.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nrop.localcluster.kubelet.decisions.pleg import Relists
from nrop.localcluster.kubelet.decisions.podruntime import PodRun

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("moment", "relist"),
    [
        pytest.param(-5.0, 0.0, id="before-the-kubelet-started"),
        pytest.param(0.0, 1.0, id="at-a-relist-is-seen-by-the-next"),
        pytest.param(0.3, 1.0, id="between"),
        pytest.param(0.999999, 1.0, id="just-before"),
        pytest.param(1.0, 2.0, id="at-the-next"),
        pytest.param(41.5, 42.0, id="later"),
    ],
)
def test_an_instant_is_seen_at_the_first_relist_after_it(moment: float, relist: float) -> None:
    assert Relists(T0).after(at(moment)) == at(relist)


def guaranteed_sleeper(restart: str = "Never") -> dict:
    """83865's noise pod: an init and an app container that each run ``sleep 1s``."""
    sleep = {"image": "pause", "command": ["/bin/sleep"], "args": ["1s"]}
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "restartPolicy": restart,
            "initContainers": [{"name": "init", **sleep}],
            "containers": [{"name": "app", **sleep}],
        },
    }


def test_a_one_second_app_after_a_one_second_init_shows_running_for_two_relists() -> None:
    run = PodRun(guaranteed_sleeper(), at(0.3), seen=Relists(T0).after)
    assert run.status()["phase"] == "Pending"
    assert run.next_change() == at(2)  # the init container's exit (1.3) is seen at the relist of 2
    assert not run.advance(at(1.9))
    assert run.advance(at(2.05))
    status = run.status()
    assert status["phase"] == "Running"
    init = status["initContainerStatuses"][0]["state"]["terminated"]
    assert (init["startedAt"], init["finishedAt"]) == ("2030-01-01T00:00:00Z", "2030-01-01T00:00:01Z")
    assert status["containerStatuses"][0]["state"] == {"running": {"startedAt": "2030-01-01T00:00:02Z"}}
    # started by the sync of the relist at 2, it ends at 3, after that relist began: seen at 4
    assert run.next_change() == at(4)
    assert not run.advance(at(3.5)) and run.status()["phase"] == "Running"
    assert run.advance(at(4))
    status = run.status()
    assert status["phase"] == "Succeeded"
    app = status["containerStatuses"][0]["state"]["terminated"]
    assert app["finishedAt"] == "2030-01-01T00:00:03Z"  # the exit keeps its own time


def test_an_immediate_restart_happens_at_the_relist_that_saw_the_exit() -> None:
    pod = guaranteed_sleeper(restart="Always")
    pod["spec"]["initContainers"] = []
    run = PodRun(pod, at(0.5), seen=Relists(T0).after)
    assert run.next_change() == at(2)  # exit at 1.5
    run.advance(at(2))
    status = run.status()["containerStatuses"][0]
    assert status["restartCount"] == 1
    assert status["state"] == {"running": {"startedAt": "2030-01-01T00:00:02Z"}}
    assert status["lastState"]["terminated"]["finishedAt"] == "2030-01-01T00:00:01Z"  # 1.5, to the second
    run.advance(at(4))  # exit at 3 seen at 4: back-off 10 s from the exit
    assert run.status()["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert run.next_change() == at(13)
