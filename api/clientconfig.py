"""Where a component's API connection comes from: a kubeconfig file or the pod's service account.

Owns reading a kubeconfig (its current context: ``server``, ``certificate-authority``
(``-data``), ``insecure-skip-tls-verify``, ``token``, ``tokenFile``,
``client-certificate``/``client-key`` (``-data``)), the in-cluster configuration
(``KUBERNETES_SERVICE_HOST``/``PORT`` and the service-account token and CA), and the
precedence between them: an explicit path, else ``KUBECONFIG``, else in-cluster, else a
clear error.  Everything is read once, when the client is built; only token files are
re-read later (:class:`TokenSource`), because kubelets rotate projected tokens.

Errors name the file and the field at fault, e.g.
``kubeconfig /x/config: users[name=admin].user.client-key-data: invalid base64``.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "ClientConfig",
    "ClientConfigError",
    "TokenSource",
    "load_in_cluster",
    "load_kubeconfig",
    "resolve_config",
]

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: client-go re-reads token files once a minute.
TOKEN_REREAD_PERIOD = 60.0


class ClientConfigError(Exception):
    """The connection settings cannot be loaded; the message names the source and the field."""


@dataclass(frozen=True)
class ClientConfig:
    """Everything needed to talk to one API server, already read from disk."""

    server: str
    ca_data: bytes | None = None
    insecure: bool = False
    token: str = ""
    token_file: Path | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    namespace: str = "default"
    source: str = ""

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS settings for ``https`` servers (``None`` for plain ``http``)."""
        if not self.server.startswith("https://"):
            return None
        # The system's CA bundle is loaded only when it is the trust: loading it takes some 40 ms
        # of CPU, and every client of every operand of a cluster builds a context.
        if self.insecure:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            context = ssl.create_default_context(cadata=self.ca_data.decode("ascii", errors="replace"))
        else:
            context = ssl.create_default_context()
        if self.client_cert_data and self.client_key_data:
            _load_client_pair(context, self.client_cert_data, self.client_key_data, self.source)
        return context


def _load_client_pair(context: ssl.SSLContext, cert: bytes, key: bytes, source: str) -> None:
    # The ssl module loads certificate chains from files only: use private temporary files.
    with tempfile.TemporaryDirectory(prefix="nrop-client-cert-") as tmp:
        cert_path, key_path = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        try:
            context.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise ClientConfigError(f"{source}: client certificate and key do not load: {exc}") from exc


