"""Table tests of the containers of a pod (``kubelet/decisions/podruntime.py`` and ``kubelet/decisions/simulation.py``):
simulated commands, images, lifecycles, and process containers driven by reported events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nrop.localcluster.kubelet.decisions.podruntime import (
    PodRun,
    container_id,
    image_id,
    normalize_image,
    termination_message,
)
from nrop.localcluster.kubelet.decisions.simulation import PAUSE, PROCESS, UNKNOWN, Behaviour, behaviour

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        pytest.param({}, UNKNOWN, id="no-command-is-unknown-pause"),
        pytest.param({"command": ["/pause"]}, PAUSE, id="pause"),
        pytest.param({"command": ["nginx"]}, UNKNOWN, id="unknown-program-is-unknown-pause"),
        pytest.param({"command": ["sleep", "5"]}, Behaviour(5.0), id="sleep"),
        pytest.param({"command": ["sleep"], "args": ["2m"]}, Behaviour(120.0), id="sleep-args-suffix"),
        pytest.param({"command": ["/bin/sleep", "infinity"]}, Behaviour(None), id="sleep-infinity"),
        pytest.param({"command": ["sleep", "x"]}, Behaviour(0.0, 1), id="sleep-bad-argument"),
        pytest.param({"command": ["true"]}, Behaviour(0.0), id="true"),
        pytest.param({"command": ["false"]}, Behaviour(0.0, 1), id="false"),
        pytest.param({"command": ["sh", "-c", "exit 3"]}, Behaviour(0.0, 3), id="sh-exit"),
        pytest.param({"command": ["/bin/sh", "-c", "sleep 2; exit 1"]}, Behaviour(2.0, 1), id="script"),
        pytest.param(
            {"command": ["sh", "-c", "echo hi && sleep 1"]},
            Behaviour(1.0, output="hi\n"),
            id="echo-and-sleep",
        ),
        pytest.param({"command": ["echo", "-n", "a", "b"]}, Behaviour(0.0, output="a b"), id="echo-n"),
        pytest.param(
            {"command": ["sh", "-c", "echo one; echo two; sleep infinity"]},
            Behaviour(None, output="one\ntwo\n"),
            id="echo-then-run-forever",
        ),
        pytest.param({"command": ["sh", "-c", "false && sleep 9"]}, Behaviour(0.0, 1), id="and-stops"),
        pytest.param({"command": ["sh", "-c", "exit 0; sleep 9"]}, Behaviour(0.0), id="exit-stops"),
        pytest.param(
            {"command": ["sh", "-c", "while true; do sleep 1; done"]}, UNKNOWN, id="loop-is-unknown-pause"
        ),
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
    run.terminate(at(10))
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


def test_restart_always_restarts_at_once_then_backs_off_and_counts() -> None:
    run = PodRun(pod({"name": "c", "image": "busybox", "command": ["sleep", "1"]}), T0)
    run.advance(at(1))  # the first exit restarts at once
    status = run.status()["containerStatuses"][0]
    assert status["restartCount"] == 1 and status["state"] == {
        "running": {"startedAt": "2030-01-01T00:00:01Z"}
    }
    assert status["lastState"]["terminated"]["exitCode"] == 0
    run.advance(at(2.5))  # exits again at 2: back-off 10 s
    status = run.status()["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["state"]["waiting"]["message"].startswith(
        "back-off 10s restarting failed container=c pod=p_ns(u1)"
    )
    assert status["lastState"]["terminated"]["finishedAt"] == "2030-01-01T00:00:02Z"
    assert run.next_change() == at(12)
    run.advance(at(12.5))
    status = run.status()["containerStatuses"][0]
    assert status["restartCount"] == 2 and "running" in status["state"]
    run.advance(at(13.5))  # exits at 13, back-off doubles to 20 s
    assert run.next_change() == at(33)
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
    run.terminate(at(1))
    status = run.status()
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


# -- process containers: what the kubelet reports drives them ----------------------------------

OWN = "quay.io/x/numaresources-operator-tests:1"


def proc(name: str = "c", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": OWN, "command": ["python3"], **fields}


def process_run(*containers: dict[str, Any], restart: str = "Always", inits: tuple[dict, ...] = ()) -> PodRun:
    names = [c["name"] for c in (*containers, *inits) if c["image"] == OWN]
    return PodRun(pod(*containers, inits=inits, restart=restart), T0, {n: PROCESS for n in names})


def state_of(run: PodRun, index: int = 0) -> dict[str, Any]:
    return run.status()["containerStatuses"][index]


def create(run: PodRun, when: float) -> str:
    (ref,) = run.to_create()
    assert run.created(ref.name, ref.container_id, at(when))
    return ref.container_id


def test_process_container_is_creating_until_the_kubelet_reports_it_running() -> None:
    run = process_run(proc())
    assert run.status()["phase"] == "Pending"
    assert state_of(run)["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert "containerID" not in state_of(run)
    assert run.next_change() is None  # its exit is not the simulator's to decide
    cid = create(run, 0.5)
    status = state_of(run)
    assert run.status()["phase"] == "Running"
    assert status["state"] == {"running": {"startedAt": "2030-01-01T00:00:00Z"}}
    assert status["containerID"] == cid and status["ready"] and status["started"]
    assert run.to_create() == [] and not run.advance(at(3600))


@pytest.mark.parametrize(("counts", "expected"), [({}, 0), ({"c": 2}, 2), ({"other": 2}, 0)])
def test_a_container_starts_at_the_count_it_is_given(counts: dict[str, int], expected: int) -> None:
    """After a reboot the kubelet gives each container the count after its last one on the node
    (upstream's ``calcRestartCountByLogDir``): a new container ID, the count in the status."""
    run = PodRun(pod(proc()), T0, {"c": PROCESS}, restart_counts=counts)
    (ref,) = run.to_create()
    assert (ref.restart_count, ref.container_id) == (expected, container_id("u1", "c", expected))
    create(run, 0.5)
    assert state_of(run)["restartCount"] == expected


@pytest.mark.parametrize(
    ("exits", "expected_waits"),
    [
        pytest.param([5], [0], id="first-exit-restarts-at-once"),
        pytest.param([5, 1, 1, 1], [0, 10, 20, 40], id="doubling"),
        pytest.param([5, 1, 1, 1, 1, 1, 1, 1], [0, 10, 20, 40, 80, 160, 300, 300], id="capped-at-300"),
        pytest.param([5, 1, 1, 700], [0, 10, 20, 0], id="reset-after-10-minutes-running"),
    ],
)
def test_crash_loop_back_off_of_a_process(exits: list[float], expected_waits: list[float]) -> None:
    """Each exit comes ``exits[i]`` seconds after the (re)start; the restart waits per upstream."""
    run = process_run(proc())
    now = 0.0
    cid = create(run, now)
    waits = []
    for ran in exits:
        now += ran
        assert run.exited("c", cid, 137, at(now))
        if not run.to_create():
            change = run.next_change()
            assert change is not None
            assert state_of(run)["state"]["waiting"]["reason"] == "CrashLoopBackOff"
            waits.append((change - at(now)).total_seconds())
            now = (change - T0).total_seconds()
            run.advance(at(now))
        else:
            waits.append(0.0)
        cid = create(run, now)
    assert waits == expected_waits
    status = state_of(run)
    assert status["restartCount"] == len(exits)
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert status["lastState"]["terminated"]["reason"] == "Error"


def test_readiness_and_startup_probes_gate_started_ready_and_the_pod_condition() -> None:
    run = process_run(
        proc(startupProbe={"exec": {"command": ["python3"]}}, readinessProbe={"tcpSocket": {"port": 1}})
    )
    cid = create(run, 0)
    status = state_of(run)
    assert not status["started"] and not status["ready"]
    assert conditions(run)["Ready"] == "False"
    assert run.probe("c", cid, "readiness", True, at(1))  # not started yet: readiness does not make it ready
    assert not state_of(run)["ready"]
    assert run.probe("c", cid, "startup", True, at(2))
    status = state_of(run)
    assert status["started"] and status["ready"]
    assert conditions(run) == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
    }
    run.probe("c", cid, "readiness", False, at(3))
    assert not state_of(run)["ready"] and conditions(run)["Ready"] == "False"
    assert not run.probe("c", "stale-id", "readiness", True, at(4))
    assert not run.probe("c", cid, "liveness", False, at(4))  # liveness failures go through kill()


