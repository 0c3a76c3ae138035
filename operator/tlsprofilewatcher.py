"""The cluster's TLS security profile: read when the operator starts, watched while it runs.

Upstream's ``cmd/main.go`` reads ``APIServer/cluster`` (``config.openshift.io/v1``) once at
start (``FetchAPIServerTLSProfile``), derives the exporters' metrics TLS settings from its
effective profile (:mod:`nrop.api.tlsprofiles`: none or no type is Intermediate) and keeps them
for the process's lifetime; its ``SecurityProfileWatcher`` exits the operator (a graceful
shutdown, exit status 0) when the effective profile changes, so the Deployment's pod restarts
with the new one and the DaemonSets are re-rendered with it.

Here likewise, with one difference: where the cluster does not serve ``APIServer`` (plain
Kubernetes) upstream's operator exits at start; this one logs it once and runs without a
profile, rendering no TLS flags, as before. A served ``APIServer`` without the ``cluster``
object, or an unusable profile (``Custom`` without ``custom``, an unknown ``minTLSVersion``),
is fatal at start, as upstream.

:func:`changed_profile` is the pure decision; :func:`fetch` and :func:`register` do the I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from nrop.api import tlsprofiles
from nrop.api.tlsprofiles import ProfileError, Settings, TLSProfileSpec
from nrop.operator.kubeapi import Api, ApiException, error_message, kind

__all__ = ["APISERVER", "GROUP_VERSION", "Startup", "changed_profile", "fetch", "register", "startup"]

log = logging.getLogger(__name__)

GROUP_VERSION = "config.openshift.io/v1"
APISERVER = kind(GROUP_VERSION, "APIServer")


def fetch(api: Api) -> TLSProfileSpec:
    """``FetchAPIServerTLSProfile``: the effective profile of ``APIServer/cluster``.

    Raises :class:`ProfileError` with upstream's text when the object is missing or its
    profile unusable; API errors propagate.
    """
    name = tlsprofiles.APISERVER_NAME
    try:
        obj = api.get(APISERVER, name)
    except ApiException as exc:
        raise ProfileError(f'failed to get APIServer "{name}": {error_message(exc)}') from None
    if obj is None:
        raise ProfileError(
            f'failed to get APIServer "{name}": apiservers.config.openshift.io "{name}" not found'
        )
    return tlsprofiles.apiserver_profile_spec(obj)


@dataclass(frozen=True)
class Startup:
    """What the operator runs with: the profile (None: not served) and the exporters' settings."""

    profile: TLSProfileSpec | None = None
    metrics_tls: Settings | None = None


def startup(api: Api) -> Startup:
    """Read the profile as upstream's ``main`` does; :class:`ProfileError` when it is fatal."""
    if not api.serves(APISERVER):
        log.info(
            "the cluster does not serve %s APIServer: no TLS security profile, the exporters get no "
            "metrics TLS flags (upstream's operator exits here)",
            GROUP_VERSION,
        )
        return Startup()
    try:
        profile = fetch(api)
    except ProfileError as exc:
        raise ProfileError(f"unable to get TLS profile from APIServer: {exc}") from None
    config = tlsprofiles.tls_config(profile)
    if config.unsupported:
        log.info(
            "TLS profile configuration contains unsupported ciphers that will be ignored: %s",
            ", ".join(config.unsupported),
        )
    settings = tlsprofiles.settings(config)
    log.info("found TLS settings from APIServer: %s", settings)
    return Startup(profile, settings)


def changed_profile(current: TLSProfileSpec, apiserver: Mapping[str, Any]) -> TLSProfileSpec | None:
    """The APIServer's effective profile when it differs from ``current``, else None.

    A ``Custom`` profile without ``custom`` is a :class:`ProfileError` (upstream requeues it).
    """
    new = tlsprofiles.apiserver_profile_spec(apiserver)
    return new if tlsprofiles.profile_changed(current, new) else None


def register(
    registry: kopf.OperatorRegistry,
    initial: TLSProfileSpec,
    on_change: Callable[[TLSProfileSpec, TLSProfileSpec], None],
) -> None:
    """Watch ``APIServer/cluster``; ``on_change(old, new)`` when its effective profile changes.

    Call only when the cluster serves ``APIServer``. As upstream, the new profile becomes the
    one later events are compared with.
    """
    group, version = GROUP_VERSION.split("/")
    current = [initial]

    @kopf.on.event(group, version, APISERVER.plural, id="tlssecurityprofilewatcher", registry=registry)
    def apiserver_event(name: str, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        if name != tlsprofiles.APISERVER_NAME or type == "DELETED":
            return
        try:
            new = changed_profile(current[0], body)
        except ProfileError as exc:
            log.warning("reconciling APIServer %s: %s", name, exc)
            return
        if new is not None:
            old, current[0] = current[0], new
            on_change(old, new)
