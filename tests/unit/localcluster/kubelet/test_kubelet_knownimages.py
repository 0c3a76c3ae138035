"""Table tests of the image table (``kubelet/knownimages.py``): which images the runtime knows,
what their containers run, and how their defaults complete a container's command."""

from __future__ import annotations

import os
from typing import Any

import pytest

from nrop.localcluster.kubelet.decisions.simulation import PAUSE, UNKNOWN, Behaviour, behaviour_of
from nrop.localcluster.kubelet.knownimages import (
    DEFAULT_PATH_FLAGS,
    KNOWN_IMAGES,
    container_argv,
    known_image,
    repository,
)

NUMACELL = "quay.io/openshift-kni/numacell-device-plugin:test-ci"
PAUSE_IMAGE = "quay.io/openshift-kni/pause:test-ci"


@pytest.mark.parametrize(
    ("image", "repo"),
    [
        pytest.param("pause:3.9", "docker.io/library/pause", id="short-name"),
        pytest.param("quay.io/openshift-kni/pause:test-ci", "quay.io/openshift-kni/pause", id="tag"),
        pytest.param("localhost:5000/x/pause@sha256:ab", "localhost:5000/x/pause", id="digest-and-port"),
        pytest.param("registry.k8s.io/pause", "registry.k8s.io/pause", id="no-tag"),
    ],
)
def test_repository(image: str, repo: str) -> None:
    assert repository(image) == repo


@pytest.mark.parametrize(
    ("image", "name", "processes"),
    [
        pytest.param(NUMACELL, "numacell device plugin", True, id="upstream-numacell"),
        pytest.param(
            "quay.io/openshift-kni/numacell-device-plugin@sha256:0a",
            "numacell device plugin",
            True,
            id="digest",
        ),
        pytest.param(
            "quay.io/openshift-kni/resource-topology-exporter:test-ci",
            "resource topology exporter",
            True,
            id="upstream-rte",
        ),
        pytest.param(
            "quay.io/openshift-kni/scheduler-plugins:4.19-snapshot",
            "scheduler-plugins scheduler",
            True,
            id="upstream-scheduler",
        ),
        pytest.param(PAUSE_IMAGE, "pause", False, id="upstream-pause"),
        pytest.param("registry.k8s.io/pause:3.10", "pause", False, id="k8s-pause"),
        pytest.param("pause:3.9", "pause", False, id="short-pause"),
        pytest.param("busybox", None, None, id="busybox-unknown"),
        pytest.param("quay.io/openshift-kni/numaresources-operator:4.20", None, None, id="operator-unknown"),
        pytest.param("quay.io/x/pause-not:1", None, None, id="longer-name"),
        pytest.param("", None, None, id="no-image"),
    ],
)
def test_known_images(image: str, name: str | None, processes: bool | None) -> None:
    entry = known_image(image)
    assert (entry and entry.name) == name
    assert (entry and entry.runs_processes) == processes


@pytest.mark.parametrize(
    ("container", "image", "argv"),
    [
        pytest.param(
            {"command": ["/bin/numacell"], "args": ["-alsologtostderr", "-v", "3"]},
            NUMACELL,
            (["/bin/numacell"], ["-alsologtostderr", "-v", "3"]),
            id="upstream-daemonset",
        ),
        pytest.param({}, NUMACELL, (["/bin/numacell", "-alsologtostderr", "-v", "3"], []), id="entrypoint"),
        pytest.param(
            {"args": ["-v", "4"]},
            NUMACELL,
            (["/bin/numacell", "-alsologtostderr", "-v", "3"], ["-v", "4"]),
            id="args-follow-the-entrypoint",
        ),
        pytest.param({}, PAUSE_IMAGE, (["/pause"], []), id="pause-entrypoint"),
        pytest.param(
            {"command": ["/bin/sleep"], "args": ["1s"]},
            PAUSE_IMAGE,
            (["/bin/sleep"], ["1s"]),
            id="command-wins",
        ),
        pytest.param({"args": ["x"]}, "busybox", ([], ["x"]), id="unknown-image"),
    ],
)
def test_container_argv(container: dict[str, Any], image: str, argv: tuple[list[str], list[str]]) -> None:
    assert container_argv(container, known_image(image)) == argv


@pytest.mark.parametrize(
    ("container", "image", "expected"),
    [
        pytest.param({"command": ["/pause"]}, PAUSE_IMAGE, PAUSE, id="pause-command"),
        pytest.param({}, PAUSE_IMAGE, PAUSE, id="pause-entrypoint"),
        pytest.param({}, "registry.k8s.io/pause:3.10", PAUSE, id="k8s-pause"),
        pytest.param(
            {"command": ["/bin/sleep"], "args": ["1s"]}, PAUSE_IMAGE, Behaviour(1.0), id="upstream-init-sleep"
        ),
        pytest.param(
            {"command": ["/bin/sleep"], "args": ["42d"]}, PAUSE_IMAGE, Behaviour(42 * 86400.0), id="long"
        ),
        pytest.param({}, "nginx", UNKNOWN, id="unknown-image-no-command"),
        pytest.param({"command": ["nginx", "-g", "daemon off;"]}, "nginx", UNKNOWN, id="unknown-program"),
        pytest.param({"command": ["sleep", "5"]}, "busybox", Behaviour(5.0), id="known-command-any-image"),
    ],
)
def test_simulated_images(container: dict[str, Any], image: str, expected: Behaviour) -> None:
    command, args = container_argv(container, known_image(image))
    assert behaviour_of([*command, *args]) == expected


def test_every_program_of_the_table_is_a_console_script() -> None:
    from importlib import metadata

    scripts = {
        ep.name
        for ep in metadata.distribution("numaresources-operator-tests").entry_points
        if ep.group == "console_scripts"
    }
    programs = {p for entry in KNOWN_IMAGES for p in entry.executables.values() if not p.startswith("/")}
    assert programs <= scripts
    assert set(DEFAULT_PATH_FLAGS) <= scripts


def test_the_machine_programs_of_the_table_exist() -> None:
    machine = {p for entry in KNOWN_IMAGES for p in entry.executables.values() if p.startswith("/")}
    assert machine == {"/bin/sh"}
    assert all(os.access(p, os.X_OK) for p in machine)


def test_numacell_default_path_flags_are_its_defaults() -> None:
    from nrop.numacell import deviceplugin as numacell

    assert DEFAULT_PATH_FLAGS["numacell"] == (
        f"--sysfs={numacell.DEFAULT_SYSFS}",
        f"--device-plugin-path={numacell.DEFAULT_DEVICE_PLUGIN_PATH}",
    )