@pytest.mark.parametrize(
    ("restart", "phase", "restarts"),
    [
        pytest.param("Always", "Running", 1, id="always-restarts"),
        pytest.param("OnFailure", "Running", 1, id="onfailure-restarts-after-137"),
        pytest.param("Never", "Failed", 0, id="never-fails-the-pod"),
    ],
)
def test_a_liveness_kill_stops_the_process_then_restart_policy_applies(
    restart: str, phase: str, restarts: int
) -> None:
    run = process_run(proc(), restart=restart)
    cid = create(run, 0)
    assert run.kill("c", cid, at(5))
    assert [r.name for r in run.to_stop()] == ["c"]
    assert "running" in state_of(run)["state"]  # until the process is reported gone
    assert not run.kill("c", cid, at(5))
    run.exited("c", cid, 137, at(6))
    assert run.status()["phase"] == phase
    assert len(run.to_create()) == restarts
    assert run.to_stop() == []


def test_graceful_termination_waits_for_the_processes_then_ends_the_pod() -> None:
    run = process_run(proc("p"), {"name": "s", "image": "busybox"})
    cid = create(run, 0)
    run.terminate(at(10))
    assert [r.name for r in run.to_stop()] == ["p"]
    assert run.status()["phase"] == "Running"  # not final while a process runs
    assert state_of(run, 1)["state"]["terminated"]["exitCode"] == 0  # the pause-like one is gone at once
    run.exited("p", cid, 0, at(11))
    assert run.status()["phase"] == "Succeeded"
    assert run.to_create() == [] and run.next_change() is None


