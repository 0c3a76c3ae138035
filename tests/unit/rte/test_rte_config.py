"""The exporter's configuration: precedence defaults → file → env → flags, bad values, the kubelet config."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nrop.rte import config
from nrop.rte.config import (
    ConfigError,
    format_duration,
    load,
    parse_duration,
    readiness_pod,
    resolve_topology_manager,
)
from nrop.rte.decisions.nrtinfo import TopologyManager
from nrop.rte.decisions.scan import ContainerRef, PodExclude
from nrop.rte.podreadiness import PodRef

ENV: dict[str, str] = {}


def write(tmp_path: Path, data: object, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_defaults_mirror_upstream(tmp_path: Path) -> None:
    cfg, _ = load(["--config", str(write(tmp_path, {})), "--hostname", "n"], ENV)
    assert cfg.sysfs == "/sys"
    assert cfg.podresources_socket == "unix:///podresources/kubelet.sock"
    assert cfg.sleep_interval == 60.0
    assert cfg.kubelet_config_file == "/podresources/config.yaml"
    assert cfg.pods_fingerprint is True
    assert cfg.pods_fingerprint_method == "with-exclusive-resources"
    assert cfg.patch_mode is True and cfg.patch_resync == 10
    assert cfg.add_nrt_owner is True
    assert (cfg.metrics_mode, cfg.metrics_port, cfg.metrics_address) == ("disabled", 2112, "0.0.0.0")
    assert cfg.max_events_per_second == 1 and cfg.time_unit_to_limit_events == 1.0
    assert cfg.no_publish is False and cfg.notify_file == ""
    assert cfg.podreadiness is True and cfg.exclude_terminal_pods is False


def test_missing_default_config_file_is_fine() -> None:
    cfg, _ = load(["--hostname", "n"], ENV)
    assert cfg.config_file == config.DEFAULT_CONFIG_FILE


def test_the_operator_rendered_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "kubelet": {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"},
            "resourceExclude": {"*": ["device/exampleC"], "worker-1": ["memory"]},
            "podExclude": [{"namespacePattern": "kube-*", "namePattern": "*"}],
        },
    )
    cfg, _ = load(["--config", str(path), "--hostname", "worker-1"], ENV)
    assert resolve_topology_manager(cfg)[0] == TopologyManager("single-numa-node", "pod")
    assert cfg.resource_exclude == {"*": ["device/exampleC"], "worker-1": ["memory"]}
    assert cfg.pod_exclude == [PodExclude("kube-*", "*")]


SETTINGS_FILE = {
    "global": {"kubeconfig": "/file/kubeconfig"},
    "nrtUpdater": {"hostname": "from-file", "noPublish": True, "patchResync": 3},
    "resourceMonitor": {
        "sysfsRoot": "/file/sys",
        "podSetFingerprintMethod": "ALL",
        "excludeTerminalPods": True,
    },
    "topologyExporter": {
        "sleepInterval": 5_000_000_000,  # upstream: integer nanoseconds
        "podResourcesSocketPath": "unix:///file/kubelet.sock",
        "podReadinessEnable": False,
        "metricsPort": 9000,
        "MetricsAddress": "127.0.0.9",  # sic: upstream's key has a capital M
        "metricsTLS": {"certsDir": "/file/certs", "minTLSVersion": "VersionTLS13", "cipherSuites": ""},
        "notifyFilePath": "/file/notify",
        "timeUnitToLimitEvents": "2s",
    },
}


@pytest.mark.parametrize(
    ("env", "flags", "expected"),
    [
        pytest.param(
            {},
            [],
            {
                "hostname": "from-file",
                "kubeconfig": "/file/kubeconfig",
                "sleep_interval": 5.0,
                "metrics_port": 9000,
            },
            id="file-over-defaults",
        ),
        pytest.param(
            {"NODE_NAME": "from-env", "KUBECONFIG": "/env/kubeconfig", "METRICS_PORT": "9100"},
            [],
            {"hostname": "from-env", "kubeconfig": "/env/kubeconfig", "metrics_port": 9100},
            id="env-over-file",
        ),
        pytest.param(
            {"NODE_NAME": "from-env", "METRICS_PORT": "9100"},
            ["--hostname", "from-flag", "--metrics-port=9200", "--sleep-interval", "250ms"],
            {"hostname": "from-flag", "metrics_port": 9200, "sleep_interval": 0.25},
            id="flags-over-env",
        ),
        pytest.param({"NODE_NAME": ""}, [], {"hostname": "from-file"}, id="empty-env-is-unset"),
        pytest.param(
            {},
            [
                "--no-publish=false",
                "--patch-mode",
                "false",
                "--pods-fingerprint-method",
                "with-exclusive-resources",
            ],
            {"no_publish": False, "patch_mode": False, "pods_fingerprint_method": "with-exclusive-resources"},
            id="go-style-booleans",
        ),
    ],
)
def test_precedence(
    tmp_path: Path, env: dict[str, str], flags: list[str], expected: dict[str, object]
) -> None:
    cfg, _ = load(["--config", str(write(tmp_path, SETTINGS_FILE)), *flags], env)
    for attr, value in expected.items():
        assert getattr(cfg, attr) == value, attr


def test_file_values_are_converted(tmp_path: Path) -> None:
    cfg, _ = load(["--config", str(write(tmp_path, SETTINGS_FILE))], ENV)
    assert cfg.no_publish is True
    assert cfg.patch_resync == 3
    assert cfg.pods_fingerprint_method == "all"  # lower-cased as upstream
    assert cfg.socket_path == Path("/file/kubelet.sock")
    assert cfg.metrics_certs_dir == "/file/certs"
    assert cfg.time_unit_to_limit_events == 2.0
    assert cfg.podreadiness is False and cfg.exclude_terminal_pods is True
    assert cfg.metrics_address == "127.0.0.9"
    assert cfg.sources["hostname"].startswith("config file")
    assert cfg.sources["sysfs"] == f"config file {tmp_path / 'config.yaml'} (resourceMonitor.sysfsRoot)"


def test_reference_container_from_env() -> None:
    env = {"REFERENCE_NAMESPACE": "rte", "REFERENCE_POD_NAME": "rte-x", "REFERENCE_CONTAINER_NAME": "shared"}
    cfg, _ = load(["--hostname", "n"], env)
    assert cfg.reference == ContainerRef("rte", "rte-x", "shared")
    partial = {"REFERENCE_NAMESPACE": "rte"}
    assert load(["--hostname", "n"], partial)[0].reference is None


def test_hostname_falls_back_to_the_host_name() -> None:
    import socket

    cfg, _ = load([], ENV)
    assert cfg.hostname == socket.gethostname()
    assert cfg.sources["hostname"] == "host name"


def test_metrics_address_alias() -> None:
    assert load(["--metrics-address", "127.0.0.1"], ENV)[0].metrics_address == "127.0.0.1"
    assert load(["--metrics-ip", "127.0.0.2"], ENV)[0].metrics_address == "127.0.0.2"
    assert load([], {"METRICS_ADDRESS": "127.0.0.3"})[0].metrics_address == "127.0.0.3"


# ----------------------------------------------------------------------------- podreadiness

OWN_POD = {"REFERENCE_NAMESPACE": "rte", "REFERENCE_POD_NAME": "rte-x"}


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        pytest.param([], OWN_POD, PodRef("rte", "rte-x"), id="default-on-with-env"),
        pytest.param(["--podreadiness=false"], {}, None, id="off-needs-nothing"),
        pytest.param(["--podreadiness=false"], OWN_POD, None, id="off-ignores-env"),
        pytest.param(["--podreadiness"], {**OWN_POD, "REFERENCE_CONTAINER_NAME": "c"}, PodRef("rte", "rte-x"),
                     id="container-name-not-needed"),
    ],
)  # fmt: skip
def test_readiness_pod(argv: list[str], env: dict[str, str], expected: PodRef | None) -> None:
    cfg, _ = load(["--hostname", "n", *argv], env)
    assert readiness_pod(cfg, env) == expected


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        pytest.param(
            [], {}, "--podreadiness from default: needs the environment variables "
            "REFERENCE_NAMESPACE and REFERENCE_POD_NAME", id="default-without-env",
        ),
        pytest.param(
            ["--podreadiness"], {"REFERENCE_NAMESPACE": "rte"},
            "--podreadiness from flag --podreadiness: needs the environment variable REFERENCE_POD_NAME ",
            id="flag-without-pod-name",
        ),
        pytest.param(
            [], {"REFERENCE_NAMESPACE": "", "REFERENCE_POD_NAME": "p"}, "variable REFERENCE_NAMESPACE ",
            id="empty-is-missing",
        ),
    ],
)  # fmt: skip
def test_readiness_pod_missing(argv: list[str], env: dict[str, str], message: str) -> None:
    cfg, _ = load(["--hostname", "n", *argv], env)
    with pytest.raises(ConfigError, match=re.escape(message)):
        readiness_pod(cfg, env)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        pytest.param(
            ["--sleep-interval", "10"], {}, "--sleep-interval from flag.*missing unit", id="duration-unit"
        ),
        pytest.param(["--sleep-interval", "soon"], {}, 'time: invalid duration "soon"', id="duration"),
        pytest.param(["--sleep-interval=-1s"], {}, "must not be negative", id="negative-interval"),
        pytest.param(["--metrics-mode", "https"], {}, "unknown mode 'https'", id="metrics-mode"),
        pytest.param(["--metrics-port", "70000"], {}, "out of range", id="port-range"),
        pytest.param(
            [], {"METRICS_PORT": "abc"}, "--metrics-port from env METRICS_PORT: invalid integer", id="env-int"
        ),
        pytest.param(["--no-publish=maybe"], {}, "invalid boolean 'maybe'", id="bool"),
        pytest.param(
            ["--pods-fingerprint-method", "exclude-terminal"], {}, "unsupported pods fingerprint", id="pfp"
        ),
        pytest.param(
            ["--podresources-socket", "tcp://x:1"], {}, "unsupported podresources endpoint", id="socket"
        ),
        pytest.param(
            ["--podresources-socket", "relative.sock"], {}, "unsupported podresources endpoint", id="relative"
        ),
        pytest.param(["--reference-container", "a/b"], {}, "malformed reference container", id="reference"),
        pytest.param(
            ["--topology-manager-policy", "single-numa"], {}, "unknown policy 'single-numa'", id="policy"
        ),
        pytest.param(
            [],
            {"TOPOLOGY_MANAGER_SCOPE": "node"},
            "from env TOPOLOGY_MANAGER_SCOPE: unknown scope",
            id="scope",
        ),
        pytest.param(
            ["--config", "/nonexistent/rte.yaml"], {}, "does not exist", id="explicit-config-missing"
        ),
        pytest.param(
            ["--metrics-mode=httptls", "--metrics-tls-min-version=VersionTLS99"],
            {},
            "--metrics-tls-min-version from flag --metrics-tls-min-version: metrics TLS policy: "
            'unknown tls version "VersionTLS99"',
            id="tls-min-version",
        ),
        pytest.param(
            [
                "--metrics-mode=httptls",
                "--metrics-tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,BAD",
            ],
            {},
            "--metrics-tls-cipher-suites from flag --metrics-tls-cipher-suites: metrics TLS policy: "
            "Cipher suite BAD not supported or doesn't exist",
            id="tls-cipher",
        ),
        pytest.param(
            # OpenSSL's names are the profile's, not the flag's (Go's crypto/tls names).
            ["--metrics-mode=httptls", "--metrics-tls-cipher-suites=ECDHE-RSA-AES128-GCM-SHA256"],
            {},
            "Cipher suite ECDHE-RSA-AES128-GCM-SHA256 not supported",
            id="tls-cipher-openssl-name",
        ),
    ],
)
def test_bad_values_name_the_setting_and_source(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(["--hostname", "n", *argv], env)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            "topologyExporter: {sleepIntervall: 1s}\n",
            "unknown key.*topologyExporter.sleepIntervall",
            id="typo",
        ),
        pytest.param("- a\n- b\n", "must be a mapping", id="not-a-mapping"),
        pytest.param("kubelet: [\n", "not valid YAML", id="bad-yaml"),
        pytest.param("resourceExclude: [memory]\n", "resourceExclude must map", id="resource-exclude"),
        pytest.param("podExclude: [{nsPattern: x}]\n", "bad podExclude item", id="pod-exclude"),
        pytest.param(
            "nrtUpdater: {patchResync: many}\n", "nrtUpdater.patchResync.*invalid integer", id="int"
        ),
    ],
)
def test_bad_config_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load(["--config", str(path), "--hostname", "n"], ENV)


def test_unknown_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        load(["--sysfs-root", "/x"], ENV)
    assert exc.value.code == 2
    assert "unrecognized arguments: --sysfs-root" in capsys.readouterr().err


# ----------------------------------------------------------------------------- topology manager


def test_topology_manager_from_flags_wins(tmp_path: Path) -> None:
    kubelet = write(
        tmp_path, {"topologyManagerPolicy": "restricted", "topologyManagerScope": "pod"}, "kubelet.yaml"
    )
    argv = ["--kubelet-config-file", str(kubelet), "--topology-manager-policy", "best-effort"]
    cfg, _ = load([*argv, "--topology-manager-scope", "container"], ENV)
    assert resolve_topology_manager(cfg)[0] == TopologyManager("best-effort", "container")
    # Only one of the two given: both come from the kubelet configuration.
    cfg, _ = load(argv, ENV)
    assert resolve_topology_manager(cfg)[0] == TopologyManager("restricted", "pod")


def test_kubelet_config_is_read_verbatim_with_reserved_cpus(tmp_path: Path) -> None:
    kubelet = write(tmp_path, {"kind": "KubeletConfiguration", "reservedSystemCPUs": "0,16"}, "kubelet.yaml")
    cfg, _ = load(["--kubelet-config-file", str(kubelet)], ENV)
    tm, settings = resolve_topology_manager(cfg)
    assert tm == TopologyManager("", "")  # unset fields stay empty: no defaulting, as upstream
    assert settings is not None and settings.reserved_system_cpus == (0, 16)


def test_no_topology_manager_source_is_an_error(tmp_path: Path) -> None:
    cfg, _ = load(["--kubelet-config-file", str(tmp_path / "absent.yaml")], ENV)
    with pytest.raises(ConfigError, match=r"--topology-manager-policy.*absent\.yaml does not exist"):
        resolve_topology_manager(cfg)


def test_bad_kubelet_config(tmp_path: Path) -> None:
    kubelet = write(tmp_path, {"reservedSystemCPUs": "3-1"}, "kubelet.yaml")
    cfg, _ = load(["--kubelet-config-file", str(kubelet)], ENV)
    with pytest.raises(ConfigError, match="reservedSystemCPUs"):
        resolve_topology_manager(cfg)


# ----------------------------------------------------------------------------- durations, dump, CLI


@pytest.mark.parametrize(
    ("text", "seconds", "canonical"),
    [
        pytest.param("0", 0.0, "0s", id="zero"),
        pytest.param("60s", 60.0, "1m0s", id="minute"),
        pytest.param("1m30s", 90.0, "1m30s", id="compound"),
        pytest.param("500ms", 0.5, "500ms", id="millis"),
        pytest.param("1.5s", 1.5, "1.5s", id="fraction"),
        pytest.param("2h", 7200.0, "2h0m0s", id="hours"),
        pytest.param("10us", 1e-5, "10µs", id="micros"),
    ],
)
def test_durations(text: str, seconds: float, canonical: str) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert format_duration(seconds) == canonical


def test_metrics_tls_settings_are_checked_only_for_httptls() -> None:
    """As upstream, the TLS policy is built when the httptls server is set up: other modes ignore it."""
    cfg, _ = load(["--hostname", "n", "--metrics-mode=http", "--metrics-tls-min-version=bogus"], ENV)
    assert cfg.metrics_tls_min_version == "bogus"


def test_metrics_tls_settings_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "topologyExporter:\n  metricsMode: httptls\n  metricsTLS:\n    minTLSVersion: VersionTLS12\n"
        "    cipherSuites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305\n"
    )
    cfg, _ = load(["--config", str(path), "--hostname", "n"], ENV)
    policy = cfg.metrics_tls_policy
    assert policy is not None
    assert (policy.min_version, policy.max_version, policy.cipher_suites) == (0x0303, None, (0xC02F, 0xCCA8))
    flagged, _ = load(
        ["--config", str(path), "--hostname", "n", "--metrics-tls-min-version=VersionTLS13"], ENV
    )
    assert flagged.metrics_tls_policy is not None
    assert (flagged.metrics_tls_policy.min_version, flagged.metrics_tls_policy.max_version) == (
        0x0304,
        0x0304,
    )


def test_dump_reads_back(tmp_path: Path) -> None:
    cfg, _ = load(["--config", str(write(tmp_path, SETTINGS_FILE)), "--hostname", "x"], ENV)
    cfg.resource_exclude = {"*": ["memory"]}
    cfg.pod_exclude = [PodExclude("a", "b")]
    dumped = tmp_path / "dumped.yaml"
    dumped.write_text(config.dump(cfg))
    again, _ = load(["--config", str(dumped)], ENV)
    for attr in (
        "hostname",
        "sleep_interval",
        "sysfs",
        "patch_resync",
        "metrics_port",
        "notify_file",
        "no_publish",
        "metrics_tls_min_version",
        "metrics_tls_cipher_suites",
    ):
        assert getattr(again, attr) == getattr(cfg, attr), attr
    assert again.resource_exclude == cfg.resource_exclude and again.pod_exclude == cfg.pod_exclude


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nrop.rte.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


#: Upstream's flags (RTE's pkg/config/flags.go): flag, our attribute, default, daemon config-file key.
UPSTREAM_FLAGS = [
    ("--debug", "debug", False, "global.debug"),
    ("-v", "verbose", 2, "global.verbose"),
    ("--kubeconfig", "kubeconfig", "", "global.kubeconfig"),
    ("--no-publish", "no_publish", False, "nrtUpdater.noPublish"),
    ("--oneshot", "oneshot", False, "nrtUpdater.oneShot"),
    ("--hostname", "hostname", "", "nrtUpdater.hostname"),
    ("--patch-mode", "patch_mode", True, "nrtUpdater.patchMode"),
    ("--patch-resync", "patch_resync", 10, "nrtUpdater.patchResync"),
    ("--watch-namespace", "watch_namespace", "", "resourceMonitor.namespace"),
    ("--sysfs", "sysfs", "/sys", "resourceMonitor.sysfsRoot"),
    ("--pods-fingerprint", "pods_fingerprint", True, "resourceMonitor.podSetFingerprint"),
    ("--pods-fingerprint-method", "pods_fingerprint_method", "with-exclusive-resources",
     "resourceMonitor.podSetFingerprintMethod"),
    ("--pods-fingerprint-status-file", "pods_fingerprint_status_file", "",
     "resourceMonitor.podSetFingerprintStatusFile"),
    ("--refresh-node-resources", "refresh_node_resources", False, "resourceMonitor.refreshNodeResources"),
    ("--exclude-terminal-pods", "exclude_terminal_pods", False, "resourceMonitor.excludeTerminalPods"),
    ("--topology-manager-policy", "topology_manager_policy", "", "kubelet.topologyManagerPolicy"),
    ("--topology-manager-scope", "topology_manager_scope", "", "kubelet.topologyManagerScope"),
    ("--sleep-interval", "sleep_interval", 60.0, "topologyExporter.sleepInterval"),
    ("--kubelet-config-file", "kubelet_config_file", "/podresources/config.yaml", None),  # no key upstream
    ("--podresources-socket", "podresources_socket", "unix:///podresources/kubelet.sock",
     "topologyExporter.podResourcesSocketPath"),
    ("--podreadiness", "podreadiness", True, "topologyExporter.podReadinessEnable"),
    ("--add-nrt-owner", "add_nrt_owner", True, "topologyExporter.addNRTOwnerEnable"),
    ("--metrics-mode", "metrics_mode", "disabled", "topologyExporter.metricsMode"),
    ("--metrics-port", "metrics_port", 2112, "topologyExporter.metricsPort"),
    ("--metrics-ip", "metrics_address", "0.0.0.0", "topologyExporter.MetricsAddress"),
    ("--metrics-certs-dir", "metrics_certs_dir", "/etc/secrets/rte", "topologyExporter.metricsTLS.certsDir"),
    ("--metrics-cert-file", "metrics_cert_file", "tls.crt", "topologyExporter.metricsTLS.certFile"),
    ("--metrics-key-file", "metrics_key_file", "tls.key", "topologyExporter.metricsTLS.keyFile"),
    ("--metrics-want-cli-auth", "metrics_want_cli_auth", False, "topologyExporter.metricsTLS.wantCliAuth"),
    ("--metrics-tls-min-version", "metrics_tls_min_version", "", "topologyExporter.metricsTLS.minTLSVersion"),
    ("--metrics-tls-cipher-suites", "metrics_tls_cipher_suites", "", "topologyExporter.metricsTLS.cipherSuites"),
    ("--reference-container", "reference_container", "", "topologyExporter.referenceContainer"),
    ("--notify-file", "notify_file", "", "topologyExporter.notifyFilePath"),
    ("--max-events-per-second", "max_events_per_second", 1, "topologyExporter.maxEventPerTimeUnit"),
]  # fmt: skip
#: Upstream flags this exporter does not implement: --help must not claim them (see rte/README.md).
NOT_IMPLEMENTED = ("--expose-timing",)


@pytest.mark.parametrize(
    ("flag", "attr", "default", "file_key"), [pytest.param(*row, id=row[0]) for row in UPSTREAM_FLAGS]
)
def test_upstream_flags_defaults_and_file_keys(
    flag: str, attr: str, default: object, file_key: str | None
) -> None:
    (setting,) = [s for s in config._SETTINGS if flag in s.flags]
    assert setting.attr == attr
    assert getattr(config.Config(), attr) == default
    if file_key is not None:
        assert setting.file_key == file_key


def test_help_claims_no_unimplemented_upstream_flag() -> None:
    text = config.build_parser().format_help()
    for flag in NOT_IMPLEMENTED:
        assert flag not in text, flag
    claimed = {f for s in config._SETTINGS for f in s.flags if f.startswith("--")}
    upstream = {row[0] for row in UPSTREAM_FLAGS}
    assert claimed - upstream == {"--verbose", "--metrics-address"}  # aliases of -v and --metrics-ip


def test_help_documents_every_flag() -> None:
    result = _cli("--help")
    assert result.returncode == 0
    for setting in config._SETTINGS:
        for flag in setting.flags:
            assert flag in result.stdout, flag
    for flag in ("--config", "--dump-config", "--version"):
        assert flag in result.stdout
    text = " ".join(result.stdout.split())
    assert "env NODE_NAME; config file: nrtUpdater.hostname" in text


def test_cli_bad_value_exits_2_with_a_clear_message() -> None:
    result = _cli("--hostname", "n", "--sleep-interval", "often")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        'resource-topology-exporter: error: --sleep-interval from flag --sleep-interval: time: invalid duration "often"'
    )


def test_cli_missing_topology_manager_exits_2(tmp_path: Path) -> None:
    result = _cli("--hostname", "n", "--no-publish", "--kubelet-config-file", str(tmp_path / "none.yaml"))
    assert result.returncode == 2
    assert "cannot tell the topology manager settings" in result.stderr


def test_cli_podreadiness_without_its_pod_exits_2(tmp_path: Path) -> None:
    # The environment of the test run must not provide the pod: start from a clean one.
    result = subprocess.run(
        [sys.executable, "-m", "nrop.rte.main", "--hostname", "n", "--no-publish",
         "--topology-manager-policy", "none", "--topology-manager-scope", "container"],
        capture_output=True, text=True, timeout=60, check=False, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "resource-topology-exporter: error: --podreadiness from default: needs the environment variables "
        "REFERENCE_NAMESPACE and REFERENCE_POD_NAME (namespace and name of the exporter's own pod, whose "
        "conditions it sets); set them, or pass --podreadiness=false"
    )


def test_cli_dump_config_and_exit() -> None:
    result = _cli("--hostname", "dumped", "--sleep-interval", "10s", "--dump-config", ".andexit")
    assert result.returncode == 0, result.stderr
    dumped = yaml.safe_load(result.stdout)
    assert dumped["nrtUpdater"]["hostname"] == "dumped"
    assert dumped["topologyExporter"]["sleepInterval"] == "10s"
    # Dumped although the environment names no pod for --podreadiness, as upstream.
    assert dumped["topologyExporter"]["podReadinessEnable"] is True
    assert dumped["topologyExporter"]["MetricsAddress"] == "0.0.0.0"
    assert dumped["resourceMonitor"]["excludeTerminalPods"] is False
