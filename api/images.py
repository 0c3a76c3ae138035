"""The container images the project's manifests name.

Every console script of the distribution (operator, exporters, scheduler, numacell) ships
in one image; the operator runs it for the exporter DaemonSets and, unless a NUMAResourcesScheduler
names another one, for the secondary scheduler. The embedded cluster's kubelets run
containers of an image matching ``*numaresources-operator-tests*`` as real processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["DEFAULT_IMAGE", "IMAGE_VAR", "OWN_IMAGE_MARKER", "PAUSE_IMAGE", "is_own_image", "own_image"]

#: The project's image, as ``make image`` tags it (and the embedded cluster recognises it).
DEFAULT_IMAGE: Final = "localhost/numaresources-operator-tests:latest"
#: The variable naming the project's image to install (``--setup``) and run numacell from.
IMAGE_VAR: Final = "E2E_NROP_IMAGE"
#: What every reference to the project's image contains, whatever the registry and tag.
OWN_IMAGE_MARKER: Final = "numaresources-operator-tests"
#: The image of the suite's pause pods (command ``/pause``).
PAUSE_IMAGE: Final = "quay.io/openshift-kni/pause:test-ci"


def is_own_image(image: str) -> bool:
    """True when ``image`` is the project's image (any registry, tag or digest)."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    return name == OWN_IMAGE_MARKER


def own_image(environ: Mapping[str, str]) -> str:
    """The project's image to deploy: ``E2E_NROP_IMAGE``, else :data:`DEFAULT_IMAGE`."""
    return environ.get(IMAGE_VAR) or DEFAULT_IMAGE
