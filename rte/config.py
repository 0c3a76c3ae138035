"""The exporter's configuration: flags, config file, environment, and the kubelet's settings.

This module owns turning ``argv`` + environment + files into one validated
:class:`Config`, with one precedence rule for every setting:
**defaults → config file (``--config``) → environment → flags**. Flag names, defaults,
environment variables and config-file keys mirror upstream RTE where it has them (see
``rte/README.md`` for the file format); ``--help`` lists each with its sources.

Bad values raise :class:`ConfigError` naming the setting, where the value came from and
what is accepted; ``main`` turns it into exit status 2 (as argparse does for unknown
flags). :func:`resolve_topology_manager` applies upstream's rule for the topology
manager settings: both policy and scope given (flag, env or file) win; otherwise the
kubelet configuration file is read. :func:`readiness_pod` checks what ``--podreadiness``
needs from the environment.
"""

from __future__ import annotations

import argparse
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

import yaml

from nrop.api import fingerprint, tlsprofiles
from nrop.api.durations import format_duration, parse_duration
from nrop.api.nrt import TOPOLOGY_MANAGER_POLICIES, TOPOLOGY_MANAGER_SCOPES
from nrop.rte.decisions.nrtinfo import TopologyManager
from nrop.rte.decisions.scan import ContainerRef, PodExclude
from nrop.rte.podreadiness import PodRef, pod_from_env
from nrop.rte.podres import DEFAULT_SOCKET, parse_endpoint
from nrop.rte.sysinfo import parse_cpulist

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "METRICS_MODES",
    "Config",
    "ConfigError",
    "KubeletSettings",
    "build_parser",
    "dump",
    "format_duration",
    "load",
    "parse_duration",
    "read_kubelet_config",
    "readiness_pod",
    "resolve_topology_manager",
]

PROG: Final = "resource-topology-exporter"
DEFAULT_CONFIG_FILE: Final = "/etc/resource-topology-exporter/config.yaml"
METRICS_MODES: Final = ("disabled", "http", "httptls")


class ConfigError(Exception):
    """A setting has a value the exporter cannot use; the text says which, from where, and why."""


# ----------------------------------------------------------------------------- value types

_TRUE: Final = ("1", "t", "T", "TRUE", "true", "True")
_FALSE: Final = ("0", "f", "F", "FALSE", "false", "False")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _TRUE:
        return True
    if isinstance(value, str) and value in _FALSE:
        return False
    raise ValueError(f"invalid boolean {value!r} (expected true or false)")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"invalid integer {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value)
    raise ValueError(f"invalid integer {value!r}")


def _to_duration(value: Any) -> float:
    # Upstream's daemon config stores durations as integer nanoseconds.
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int):
        return value / 1e9
    if isinstance(value, str):
        return parse_duration(value)
    raise ValueError(f"invalid duration {value!r}")


def _to_str(value: Any) -> str:
    if isinstance(value, (dict, list)):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return "" if value is None else str(value)


_CONVERTERS: Final[dict[str, Callable[[Any], Any]]] = {
    "str": _to_str,
    "bool": _to_bool,
    "int": _to_int,
    "duration": _to_duration,
}


# ----------------------------------------------------------------------------- the settings


@dataclass(frozen=True)
class _Setting:
    attr: str
    flags: tuple[str, ...]
    kind: str
    help: str
    file_key: str | None = None
    env: str | None = None
    metavar: str | None = None


