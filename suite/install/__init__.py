"""Installing what the serial suite runs on: the NUMA-aware stack through the operator (``stack``,
``--setup``/``--teardown``), whether the nodes will do (``nodetopology``, upstream's
``CheckNodesTopology``), BeforeSuite and AfterSuite (``infra``), the numacell device plugin's
DaemonSet (``numacelldeploy``), the operator's environment for a spec (``operatorenv``), and what a
run left behind (``leaks``).
"""

__all__ = ["infra", "leaks", "nodetopology", "numacelldeploy", "operatorenv", "stack"]
