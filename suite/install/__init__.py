"""Installing what the serial suite runs on: the NUMA-aware stack through the operator (``stack``,
``--setup``/``--teardown``), BeforeSuite and AfterSuite (``infra``) with the NROP's node groups
(``nodegroups``) and the nodes' topology check (``nodetopology``), the numacell device plugin's
DaemonSet (``numacelldeploy``), the operator's environment for a spec (``operatorenv``), what a run
left behind (``leaks``), and the error they fail with (``errors``).
"""

__all__ = ["errors", "infra", "leaks", "nodegroups", "nodetopology", "numacelldeploy", "operatorenv", "stack"]