_SETTINGS: Final = (
    _Setting("debug", ("--debug",), "bool", "log at debug level", "global.debug"),
    _Setting("verbose", ("-v", "--verbose"), "int", "log verbosity; 4 and above is debug", "global.verbose", metavar="N"),
    _Setting("kubeconfig", ("--kubeconfig",), "str", "kubeconfig file; empty: in-cluster, then ~/.kube/config",
             "global.kubeconfig", "KUBECONFIG", "PATH"),
    _Setting("no_publish", ("--no-publish",), "bool", "scan but do not write NRT objects; print each as JSON on stdout",
             "nrtUpdater.noPublish"),
    _Setting("oneshot", ("--oneshot",), "bool", "scan and publish once, then exit", "nrtUpdater.oneShot"),
    _Setting("hostname", ("--hostname",), "str", "node name, and name of the NRT object; empty: the host name",
             "nrtUpdater.hostname", "NODE_NAME", "NAME"),
    _Setting("patch_mode", ("--patch-mode",), "bool", "write with merge patches, a full update every --patch-resync",
             "nrtUpdater.patchMode"),
    _Setting("patch_resync", ("--patch-resync",), "int", "patches between full updates (0: never)",
             "nrtUpdater.patchResync", metavar="N"),
    _Setting("watch_namespace", ("--watch-namespace",), "str", "count only pods of this namespace (empty: all)",
             "resourceMonitor.namespace", metavar="NS"),
    _Setting("sysfs", ("--sysfs",), "str", "root of the sysfs tree to read", "resourceMonitor.sysfsRoot", metavar="PATH"),
    _Setting("pods_fingerprint", ("--pods-fingerprint",), "bool", "publish the pods fingerprint attribute",
             "resourceMonitor.podSetFingerprint"),
    _Setting("pods_fingerprint_method", ("--pods-fingerprint-method",), "str",
             "pods in the fingerprint: all or with-exclusive-resources", "resourceMonitor.podSetFingerprintMethod",
             metavar="METHOD"),
    _Setting("pods_fingerprint_status_file", ("--pods-fingerprint-status-file",), "str",
             "write the fingerprint's pod list as JSON here after each scan", "resourceMonitor.podSetFingerprintStatusFile",
             "PFP_STATUS_FILE", "PATH"),
    _Setting("refresh_node_resources", ("--refresh-node-resources",), "bool",
             "re-read allocatable resources from the kubelet before every scan", "resourceMonitor.refreshNodeResources"),
    _Setting("exclude_terminal_pods", ("--exclude-terminal-pods",), "bool",
             "do not count pods that have ended (Succeeded/Failed, watched through the API) even if the kubelet "
             "still lists them", "resourceMonitor.excludeTerminalPods"),
    _Setting("topology_manager_policy", ("--topology-manager-policy",), "str",
             "kubelet topology manager policy to publish (else from the kubelet config file)",
             "kubelet.topologyManagerPolicy", "TOPOLOGY_MANAGER_POLICY", "POLICY"),
    _Setting("topology_manager_scope", ("--topology-manager-scope",), "str",
             "kubelet topology manager scope to publish (else from the kubelet config file)",
             "kubelet.topologyManagerScope", "TOPOLOGY_MANAGER_SCOPE", "SCOPE"),
    _Setting("kubelet_config_file", ("--kubelet-config-file",), "str",
             "KubeletConfiguration to read the topology manager settings and reserved CPUs from",
             "topologyExporter.kubeletConfigFile", metavar="PATH"),
    _Setting("sleep_interval", ("--sleep-interval",), "duration", "periodic refresh interval, Go syntax (0: off)",
             "topologyExporter.sleepInterval", metavar="DURATION"),
    _Setting("podresources_socket", ("--podresources-socket",), "str", "kubelet podresources socket (unix:///path)",
             "topologyExporter.podResourcesSocketPath", metavar="ENDPOINT"),
    _Setting("podreadiness", ("--podreadiness",), "bool",
             "set the PodresourcesFetched and NodeTopologyUpdated conditions on the exporter's own pod, named by "
             "env REFERENCE_NAMESPACE and REFERENCE_POD_NAME (required when true)",
             "topologyExporter.podReadinessEnable"),
    _Setting("add_nrt_owner", ("--add-nrt-owner",), "bool", "make the Node the owner of its NRT object",
             "topologyExporter.addNRTOwnerEnable"),
    _Setting("metrics_mode", ("--metrics-mode",), "str", "Prometheus endpoint: disabled, http or httptls",
             "topologyExporter.metricsMode", metavar="MODE"),
    _Setting("metrics_port", ("--metrics-port",), "int", "metrics port", "topologyExporter.metricsPort", "METRICS_PORT",
             "PORT"),
    _Setting("metrics_address", ("--metrics-ip", "--metrics-address"), "str", "metrics bind address",
             "topologyExporter.MetricsAddress", "METRICS_ADDRESS", "IP"),
    _Setting("metrics_certs_dir", ("--metrics-certs-dir",), "str", "directory of the httptls certificate and key",
             "topologyExporter.metricsTLS.certsDir", metavar="DIR"),
    _Setting("metrics_cert_file", ("--metrics-cert-file",), "str", "certificate file name in --metrics-certs-dir",
             "topologyExporter.metricsTLS.certFile", metavar="NAME"),
    _Setting("metrics_key_file", ("--metrics-key-file",), "str", "key file name in --metrics-certs-dir",
             "topologyExporter.metricsTLS.keyFile", metavar="NAME"),
    _Setting("metrics_want_cli_auth", ("--metrics-want-cli-auth",), "bool",
             "require client certificates (httptls)", "topologyExporter.metricsTLS.wantCliAuth"),
    _Setting("metrics_tls_min_version", ("--metrics-tls-min-version",), "str",
             "minimum TLS version of the httptls server: VersionTLS10, VersionTLS11, VersionTLS12 or "
             "VersionTLS13 (pins TLS 1.3 and ignores the cipher list); empty: TLS 1.2",
             "topologyExporter.metricsTLS.minTLSVersion", metavar="VERSION"),
    _Setting("metrics_tls_cipher_suites", ("--metrics-tls-cipher-suites",), "str",
             "comma-separated TLS 1.2 cipher suites of the httptls server, Go's crypto/tls names as "
             "kube-apiserver's --tls-cipher-suites; empty: the defaults",
             "topologyExporter.metricsTLS.cipherSuites", metavar="NAMES"),
    _Setting("reference_container", ("--reference-container",), "str",
             "namespace/pod/container whose CPUs are the shared pool (else REFERENCE_NAMESPACE, "
             "REFERENCE_POD_NAME, REFERENCE_CONTAINER_NAME)", "topologyExporter.referenceContainer", metavar="REF"),
    _Setting("notify_file", ("--notify-file",), "str", "refresh when this file is touched (reactive mode)",
             "topologyExporter.notifyFilePath", metavar="PATH"),
    _Setting("max_events_per_second", ("--max-events-per-second",), "int",
             "scans per time unit at most (0: unlimited)", "topologyExporter.maxEventPerTimeUnit", metavar="N"),
    _Setting("time_unit_to_limit_events", (), "duration", "the rate limit's time unit",
             "topologyExporter.timeUnitToLimitEvents"),
)  # fmt: skip

