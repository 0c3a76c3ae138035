"""The numacell device plugin (upstream ``test/deviceplugin``): a test component beside ``rte/``,
deployed by the suite as a DaemonSet, serving one fake device resource per NUMA cell.
"""

__all__ = ["deviceplugin"]
