"""The serial suite's pytest plugin, exercised through real pytest runs (pytester): targets and timeouts.

No cluster is started: where a target is needed, the ``Targets`` class is replaced by one
whose contexts are plain strings, so the wiring (which profile a spec gets, when targets
open, are prepared ahead and close, serially and spread over xdist workers: how many, which
specs each runs in what order) is what is tested; then the
per-spec and session timeouts, the embedded cluster program started and stopped as the
suite starts it (a fake ``nrop-cluster``), and a kubeconfig target recognised as embedded.
The inner runs are those of :mod:`_helpers_plugin`.
"""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from _helpers_plugin import BASE_ARGS, SUITE_CONFTEST, _clean_env, placement_specs, run

from nrop.suite.plugin import options as suite_options
from nrop.suite.plugin import target

pytest_plugins = ("pytester",)

# The shared fixture, used by name only.
__all__ = ["_clean_env"]


# ------------------------------------------------------------------------------- targets


def test_nothing_starts_for_tests_that_do_not_use_the_suite_fixtures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    monkeypatch.setattr(target, "start", lambda profile, *a, **k: started.append(profile))
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        test_plain="def test_plain(tmp_path):\n    assert tmp_path.exists()\n",
        test_spec_without_fixtures=placement_specs(),
    )
    result = run(pytester)
    assert result.ret == 0
    assert started == []
    assert "nrop: [" not in result.stdout.str()  # no target says anything


def test_a_suite_fixture_starts_the_embedded_cluster_of_the_spec_profile(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(profile: str, state_dir: Path, **_: object) -> None:
        raise target.ClusterStartError(f"not in this test: would start {profile} in {state_dir.name}")

    monkeypatch.setattr(target, "start", refuse)
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        textwrap.dedent(
            """
            from nrop.suite.plugin.specs import spec

            @spec("needs the cluster", "tier0")
            def test_uses_kube(kube):
                pass
            """
        )
    )
    result = run(pytester, "--cluster-profile", "smt-aligned")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "nrop: [[]smt-aligned[]] starting the embedded cluster (profile smt-aligned)",
            "*ClusterStartError: not in this test: would start smt-aligned in smt-aligned",
        ]
    )


FAKE_TARGETS = textwrap.dedent(
    """
    import os
    from nrop.suite.plugin import session

    NROP_SERIAL_SUITE = True
    LOG = os.path.join(os.path.dirname(__file__), "targets.log")

    def _record(*words):
        with open(LOG, "a") as f:
            f.write(" ".join(words) + "\\n")

    def _open(self, key, say):
        _record("open", key, self.worker or "main")
        return session.Context(key=key, kube=f"kube-of-{key}", timeouts=self.timeouts)

    def _before_suite(self, context, say):
        if context.config is None:
            _record("before-suite", context.key)
            context.config = f"config-of-{context.key}"

    def _close(self, context, say):
        _record("close", context.key, self.worker or "main")

    session.Targets._open = _open
    session.Targets._before_suite = _before_suite
    session.Targets._close = _close
    """
)

PROFILED = textwrap.dedent(
    """
    import os
    from nrop.suite.plugin.specs import spec

    pytestmark = spec("profiles")

    def _seen(name, kube, suite_config):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(os.path.dirname(__file__), "seen.log"), "a") as f:
            f.write(f"{name} {kube} {suite_config} {worker}\\n")

    @spec("[test_id:1] a cnt spec first in the file", "tier0", "tmscope:cnt")
    def test_cnt_1(kube, suite_config):
        _seen("cnt_1", kube, suite_config)

    @spec("[test_id:2] a default spec", "tier0")
    def test_default_1(kube, suite_config):
        _seen("default_1", kube, suite_config)

    @spec("[test_id:3] another cnt spec", "tier0", "tmscope:cnt")
    def test_cnt_2(kube, suite_config):
        _seen("cnt_2", kube, suite_config)

    @spec("[test_id:4] another default spec", "tier0")
    def test_default_2(kube, suite_config):
        _seen("default_2", kube, suite_config)
    """
)