_BY_ATTR: Final = {s.attr: s for s in _SETTINGS}
_BY_FILE_KEY: Final = {s.file_key: s for s in _SETTINGS if s.file_key}
_LIST_KEYS: Final = ("resourceExclude", "podExclude")


@dataclass
class Config:
    """Every setting of the exporter, resolved. Durations are seconds."""

    config_file: str = DEFAULT_CONFIG_FILE
    debug: bool = False
    verbose: int = 2
    kubeconfig: str = ""
    no_publish: bool = False
    oneshot: bool = False
    hostname: str = ""
    patch_mode: bool = True
    patch_resync: int = 10
    watch_namespace: str = ""
    sysfs: str = "/sys"
    pods_fingerprint: bool = True
    pods_fingerprint_method: str = fingerprint.DEFAULT_METHOD.value
    pods_fingerprint_status_file: str = ""
    refresh_node_resources: bool = False
    exclude_terminal_pods: bool = False
    topology_manager_policy: str = ""
    topology_manager_scope: str = ""
    kubelet_config_file: str = "/podresources/config.yaml"
    sleep_interval: float = 60.0
    podresources_socket: str = DEFAULT_SOCKET
    podreadiness: bool = True
    add_nrt_owner: bool = True
    metrics_mode: str = "disabled"
    metrics_port: int = 2112
    metrics_address: str = "0.0.0.0"
    metrics_certs_dir: str = "/etc/secrets/rte"
    metrics_cert_file: str = "tls.crt"
    metrics_key_file: str = "tls.key"
    metrics_want_cli_auth: bool = False
    metrics_tls_min_version: str = ""
    metrics_tls_cipher_suites: str = ""
    reference_container: str = ""
    notify_file: str = ""
    max_events_per_second: int = 1
    time_unit_to_limit_events: float = 1.0
    resource_exclude: dict[str, list[str]] = field(default_factory=dict)
    pod_exclude: list[PodExclude] = field(default_factory=list)
    #: Where each setting's value came from: ``default``, ``file``, ``env NAME`` or ``flag``.
    sources: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def fingerprint_method(self) -> fingerprint.Method:
        return fingerprint.normalize_method(self.pods_fingerprint_method)

    @property
    def socket_path(self) -> Path:
        return parse_endpoint(self.podresources_socket)

    @property
    def reference(self) -> ContainerRef | None:
        return ContainerRef.parse(self.reference_container)

    @property
    def metrics_tls_policy(self) -> tlsprofiles.MetricsTLSPolicy | None:
        """The httptls server's version and cipher policy (None: the defaults)."""
        return tlsprofiles.metrics_tls_policy(self.metrics_tls_min_version, self.metrics_tls_cipher_suites)


