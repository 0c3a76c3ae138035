"""Puts ``serial/`` on ``sys.path`` so its private ``_*_helpers`` modules import here as the suite
imports them (``import _nropcr_helpers``), sibling imports included."""

from __future__ import annotations

import sys
from pathlib import Path

SERIAL = str(Path(__file__).resolve().parents[3] / "serial")
if SERIAL not in sys.path:
    sys.path.insert(0, SERIAL)
