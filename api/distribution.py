"""The installed distribution's version, for ``--version`` output and version metrics."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "numaresources-operator-tests"


def package_version() -> str:
    """The installed version, or ``unknown`` when running from a tree that was never installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
