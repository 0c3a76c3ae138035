"""The suite-wide configuration every test sees (upstream ``serial/config``): :class:`SuiteConfig`.

It is built once per session, after the stack is up (upstream's ``Setup()`` in
``serial/config/config.go``): the existing ``NUMAResourcesOperator`` named
``numaresourcesoperator`` and ``NUMAResourcesScheduler`` named ``numaresourcesscheduler``
are read (never created here), the scheduler name comes from the NRS
``status.schedulerName``, and the NRT list becomes the reference every per-test fixture
compares with. The image and device names come from the environment (README.tests.md lists
them), with upstream's defaults and legacy names.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nrop.api.images import PAUSE_IMAGE
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.objects import NROP_NAME, NROSCHED_NAME
from nrop.suite.e2e.timeouts import Timeouts

__all__ = [
    "DEVICE_TYPE_VARS",
    "MULTI_NUMA_LABEL",
    "NUMACELL_IMAGE_CI",
    "NUMACELL_IMAGE_VARS",
    "OPERATOR_NAMESPACE",
    "PAUSE_COMMAND",
    "SuiteConfig",
    "device_types_from_env",
    "lookup_env",
    "numacell_image",
    "pause_image_from_env",
]

log = logging.getLogger(__name__)

OPERATOR_NAMESPACE = "numaresources"
#: The node label BeforeSuite puts on multi-NUMA workers: their NUMA zone count (upstream ``serial/config``).
MULTI_NUMA_LABEL = "numa.hardware.openshift-kni.io/cell-count"
PAUSE_COMMAND = "/pause"
DEVICE_TYPE_VARS = ("E2E_NROP_DEVICE_TYPE_1", "E2E_NROP_DEVICE_TYPE_2", "E2E_NROP_DEVICE_TYPE_3")


#: upstream's CI image of the numacell device plugin (``images.NUMACellDevicePluginTestImageCI``)
NUMACELL_IMAGE_CI = "quay.io/openshift-kni/numacell-device-plugin:test-ci"
NUMACELL_IMAGE_VARS = ("E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN", "E2E_NUMACELL_DEVICE_PLUGIN_URL")


def lookup_env(environ: Mapping[str, str], names: tuple[str, ...], default: str) -> str:
    """Upstream's ``os.LookupEnv`` chain: the first of ``names`` that is *set* (even to ""), else ``default``."""
    return next((environ[name] for name in names if name in environ), default)


def pause_image_from_env(environ: Mapping[str, str]) -> str:
    """``E2E_NROP_URL_PAUSE_IMAGE``, legacy ``E2E_PAUSE_IMAGE_URL``, else upstream's pause image
    (``images.GetPauseImage``)."""
    return lookup_env(environ, ("E2E_NROP_URL_PAUSE_IMAGE", "E2E_PAUSE_IMAGE_URL"), PAUSE_IMAGE)


def numacell_image(environ: Mapping[str, str], ours: str | None = None) -> str:
    """``E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN``, then legacy ``E2E_NUMACELL_DEVICE_PLUGIN_URL``
    (``GetNUMACellDevicePluginPullSpec``); unset: ``ours`` (the project's image, when this run
    installed the stack from it: it holds a real ``numacell``), else upstream's CI image."""
    return lookup_env(environ, NUMACELL_IMAGE_VARS, ours or NUMACELL_IMAGE_CI)


def device_types_from_env(environ: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """``E2E_NROP_DEVICE_TYPE_1..3``; each unset one is logged as an error, as upstream does."""
    values = []
    for var in DEVICE_TYPE_VARS:
        value = environ.get(var) or None
        if value is None:
            log.error("%r environment variable is not set", var)
        values.append(value)
    return values[0], values[1], values[2]


@dataclass
class SuiteConfig:
    """What BeforeSuite learned about the cluster; read-only for tests."""

    kube: k.Kube
    scheduler_name: str
    nrop: dict[str, Any]
    nrosched: dict[str, Any]
    nrt_reference: list[dict[str, Any]]
    timeouts: Timeouts = field(default_factory=Timeouts)
    device_types: tuple[str | None, str | None, str | None] = (None, None, None)
    target: str = "kubeconfig"
    profile: str | None = None
    infra_namespace: str = ""
    pause_image: str = PAUSE_IMAGE
    numacell_image: str = NUMACELL_IMAGE_CI
    operator_namespace: str = OPERATOR_NAMESPACE
    #: The state directory of the embedded cluster the suite started (its nodes' roots, read by
    #: the failure diagnostics of :mod:`nrop.suite.plugin.crosscheck`); None for a cluster given by kubeconfig.
    cluster_dir: Path | None = None

    @classmethod
    def load(
        cls,
        kube: k.Kube,
        *,
        timeouts: Timeouts,
        environ: Mapping[str, str],
        target: str,
        profile: str | None = None,
        infra_namespace: str = "",
        operator_namespace: str = OPERATOR_NAMESPACE,
    ) -> SuiteConfig:
        """Read NROP, NRS and the NRT reference from the cluster (upstream ``Setup()``).

        ``AssertionError`` naming what is missing when the CRs are absent or the NRS has
        not reported its scheduler name yet (upstream: ``Config.Ready()`` must hold).
        """
        nrop = kube.get_or_none(k.NROP, NROP_NAME)
        nrosched = kube.get_or_none(k.NROSCHED, NROSCHED_NAME)
        missing = [
            f"{kind} {name!r}"
            for kind, name, obj in (
                ("NUMAResourcesOperator", NROP_NAME, nrop),
                ("NUMAResourcesScheduler", NROSCHED_NAME, nrosched),
            )
            if obj is None
        ]
        if missing:
            raise AssertionError(f"suite config not ready: {' and '.join(missing)} not found")
        assert nrop is not None and nrosched is not None
        scheduler_name = str((nrosched.get("status") or {}).get("schedulerName") or "")
        if not scheduler_name:
            raise AssertionError(
                f"suite config not ready: NUMAResourcesScheduler {NROSCHED_NAME!r} has no status.schedulerName"
            )
        return cls(
            kube=kube,
            scheduler_name=scheduler_name,
            nrop=nrop,
            nrosched=nrosched,
            nrt_reference=kube.list(k.NRT),
            timeouts=timeouts,
            device_types=device_types_from_env(environ),
            target=target,
            profile=profile,
            infra_namespace=infra_namespace,
            pause_image=pause_image_from_env(environ),
            numacell_image=numacell_image(environ),
            operator_namespace=operator_namespace,
        )

    def with_nrt_reference(self, nrts: list[dict[str, Any]]) -> SuiteConfig:
        """A copy with a new reference list (``RecordNRTReference`` after the infra is up)."""
        return replace(self, nrt_reference=nrts)

    @property
    def is_local(self) -> bool:
        return self.target == "embedded"

    @property
    def device_names(self) -> tuple[str, ...]:
        """The configured device resource names (unset ones left out)."""
        return tuple(name for name in self.device_types if name)
