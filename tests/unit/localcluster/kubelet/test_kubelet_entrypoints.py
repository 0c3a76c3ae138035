"""Table tests of the own-image decision, the images that run processes, their base's tools (``sh``,
``curl``), the entry-point resolution and what a ``PATH`` lookup finds in a container
(``kubelet/decisions/entrypoints.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrop.localcluster.kubelet.decisions.entrypoints import (
    DEFAULT_OWN_IMAGES,
    EntryPoint,
    NotAnEntryPoint,
    RuntimeConfig,
    entry_point,
    image_executables,
    image_programs,
    is_own_image,
)

OWN = "quay.io/x/numaresources-operator-tests:1"
NUMACELL = "quay.io/openshift-kni/numacell-device-plugin:test-ci"
RTE = "quay.io/openshift-kni/resource-topology-exporter:4.22"
SIGS_SCHEDULER = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.31.8"

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
    ("image", "command", "args", "expected"),
    [
        pytest.param(
            OWN,
            ["resource-topology-exporter"],
            ["--no-publish"],
            EntryPoint(
                ("/venv/bin/resource-topology-exporter", "--no-publish"), "resource-topology-exporter"
            ),
            id="console-script",
        ),
        pytest.param(
            OWN,
            ["/usr/bin/resource-topology-exporter", "--oneshot"],
            [],
            EntryPoint(("/venv/bin/resource-topology-exporter", "--oneshot"), "resource-topology-exporter"),
            id="directory-ignored",
        ),
        pytest.param(
            OWN,
            ["python3", "-c", "print(1)"],
            ["x"],
            EntryPoint(("/venv/bin/python3", "-c", "print(1)", "x"), "python3"),
            id="interpreter",
        ),
        pytest.param(OWN, ["python"], [], EntryPoint(("/venv/bin/python",), "python"), id="python"),
        pytest.param(
            NUMACELL,
            ["/bin/numacell"],
            ["-alsologtostderr", "-v", "3"],
            EntryPoint(("/venv/bin/numacell", "-alsologtostderr", "-v", "3"), "numacell"),
            id="upstream-numacell",
        ),
        pytest.param(
            NUMACELL,
            ["numazone", "-discover"],
            [],
            EntryPoint(("/venv/bin/numacell", "-discover"), "numacell"),
            id="upstream-numacell-other-name",
        ),
        pytest.param(
            "quay.io/openshift-kni/scheduler-plugins:test-ci",
            ["/bin/kube-scheduler"],
            ["--config=/etc/kubernetes/config.yaml"],
            EntryPoint(
                ("/venv/bin/nrop-scheduler", "--config=/etc/kubernetes/config.yaml"), "nrop-scheduler"
            ),
            id="upstream-scheduler",
        ),
        pytest.param(
            RTE,
            ["/bin/curl", "-k", "https://127.0.0.1:2112/metrics"],
            [],
            EntryPoint(("/venv/bin/nrop-curl", "-k", "https://127.0.0.1:2112/metrics"), "nrop-curl"),
            id="upstream-85770-curl-in-the-exporter",
        ),
        pytest.param(
            OWN,
            ["sh", "-c", "curl --connect-timeout 5 http://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"],
            [],
            EntryPoint(
                (
                    "/bin/sh",
                    "-c",
                    "curl --connect-timeout 5 http://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT",
                ),
                "/bin/sh",
            ),
            id="upstream-85771-sh-is-the-machines",
        ),
        pytest.param(
            OWN,
            ["/usr/bin/curl", "-s", "http://h/"],
            [],
            EntryPoint(("/venv/bin/nrop-curl", "-s", "http://h/"), "nrop-curl"),
            id="own-image-curl",
        ),
        pytest.param(
            NUMACELL,
            ["/bin/sh", "-c", "true"],
            [],
            EntryPoint(("/bin/sh", "-c", "true"), "/bin/sh"),
            id="numacell-sh",
        ),
    ],
)
def test_entry_points_resolve_in_the_environment(
    image: str, command: list[str], args: list[str], expected: EntryPoint
) -> None:
    assert entry_point(image, command, args, CONFIG) == expected


@pytest.mark.parametrize(
    ("command", "message"),
    [
        pytest.param(
            ["bash", "-c", "true"],
            'exec: "bash": executable file not found in $PATH (the image provides '
            "curl, nrop-cluster, python, python3, resource-topology-exporter, sh)",
            id="not-in-the-image",
        ),
        pytest.param(
            [],
            "the image has no default entrypoint in the emulated runtime: set command to one of "
            "curl, nrop-cluster, python, python3, resource-topology-exporter, sh",
            id="no-command",
        ),
    ],
)
def test_commands_the_image_does_not_have(command: list[str], message: str) -> None:
    assert entry_point(OWN, command, [], CONFIG) == NotAnEntryPoint(message)


def test_upstream_images_have_their_own_programs_only() -> None:
    assert entry_point(NUMACELL, ["resource-topology-exporter"], [], CONFIG) == NotAnEntryPoint(
        'exec: "resource-topology-exporter": executable file not found in $PATH '
        "(the image provides curl, numacell, numazone, sh)"
    )


def test_distroless_images_have_no_shell_nor_curl() -> None:
    assert entry_point(SIGS_SCHEDULER, ["sh", "-c", "curl http://h/"], [], CONFIG) == NotAnEntryPoint(
        'exec: "sh": executable file not found in $PATH (the image provides kube-scheduler)'
    )


@pytest.mark.parametrize(
    ("image", "programs"),
    [
        pytest.param(
            OWN, {"nrop-cluster", "python", "python3", "resource-topology-exporter", "sh", "curl"}, id="own"
        ),
        pytest.param(NUMACELL, {"numacell", "numazone", "sh", "curl"}, id="numacell"),
        pytest.param(RTE, {"resource-topology-exporter", "sh", "curl"}, id="exporter"),
        pytest.param(
            "quay.io/openshift-kni/scheduler-plugins:4.22",
            {"kube-scheduler", "sh", "curl"},
            id="kni-scheduler",
        ),
        pytest.param(SIGS_SCHEDULER, {"kube-scheduler"}, id="sigs-scheduler-distroless"),
        pytest.param("quay.io/openshift-kni/pause:test-ci", None, id="pause-simulated"),
        pytest.param("busybox", None, id="unknown-simulated"),
        pytest.param(
            "docker.io/library/busybox:1",
            {"python", "python3", "sh", "curl"},
            id="own-pattern-wins-over-the-table",
        ),
    ],
)
def test_which_images_run_processes(image: str, programs: set[str] | None) -> None:
    config = RuntimeConfig(bin_dir=Path("/venv/bin"), scripts=CONFIG.scripts, own_images=("*tests*",))
    if image.startswith("docker.io"):
        config = RuntimeConfig(bin_dir=Path("/venv/bin"), own_images=("*/busybox:*",))
    found = image_programs(image, config)
    assert (None if found is None else set(found)) == programs


def test_this_environment_knows_the_distribution_scripts() -> None:
    config = RuntimeConfig.for_this_environment()
    assert {"nrop-cluster", "resource-topology-exporter"} <= config.scripts
    assert (config.bin_dir / "python3").exists()
    assert config.own_images == DEFAULT_OWN_IMAGES


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        pytest.param(
            RTE,
            {
                "resource-topology-exporter": Path("/venv/bin/resource-topology-exporter"),
                "curl": Path("/venv/bin/nrop-curl"),
                "sh": Path("/bin/sh"),
            },
            id="exporter",
        ),
        pytest.param(
            OWN,
            {
                "nrop-cluster": Path("/venv/bin/nrop-cluster"),
                "resource-topology-exporter": Path("/venv/bin/resource-topology-exporter"),
                "python": Path("/venv/bin/python"),
                "python3": Path("/venv/bin/python3"),
                "curl": Path("/venv/bin/nrop-curl"),
                "sh": Path("/bin/sh"),
            },
            id="own",
        ),
        pytest.param("busybox", None, id="simulated"),
    ],
)
def test_path_lookups_find_the_images_executables(image: str, expected: dict[str, Path] | None) -> None:
    assert image_executables(image, CONFIG) == expected
