"""Table tests of the own-image decision and the entry-point resolution (``kubelet/entrypoints.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrop.localcluster.kubelet.entrypoints import (
    DEFAULT_OWN_IMAGES,
    EntryPoint,
    NotAnEntryPoint,
    RuntimeConfig,
    entry_point,
    is_own_image,
)

CONFIG = RuntimeConfig(
    bin_dir=Path("/venv/bin"), scripts=frozenset({"resource-topology-exporter", "nrop-cluster"})
)


@pytest.mark.parametrize(
    ("image", "patterns", "own"),
    [
        pytest.param(
            "quay.io/openshift-kni/numaresources-operator-tests:4.18", DEFAULT_OWN_IMAGES, True, id="quay"
        ),
        pytest.param("numaresources-operator-tests", DEFAULT_OWN_IMAGES, True, id="bare-name"),
        pytest.param(
            "localhost:5000/numaresources-operator-tests@sha256:ab", DEFAULT_OWN_IMAGES, True, id="digest"
        ),
        pytest.param("busybox", DEFAULT_OWN_IMAGES, False, id="other-image"),
        pytest.param(
            "quay.io/x/numaresources-operator:4.18", DEFAULT_OWN_IMAGES, False, id="the-operator-image"
        ),
        pytest.param("busybox", ("docker.io/library/busybox:*",), True, id="normalised-form-matches"),
        pytest.param("", DEFAULT_OWN_IMAGES, False, id="no-image"),
        pytest.param("quay.io/x/rte:1", ("*/rte:*", "*tests*"), True, id="any-of-several"),
    ],
)
def test_is_own_image(image: str, patterns: tuple[str, ...], own: bool) -> None:
    assert is_own_image(image, patterns) is own


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        pytest.param(
            ["resource-topology-exporter"],
            ["--no-publish"],
            EntryPoint(("/venv/bin/resource-topology-exporter", "--no-publish")),
            id="console-script",
        ),
        pytest.param(
            ["/usr/bin/resource-topology-exporter", "--oneshot"],
            [],
            EntryPoint(("/venv/bin/resource-topology-exporter", "--oneshot")),
            id="directory-ignored",
        ),
        pytest.param(
            ["python3", "-c", "print(1)"],
            ["x"],
            EntryPoint(("/venv/bin/python3", "-c", "print(1)", "x")),
            id="interpreter",
        ),
        pytest.param(["python"], [], EntryPoint(("/venv/bin/python",)), id="python"),
    ],
)
def test_entry_points_resolve_in_the_environment(
    command: list[str], args: list[str], expected: EntryPoint
) -> None:
    assert entry_point(command, args, CONFIG) == expected


@pytest.mark.parametrize(
    ("command", "message"),
    [
        pytest.param(
            ["sh", "-c", "true"],
            'exec: "sh": executable file not found in $PATH (the image provides '
            "nrop-cluster, python, python3, resource-topology-exporter)",
            id="not-in-the-image",
        ),
        pytest.param(
            [],
            "the image has no default entrypoint in the emulated runtime: set command to one of "
            "nrop-cluster, python, python3, resource-topology-exporter",
            id="no-command",
        ),
    ],
)
def test_commands_the_image_does_not_have(command: list[str], message: str) -> None:
    assert entry_point(command, [], CONFIG) == NotAnEntryPoint(message)


def test_this_environment_knows_the_distribution_scripts() -> None:
    config = RuntimeConfig.for_this_environment()
    assert {"nrop-cluster", "resource-topology-exporter"} <= config.scripts
    assert (config.bin_dir / "python3").exists()
    assert config.own_images == DEFAULT_OWN_IMAGES
