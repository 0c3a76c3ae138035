"""Waiting for cluster state: the generic ``wait_for`` (``polling``) and the waiters built on it.

Every poll of the suite goes through :func:`wait_for` (until a state comes) or :func:`consistently`
(a state holds for a window), so every wait fails the same way: what was expected, and what was
seen instead.
"""

from nrop.suite.e2e.wait.polling import WaitTimeout, consistently, wait_for

__all__ = ["WaitTimeout", "consistently", "polling", "wait_for", "waiters"]
