"""Table tests of pod volumes (``kubelet/volumes.py``): the plan, the contents, the host checks, the mounts
of a container's mount namespace and the path rewriting."""

from __future__ import annotations

import base64
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from nrop.localcluster.kubelet.decisions.containerenv import DownwardFacts
from nrop.localcluster.kubelet.volumes import (
    TOKEN_REFRESH_FRACTION,
    Mount,
    PlannedVolume,
    VolumeError,
    container_paths,
    create_missing_sources,
    host_path,
    materialise,
    mount_plan,
    plan_volumes,
    rewrite,
    token_lifetime,
    token_refresh_delay,
    volume_files,
)

ROOT = Path("/state/nodes/worker-0")
POD_DIR = ROOT / "var/lib/kubelet/pods/u-1"
FACTS = DownwardFacts("127.17.0.2", "127.0.1.2", {"cpu": "30", "memory": "31Gi"})
POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"b": "2", "a": "1"}},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "64Mi"}}}]},
}
CONFIG_MAPS = {
    "cfg": {
        "data": {"config.yaml": "a: 1\n", "other": "x"},
        "binaryData": {"bin": base64.b64encode(b"\x00\x01").decode()},
    }
}
SECRETS = {"sec": {"data": {"password": base64.b64encode(b"hunter2").decode()}}}


def issue(audiences: list[str], seconds: int) -> str:
    return f"token-for-{','.join(audiences) or 'api'}-{seconds}"


def plan(*volumes: dict[str, Any]) -> dict[str, PlannedVolume]:
    return plan_volumes({**POD, "spec": {**POD["spec"], "volumes": list(volumes)}}, ROOT, POD_DIR)


@pytest.mark.parametrize(
    ("volume", "kind", "path"),
    [
        pytest.param({"name": "sys", "hostPath": {"path": "/sys"}}, "hostPath", ROOT / "sys", id="host-sys"),
        pytest.param(
            {"name": "pr", "hostPath": {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"}},
            "hostPath",
            ROOT / "var/lib/kubelet/pod-resources",
            id="host-podresources",
        ),
        pytest.param(
            {"name": "up", "hostPath": {"path": "/../../etc"}}, "hostPath", ROOT / "etc", id="no-escape"
        ),
        pytest.param({"name": "root", "hostPath": {"path": "/"}}, "hostPath", ROOT, id="host-root"),
        pytest.param(
            {"name": "tmp", "emptyDir": {}},
            "emptyDir",
            POD_DIR / "volumes/kubernetes.io~empty-dir/tmp",
            id="emptydir",
        ),
        pytest.param(
            {"name": "cfg", "configMap": {"name": "cfg"}},
            "configMap",
            POD_DIR / "volumes/kubernetes.io~configmap/cfg",
            id="configmap",
        ),
        pytest.param(
            {"name": "tok", "projected": {"sources": []}},
            "projected",
            POD_DIR / "volumes/kubernetes.io~projected/tok",
            id="projected",
        ),
    ],
)
def test_plan(volume: dict[str, Any], kind: str, path: Path) -> None:
    (planned,) = plan(volume).values()
    assert (planned.kind, planned.path) == (kind, path)


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        pytest.param(
            {"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
            'spec.volumes[0]: volume "data" of type persistentVolumeClaim is not supported by the emulated kubelet',
            id="pvc",
        ),
        pytest.param({"name": "x"}, "spec.volumes[0]: must specify exactly one volume type", id="no-type"),
        pytest.param(
            {"name": "h", "hostPath": {"path": "/x", "type": "Dir"}},
            'spec.volumes[0].hostPath.type: Unsupported value: "Dir"',
            id="host-path-type",
        ),
    ],
)
def test_plan_refuses(volume: dict[str, Any], message: str) -> None:
    with pytest.raises(VolumeError) as raised:
        plan(volume)
    assert str(raised.value) == message


def files_of(volume: dict[str, Any]) -> dict[str, tuple[bytes, int]]:
    (planned,) = plan(volume).values()
    return volume_files(planned, POD, FACTS, CONFIG_MAPS.get, SECRETS.get, issue)


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        pytest.param(
            {"name": "v", "configMap": {"name": "cfg"}},
            {"config.yaml": (b"a: 1\n", 0o644), "other": (b"x", 0o644), "bin": (b"\x00\x01", 0o644)},
            id="configmap-all-keys",
        ),
        pytest.param(
            {
                "name": "v",
                "configMap": {
                    "name": "cfg",
                    "defaultMode": 0o600,
                    "items": [{"key": "other", "path": "d/o", "mode": 0o400}],
                },
            },
            {"d/o": (b"x", 0o400)},
            id="configmap-items",
        ),
        pytest.param(
            {"name": "v", "configMap": {"name": "gone", "optional": True}}, {}, id="optional-missing"
        ),
        pytest.param(
            {"name": "v", "secret": {"secretName": "sec", "defaultMode": 0o400}},
            {"password": (b"hunter2", 0o400)},
            id="secret",
        ),
        pytest.param(
            {
                "name": "v",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {
                            "path": "mem",
                            "resourceFieldRef": {
                                "containerName": "c",
                                "resource": "limits.memory",
                                "divisor": "1Mi",
                            },
                        },
                    ]
                },
            },
            {"labels": (b'a="1"\nb="2"', 0o644), "mem": (b"64", 0o644)},
            id="downward-api",
        ),
        pytest.param(
            {
                "name": "v",
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "path": "token",
                                "audience": "vault",
                                "expirationSeconds": 7200,
                            }
                        },
                        {"configMap": {"name": "cfg", "items": [{"key": "other", "path": "ca.crt"}]}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                                ]
                            }
                        },
                    ]
                },
            },
            {
                "token": (b"token-for-vault-7200", 0o644),
                "ca.crt": (b"x", 0o644),
                "namespace": (b"ns", 0o644),
            },
            id="projected-token-and-friends",
        ),
    ],
)
def test_volume_files(volume: dict[str, Any], expected: dict[str, tuple[bytes, int]]) -> None:
    assert files_of(volume) == expected


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        pytest.param(
            {"name": "v", "configMap": {"name": "gone"}}, 'configmap "gone" not found', id="missing-configmap"
        ),
        pytest.param(
            {"name": "v", "secret": {"secretName": "gone"}}, 'secret "gone" not found', id="missing-secret"
        ),
        pytest.param(
            {"name": "v", "configMap": {"name": "cfg", "items": [{"key": "nope", "path": "n"}]}},
            "configmap references non-existent config key: nope",
            id="missing-key",
        ),
        pytest.param(
            {"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"path": "b"}}]}},
            'projected volume "v": sources[0] of type clusterTrustBundle is not supported by the emulated kubelet',
            id="unsupported-projection",
        ),
    ],
)
def test_volume_files_refuse(volume: dict[str, Any], message: str) -> None:
    with pytest.raises(VolumeError) as raised:
        files_of(volume)
    assert str(raised.value) == message