def test_a_serial_run_uses_targets_in_profile_order_preparing_the_next_one_ahead(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a serial run: not one of the xdist workers this test itself may be running in
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(FAKE_TARGETS)
    pytester.makepyfile(test_profiles=PROFILED)
    # -k deselects after the plugin ordered the specs: the point of preparing ahead follows
    result = pytester.runpytest_subprocess(
        *BASE_ARGS, "-n", "0", "--report-dir", str(pytester.path / "r"), "-k", "not default_1"
    )
    assert result.ret == 0, result.stdout.str()
    seen = (pytester.path / "seen.log").read_text().split("\n")
    assert seen[:3] == [
        "default_2 kube-of-default config-of-default main",
        "cnt_1 kube-of-container-scope config-of-container-scope main",
        "cnt_2 kube-of-container-scope config-of-container-scope main",
    ]
    # two specs before it is needed (here: the first spec) container-scope is opened and its
    # BeforeSuite run on a thread; default is closed on a thread once the run switched
    log = (pytester.path / "targets.log").read_text().splitlines()
    assert sorted(log) == sorted(
        [
            "open default main",
            "before-suite default",
            "open container-scope main",
            "before-suite container-scope",
            "close default main",
            "close container-scope main",
        ]
    )
    assert log.index("before-suite container-scope") < log.index("close default main")
    assert log[-1] == "close container-scope main"
    result.stdout.fnmatch_lines(
        [
            "nrop: [[]container-scope[]] preparing the target in the background",
            "nrop: [[]container-scope[]] prepared in the background in *s (waited *s for it)",
        ]
    )


def test_with_xdist_each_worker_prepares_the_target_of_its_lane_as_it_starts(
    pytester: pytest.Pytester,
) -> None:
    threaded = FAKE_TARGETS.replace(
        '_record("open", key, self.worker or "main")',
        '_record("open", key, self.worker or "main", __import__("threading").current_thread().name)',
    )
    pytester.makeconftest(threaded)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["nrop: 2 workers (-n), each with its own embedded clusters; planned *"])
    seen = [line.split() for line in (pytester.path / "seen.log").read_text().splitlines()]
    for name, kube, config, _worker in seen:
        profile = "container-scope" if name.startswith("cnt") else "default"
        assert (kube, config) == (f"kube-of-{profile}", f"config-of-{profile}")
    # two profiles of equal work on two workers: a lane (and one cluster) each, opened on the
    # thread that prepares it as the worker starts
    assert sorted((name, worker) for name, *_, worker in seen) == [
        ("cnt_1", "gw0"), ("cnt_2", "gw0"), ("default_1", "gw1"), ("default_2", "gw1"),
    ]  # fmt: skip
    opened = [
        line.split()[1:]
        for line in (pytester.path / "targets.log").read_text().splitlines()
        if "open" in line
    ]
    assert sorted(opened) == [
        ["container-scope", "gw0", "nrop-container-scope"],
        ["default", "gw1", "nrop-default"],
    ]


LANED = textwrap.dedent(
    """
    import os
    from nrop.suite.plugin import distributing
    from nrop.suite.plugin.specs import spec

    pytestmark = spec("lanes")

    def _ran(name):
        with open(os.path.join(os.path.dirname(__file__), "order.log"), "a") as f:
            f.write(f"{os.environ['PYTEST_XDIST_WORKER']} {name}\\n")
    """
)


def _laned_suite(pytester: pytest.Pytester, specs: dict[str, tuple[float, str]], bodies: str = "") -> None:
    """Specs named by ``specs`` (name -> measured seconds, labels), with those durations on file;
    with ``bodies``, module code where a function ``_<name>_body()`` runs after spec ``name`` ran."""
    lines = [LANED, bodies]
    for index, (name, (_, labels)) in enumerate(specs.items()):
        then = f"    _{name}_body()\n" if f"def _{name}_body(" in bodies else ""
        lines.append(
            f'@spec("[test_id:{100 + index}] {name}", "tier0"{labels})\n'
            f"def test_{name}(kube):\n    _ran({name!r})\n{then}"
        )
    pytester.makepyfile(test_lanes="\n\n".join(lines))
    durations = {f"test_lanes.py::test_{name}": seconds for name, (seconds, _) in specs.items()}
    (pytester.path / "durations.json").write_text(json.dumps(durations))
    pytester.makeconftest(
        FAKE_TARGETS
        + "\nfrom nrop.suite.plugin import distributing\n"
        + f"distributing.DURATIONS_FILE = distributing.Path({str(pytester.path / 'durations.json')!r})\n"
    )