# ----------------------------------------------------------------------------- parser


def _help(setting: _Setting) -> str:
    default = getattr(Config(), setting.attr)
    if setting.kind == "duration":
        default = format_duration(default)
    elif setting.kind == "bool":
        default = str(default).lower()
    parts = [setting.help, f"default: {default}" if default != "" else "default: empty"]
    if setting.env:
        parts.append(f"env {setting.env}")
    if setting.file_key:
        parts.append(f"config file: {setting.file_key}")
    return "; ".join(parts).replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Publish this node's NUMA resources as a NodeResourceTopology object.",
        epilog="Precedence: defaults, then the config file, then the environment, then flags. "
        "Boolean flags take an optional value (--no-publish, --patch-mode=false).",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"YAML config file, format in rte/README.md (default: {DEFAULT_CONFIG_FILE}, optional unless given)",
    )
    for setting in _SETTINGS:
        if not setting.flags:
            continue
        kwargs: dict[str, Any] = {"dest": setting.attr, "default": argparse.SUPPRESS, "help": _help(setting)}
        if setting.kind == "bool":
            kwargs.update(nargs="?", const="true", metavar="BOOL")
        else:
            kwargs["metavar"] = setting.metavar or setting.kind.upper()
        parser.add_argument(*setting.flags, **kwargs)
    parser.add_argument(
        "--dump-config",
        metavar="DEST",
        default="",
        help="print the resolved config as a config file: '-' stdout, '.andexit' stdout then exit, "
        "'.log' the log, else a file path",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    return parser


# ----------------------------------------------------------------------------- loading


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if dotted in _LIST_KEYS or dotted in _BY_FILE_KEY or not isinstance(value, Mapping):
            flat[dotted] = value
        else:
            flat.update(_flatten(value, dotted + "."))
    return flat


def _read_config_file(path: Path, explicit: bool) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path} (--config) does not exist") from None
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"config file {path} must be a mapping, got {type(data).__name__}")
    flat = _flatten(data)
    unknown = sorted(k for k in flat if k not in _BY_FILE_KEY and k not in _LIST_KEYS)
    if unknown:
        raise ConfigError(f"config file {path}: unknown key(s) {', '.join(unknown)} (see rte/README.md)")
    return flat


def _resource_exclude(value: Any, path: Path) -> dict[str, list[str]]:
    if not isinstance(value, Mapping) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values()
    ):
        raise ConfigError(
            f"config file {path}: resourceExclude must map node names (or '*') to lists of resources"
        )
    return {str(k): list(v) for k, v in value.items()}


def _pod_exclude(value: Any, path: Path) -> list[PodExclude]:
    if not isinstance(value, list):
        raise ConfigError(
            f"config file {path}: podExclude must be a list of {{namespacePattern, namePattern}}"
        )
    items = []
    for item in value:
        if not isinstance(item, Mapping) or set(item) - {"namespacePattern", "namePattern"}:
            raise ConfigError(f"config file {path}: bad podExclude item {item!r}")
        items.append(PodExclude(str(item.get("namespacePattern", "*")), str(item.get("namePattern", "*"))))
    return items


def _env_reference(environ: Mapping[str, str]) -> str:
    parts = [environ.get(f"REFERENCE_{k}", "") for k in ("NAMESPACE", "POD_NAME", "CONTAINER_NAME")]
    return "/".join(parts) if all(parts) else ""


