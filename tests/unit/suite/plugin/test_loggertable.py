"""The logger table pytest walks at every test phase survives loggers added during the walk
(``suite/plugin/loggertable.py``): the suite's background thread imports modules, and each adds
a logger, while pytest's log capture attaches its handler (``catching_logs.__enter__``)."""

from __future__ import annotations

import logging
import uuid

from nrop.suite.plugin import loggertable


def test_a_walk_of_the_values_survives_loggers_added_during_it() -> None:
    loggertable.guard()
    loggertable.guard()  # idempotent
    manager = logging.Logger.manager
    prefix = f"nrop.test.loggertable.{uuid.uuid4().hex}"
    logging.getLogger(f"{prefix}.0")  # the table is not empty
    walked = 0
    for walked, _ in enumerate(manager.loggerDict.values(), start=1):  # as catching_logs walks it
        logging.getLogger(f"{prefix}.{walked}")  # a plain dict raises at the next step
        if walked == 5:
            break
    assert walked == 5
    added = [name for name in manager.loggerDict if name.startswith(f"{prefix}.")]
    assert sorted(added) == [f"{prefix}.{n}" for n in range(6)]
    assert logging.getLogger(f"{prefix}.3") is manager.loggerDict[f"{prefix}.3"]  # still one logger per name