def _order(pytester: pytest.Pytester) -> dict[str, list[str]]:
    ran: dict[str, list[str]] = {}
    for line in (pytester.path / "order.log").read_text().splitlines():
        worker, name = line.split()
        ran.setdefault(worker, []).append(name)
    return ran


def test_with_xdist_workers_take_the_longest_specs_first(pytester: pytest.Pytester) -> None:
    _laned_suite(pytester, {"short_a": (10, ""), "long": (100, ""), "short_b": (10, ""), "medium": (50, "")})
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    # the plan (nrop.suite.plugin.lanes): the longest alone on gw0, the others after the medium one on gw1
    assert _order(pytester) == {"gw0": ["long"], "gw1": ["medium", "short_a", "short_b"]}


def test_a_worker_done_with_its_lane_exits_before_the_run_ends(pytester: pytest.Pytester) -> None:
    """The worker of the short lane is gone (a zombie until xdist reaps it, or reaped) while the
    long lane still runs: its interpreter does not tear down with every other at the end."""
    bodies = textwrap.dedent(
        """
        import pathlib, time

        def _pid_file():
            return pathlib.Path(__file__).with_name("short.pid")

        def _short_body():
            _pid_file().write_text(str(os.getpid()))

        def _long_body():
            deadline = time.monotonic() + 30
            while not _pid_file().exists():
                assert time.monotonic() < deadline, "the short spec never ran"
                time.sleep(0.1)
            stat = pathlib.Path(f"/proc/{_pid_file().read_text()}/stat")
            while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
                assert time.monotonic() < deadline, "the worker of the short lane is still running"
                time.sleep(0.1)
        """
    )
    _laned_suite(pytester, {"long": (100, ""), "short": (10, "")}, bodies)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    assert _order(pytester) == {"gw0": ["long"], "gw1": ["short"]}


#: Inner-run conftest code: the controller's gateway of worker ``gw2`` is made only once the
#: ``long`` spec has run (or after a deadline, which the log then says).
GW2_AFTER_THE_LONG_SPEC = textwrap.dedent(
    """
    import pathlib, time
    import execnet

    _here = pathlib.Path(__file__).parent
    _make = execnet.Group.makegateway

    def _makegateway(self, spec=None):
        if getattr(spec, "id", None) == "gw2":
            deadline = time.monotonic() + 60
            while not (_here / "long.ran").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            with open(_here / "gateways.log", "a") as log:
                log.write("gw2 after long\\n" if (_here / "long.ran").exists() else "gw2 before long\\n")
        return _make(self, spec)

    execnet.Group.makegateway = _makegateway
    """
)


def test_a_worker_runs_its_lane_while_the_later_workers_are_still_starting(pytester: pytest.Pytester) -> None:
    """xdist made every worker's gateway before handling any worker's event, so the first lane
    (the longest spec) waited for the last worker's start; now its spec runs meanwhile."""
    bodies = textwrap.dedent(
        """
        import pathlib

        def _long_body():
            pathlib.Path(__file__).with_name("long.ran").touch()
        """
    )
    _laned_suite(pytester, {"long": (100, ""), "medium": (50, ""), "short": (10, "")}, bodies)
    (pytester.path / "conftest.py").write_text(
        (pytester.path / "conftest.py").read_text() + GW2_AFTER_THE_LONG_SPEC
    )
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "3", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "gateways.log").read_text() == "gw2 after long\n"
    assert _order(pytester) == {"gw0": ["long"], "gw1": ["medium"], "gw2": ["short"]}