def load(argv: Sequence[str] | None, environ: Mapping[str, str]) -> tuple[Config, argparse.Namespace]:
    """Resolve the config from ``argv`` and ``environ``; also returns the parsed flags.

    argparse handles unknown flags itself (usage, exit 2); everything else that is wrong
    raises :class:`ConfigError`.
    """
    args = build_parser().parse_args(argv)
    explicit = vars(args)
    cfg = Config()
    raw: dict[str, tuple[Any, str]] = {}

    path = Path(explicit.get("config", DEFAULT_CONFIG_FILE))
    cfg.config_file = str(path)
    flat = _read_config_file(path, "config" in explicit)
    for key, value in flat.items():
        if key == "resourceExclude":
            cfg.resource_exclude = _resource_exclude(value, path)
        elif key == "podExclude":
            cfg.pod_exclude = _pod_exclude(value, path)
        else:
            raw[_BY_FILE_KEY[key].attr] = (value, f"config file {path} ({key})")
    for setting in _SETTINGS:
        if setting.env and environ.get(setting.env, ""):
            raw[setting.attr] = (environ[setting.env], f"env {setting.env}")
    if reference := _env_reference(environ):
        raw["reference_container"] = (reference, "env REFERENCE_*")
    for setting in _SETTINGS:
        if setting.attr in explicit:
            raw[setting.attr] = (explicit[setting.attr], f"flag {setting.flags[-1]}")

    for attr, (value, source) in raw.items():
        setting = _BY_ATTR[attr]
        try:
            setattr(cfg, attr, _CONVERTERS[setting.kind](value))
        except ValueError as exc:
            raise ConfigError(f"{_name(setting)} from {source}: {exc}") from None
        cfg.sources[attr] = source
    _validate(cfg)
    if not cfg.hostname:
        cfg.hostname = socket.gethostname()
        cfg.sources["hostname"] = "host name"
    return cfg, args


def _name(setting: _Setting) -> str:
    return setting.flags[-1] if setting.flags else str(setting.file_key)


def _fail(cfg: Config, attr: str, message: str) -> ConfigError:
    setting = _BY_ATTR[attr]
    return ConfigError(f"{_name(setting)} from {cfg.sources.get(attr, 'default')}: {message}")


def _validate(cfg: Config) -> None:
    if cfg.metrics_mode not in METRICS_MODES:
        raise _fail(
            cfg, "metrics_mode", f"unknown mode {cfg.metrics_mode!r} (expected {', '.join(METRICS_MODES)})"
        )
    if cfg.metrics_mode == "httptls":
        # As upstream, checked only when the TLS server is set up: other modes ignore them.
        checks = (
            ("metrics_tls_min_version", cfg.metrics_tls_min_version, ""),
            ("metrics_tls_cipher_suites", "", cfg.metrics_tls_cipher_suites),
        )
        for attr, version, ciphers in checks:
            try:
                tlsprofiles.metrics_tls_policy(version, ciphers)
            except tlsprofiles.ProfileError as exc:
                raise _fail(cfg, attr, str(exc)) from None
    try:
        cfg.pods_fingerprint_method = fingerprint.normalize_method(cfg.pods_fingerprint_method).value
    except ValueError as exc:
        raise _fail(cfg, "pods_fingerprint_method", str(exc)) from None
    for attr in ("sleep_interval", "time_unit_to_limit_events"):
        if getattr(cfg, attr) < 0:
            raise _fail(cfg, attr, "must not be negative")
    for attr in ("patch_resync", "max_events_per_second"):
        if getattr(cfg, attr) < 0:
            raise _fail(cfg, attr, "must not be negative")
    if not 0 <= cfg.metrics_port <= 65535:
        raise _fail(cfg, "metrics_port", f"port {cfg.metrics_port} out of range 0-65535")
    try:
        parse_endpoint(cfg.podresources_socket)
    except ValueError as exc:
        raise _fail(cfg, "podresources_socket", str(exc)) from None
    try:
        ContainerRef.parse(cfg.reference_container)
    except ValueError as exc:
        raise _fail(cfg, "reference_container", str(exc)) from None
    if cfg.topology_manager_policy and cfg.topology_manager_policy not in TOPOLOGY_MANAGER_POLICIES:
        raise _fail(
            cfg,
            "topology_manager_policy",
            f"unknown policy {cfg.topology_manager_policy!r} (expected {', '.join(TOPOLOGY_MANAGER_POLICIES)})",
        )
    if cfg.topology_manager_scope and cfg.topology_manager_scope not in TOPOLOGY_MANAGER_SCOPES:
        raise _fail(
            cfg,
            "topology_manager_scope",
            f"unknown scope {cfg.topology_manager_scope!r} (expected {', '.join(TOPOLOGY_MANAGER_SCOPES)})",
        )


