"""The install role's error: what BeforeSuite, AfterSuite and the stack's install fail with."""

from __future__ import annotations

__all__ = ["InfraError"]


class InfraError(AssertionError):
    """The suite infrastructure could not be set up (what upstream's BeforeSuite fails with)."""
