"""The pytest plugin of the serial suite (entry point ``pytest11: nrop`` in :mod:`.entrypoint`).

Options and their environment twins, the run's state, which specs run where (selection, labels and
their filter, lanes over xdist workers), the targets (the embedded cluster or a kubeconfig), the
reports, and the runners (``nrop-e2e``, and ``make upstream-e2e`` for upstream's own Go suite).
"""

__all__ = [
    "crosscheck",
    "distributing",
    "entrypoint",
    "expectedskips",
    "htmlreport",
    "labelfilter",
    "labels",
    "lanes",
    "options",
    "precedence",
    "reporting",
    "reports",
    "runner",
    "runstate",
    "selecting",
    "session",
    "specs",
    "target",
    "targeting",
    "upstreame2e",
]
