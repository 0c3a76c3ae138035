"""Table tests of the simulated containers (``kubelet/podruntime.py``): commands, images, lifecycles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nrop.localcluster.kubelet.podruntime import (
    PAUSE,
    Behaviour,
    PodRun,
    behaviour,
    image_id,
    normalize_image,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        pytest.param({}, PAUSE, id="no-command-is-pause"),
        pytest.param({"command": ["/pause"]}, PAUSE, id="unknown-program-is-pause"),
        pytest.param({"command": ["sleep", "5"]}, Behaviour(5.0), id="sleep"),
        pytest.param({"command": ["sleep"], "args": ["2m"]}, Behaviour(120.0), id="sleep-args-suffix"),
        pytest.param({"command": ["/bin/sleep", "infinity"]}, Behaviour(None), id="sleep-infinity"),
        pytest.param({"command": ["sleep", "x"]}, Behaviour(0.0, 1), id="sleep-bad-argument"),
        pytest.param({"command": ["true"]}, Behaviour(0.0), id="true"),
        pytest.param({"command": ["false"]}, Behaviour(0.0, 1), id="false"),
        pytest.param({"command": ["sh", "-c", "exit 3"]}, Behaviour(0.0, 3), id="sh-exit"),
        pytest.param({"command": ["/bin/sh", "-c", "sleep 2; exit 1"]}, Behaviour(2.0, 1), id="script"),
        pytest.param({"command": ["sh", "-c", "echo hi && sleep 1"]}, Behaviour(1.0), id="echo-and-sleep"),
        pytest.param({"command": ["sh", "-c", "false && sleep 9"]}, Behaviour(0.0, 1), id="and-stops"),
        pytest.param({"command": ["sh", "-c", "exit 0; sleep 9"]}, Behaviour(0.0), id="exit-stops"),
        pytest.param({"command": ["sh", "-c", "while true; do sleep 1; done"]}, PAUSE, id="loop-is-pause"),
        pytest.param({"command": ["sh", "-c", "sleep inf"]}, Behaviour(None), id="script-forever"),
        pytest.param({"command": ["sh"], "args": ["-c", "sleep 1"]}, Behaviour(1.0), id="script-in-args"),
    ],
)
def test_behaviour(container: dict[str, Any], expected: Behaviour) -> None:
    assert behaviour(container) == expected


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("org/app", "docker.io/org/app:latest"),
        ("quay.io/org/app:v1", "quay.io/org/app:v1"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause@sha256:abc"),
    ],
)
def test_normalize_image(image: str, expected: str) -> None:
    assert normalize_image(image) == expected


def test_image_id_names_the_repository_and_is_stable() -> None:
    assert image_id("busybox:1.36").startswith("docker.io/library/busybox@sha256:")
    assert image_id("busybox:1.36") == image_id("docker.io/library/busybox:1.36")


def pod(*containers: dict[str, Any], inits: tuple[dict[str, Any], ...] = (), restart: str = "Always") -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"containers": list(containers), "initContainers": list(inits), "restartPolicy": restart},
    }


def conditions(run: PodRun) -> dict[str, str]:
    return {c["type"]: c["status"] for c in run.status()["conditions"]}


def test_pause_pod_runs_ready_until_stopped() -> None:
    run = PodRun(pod({"name": "c", "image": "busybox"}), T0)
    status = run.status()
    assert status["phase"] == "Running"
    assert conditions(run) == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
    }
    (container,) = status["containerStatuses"]
    assert container["ready"] and container["started"] and container["restartCount"] == 0
    assert container["state"] == {"running": {"startedAt": "2030-01-01T00:00:00Z"}}
    assert container["containerID"].startswith("containerd://")
    assert run.next_change() is None and not run.advance(at(3600))
    run.stop(at(10))
    status = run.status()
    assert status["phase"] == "Succeeded"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert conditions(run)["Ready"] == "False"


@pytest.mark.parametrize(
    ("command", "restart", "phase", "exit_code"),
    [
        pytest.param(["sleep", "5"], "Never", "Succeeded", 0, id="sleep-never"),
        pytest.param(["false"], "Never", "Failed", 1, id="false-never"),
        pytest.param(["sh", "-c", "exit 0"], "OnFailure", "Succeeded", 0, id="exit0-onfailure"),
    ],
)
def test_commands_complete(command: list[str], restart: str, phase: str, exit_code: int) -> None:
    run = PodRun(pod({"name": "c", "image": "busybox", "command": command}, restart=restart), T0)
    assert run.status()["phase"] == "Running"
    change = run.next_change()
    assert change is not None
    assert run.advance(change)
    status = run.status()
    assert status["phase"] == phase
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == exit_code
    assert run.next_change() is None


def test_restart_always_backs_off_and_counts() -> None:
    run = PodRun(pod({"name": "c", "image": "busybox", "command": ["sleep", "1"]}), T0)
    run.advance(at(1))
    status = run.status()["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["exitCode"] == 0
    assert run.next_change() == at(11)
    run.advance(at(11.5))
    status = run.status()["containerStatuses"][0]
    assert status["restartCount"] == 1 and "running" in status["state"]
    run.advance(at(12.5))  # exits at 12, back-off doubles to 20 s
    assert run.next_change() == at(32)
    assert run.status()["phase"] == "Running"


def test_init_containers_run_in_order_then_apps_and_sidecars_keep_running() -> None:
    run = PodRun(
        pod(
            {"name": "app", "image": "busybox", "command": ["sleep", "3"]},
            inits=(
                {"name": "i1", "image": "busybox", "command": ["sleep", "2"]},
                {"name": "side", "image": "busybox", "restartPolicy": "Always"},
                {"name": "i2", "image": "busybox"},
            ),
            restart="Never",
        ),
        T0,
    )
    status = run.status()
    assert status["phase"] == "Pending"
    assert conditions(run)["Initialized"] == "False"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    run.advance(at(2))  # i1 done, the sidecar starts, i2 (pause-like) completes at once, app starts
    status = run.status()
    assert status["phase"] == "Running"
    assert [("running" in s["state"]) for s in status["initContainerStatuses"]] == [False, True, False]
    assert run.running_containers() == {"side", "app"}
    run.advance(at(5))
    status = run.status()
    assert status["phase"] == "Succeeded"
    assert status["initContainerStatuses"][1]["state"]["terminated"]["exitCode"] == 0
    assert run.running_containers() == frozenset()


def test_failing_init_container_fails_a_never_pod() -> None:
    run = PodRun(
        pod(
            {"name": "app", "image": "busybox"},
            inits=({"name": "i", "image": "b", "command": ["false"]},),
            restart="Never",
        ),
        T0,
    )
    run.advance(at(0))
    assert run.status()["phase"] == "Failed"
    assert run.status()["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_stop_kills_command_containers_with_137_and_fails_the_pod() -> None:
    run = PodRun(pod({"name": "c", "image": "busybox", "command": ["sleep", "3600"]}), T0)
    run.stop(at(1))
    status = run.status()
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
