"""The scheduler's configuration: a ``KubeSchedulerConfiguration`` file read, defaulted and checked.

Pure values and rules, no I/O beyond reading the file (an import-linter contract says so):
:mod:`.configuration` turns the file into one checked ``SchedulerConfiguration``, :mod:`.profile`
resolves each profile's plugins and args, :mod:`.decoding` holds the strict field readers both
use, :mod:`.election` the ``leaderElection`` durations and :mod:`.ratelimit` the
``clientConnection`` QPS and burst with their token bucket.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = ["configuration", "decoding", "election", "profile", "ratelimit"]