def test_materialise_writes_files_with_modes(tmp_path: Path) -> None:
    volume = PlannedVolume("v", "configMap", tmp_path / "v", {})
    materialise(volume, {"a/b": (b"x", 0o600), "c": (b"y", 0o644)})
    assert (tmp_path / "v/a/b").read_bytes() == b"x"
    assert stat.S_IMODE(os.stat(tmp_path / "v/a/b").st_mode) == 0o600
    materialise(volume, {"c": (b"z", 0o644)})  # rewritten at the next start
    assert (tmp_path / "v/c").read_bytes() == b"z"


@pytest.mark.parametrize(
    ("kind", "setup", "error"),
    [
        pytest.param("Directory", "dir", None, id="directory-ok"),
        pytest.param(
            "Directory", None, "hostPath type check failed: /h is not a directory", id="directory-missing"
        ),
        pytest.param("File", "dir", "hostPath type check failed: /h is not a file", id="file-is-dir"),
        pytest.param("File", "file", None, id="file-ok"),
        pytest.param("Socket", "socket", None, id="socket-ok"),
        pytest.param(
            "Socket", "file", "hostPath type check failed: /h is not a socket file", id="socket-is-file"
        ),
        pytest.param("DirectoryOrCreate", None, None, id="directory-created"),
        pytest.param("FileOrCreate", None, None, id="file-created"),
        pytest.param("", None, None, id="no-check"),
    ],
)
def test_host_path_types(tmp_path: Path, kind: str, setup: str | None, error: str | None) -> None:
    target = tmp_path / "h"
    if setup == "dir":
        target.mkdir()
    elif setup == "file":
        target.write_text("")
    elif setup == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
        server.close()
    volume = PlannedVolume("h", "hostPath", host_path(tmp_path, "/h"), {"path": "/h", "type": kind})
    if error is None:
        materialise(volume, {})
        if kind == "DirectoryOrCreate":
            assert target.is_dir()
        if kind == "FileOrCreate":
            assert target.is_file()
    else:
        with pytest.raises(VolumeError) as raised:
            materialise(volume, {})
        assert str(raised.value) == error


