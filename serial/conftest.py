"""Declares this directory the serial suite for the ``nrop`` pytest plugin (``nrop.suite.plugin.entrypoint``),
and the padder its specs share.

With the flag set, a run that collects these tests is a run of the suite: the JUnit file
``e2e-serial-run.xml`` goes to the report directory, ``-n`` against a real cluster is
refused, and a selection that matches no spec is a usage error instead of "no tests ran".
Options, the other fixtures and the markers come from the plugin.

``padder`` is upstream's ``e2epadder`` (``test/internal/padder``): padding pods sized from the
zones so that each keeps exactly a target, pinned by numacell where it is exposed. It is
cleaned in the spec's ``AfterEach``, before its namespace goes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import _placement_helpers as h
import pytest

from nrop.suite import padding

NROP_SERIAL_SUITE = True


@pytest.fixture
def padder(fxt: Any) -> Iterator[padding.Padder]:
    pad = h.new_padder(fxt)
    yield pad
    pad.clean()
