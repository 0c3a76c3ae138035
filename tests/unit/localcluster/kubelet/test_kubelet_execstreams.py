"""``pods/exec``: the Status kubectl gets on the error channel when the command ends, what a request asks
for, where output goes, and the SPDY streams a client opens."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.kubelet.execspdy import expected_streams
from nrop.localcluster.kubelet.execstreams import ExecOptions, exit_status


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param(0, {"metadata": {}, "status": "Success"}, id="success"),
        pytest.param(
            3,
            {
                "metadata": {},
                "status": "Failure",
                "message": "command terminated with non-zero exit code: error executing command [sh -c exit 3], "
                "exit code 3",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
            },
            id="non-zero",
        ),
    ],
)
def test_exec_exit_status(code: int, expected: dict[str, Any]) -> None:
    assert exit_status(["sh", "-c", "exit 3"], code) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({}, ExecOptions(), id="nothing-asked"),
        pytest.param(
            {"stdin": "true", "stdout": "true", "stderr": "true", "tty": "true"},
            ExecOptions(stdin=True, stdout=True, stderr=False, tty=True),
            id="client-go-CommandOnPod-tty-drops-stderr",
        ),
        pytest.param(
            {"stdout": "1", "stderr": "True"},
            ExecOptions(stdout=True, stderr=True),
            id="python-client-values",
        ),
        pytest.param({"stdin": "false", "stdout": "yes"}, ExecOptions(), id="other-values-are-false"),
    ],
)
def test_exec_options_from_query(query: dict[str, str], expected: ExecOptions) -> None:
    assert ExecOptions.from_query(query) == expected


@pytest.mark.parametrize(
    ("options", "stdout", "stderr"),
    [
        pytest.param(ExecOptions(stdout=True, stderr=True), "stdout", "stderr", id="pipes"),
        pytest.param(ExecOptions(stdout=True, tty=True), "stdout", "stdout", id="a-terminal-joins-stderr"),
        pytest.param(ExecOptions(stderr=True), None, "stderr", id="stdout-not-asked"),
        pytest.param(ExecOptions(stdin=True), None, None, id="stdin-only"),
    ],
)
def test_where_output_goes(options: ExecOptions, stdout: str | None, stderr: str | None) -> None:
    assert (options.channel_of("stdout"), options.channel_of("stderr")) == (stdout, stderr)
    assert options.streams_nothing is False


def test_a_request_streaming_nothing_is_refused() -> None:
    assert ExecOptions().streams_nothing is True


@pytest.mark.parametrize(
    ("options", "streams"),
    [
        pytest.param(
            ExecOptions(stdin=True, stdout=True, tty=True),
            {"error", "stdin", "stdout", "resize"},
            id="upstream-CommandOnPod",
        ),
        pytest.param(ExecOptions(stdout=True, stderr=True), {"error", "stdout", "stderr"}, id="no-tty"),
    ],
)
def test_spdy_streams_a_client_opens(options: ExecOptions, streams: set[str]) -> None:
    assert expected_streams(options) == streams