def test_a_worker_whose_gateway_comes_after_the_run_stopped_is_not_started(pytester: pytest.Pytester) -> None:
    """``-x``: the first lane's spec fails while gw2's gateway is still being made; that gateway,
    made after the shutdown began, is closed instead of set up, and the run ends."""
    bodies = textwrap.dedent(
        """
        import pathlib

        def _long_body():
            pathlib.Path(__file__).with_name("long.ran").touch()
            raise AssertionError("the first lane fails")
        """
    )
    _laned_suite(pytester, {"long": (100, ""), "medium": (50, ""), "short": (10, "")}, bodies)
    held = GW2_AFTER_THE_LONG_SPEC.replace(
        "    return _make(self, spec)",
        "        time.sleep(3)  # the failure's report is through and the shutdown began\n"
        "    return _make(self, spec)",
    )
    assert "time.sleep(3)" in held
    configured = textwrap.dedent(
        """

        def pytest_configure(config):
            if hasattr(config, "workerinput"):  # a worker's pytest: its gateway was set up
                with open(_here / "configured.log", "a") as log:
                    log.write(config.workerinput["workerid"] + "\\n")
        """
    )
    (pytester.path / "conftest.py").write_text(
        (pytester.path / "conftest.py").read_text() + held + configured
    )
    result = pytester.runpytest_subprocess(
        *BASE_ARGS, "-n", "3", "-x", "--report-dir", str(pytester.path), timeout=120
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()  # xdist's -x
    assert (pytester.path / "gateways.log").read_text() == "gw2 after long\n"
    assert "gw2" not in _order(pytester)
    assert "gw2" not in (pytester.path / "configured.log").read_text().split()
    assert "INTERNALERROR" not in result.stdout.str()


def test_a_worker_that_cannot_start_stops_the_run_with_the_reason(pytester: pytest.Pytester) -> None:
    _laned_suite(pytester, {"long": (100, ""), "short": (10, "")})
    (pytester.path / "conftest.py").write_text(
        (pytester.path / "conftest.py").read_text()
        + textwrap.dedent(
            """
            import execnet

            _make = execnet.Group.makegateway

            def _makegateway(self, spec=None):
                if getattr(spec, "id", None) == "gw1":
                    raise OSError("no interpreter here")
                return _make(self, spec)

            execnet.Group.makegateway = _makegateway
            """
        )
    )
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*could not start xdist worker gw1: OSError: no interpreter here*"])


def test_without_n_a_spread_run_chooses_its_workers_and_spreads_a_profile_over_several(
    pytester: pytest.Pytester,
) -> None:
    cnt = ', "tmscope:cnt"'
    _laned_suite(
        pytester,
        {
            "cnt_a": (60, cnt),
            "cnt_b": (60, cnt),
            "cnt_c": (60, cnt),
            "default_a": (30, ""),
            "default_b": (30, ""),
        },
    )
    result = pytester.runpytest_subprocess(*BASE_ARGS, "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    # three container-scope specs of a minute: one worker (and cluster) each; the default ones share one
    result.stdout.fnmatch_lines(
        ["nrop: 4 workers (chosen for the selection and this machine: * cores, * GiB available)*"]
    )
    ran = _order(pytester)
    assert sorted(ran.values()) == [["cnt_a"], ["cnt_b"], ["cnt_c"], ["default_a", "default_b"]]
    opened = [
        line.split() for line in (pytester.path / "targets.log").read_text().splitlines() if "open" in line
    ]
    assert sorted(key for _, key, _ in opened) == ["container-scope"] * 3 + ["default"]


def test_a_run_that_debugs_stays_serial(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(FAKE_TARGETS)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "--report-dir", str(pytester.path), "--pdb")
    assert result.ret == 0, result.stdout.str()
    assert "workers" not in result.stdout.str()
    assert {line.split()[-1] for line in (pytester.path / "seen.log").read_text().splitlines()} == {"main"}


def test_a_single_spec_runs_serially(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(FAKE_TARGETS)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "--report-dir", str(pytester.path), "-k", "default_1")
    assert result.ret == 0, result.stdout.str()
    assert "workers" not in result.stdout.str()
    assert (pytester.path / "seen.log").read_text().split() == [
        "default_1",
        "kube-of-default",
        "config-of-default",
        "main",
    ]


def test_with_xdist_a_worker_s_after_suite_failure_fails_the_run(pytester: pytest.Pytester) -> None:
    # the leak check (and any AfterSuite/teardown error) raises in a worker's close: the
    # controller must print it and exit 1, though every spec passed
    leaky = FAKE_TARGETS.replace(
        '_record("close", context.key, self.worker or "main")',
        '_record("close", context.key, self.worker or "main")\n'
        '    if context.key == "container-scope":\n'
        '        raise RuntimeError("the run left the cluster changed (1): namespace e2e-test-x is left")',
    )
    pytester.makeconftest(leaky)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*nrop: AfterSuite/teardown failed: [[]gw?[]] RuntimeError: the run left the cluster changed (1)*"]
    )


def test_with_xdist_the_controller_shows_each_worker_s_leak_check(pytester: pytest.Pytester) -> None:
    # a worker's progress lines stay in its log; the leak-check verdict reaches the user
    checked = FAKE_TARGETS.replace(
        '_record("close", context.key, self.worker or "main")',
        '_record("close", context.key, self.worker or "main")\n'
        '    say("leak check: the cluster is as BeforeSuite found it")',
    )
    pytester.makeconftest(checked)
    pytester.makepyfile(test_profiles=PROFILED)
    result = pytester.runpytest_subprocess(*BASE_ARGS, "-n", "2", "--report-dir", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    for profile in ("container-scope", "default"):  # the workers end in any order
        result.stdout.fnmatch_lines(
            [f"*nrop: [[]{profile}@gw?[]] leak check: the cluster is as BeforeSuite found it"]
        )


def test_xdist_is_refused_against_a_real_cluster(pytester: pytest.Pytester) -> None:
    kubeconfig = pytester.path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_placement=placement_specs())
    result = pytester.runpytest(*BASE_ARGS, "-n", "2", "--kubeconfig", str(kubeconfig))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: -n/--dist runs specs in parallel, but the serial suite must run alone on a shared cluster*"]
    )


