"""nrop.suite.plugin.environtable: walking os.environ while another thread sets and removes a key."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_walks_never_see_a_key_vanish_and_the_environment_still_works() -> None:
    # In a fresh process: the guard changes os.environ's class for good.
    script = textwrap.dedent(
        """
        import os, threading, urllib.request
        from nrop.suite.plugin import environtable

        environtable.guard()
        environtable.guard()  # twice: still the guarded class, once
        assert type(os.environ).__name__ == "_Environ" and type(os.environ) is not os._Environ
        stop = threading.Event()

        def churn():
            while not stop.is_set():
                os.environ["PYTEST_CURRENT_TEST"] = "x (call)"
                os.environ.pop("PYTEST_CURRENT_TEST")

        thread = threading.Thread(target=churn)
        thread.start()
        errors = 0
        try:
            for _ in range(20000):
                try:
                    urllib.request.getproxies()  # walks os.environ.items(), as the official client does
                    list(os.environ.values())
                    os.environ.copy()
                except KeyError:
                    errors += 1
        finally:
            stop.set()
            thread.join()
        os.environ["NROP_ENV_PROBE"] = "1"
        seen = os.popen("echo $NROP_ENV_PROBE").read().strip()
        del os.environ["NROP_ENV_PROBE"]
        print(errors, seen, "NROP_ENV_PROBE" in os.environ, dict(os.environ.items()) == os.environ.copy())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=dict(os.environ)
    ).stdout.split()
    assert out == ["0", "1", "False", "True"]
