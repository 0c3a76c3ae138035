"""Declares this directory the serial suite for the ``nrop`` pytest plugin (``nrop.suite.plugin``).

With the flag set, a run that collects these tests is a run of the suite: the JUnit file
``e2e-serial-run.xml`` goes to the report directory, ``-n`` against a real cluster is
refused, and a selection that matches no spec is a usage error instead of "no tests ran".
Options, fixtures and markers all come from the plugin.
"""

NROP_SERIAL_SUITE = True