def test_xdist_against_a_real_cluster_is_not_refused_outside_the_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = pytester.path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*BASE_ARGS, "-n", "2")
    assert result.ret == 0


# The inner runs of these two conftests are in process (``run``): what they replace in the suite's
# modules is put back when the inner run ends, or later tests of this worker would meet it.
UNSUITABLE_TARGETS = textwrap.dedent(
    """
    import pytest
    from nrop.suite.install import infra, nodetopology
    from nrop.suite.plugin import session

    NROP_SERIAL_SUITE = True
    _patched = pytest.MonkeyPatch()

    def _open(self, key, say):
        return session.Context(key=key, kube=f"kube-of-{key}", timeouts=self.timeouts)

    _patched.setattr(session.Targets, "_open", _open)
    _patched.setattr(session.Targets, "_close", lambda self, context, say: None)
    _patched.setattr(infra, "dump_environment", lambda environ: "")
    _patched.setattr(
        nodetopology, "check_nodes_topology", lambda kube: ['Attribute "topologyManagerPolicy" not reported on NRT "worker-0"']
    )

    def pytest_unconfigure(config):
        _patched.undo()
    """
)


@pytest.mark.parametrize(
    ("kubeconfig", "outcome", "line"),
    [
        # a cluster someone else built: upstream's skip
        (True, {"skipped": 2}, "*SKIPPED*the cluster does not satisfy the serial suite: Attribute*"),
        # the embedded profile is built to satisfy the suite: the stack broke it, every spec errors
        (False, {"errors": 2}, "*UnsuitableEmbeddedCluster: the cluster does not satisfy the serial suite*"),
    ],
)
def test_a_cluster_the_suite_cannot_run_on_skips_unless_it_is_embedded(
    pytester: pytest.Pytester, kubeconfig: bool, outcome: dict[str, int], line: str
) -> None:
    args: list[str] = ["-rs"]
    if kubeconfig:
        path = pytester.path / "kubeconfig"
        path.write_text("apiVersion: v1\nkind: Config\n")
        args += ["--kubeconfig", str(path), "--no-setup"]
    pytester.makeconftest(UNSUITABLE_TARGETS)
    pytester.makepyfile(
        textwrap.dedent(
            """
            from nrop.suite.plugin.specs import spec

            pytestmark = spec("needs BeforeSuite", "tier0")

            def test_one(suite_config):
                pass

            def test_two(suite_config):
                pass
            """
        )
    )
    result = run(pytester, *args)
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines([line])