# ----------------------------------------------------------------------------- kubelet config


@dataclass(frozen=True)
class KubeletSettings:
    """What the exporter reads from a ``KubeletConfiguration`` (verbatim, no defaulting)."""

    topology_manager_policy: str = ""
    topology_manager_scope: str = ""
    reserved_system_cpus: tuple[int, ...] = ()


def read_kubelet_config(path: Path) -> KubeletSettings:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read kubelet config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"kubelet config file {path} is not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from None
    except (yaml.YAMLError, RecursionError) as exc:  # PyYAML composes nested nodes recursively
        raise ConfigError(f"kubelet config file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"kubelet config file {path} is not a KubeletConfiguration mapping")

    def text(key: str) -> str:
        value = data.get(key)
        # These fields are strings. A list or mapping is refused, not printed: YAML aliases make a
        # few hundred bytes print as billions of elements.
        if isinstance(value, (list, dict, set)):
            raise ConfigError(f"kubelet config file {path}: {key} must be a string")
        return str(value or "")

    try:
        reserved = parse_cpulist(text("reservedSystemCPUs"))
    except ValueError as exc:
        raise ConfigError(f"kubelet config file {path}: reservedSystemCPUs: {exc}") from None
    return KubeletSettings(
        topology_manager_policy=text("topologyManagerPolicy"),
        topology_manager_scope=text("topologyManagerScope"),
        reserved_system_cpus=reserved,
    )


def resolve_topology_manager(cfg: Config) -> tuple[TopologyManager, KubeletSettings | None]:
    """Upstream's ``getTopologyManagerSettings``, plus the kubelet settings when readable.

    Policy and scope both set (flag, env, file) are used; otherwise both come from
    ``--kubelet-config-file``, verbatim. Neither available is a :class:`ConfigError`.
    """
    kubelet_path = Path(cfg.kubelet_config_file) if cfg.kubelet_config_file else None
    kubelet = read_kubelet_config(kubelet_path) if kubelet_path and kubelet_path.is_file() else None
    if cfg.topology_manager_policy and cfg.topology_manager_scope:
        return TopologyManager(cfg.topology_manager_policy, cfg.topology_manager_scope), kubelet
    if kubelet is not None:
        return TopologyManager(kubelet.topology_manager_policy, kubelet.topology_manager_scope), kubelet
    where = f" and kubelet config file {kubelet_path} does not exist" if kubelet_path else ""
    raise ConfigError(
        "cannot tell the topology manager settings: give --topology-manager-policy and "
        f"--topology-manager-scope (or the config file's kubelet section){where}"
    )


def readiness_pod(cfg: Config, environ: Mapping[str, str]) -> PodRef | None:
    """The pod whose conditions ``--podreadiness`` sets (None when off); a :class:`ConfigError` without one.

    As upstream, this is checked when the exporter starts working, not while loading
    the configuration, so ``--dump-config`` works without the pod's environment.
    """
    if not cfg.podreadiness:
        return None
    try:
        return pod_from_env(environ)
    except ValueError as exc:
        raise _fail(cfg, "podreadiness", str(exc)) from None


# ----------------------------------------------------------------------------- dumping


def dump(cfg: Config) -> str:
    """The resolved config as a config file (YAML) that ``--config`` reads back."""
    tree: dict[str, Any] = {}
    for item in fields(Config):
        setting = _BY_ATTR.get(item.name)
        if setting is None or setting.file_key is None:
            continue
        value = getattr(cfg, item.name)
        if setting.kind == "duration":
            value = format_duration(value)
        node = tree
        *parents, leaf = setting.file_key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    if cfg.resource_exclude:
        tree["resourceExclude"] = cfg.resource_exclude
    if cfg.pod_exclude:
        tree["podExclude"] = [
            {"namespacePattern": p.namespace_pattern, "namePattern": p.name_pattern} for p in cfg.pod_exclude
        ]
    return yaml.safe_dump(tree, sort_keys=False)
