"""The exporter's pure decisions: an NRT's zones and attributes from the machine and the kubelet's
podresources data (:mod:`.scan`), the object as written from them (:mod:`.nrtinfo`: annotations,
attribute order, owner, merge patch), and the numainfo exporter's per-NUMA capacity and exclusive
allocation from the kubelet's checkpoints (:mod:`.numainfo`). No I/O (an import-linter contract
says so): the loops around them read sysfs, the podresources socket and the checkpoint files.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = ["nrtinfo", "numainfo", "scan"]
