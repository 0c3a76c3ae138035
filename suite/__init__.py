"""The serial suite's framework, in three roles: ``plugin`` (the pytest plugin), ``e2e`` (the library
the specs call) and ``install`` (installing the stack, BeforeSuite and AfterSuite).

A spec imports what it needs from here: the names below are the library's surface (the NRT modules
under the short names upstream's specs give them: ``nrt`` is upstream's ``e2enrt``). Tools and the
project's own tests may reach into the three role packages through their ``__all__``.
"""

from nrop.suite.e2e import (
    baseload,
    config,
    fixture,
    kube,
    objects,
    padding,
    resourcelist,
    scheduling,
    timeouts,
)
from nrop.suite.e2e.kube import Kube
from nrop.suite.e2e.nrt import compare as nrtcompare
from nrop.suite.e2e.nrt import consumed as nrtconsumed
from nrop.suite.e2e.nrt import topologies as nrt
from nrop.suite.e2e.nrt import updates as nrtupdates
from nrop.suite.e2e.nrt import waiters as nrtwaiters
from nrop.suite.e2e.wait import WaitTimeout, consistently, wait_for, waiters
from nrop.suite.plugin.specs import entry, spec

__all__ = [
    "Kube",
    "WaitTimeout",
    "baseload",
    "config",
    "consistently",
    "e2e",
    "entry",
    "fixture",
    "install",
    "kube",
    "nrt",
    "nrtcompare",
    "nrtconsumed",
    "nrtupdates",
    "nrtwaiters",
    "objects",
    "padding",
    "plugin",
    "resourcelist",
    "scheduling",
    "spec",
    "timeouts",
    "wait_for",
    "waiters",
]