def test_container_paths_with_sub_path_and_termination_log() -> None:
    volumes = plan(
        {"name": "sys", "hostPath": {"path": "/sys"}}, {"name": "cfg", "configMap": {"name": "cfg"}}
    )
    container = {
        "volumeMounts": [
            {"name": "sys", "mountPath": "/host-sys/"},
            {"name": "cfg", "mountPath": "/etc/rte/config.yaml", "subPath": "config.yaml"},
        ],
        "terminationMessagePath": "/tmp/message",
    }
    assert container_paths(container, volumes, ROOT, Path("/c"), "spec.containers[0]") == {
        "/sys": str(ROOT / "sys"),
        "/host-sys": str(ROOT / "sys"),
        "/etc/rte/config.yaml": str(POD_DIR / "volumes/kubernetes.io~configmap/cfg/config.yaml"),
        "/tmp/message": "/c/termination-log",
    }
    assert container_paths({}, volumes, ROOT, Path("/c"), "x") == {
        "/sys": str(ROOT / "sys"),
        "/dev/termination-log": "/c/termination-log",
    }
    with pytest.raises(VolumeError) as raised:
        container_paths(
            {"volumeMounts": [{"name": "nope", "mountPath": "/x"}]},
            volumes,
            ROOT,
            Path("/c"),
            "spec.containers[1]",
        )
    assert str(raised.value) == 'spec.containers[1].volumeMounts[0].name: Not found: "nope"'


PATHS = {"/host-sys": "/n/sys", "/host-sys/fs": "/n/fs", "/pr": "/n/pod-resources"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("--sysfs=/host-sys", "--sysfs=/n/sys", id="flag-value"),
        pytest.param("/host-sys/devices/system/node", "/n/sys/devices/system/node", id="below"),
        pytest.param("/host-sys/fs/cgroup", "/n/fs/cgroup", id="longest-wins"),
        pytest.param("unix:///pr/kubelet.sock", "unix:///n/pod-resources/kubelet.sock", id="socket-url"),
        pytest.param("open('/host-sys/x')", "open('/n/sys/x')", id="inside-code"),
        pytest.param("/data/host-sys", "/data/host-sys", id="not-a-suffix"),
        pytest.param("/host-system", "/host-system", id="not-a-prefix-of-a-name"),
        pytest.param("/pr.d", "/pr.d", id="dot-is-part-of-the-name"),
        pytest.param("a /pr b /host-sys", "a /n/pod-resources b /n/sys", id="several"),
    ],
)
def test_rewrite(text: str, expected: str) -> None:
    assert rewrite(text, PATHS) == expected


CONTAINER_DIR = POD_DIR / "containers/c"
SYS = Mount(str(ROOT / "sys"), "/sys", True)
LOG = Mount(str(CONTAINER_DIR / "termination-log"), "/dev/termination-log", False)
CFG = POD_DIR / "volumes/kubernetes.io~configmap/cfg"
TOKEN = POD_DIR / "volumes/kubernetes.io~projected/kube-api-access-abcde"
VOLUMES = plan(
    {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}},
    {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}},
    {"name": "cfg", "configMap": {"name": "cfg"}},
    {"name": "sec", "secret": {"secretName": "sec"}},
    {"name": "info", "downwardAPI": {"items": []}},
    {"name": "kube-api-access-abcde", "projected": {"sources": []}},
    {"name": "scratch", "emptyDir": {}},
)