class TokenSource:
    """The bearer token of every request: fixed, or read from a file and re-read every ``period`` s."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        period: float = TOKEN_REREAD_PERIOD,
    ) -> None:
        self._path = config.token_file
        self._clock = clock
        self._period = period
        self._token = config.token
        self._read_at = clock()

    def token(self) -> str:
        if self._path is not None and self._clock() - self._read_at >= self._period:
            self._read_at = self._clock()
            try:
                self._token = self._path.read_text().strip()
            except OSError as exc:
                # Keep the previous token: a rotation in progress is not a reason to stop.
                log.warning("cannot re-read token file %s (keeping the previous token): %s", self._path, exc)
        return self._token


# ------------------------------------------------------------------------------ kubeconfig


def _named(doc: Mapping[str, Any], section: str, origin: Path) -> dict[str, tuple[dict[str, Any], Path]]:
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise ClientConfigError(f"kubeconfig {origin}: {section}: must be a list")
    out: dict[str, tuple[dict[str, Any], Path]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ClientConfigError(f"kubeconfig {origin}: {section}[{i}].name: Required value")
        out[entry["name"]] = (entry, origin)
    return out


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ClientConfigError(f"kubeconfig {path}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ClientConfigError(f"kubeconfig {path}: not valid YAML: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ClientConfigError(f"kubeconfig {path}: must be a mapping (kind: Config)")
    return doc


def _inline_or_file(
    entry: Mapping[str, Any], key: str, origin: Path, where: str, *, pem: bool = True
) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise ClientConfigError(
                f"kubeconfig {origin}: {where}.{key}-data: invalid base64: {exc}"
            ) from exc
    file = entry.get(key)
    if file:
        # Relative paths are relative to the kubeconfig that names them, as in clientcmd.
        path = (origin.parent / str(file)).expanduser()
        try:
            return path.read_bytes()
        except OSError as exc:
            raise ClientConfigError(
                f"kubeconfig {origin}: {where}.{key}: cannot read {path}: {exc.strerror or exc}"
            ) from exc
    return None


def load_kubeconfig(paths: str | os.PathLike[str] | list[Path]) -> ClientConfig:
    """The current context of a kubeconfig file, or of several merged (``KUBECONFIG=a:b``).

    Merging follows clientcmd: the first file that names a cluster, user or context wins,
    as does the first ``current-context``; files of a list that do not exist are skipped.
    """
    files = [Path(p) for p in paths] if isinstance(paths, list) else [Path(paths)]
    single = len(files) == 1
    clusters: dict[str, tuple[dict[str, Any], Path]] = {}
    users: dict[str, tuple[dict[str, Any], Path]] = {}
    contexts: dict[str, tuple[dict[str, Any], Path]] = {}
    current = ""
    loaded: list[Path] = []
    for path in files:
        if not single and not path.exists():
            continue
        doc = _read_yaml(path)
        loaded.append(path)
        for section, into in (("clusters", clusters), ("users", users), ("contexts", contexts)):
            for name, value in _named(doc, section, path).items():
                into.setdefault(name, value)
        current = current or str(doc.get("current-context") or "")
    described = ":".join(str(p) for p in loaded) or ":".join(str(p) for p in files)
    if not loaded:
        raise ClientConfigError(f"kubeconfig {described}: none of the files exists")
    if not current:
        raise ClientConfigError(f"kubeconfig {described}: current-context: Required value")
    if current not in contexts:
        raise ClientConfigError(f'kubeconfig {described}: current-context: context "{current}" not found')
    context_entry, context_origin = contexts[current]
    context = context_entry.get("context") or {}
    cluster_name, user_name = context.get("cluster"), context.get("user")
    if not cluster_name or cluster_name not in clusters:
        raise ClientConfigError(
            f'kubeconfig {context_origin}: contexts[name={current}].context.cluster: cluster "{cluster_name}" not found'
        )
    cluster_entry, cluster_origin = clusters[cluster_name]
    cluster = cluster_entry.get("cluster") or {}
    where = f"clusters[name={cluster_name}].cluster"
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise ClientConfigError(f"kubeconfig {cluster_origin}: {where}.server: Required value")
    if "://" not in server:
        server = "https://" + server
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    ca = _inline_or_file(cluster, "certificate-authority", cluster_origin, where)
    if insecure and ca:
        raise ClientConfigError(
            f"kubeconfig {cluster_origin}: {where}.insecure-skip-tls-verify: "
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    user: dict[str, Any] = {}
    user_origin = context_origin
    if user_name:
        if user_name not in users:
            raise ClientConfigError(
                f'kubeconfig {context_origin}: contexts[name={current}].context.user: user "{user_name}" not found'
            )
        user_entry, user_origin = users[user_name]
        user = user_entry.get("user") or {}
    uwhere = f"users[name={user_name}].user"
    for unsupported in ("exec", "auth-provider"):
        if user.get(unsupported):
            raise ClientConfigError(
                f"kubeconfig {user_origin}: {uwhere}.{unsupported}: credential plugins are not supported; "
                "use a token, a token file or a client certificate"
            )
    token = str(user.get("token") or "")
    token_file: Path | None = None
    if not token and user.get("tokenFile"):
        token_file = (user_origin.parent / str(user["tokenFile"])).expanduser()
        token = _read_token(token_file, f"kubeconfig {user_origin}: {uwhere}.tokenFile")
    cert = _inline_or_file(user, "client-certificate", user_origin, uwhere)
    key = _inline_or_file(user, "client-key", user_origin, uwhere)
    if bool(cert) != bool(key):
        missing = "client-key" if cert else "client-certificate"
        raise ClientConfigError(
            f"kubeconfig {user_origin}: {uwhere}.{missing}: Required value (a client certificate needs its key)"
        )
    return ClientConfig(
        server=server,
        ca_data=ca,
        insecure=insecure,
        token=token,
        token_file=token_file,
        client_cert_data=cert,
        client_key_data=key,
        namespace=str(context.get("namespace") or "default"),
        source=f"kubeconfig {described} (context {current})",
    )


def _read_token(path: Path, what: str) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise ClientConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}") from exc


# ------------------------------------------------------------------------------ in-cluster


def load_in_cluster(env: Mapping[str, str], account_dir: Path = SERVICE_ACCOUNT_DIR) -> ClientConfig:
    """The configuration of a pod: the API service from the environment, the service account's files."""
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ClientConfigError(
            "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not running in a pod?)"
        )
    host_part = f"[{host}]" if ":" in host else host
    token_file = account_dir / "token"
    token = _read_token(token_file, "in-cluster: service account token")
    ca_path = account_dir / "ca.crt"
    try:
        ca = ca_path.read_bytes()
    except OSError as exc:
        raise ClientConfigError(
            f"in-cluster: service account CA: cannot read {ca_path}: {exc.strerror or exc}"
        ) from exc
    try:
        namespace = (account_dir / "namespace").read_text().strip() or "default"
    except OSError:
        namespace = "default"
    return ClientConfig(
        server=f"https://{host_part}:{port}",
        ca_data=ca,
        token=token,
        token_file=token_file,
        namespace=namespace,
        source=f"in-cluster ({account_dir})",
    )


def resolve_config(
    explicit: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None = None,
    account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> ClientConfig:
    """An explicit kubeconfig path, else ``KUBECONFIG`` (a path list), else in-cluster, else an error."""
    environ = os.environ if env is None else env
    if explicit:
        return load_kubeconfig(explicit)
    listed = [Path(p) for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return load_kubeconfig(listed)
    if environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT"):
        return load_in_cluster(environ, account_dir)
    raise ClientConfigError(
        "no Kubernetes connection configured: pass --kubeconfig, set KUBECONFIG, or run in a pod "
        "(KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set)"
    )
