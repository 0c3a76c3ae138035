"""The library the serial suite's specs call (upstream's ``test/internal`` and ``test/e2e/serial/config``).

The suite's one client (``kube``), its configuration and timeouts, the per-test fixture, builders of
test objects, resource lists, padding and the base load, scheduling checks from events, waiters
(``wait``) and the NodeResourceTopology helpers (``nrt``). Specs usually import through
:mod:`nrop.suite`; everything here talks to clusters through the Kubernetes API only.
"""

__all__ = [
    "baseload",
    "config",
    "fixture",
    "kube",
    "nrt",
    "objects",
    "padding",
    "resourcelist",
    "scheduling",
    "timeouts",
    "wait",
]
