"""Installing what the serial suite runs on: the NUMA-aware stack through the operator (``stack``,
``--setup``/``--teardown``), BeforeSuite and AfterSuite (``infra``), the numacell device plugin's
DaemonSet (``numacelldeploy``), the operator's environment for a spec (``operatorenv``), and what a
run left behind (``leaks``).
"""

__all__ = ["infra", "leaks", "numacelldeploy", "operatorenv", "stack"]