EMBEDDED_TARGETS = textwrap.dedent(
    """
    import pytest
    from nrop.suite.plugin import session

    NROP_SERIAL_SUITE = True
    _patched = pytest.MonkeyPatch()

    def _open(self, key, say):
        return session.Context(key=key, kube=f"kube-of-{key}", timeouts=self.timeouts, cluster=object())

    def _before_suite(self, context, say):
        context.config = "config"

    _patched.setattr(session.Targets, "_open", _open)
    _patched.setattr(session.Targets, "_before_suite", _before_suite)
    _patched.setattr(session.Targets, "_close", lambda self, context, say: None)

    def pytest_unconfigure(config):
        _patched.undo()
    """
)

SKIPPING_SPECS = textwrap.dedent(
    """
    import pytest
    from nrop.suite.plugin.specs import spec

    pytestmark = spec("skips", "tier0")

    @spec("[test_id:85776] known broken")
    def test_known(suite_config):
        pytest.skip("currently known broken: scheduler should NOT access operator")

    @spec("[test_id:50157] hugepages")
    def test_lacking(suite_config):
        pytest.skip("not enough nodes with NUMA zones each of them can match requests: found 0")

    @spec("no cluster")
    def test_no_cluster():
        pytest.skip("nothing to do here")
    """
)


@pytest.mark.parametrize(
    ("args", "outcome"),
    [
        pytest.param((), {"skipped": 2, "failed": 1}, id="the suite's profiles: an unexpected skip fails"),
        pytest.param(
            ("--cluster-profile", "four-numa"),
            {"skipped": 3},
            id="another profile: specs may find it lacking",
        ),
    ],
)
def test_on_the_embedded_cluster_only_the_listed_skips_stay_skips(
    pytester: pytest.Pytester, args: tuple[str, ...], outcome: dict[str, int]
) -> None:
    pytester.makeconftest(EMBEDDED_TARGETS)
    pytester.makepyfile(SKIPPING_SPECS)
    result = run(pytester, *args)
    result.assert_outcomes(**outcome)
    if "failed" in outcome:
        result.stdout.fnmatch_lines(
            ["*skipped on the embedded cluster, whose profiles are built to run this spec: not enough nodes*"]
        )


# ------------------------------------------------------------------------- embedded cluster

FAKE_CLUSTER = textwrap.dedent(
    """
    import signal, sys, time
    state = sys.argv[sys.argv.index("--state-dir") + 1]
    print("2026-11-26 14:08:10,584 INFO nrop.localcluster.cluster: starting API server", file=sys.stderr, flush=True)
    if "broken" in sys.argv:
        print("2026-11-26 14:08:10,600 ERROR nrop.localcluster.cluster: no such profile", file=sys.stderr, flush=True)
        sys.exit(2)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    open(state + "/kubeconfig", "w").write("apiVersion: v1")
    print("ready: kubeconfig=" + state + "/kubeconfig", flush=True)
    while True:
        time.sleep(0.1)
    """
)


def test_embedded_cluster_start_waits_for_ready_and_stops_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "fake_cluster.py"
    script.write_text(FAKE_CLUSTER)
    lines: list[str] = []
    cluster = target.start(
        "default", tmp_path / "state", progress=lines.append, command=[sys.executable, str(script)]
    )
    try:
        assert cluster.kubeconfig == tmp_path / "state" / "kubeconfig"
        assert cluster.process.poll() is None
        # stderr is relayed by its own thread: lines printed before "ready" may race with it
        assert lines in ([], ["starting API server"])
    finally:
        cluster.stop()
    assert cluster.process.returncode == 0
    assert "starting API server" in cluster.log_path.read_text()


