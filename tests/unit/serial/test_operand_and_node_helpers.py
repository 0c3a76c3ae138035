"""Tables of the pure parts of serial/_operand_helpers.py (flagcodec's ``GetFlag`` over a
container's args, pod names) and serial/_node_helpers.py (role labels, label selectors as text,
the tolerations of the test taints)."""

from __future__ import annotations

import _node_helpers as nodeh
import _operand_helpers as operands
import pytest

ARGS = ["--sleep-interval=10s", "-v=2", "--pods-fingerprint", "--metrics-tls-min-version=VersionTLS12"]


@pytest.mark.parametrize(
    ("args", "flag", "value"),
    [
        pytest.param(ARGS, "-v", "2", id="short"),
        pytest.param(ARGS, "--v", "2", id="short-spelled-long"),
        pytest.param(["--v=4"], "-v", "4", id="given-long-asked-short"),
        pytest.param(ARGS, "--metrics-tls-min-version", "VersionTLS12", id="long"),
        pytest.param(ARGS, "--pods-fingerprint", "", id="toggle"),
        pytest.param(ARGS, "--refresh-node-resources", None, id="absent"),
        pytest.param([], "-v", None, id="no-args"),
        pytest.param(["-v=2", "-v=6"], "-v", "6", id="last-wins"),
        pytest.param(["--sleep-interval=a=b"], "--sleep-interval", "a=b", id="value-with-equals"),
        pytest.param(["-vv=2"], "-v", None, id="other-flag-same-prefix"),
    ],
)
def test_container_flag(args, flag, value) -> None:
    assert operands.container_flag(args, flag) == value


def test_klog_levels_cover_every_log_level() -> None:
    assert operands.KLOG_LEVELS == {"Normal": "2", "Debug": "4", "Trace": "6", "TraceAll": "8"}


def test_pod_names() -> None:
    pods = [{"metadata": {"namespace": "a", "name": "p"}}, {"metadata": {"namespace": "b", "name": "q"}}]
    assert operands.pod_names(pods) == "a/p b/q"
    assert operands.pod_names([]) == ""


@pytest.mark.parametrize(
    ("labels", "text"),
    [
        pytest.param({}, "", id="empty"),
        pytest.param({"node-role.kubernetes.io/worker": ""}, "node-role.kubernetes.io/worker", id="exists"),
        pytest.param({"b": "2", "a": "1"}, "a=1,b=2", id="sorted"),
        pytest.param({"b": "", "a": "1"}, "a=1,b", id="mixed"),
    ],
)
def test_selector_text(labels, text) -> None:
    assert nodeh.selector_text(labels) == text


def test_role_label() -> None:
    assert nodeh.role_label(nodeh.ROLE_WORKER) == "node-role.kubernetes.io/worker"
    assert nodeh.role_label(nodeh.ROLE_MCP_TEST) == "node-role.kubernetes.io/mcp-test"


@pytest.mark.parametrize(
    ("made", "toleration"),
    [
        pytest.param(
            nodeh.toleration("k", "Exists", "NoSchedule"),
            {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
            id="no-value",
        ),
        pytest.param(
            nodeh.toleration("k", "Equal", "NoExecute", "v"),
            {"key": "k", "operator": "Equal", "effect": "NoExecute", "value": "v"},
            id="value",
        ),
        pytest.param(
            nodeh.test_toleration(),
            [{"key": "testkey", "operator": "Exists", "effect": "NoSchedule"}],
            id="testToleration",
        ),
        pytest.param(
            nodeh.sriov_toleration(),
            {"key": "sriov", "operator": "Equal", "effect": "NoSchedule", "value": "true"},
            id="sriovToleration",
        ),
    ],
)
def test_tolerations(made, toleration) -> None:
    assert made == toleration