def test_termination_with_a_killed_process_fails_the_pod_and_nothing_restarts() -> None:
    run = process_run(proc())
    cid = create(run, 0)
    run.terminate(at(1))
    run.exited("c", cid, 143, at(2))
    status = run.status()
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
    assert run.to_create() == []


def test_create_failures_wait_with_their_reason_until_created() -> None:
    run = process_run(proc())
    (ref,) = run.to_create()
    assert run.create_failed(
        "c", ref.container_id, "CreateContainerConfigError", 'configmap "x" not found', at(1)
    )
    assert not run.create_failed(
        "c", ref.container_id, "CreateContainerConfigError", 'configmap "x" not found', at(2)
    )
    assert state_of(run)["state"] == {
        "waiting": {"reason": "CreateContainerConfigError", "message": 'configmap "x" not found'}
    }
    assert run.to_create() == [ref]  # still to be created: the kubelet retries
    assert run.created("c", ref.container_id, at(12))
    assert "running" in state_of(run)["state"] and state_of(run)["restartCount"] == 0


def test_start_error_is_an_exit_128_and_restarts_per_policy() -> None:
    run = process_run(proc(), restart="OnFailure")
    (ref,) = run.to_create()
    assert run.start_failed("c", ref.container_id, 'exec: "sh": executable file not found in $PATH', at(1))
    (again,) = run.to_create()  # the first failure restarts at once
    assert again.restart_count == 1
    terminated = state_of(run)["lastState"]["terminated"]
    assert terminated["exitCode"] == 128 and terminated["reason"] == "StartError"
    assert terminated["message"] == 'exec: "sh": executable file not found in $PATH'


def test_a_never_pod_fails_with_the_exit_code_and_message() -> None:
    run = process_run(proc(), restart="Never")
    cid = create(run, 0)
    run.exited("c", cid, 3, at(2), message="boom\n")
    status = run.status()
    assert status["phase"] == "Failed"
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (3, "Error", "boom\n")
    assert not run.exited("c", cid, 3, at(3))  # reported twice: ignored


def test_process_init_container_blocks_the_apps_until_it_exits_zero() -> None:
    run = process_run({"name": "app", "image": "busybox"}, inits=(proc("init"),), restart="Never")
    cid = create(run, 0)
    assert run.status()["phase"] == "Pending" and run.running_containers() == {"init"}
    assert run.next_change() is None  # an init process runs as long as it runs
    run.exited("init", cid, 0, at(4))
    assert run.running_containers() == {"app"} and run.status()["phase"] == "Running"


def test_process_sidecars_are_stopped_when_the_apps_are_done() -> None:
    run = process_run(
        {"name": "app", "image": "busybox", "command": ["sleep", "1"]},
        inits=(proc("side", restartPolicy="Always"),),
        restart="Never",
    )
    cid = create(run, 0)
    run.advance(at(1))
    assert run.status()["phase"] == "Succeeded"
    assert [r.name for r in run.to_stop()] == ["side"]
    run.exited("side", cid, 143, at(2))
    assert run.to_stop() == [] and run.to_create() == []
    assert run.status()["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 143


@pytest.mark.parametrize(
    ("policy", "code", "file_text", "log_tail", "expected"),
    [
        pytest.param("File", 1, "bye", "log", "bye", id="file-wins"),
        pytest.param("File", 1, "", "log", "", id="file-policy-ignores-logs"),
        pytest.param("File", 0, None, "log", "", id="no-file"),
        pytest.param("FallbackToLogsOnError", 1, "", "last lines\n", "last lines\n", id="fallback-on-error"),
        pytest.param("FallbackToLogsOnError", 0, "", "last lines\n", "", id="no-fallback-on-success"),
        pytest.param("FallbackToLogsOnError", 2, "written", "logs", "written", id="file-before-fallback"),
        pytest.param("File", 1, "x" * 5000, "", "x" * 4096, id="file-capped-at-4096"),
    ],
)
def test_termination_message(
    policy: str, code: int, file_text: str | None, log_tail: str, expected: str
) -> None:
    assert termination_message(policy, code, file_text, log_tail) == expected
