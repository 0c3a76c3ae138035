"""nrop-e2e: runner flags become the plugin's pytest options (pure), and usage errors never exit 5."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrop.suite.plugin import runner

ALLURE_DEFAULT = "--alluredir=/tmp/artifacts/nrop/allure-results"


@pytest.mark.parametrize(
    ("argv", "environ", "expected", "env"),
    [
        pytest.param([], {}, ["serial", ALLURE_DEFAULT], {}, id="defaults"),
        pytest.param(
            ["--tier-up-to", "1", "--setup", "--teardown", "-n", "2"],
            {},
            ["serial", "--tier-up-to", "1", "-n", "2", "--setup", "--teardown", ALLURE_DEFAULT],
            {},
            id="tiers-setup-teardown-workers",
        ),
        pytest.param(
            ["--no-setup", "--no-teardown", "--dry-run"],
            {},
            ["serial", "--no-setup", "--no-teardown", "--dry-run-specs", ALLURE_DEFAULT],
            {},
            id="negations-and-dry-run",
        ),
        pytest.param(
            ["--focus", "47575", "--focus", "tmpol", "--skip", "reboot_required"],
            {},
            ["serial", "--focus", "47575", "--focus", "tmpol", "--skip", "reboot_required", ALLURE_DEFAULT],
            {},
            id="focus-and-skip-repeat",
        ),
        pytest.param(
            ["--report-dir", "/reports", "--label-filter", "feature:tmpol && !tmscope:cnt"],
            {},
            [
                "serial",
                "--label-filter",
                "feature:tmpol && !tmscope:cnt",
                "--report-dir",
                "/reports",
                "--alluredir=/reports/allure-results",
            ],
            {},
            id="report-dir-holds-allure",
        ),
        pytest.param(
            [],
            {"E2E_NROP_REPORT_DIR": "/r", "E2E_NROP_TESTS_DIR": "/t"},
            ["/t", "--alluredir=/r/allure-results"],
            {},
            id="env-dirs",
        ),
        pytest.param(
            ["--", "--alluredir=/mine", "-x"],
            {},
            ["serial", "--alluredir=/mine", "-x"],
            {},
            id="own-alluredir-wins",
        ),
        pytest.param(
            ["--image", "quay.io/me/numaresources-operator-tests:v1"],
            {},
            ["serial", ALLURE_DEFAULT],
            {"E2E_NROP_IMAGE": "quay.io/me/numaresources-operator-tests:v1"},
            id="image-goes-to-env",
        ),
        pytest.param(
            ["--install-via", "olm"],
            {},
            ["serial", "--install-via", "olm", ALLURE_DEFAULT],
            {},
            id="install-via",
        ),
    ],
)
def test_pytest_args(
    argv: list[str], environ: dict[str, str], expected: list[str], env: dict[str, str]
) -> None:
    assert runner.pytest_args(argv, environ) == (expected, env)


def test_missing_tests_directory_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["--tests", str(tmp_path / "nowhere")]) == 4
    assert "no serial tests at" in capsys.readouterr().err