def test_embedded_cluster_that_exits_early_is_an_error_with_its_log(tmp_path: Path) -> None:
    script = tmp_path / "fake_cluster.py"
    script.write_text(FAKE_CLUSTER)
    with pytest.raises(
        target.ClusterStartError, match=r"(?s)--profile broken exited; its log ends with:.*no such"
    ):
        target.start(
            "broken", tmp_path / "state", progress=lambda _: None, command=[sys.executable, str(script)]
        )


@pytest.mark.parametrize(
    ("args", "expected", "header"),
    [
        ((), "(1800.0,) 18000.0", "each spec may take 1800s *, the whole run 18000s (--session-timeout)"),
        (("--timeout", "7"), "None 18000.0", "each spec may take 7.0s (--timeout) *"),
        (("--session-timeout", "60"), "(1800.0,) 60.0", "*, the whole run 60s (--session-timeout)"),
    ],
    ids=["spec-default", "cli-timeout-wins", "cli-session-timeout-wins"],
)
def test_specs_get_a_long_timeout_and_the_run_upstream_s_5h_unless_given(
    pytester: pytest.Pytester, args: tuple[str, ...], expected: str, header: str
) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(
        "from nrop.suite.plugin.specs import spec\n"
        "@spec('a slow spec', 'tier0')\n"
        "def test_spec(request):\n"
        "    mark = request.node.get_closest_marker('timeout')\n"
        "    print('TIMEOUT', mark.args if mark else None, request.config.getoption('session_timeout'))\n"
    )
    result = run(pytester, "-s", *args)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"nrop: {header}", f"*TIMEOUT {expected}"])


def test_a_kubeconfig_of_an_embedded_cluster_gets_the_embedded_timings(
    kubeconfig: Path, tmp_path: Path
) -> None:
    # nrop-cluster up by hand (or by bench/soak.py): the suite asks /version and treats it as embedded
    assert target.serves_embedded(kubeconfig)
    resolved = replace(suite_options.resolve({}, {"KUBECONFIG": str(kubeconfig)}), embedded_server=True)
    assert (resolved.embedded, resolved.emulated, resolved.target, resolved.do_setup) == (
        False,
        True,
        "embedded",
        False,
    )
    # a real cluster's version, and a cluster that does not answer, keep upstream's timings
    assert not target.is_embedded_version("v1.33.2")
    assert target.is_embedded_version("v1.33.0-nrop")
    unreachable = tmp_path / "kubeconfig"
    unreachable.write_text(kubeconfig.read_text().replace("https://127.0.0.1:", "https://127.0.0.1:1"))
    assert not target.serves_embedded(unreachable)


def test_in_process_runs_leave_the_suite_modules_as_they_found_them(pytester: pytest.Pytester) -> None:
    """An inner run whose conftest replaces suite functions puts them back (a replaced
    ``check_nodes_topology`` once made a later test of the same worker see a stack that was not there)."""
    for conftest in (UNSUITABLE_TARGETS, EMBEDDED_TARGETS):
        pytester.makeconftest(conftest)
        pytester.makepyfile("def test_x():\n    pass\n")
        run(pytester)
    pytester.makeconftest("")
    pytester.makepyfile(
        textwrap.dedent(
            """
            from nrop.suite.install import infra, nodetopology
            from nrop.suite.plugin import session

            def test_untouched():
                replaced = [
                    f"{owner.__name__}.{name}"
                    for owner, name in (
                        (nodetopology, "check_nodes_topology"),
                        (infra, "dump_environment"),
                        (session.Targets, "_open"),
                        (session.Targets, "_before_suite"),
                        (session.Targets, "_close"),
                    )
                    if not getattr(owner, name).__module__.startswith("nrop.suite.")
                ]
                assert replaced == []
            """
        )
    )
    run(pytester).assert_outcomes(passed=1)
