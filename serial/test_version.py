"""Serial spec of upstream ``version.go``: report the versions of suite, cluster and operator.

Informational, as upstream: it fails only when the cluster cannot be queried or the operator
pod cannot be found; an operator without ``/usr/local/share/buildinfo.json`` (or a cluster where
the file cannot be read from the pod, or an ``E2E_NROP_BUILDINFO`` file that cannot be read) is
reported as ``UNKNOWN UNKNOWN``.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import _openshift_helpers as ocp
import _operand_helpers as operands
import _podexec_helpers as podexec
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from nrop.api.distribution import package_version
from nrop.suite import Kube, spec
from nrop.suite.e2e.kube import NROP

log = logging.getLogger(__name__)

pytestmark = spec("[serial] numaresources version", "Serial", "feature:config")

BUILDINFO_ENV = "E2E_NROP_BUILDINFO"
BUILDINFO_PATH = "/usr/local/share/buildinfo.json"


def buildinfo_text(info: dict[str, Any]) -> str:
    """``buildinfo.BuildInfo.String``: ``<version> <commit> (<branch>)``."""
    return f"{info.get('version', '')} {info.get('commit', '')} ({info.get('branch', '')})"


class TestWhenCheckingTheVersions:
    pytestmark = spec("when checking the versions")

    @spec("[test_id:85791] should verify all the components", "tier1", "versioncheck")
    def test_85791_verify_all_components(self, kube: Kube, suite_config: Any) -> None:
        log.info("running the testsuite %s %s", "numaresources-operator-tests", package_version())
        try:
            platform = ocp.detect_platform(kube).describe()
        except ApiException as exc:  # upstream logs a failed cluster discovery and goes on
            log.error("failed to discover cluster: %s", exc)
            platform = "UNKNOWN"
        try:
            server = client.VersionApi(kube.api_client).get_code().git_version
        except ApiException as exc:
            # upstream logs a failed cluster discovery and goes on
            log.error("failed to discover cluster: %s", exc)
            server = "UNKNOWN"
        log.info("running against cluster %s (kubernetes %s)", platform, server)

        raw: str | None = None
        path = os.environ.get(BUILDINFO_ENV, "")
        if path:
            log.info("using buildinfo from local path: %s", path)
            try:
                raw = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                log.info("cannot read %s: %s", path, exc)
        else:
            nrop = kube.get(NROP, suite_config.nrop["metadata"]["name"])
            pod = operands.operator_pod(kube, nrop)
            log.info(
                "using buildinfo from operator pod: %s/%s",
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
            )
            try:
                result = podexec.exec_in_pod(kube, pod, ["/bin/cat", BUILDINFO_PATH])
                raw = result.stdout if result.returncode == 0 else None
            except ApiException as exc:
                log.info("cannot read %s in the operator pod: %s", BUILDINFO_PATH, exc)
        # older versions may miss the buildinfo, and that's fine
        if raw is None:
            log.info("running against NUMAResources UNKNOWN UNKNOWN")
            return
        try:
            info = json.loads(raw)
        except json.JSONDecodeError as exc:
            log.error("buildinfo unmarshal failure: %s", exc)
            log.info("running against NUMAResources UNKNOWN UNKNOWN")
            return
        log.info("running against NUMAResources %s", buildinfo_text(info))
