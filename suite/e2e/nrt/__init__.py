"""NodeResourceTopology helpers of the suite (upstream ``test/internal/noderesourcetopologies``):
reading and querying NRTs (``topologies``), comparing them (``compare``), checking what a workload
took (``consumed``), and waiting for them (``updates``: upstream's ``GetUpdated``; ``waiters``).
"""

__all__ = ["compare", "consumed", "topologies", "updates", "waiters"]
