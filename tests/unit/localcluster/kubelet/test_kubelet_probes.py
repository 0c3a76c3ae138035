"""Table tests of probe specs and result thresholds (``kubelet/decisions/probes.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.kubelet.decisions.probes import (
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    ProbeError,
    ProbeKind,
    ProbeSpec,
    ProbeTracker,
    TCPSocketAction,
    container_probes,
    parse_probe,
    resolve_port,
)

READINESS, LIVENESS, STARTUP = ProbeKind.READINESS, ProbeKind.LIVENESS, ProbeKind.STARTUP


@pytest.mark.parametrize(
    ("probe", "kind", "expected"),
    [
        pytest.param(
            {"httpGet": {"port": 8080}},
            READINESS,
            ProbeSpec(READINESS, HTTPGetAction(8080)),
            id="defaults",
        ),
        pytest.param(
            {
                "httpGet": {
                    "path": "healthz",
                    "port": "metrics",
                    "scheme": "HTTPS",
                    "httpHeaders": [{"name": "X", "value": "1"}],
                },
                "initialDelaySeconds": 2,
                "periodSeconds": 1,
                "timeoutSeconds": 3,
                "successThreshold": 2,
                "failureThreshold": 5,
            },
            READINESS,
            ProbeSpec(
                READINESS,
                HTTPGetAction("metrics", "healthz", "", "HTTPS", (("X", "1"),)),
                initial_delay=2.0,
                timeout=3.0,
                period=1.0,
                success_threshold=2,
                failure_threshold=5,
            ),
            id="everything",
        ),
        pytest.param(
            {"tcpSocket": {"port": "8080"}, "terminationGracePeriodSeconds": 5},
            LIVENESS,
            ProbeSpec(LIVENESS, TCPSocketAction(8080), termination_grace=5.0),
            id="tcp-numeric-string-port",
        ),
        pytest.param(
            {"exec": {"command": ["python3", "-c", "pass"]}},
            STARTUP,
            ProbeSpec(STARTUP, ExecAction(("python3", "-c", "pass"))),
            id="exec",
        ),
        pytest.param({"grpc": {"port": 9090}}, LIVENESS, ProbeSpec(LIVENESS, GRPCAction(9090)), id="grpc"),
    ],
)
def test_parse_probe(probe: dict[str, Any], kind: ProbeKind, expected: ProbeSpec) -> None:
    assert parse_probe(probe, kind, "spec.containers[0].readinessProbe") == expected


@pytest.mark.parametrize(
    ("probe", "kind", "message"),
    [
        pytest.param(
            {}, READINESS, "p: must specify exactly one of httpGet, tcpSocket, exec, grpc", id="no-handler"
        ),
        pytest.param(
            {"httpGet": {"port": 1}, "tcpSocket": {"port": 1}},
            READINESS,
            "p: must specify exactly one of httpGet, tcpSocket, exec, grpc",
            id="two-handlers",
        ),
        pytest.param(
            {"httpGet": {"port": 0}},
            READINESS,
            "p.httpGet.port: must be between 1 and 65535, got 0",
            id="port-0",
        ),
        pytest.param(
            {"exec": {"command": []}},
            READINESS,
            "p.exec.command: must be a non-empty list of strings",
            id="exec-empty",
        ),
        pytest.param(
            {"tcpSocket": {"port": 1}, "periodSeconds": 0},
            READINESS,
            "p.periodSeconds: must be an integer >= 1, got 0",
            id="period-0",
        ),
        pytest.param(
            {"tcpSocket": {"port": 1}, "successThreshold": 2},
            LIVENESS,
            "p.successThreshold: must be 1 for livenessProbe",
            id="liveness-success-threshold",
        ),
        pytest.param(
            {"httpGet": {"port": 1, "scheme": "FTP"}},
            READINESS,
            'p.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"',
            id="scheme",
        ),
        pytest.param(
            {"grpc": {"port": "grpc"}},
            LIVENESS,
            "p.grpc.port: must be a port number, got 'grpc'",
            id="grpc-named",
        ),
    ],
)
def test_parse_probe_errors_name_the_field(probe: dict[str, Any], kind: ProbeKind, message: str) -> None:
    with pytest.raises(ProbeError) as raised:
        parse_probe(probe, kind, "p")
    assert str(raised.value) == message


def test_container_probes_startup_first() -> None:
    container = {"readinessProbe": {"tcpSocket": {"port": 1}}, "startupProbe": {"tcpSocket": {"port": 2}}}
    kinds = [p.kind for p in container_probes(container, "spec.containers[0]")]
    assert kinds == [STARTUP, READINESS]


@pytest.mark.parametrize(
    ("port", "expected"),
    [(8080, 8080), ("metrics", 9100), ("http", 80)],
)
def test_resolve_port(port: int | str, expected: int) -> None:
    ports = [{"name": "metrics", "containerPort": 9100}, {"name": "http", "containerPort": 80}]
    assert resolve_port(port, ports) == expected


def test_resolve_unknown_port_name() -> None:
    with pytest.raises(ProbeError) as raised:
        resolve_port("nope", [])
    assert str(raised.value) == 'port "nope" is not a named port of the container'


@pytest.mark.parametrize(
    ("kind", "success", "failure", "outcomes", "published"),
    [
        pytest.param(READINESS, 1, 3, [], [False], id="readiness-starts-unready"),
        pytest.param(LIVENESS, 1, 3, [], [True], id="liveness-starts-healthy"),
        pytest.param(STARTUP, 1, 3, [], [None], id="startup-starts-unknown"),
        pytest.param(READINESS, 1, 3, [True], [False, True], id="one-success-is-ready"),
        pytest.param(
            READINESS,
            2,
            3,
            [True, False, True, True],
            [False, False, False, False, True],
            id="success-threshold-consecutive",
        ),
        pytest.param(
            READINESS,
            1,
            3,
            [True, False, False, True, False, False, False],
            [False, True, True, True, True, True, True, False],
            id="failure-threshold-consecutive",
        ),
        pytest.param(
            LIVENESS,
            1,
            2,
            [False, False, True, True],
            [True, True, False, False, False],
            id="liveness-holds-after-failure",
        ),
        pytest.param(STARTUP, 1, 1, [False], [None, False], id="startup-failure"),
    ],
)
def test_tracker(
    kind: ProbeKind, success: int, failure: int, outcomes: list[bool], published: list[bool | None]
) -> None:
    tracker = ProbeTracker(
        ProbeSpec(kind, TCPSocketAction(1), success_threshold=success, failure_threshold=failure)
    )
    seen = [tracker.result]
    for outcome in outcomes:
        tracker.record(outcome)
        seen.append(tracker.result)
    assert seen == published


def test_tracker_reports_changes_only() -> None:
    tracker = ProbeTracker(ProbeSpec(READINESS, TCPSocketAction(1), failure_threshold=1))
    assert [tracker.record(o) for o in (False, True, True, False)] == [False, True, False, True]
