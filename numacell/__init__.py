"""The numacell device plugin (upstream ``test/deviceplugin``): a test component beside ``rte/``,
deployed by the suite as a DaemonSet, serving one fake device resource per NUMA cell.

Other packages use :mod:`.deviceplugin` (the program, its names and defaults) and
:mod:`.server` (the project's one device plugin server, which the program runs per cell and
tests run with the devices they need).
"""

__all__ = ["deviceplugin", "server"]
