"""The suite framework: target selection, infrastructure setup, fixtures, waiters, NRT helpers.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "baseload",
    "config",
    "distributing",
    "fixture",
    "infra",
    "kube",
    "labels",
    "lanes",
    "nrt",
    "nrtcompare",
    "nrtconsumed",
    "nrtupdates",
    "nrtwaiters",
    "numacell",
    "numacelldeploy",
    "objects",
    "operatorenv",
    "options",
    "padding",
    "plugin",
    "resourcelist",
    "scheduling",
    "specs",
    "stack",
    "target",
    "timeouts",
    "waiters",
    "waiting",
]