@pytest.mark.parametrize(
    ("container", "mounts"),
    [
        pytest.param({}, [SYS, LOG], id="no-volumes-sysfs-and-termination-log"),
        pytest.param(
            {"securityContext": {"privileged": True}},
            [SYS._replace(read_only=False), LOG],
            id="privileged-sysfs-read-write",
        ),
        pytest.param(
            {
                "volumeMounts": [
                    {
                        "name": "kube-api-access-abcde",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    },
                    {"name": "plugins", "mountPath": "/var/lib/kubelet/device-plugins"},
                    {"name": "scratch", "mountPath": "/tmp/"},
                ]
            },
            [
                SYS,
                Mount(str(POD_DIR / "volumes/kubernetes.io~empty-dir/scratch"), "/tmp", False),
                LOG,
                Mount(str(ROOT / "var/lib/kubelet/device-plugins"), "/var/lib/kubelet/device-plugins", False),
                Mount(str(TOKEN), "/var/run/secrets/kubernetes.io/serviceaccount", True),
            ],
            id="sorted-by-depth-as-containerd",
        ),
        pytest.param(
            {
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": False},
                    {"name": "sec", "mountPath": "/etc/sec"},
                    {"name": "info", "mountPath": "/etc/info"},
                    {"name": "plugins", "mountPath": "/plugins", "readOnly": True},
                ]
            },
            [
                SYS,
                Mount(str(ROOT / "var/lib/kubelet/device-plugins"), "/plugins", True),
                Mount(str(CFG), "/etc/cfg", True),
                Mount(str(POD_DIR / "volumes/kubernetes.io~secret/sec"), "/etc/sec", True),
                Mount(str(POD_DIR / "volumes/kubernetes.io~downward-api/info"), "/etc/info", True),
                LOG,
            ],
            id="api-data-volumes-always-read-only",
        ),
        pytest.param(
            {
                "volumeMounts": [
                    {"name": "sys", "mountPath": "/sys"},
                    {"name": "sys", "mountPath": "/host-sys"},
                ]
            },
            [Mount(str(ROOT / "sys"), "/sys", False), Mount(str(ROOT / "sys"), "/host-sys", False), LOG],
            id="a-volume-at-sys-replaces-the-default",
        ),
        pytest.param(
            {
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/etc/rte/config.yaml", "subPath": "config.yaml"},
                    {"name": "scratch", "mountPath": "/"},
                ],
                "terminationMessagePath": "/tmp/message",
            },
            [
                SYS,
                Mount(str(CONTAINER_DIR / "termination-log"), "/tmp/message", False),
                Mount(str(CFG / "config.yaml"), "/etc/rte/config.yaml", True),
            ],
            id="sub-path-own-termination-path-nothing-over-root",
        ),
        pytest.param(
            {
                "volumeMounts": [{"name": "scratch", "mountPath": "/dev/termination-log", "subPath": "log"}],
            },
            [
                SYS,
                Mount(
                    str(POD_DIR / "volumes/kubernetes.io~empty-dir/scratch/log"),
                    "/dev/termination-log",
                    False,
                ),
            ],
            id="a-volume-at-the-termination-path-wins",
        ),
    ],
)
def test_mount_plan(container: dict[str, Any], mounts: list[Mount]) -> None:
    assert mount_plan(container, VOLUMES, ROOT, CONTAINER_DIR, "spec.containers[0]") == mounts


def test_mount_plan_refuses_a_mount_of_no_volume() -> None:
    with pytest.raises(VolumeError) as raised:
        mount_plan(
            {"volumeMounts": [{"name": "nope", "mountPath": "/x"}]},
            VOLUMES,
            ROOT,
            CONTAINER_DIR,
            "spec.containers[2]",
        )
    assert str(raised.value) == 'spec.containers[2].volumeMounts[0].name: Not found: "nope"'


def test_missing_sources_are_created_as_directories(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    create_missing_sources(
        [Mount(str(tmp_path / "file"), "/f", False), Mount(str(tmp_path / "new/sub"), "/d", False)]
    )
    assert (tmp_path / "file").read_text() == "x"
    assert (tmp_path / "new/sub").is_dir()


@pytest.mark.parametrize(
    ("volume", "seconds"),
    [
        pytest.param(
            {"name": "kube-api-access-x", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt"}},
            ]}},
            3607,
            id="kube-api-access",
        ),
        pytest.param(
            {"name": "v", "projected": {"sources": [
                {"serviceAccountToken": {"path": "a"}},
                {"serviceAccountToken": {"expirationSeconds": 7200, "path": "b"}},
            ]}},
            3600,
            id="shortest-and-default",
        ),
        pytest.param({"name": "v", "projected": {"sources": [{"configMap": {"name": "c"}}]}}, None, id="no-token"),
        pytest.param({"name": "v", "emptyDir": {}}, None, id="not-projected"),
    ],
)  # fmt: skip
def test_token_lifetime(volume: dict[str, Any], seconds: int | None) -> None:
    (planned,) = plan(volume).values()
    assert token_lifetime(planned) == seconds


def test_token_refresh_delay() -> None:
    volumes = plan(
        {"name": "a", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3607}}]}},
        {"name": "b", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 7200}}]}},
        {"name": "c", "emptyDir": {}},
    )
    assert token_refresh_delay(volumes.values()) == 3607 * TOKEN_REFRESH_FRACTION
    assert TOKEN_REFRESH_FRACTION == 0.8
    assert token_refresh_delay([volumes["c"]]) is None
