"""The suite's options: command line, then environment twins, then defaults (nrop.suite.plugin.options)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nrop.suite.plugin import options as suite_options


@pytest.mark.parametrize(
    ("cli", "env", "field", "expected"),
    [
        ({}, {}, "cluster_profile", "default"),
        ({}, {"E2E_NROP_CLUSTER_PROFILE": "smt-aligned"}, "cluster_profile", "smt-aligned"),
        (
            {"nrop_cluster_profile": "none"},
            {"E2E_NROP_CLUSTER_PROFILE": "smt-aligned"},
            "cluster_profile",
            "none",
        ),
        ({}, {}, "do_setup", True),
        ({}, {"E2E_NROP_SETUP": "false"}, "do_setup", False),
        ({"nrop_setup": True}, {"E2E_NROP_SETUP": "false"}, "do_setup", True),
        ({}, {"E2E_NROP_TEARDOWN": "no"}, "do_teardown", False),
        ({}, {}, "do_teardown", False),  # the embedded cluster is stopped with the stack in it
        ({}, {"E2E_NROP_TEARDOWN": "yes"}, "do_teardown", True),
        ({"nrop_teardown": True}, {}, "do_teardown", True),
        ({}, {}, "install_via", "direct"),
        ({}, {"E2E_NROP_INSTALL_VIA": "OLM"}, "install_via", "olm"),
        ({"nrop_install_via": "direct"}, {"E2E_NROP_INSTALL_VIA": "olm"}, "install_via", "direct"),
        ({}, {"E2E_NROP_TIER_UPTO": "1", "E2E_SERIAL_TIER_UPTO": "3"}, "tier_up_to", 1),
        ({"nrop_tier_up_to": "tier2"}, {"E2E_NROP_TIER_UPTO": "1"}, "tier_up_to", 2),
        ({}, {}, "report_dir", suite_options.DEFAULT_REPORT_DIR),
        ({}, {"E2E_NROP_REPORT_DIR": "/r"}, "report_dir", Path("/r")),
        ({}, {"E2E_NROP_KEEP_NAMESPACE_ON_FAILURE": "true"}, "keep_namespace_on_failure", True),
        ({"nrop_focus": ["a", "b"]}, {"E2E_SERIAL_FOCUS": "c"}, "focus", ("a", "b")),
        ({}, {"E2E_SERIAL_SKIP": "reboot_required"}, "skip", ("reboot_required",)),
        (
            {"nrop_tier_up_to": "0", "nrop_label_filter": "a || b"},
            {},
            "selection_filter",
            "(tier0) && (a || b)",
        ),
    ],
)
def test_resolve_precedence(
    cli: dict[str, object], env: dict[str, str], field: str, expected: object
) -> None:
    assert getattr(suite_options.resolve(cli, env), field) == expected


def test_a_kubeconfig_turns_setup_and_teardown_off_by_default(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("{}")
    resolved = suite_options.resolve({}, {"KUBECONFIG": f"{path}:/other"})
    assert (resolved.kubeconfig, resolved.target, resolved.do_setup, resolved.do_teardown) == (
        path,
        "kubeconfig",
        False,
        False,
    )


def test_install_via_rejects_an_unknown_way() -> None:
    with pytest.raises(pytest.UsageError, match=r"E2E_NROP_INSTALL_VIA='helm': expected one of direct, olm"):
        suite_options.resolve({}, {"E2E_NROP_INSTALL_VIA": "helm"})


def test_spec_durations_name_an_existing_file(tmp_path: Path) -> None:
    assert suite_options.resolve({}, {}).spec_durations is None
    given = tmp_path / "durations.json"
    given.write_text("{}")
    assert suite_options.resolve({}, {"E2E_NROP_SPEC_DURATIONS": str(given)}).spec_durations == given
    with pytest.raises(pytest.UsageError, match=r"--spec-durations='/nowhere\.json': no such file"):
        suite_options.resolve({"nrop_spec_durations": "/nowhere.json"}, {})


def test_every_declared_option_reaches_resolve() -> None:
    """The plugin passes :data:`OPTION_DESTS` from the command line to ``resolve``: an option
    declared but left out of it would be parsed and then ignored (``--spec-durations`` was)."""
    declared: list[str] = []

    class Group:
        def addoption(self, *names: str, **attrs: Any) -> None:
            declared.append(attrs["dest"])

    class Parser:
        def getgroup(self, *_: str) -> Group:
            return Group()

    suite_options.add_options(Parser())  # type: ignore[arg-type]
    assert sorted(set(declared)) == sorted(suite_options.OPTION_DESTS)


def test_spec_durations_from_the_command_line(tmp_path: Path) -> None:
    given = tmp_path / "durations.json"
    given.write_text("{}")
    cli = dict.fromkeys(suite_options.OPTION_DESTS) | {"nrop_spec_durations": str(given)}
    assert suite_options.resolve(cli, {}).spec_durations == given
