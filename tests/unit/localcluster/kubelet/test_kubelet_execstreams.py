"""``pods/exec``: the Status kubectl gets on the error channel when the command ends."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.kubelet.execstreams import exit_status


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
