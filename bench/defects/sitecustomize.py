"""Applies the seeded defect a run names (``NROP_DEFECT``) in the processes that host its component.

On the ``PYTHONPATH`` of a defect run (``bench/defects.py`` puts this directory there), Python
imports this module at start-up. Without ``NROP_DEFECT`` it does nothing but hand over to the next
``sitecustomize`` on the path. With it, in the embedded cluster's process (``nrop-cluster``) it
gives every container the run's defect environment (:mod:`seeded_runtime`), and in the process of a
program that hosts the defect's component it applies the defect (:mod:`seeding`). A defect that is
unknown or stale ends the process with :data:`seeding.STALE_EXIT` and a message on stderr.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _main() -> None:
    defect_id = os.environ.get("NROP_DEFECT")
    if not defect_id:
        return
    import seeding

    program = seeding.program_of(sys.argv)
    try:
        catalog = seeding.load_catalog()
        defect = catalog.defect(defect_id)
        if program in seeding.RUNTIME_PROGRAMS:
            seeding.apply(catalog.runtime)
        if seeding.hosts(catalog, defect, program):
            rebound = seeding.apply(defect)
            also = f" (also as {', '.join(rebound)})" if rebound else ""
            seeding.record(os.environ, "applied", program, defect.target + also)
    except seeding.StaleDefectError as exc:
        sys.stderr.write(f"nrop-defect: defect {defect_id} stale in {program}: {exc}\n")
        sys.stderr.flush()
        seeding.record(os.environ, "stale", program, str(exc))
        os._exit(seeding.STALE_EXIT)


def _chain() -> None:
    """Run the next ``sitecustomize`` on the path, as if this one were not there."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_main()
_chain()
