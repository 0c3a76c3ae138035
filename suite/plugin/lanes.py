"""How a run of the serial suite is spread over xdist workers: how many, and which specs each one runs.

Pure decisions over plain data (no pytest, no I/O), used by :mod:`nrop.suite.plugin.distributing`:

* the spec durations the project measured (``durations.json`` next to this module, refreshed
  by ``bench/suite.py --update-durations`` from a run's JUnit file), keyed by :func:`spec_key`
  (the node id without the tests directory, so it holds in the tree and in the image), less
  the seconds the spec waited for its cluster (the JUnit property :data:`TARGET_SECONDS`: the
  plan counts cluster starts apart), and the estimate of a spec never measured (:func:`estimate`:
  what its module's specs took, or all of them);
* :func:`worker_count`: how many workers a run on embedded clusters gets when ``-n`` is not
  given: as many as memory allows, the cores keep up with (:data:`CPU_PER_WORKER` each) and
  the selected specs can use, but no more than shorten the planned run; the specs mostly wait
  on upstream's fixed windows, so a worker needs a small share of a core, but past the cores
  every cluster slows down and upstream's timing specs fail under the run's own load; cores
  also make clusters that start together slower (:func:`first_clusters`);
* :func:`plan`: one *lane* per worker, longest spec first (LPT list scheduling) where a lane's
  first cluster is ready as late as its worker boots (:func:`first_clusters`: the workers boot
  one after the other) and a later one, of a profile the lane has not got yet, costs
  :data:`CLUSTER_SWITCH_SECONDS` (it is prepared while the lane's spec before it runs); so the
  specs of a profile other than the run's are spread over several clusters of that profile
  when that ends the run sooner, and each lane runs its profiles one after the other.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CLUSTER_START_SECONDS",
    "CLUSTER_SWITCH_SECONDS",
    "CPU_PER_WORKER",
    "MEMORY_PER_WORKER",
    "MEMORY_RESERVE",
    "PLAN_TOLERANCE",
    "PREPARE_COVER_SECONDS",
    "PREPARE_EARLY",
    "RAMP_GROWTH",
    "RAMP_SECONDS",
    "TARGET_SECONDS",
    "Lane",
    "Spec",
    "cluster_ready",
    "cluster_start",
    "estimate",
    "first_clusters",
    "makespan",
    "plan",
    "prepare_delays",
    "spec_key",
    "worker_count",
]

#: What one worker with its embedded cluster and stack takes at its peak: measured about 500 MiB
#: (six workers of tier0 peaked at 3.4 GiB of used memory, 0.5 GiB of it the machine's own),
#: plus room for the second cluster a worker holds while it switches profile.
MEMORY_PER_WORKER = 768 * 2**20
#: Memory left to the rest of the machine (the controller, the page cache, other jobs).
MEMORY_RESERVE = 2 * 2**30
#: Wall seconds from "start a cluster" to its first spec when it starts alone: the cluster, the
#: stack through the operator and BeforeSuite (10 to 15 s measured on a 2-core machine).
CLUSTER_START_SECONDS = 13.0
#: Wall seconds a lane's later cluster (a profile other than its first's) costs it in the plan.
#: A worker prepares it while the spec before it runs, the plan puts a spec long enough there
#: (:data:`PREPARE_COVER_SECONDS`) and the worker starts it when that spec has about a start
#: left (:func:`prepare_delays`), so the lane seldom waits for it: of the later clusters planned
#: in three whole-suite runs on 2026-12-02, none did. Counted as a first one (70 s with 20 workers), those
#: lanes ended 60 to 100 s sooner than planned; at 25 s, 10 to 28 s sooner. What is left is the
#: start's CPU, which every lane shares, and a floor against a cluster for a few seconds of balance.
CLUSTER_SWITCH_SECONDS = 10.0
#: Wall seconds a later cluster takes to start while the lane's spec before it runs (8 to 19 s
#: measured in a 20-worker whole-suite run): the spec it is prepared behind should last as long.
PREPARE_COVER_SECONDS = 25.0
#: The share of a spec's measured seconds :func:`prepare_delays` does not count on.
PREPARE_EARLY = 0.2
#: Seconds of one core by which a worker's first cluster is ready after the one before while few
#: run (:func:`cluster_ready`): the workers boot one after the other and their starts share the cores.
RAMP_SECONDS = 3.0
#: How the ramp steepens as stacks pile up: the step after worker ``i`` is ``1 + i / RAMP_GROWTH``
#: times the first (each worker boots, and its cluster starts, amid more running stacks).
RAMP_GROWTH = 33.0
#: Cores one worker may keep busy on average while its specs run: its cluster (API server,
#: kubelets, exporters, scheduler, operator) and its pytest process. Whole-suite runs on 2 cores
#: average 0.055 to 0.066 of a core per worker (435 CPU-s over 354 s with 20 workers, 544 over
#: 345 s with 24, 533 over 349 s with 28, on 2026-12-02), but cluster starts come in storms, and
#: upstream's timing comparison (47627) failed with 20 or 21 workers in five runs of five (2.4 to
#: 4.1 s against upstream's 2 s) until it ran ahead of the other clusters
#: (:mod:`nrop.suite.plugin.precedence`); since, it passed with 20, 24 and 28 workers.
CPU_PER_WORKER = 0.08
#: A worker (and the cluster it starts) must end the planned run this much sooner to be worth it.
PLAN_TOLERANCE = 0.05
#: The JUnit property (and report property) of the seconds a spec's setup waited for its target:
#: the first spec on a cluster waits for it to start (the timeline draws that part apart).
TARGET_SECONDS = "target_seconds"


@dataclass(frozen=True)
class Spec:
    """One selected test as the plan sees it: its id, the profile of the cluster it needs (``None``:
    no cluster), and how long it is expected to take."""

    nodeid: str
    profile: str | None
    seconds: float


@dataclass
class Lane:
    """The specs of one worker in the order it runs them, and its planned wall seconds."""

    specs: list[Spec] = field(default_factory=list)
    seconds: float = 0.0
    #: the profiles of the lane's clusters, in the order it starts them
    profiles: list[str] = field(default_factory=list)
    #: wall seconds until the lane's first cluster is ready (``None``: as any other, ``startup``)
    first: float | None = None

    def cost(self, spec: Spec, startup: float) -> float:
        """What running ``spec`` next adds to the lane: its seconds, and a cluster start if it needs one."""
        if self.has_cluster_for(spec):
            return spec.seconds
        return spec.seconds + (self.first if self.first is not None and not self.profiles else startup)

    def add(self, spec: Spec, startup: float) -> None:
        self.seconds += self.cost(spec, startup)
        if spec.profile is not None and spec.profile not in self.profiles:
            self.profiles.append(spec.profile)
        self.specs.append(spec)

    def has_cluster_for(self, spec: Spec) -> bool:
        return spec.profile is None or spec.profile in self.profiles


def cluster_ready(index: int, cores: float) -> float:
    """Wall seconds until the first cluster of worker ``index`` (from 0) is ready in a run that
    spreads: the workers boot one after the other and each starts its cluster as it boots,
    sharing the cores with the stacks started before, so each is ready a little later than the
    one before, and more so the more stacks run (:data:`RAMP_SECONDS`, :data:`RAMP_GROWTH`).
    Fitted to the runs of 2026-12-02 on 2 cores in a fast hour: tier0's eleven workers ready
    15-31 s in, the whole suite's twenty 16-58 s in and twenty-two 16-67 s in (this gives
    14.5-34.5, 14.5-60.3 and 14.5-67.0). The line it replaced (13 + 3 s a worker) had tier0's
    last lanes ready 12 s late, so the plan put a short spec after a one-minute one on the
    first lane, which then ended the run (107 s in CI, the other lanes 66-89 s)."""
    return CLUSTER_START_SECONDS + RAMP_SECONDS * (index + 1) * (1 + index / RAMP_GROWTH) / max(cores, 1)


def cluster_start(workers: int, cores: float) -> float:
    """Wall seconds the last worker's first cluster waits in a run of ``workers`` (:func:`cluster_ready`)."""
    return cluster_ready(workers - 1, cores)


def first_clusters(workers: int, cores: float) -> list[float]:
    """Each worker's :func:`cluster_ready`, in worker order (the ``first`` of :func:`plan`)."""
    return [cluster_ready(index, cores) for index in range(workers)]


def spec_key(nodeid: str) -> str:
    """The key of a spec in ``durations.json``: its node id from the module file name on
    (``serial/test_x.py::T::test[1]`` -> ``test_x.py::T::test[1]``)."""
    path, sep, rest = nodeid.partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest


def estimate(key: str, durations: Mapping[str, float]) -> float:
    """The expected seconds of a spec: measured, else the median of what was measured of its module
    (a family of specs alike), else of everything (0 if nothing was)."""
    if key in durations:
        return float(durations[key])
    module = key.partition("::")[0] + "::"
    family = [seconds for other, seconds in durations.items() if other.startswith(module)]
    measured = family or list(durations.values())
    return float(statistics.median(measured)) if measured else 0.0


def plan(
    specs: Sequence[Spec], workers: int, startup: float, first: Sequence[float] | None = None
) -> list[Lane]:
    """``workers`` lanes (some maybe empty) running every spec, longest first: the best of four plans.

    A cluster start costs a lane ``startup`` seconds (:data:`CLUSTER_SWITCH_SECONDS` in a run); its
    first one ``first[index]`` where given (:func:`first_clusters`: the workers boot one after the
    other, so the later ones start later and get less to run). *Mixed*: each spec, longest first,
    goes to the lane where it would end soonest (ties: a lane that has a cluster of its profile,
    then the lower index). *By
    profile* (when there are lanes enough): each lane one profile, a profile getting lanes while
    it is the one that would end last; its specs longest first to its lane ending soonest; the
    lanes with most to run then go to the workers whose first cluster is ready soonest. Each of
    the two also as :func:`_reseated` (its lanes on other workers, the most to run after the
    first cluster to the worker ready soonest). Either way a lane runs its profiles in the order
    it got them, so it starts each cluster once (:func:`_run_order`).
    """
    if workers < 1:
        raise ValueError(f"a plan needs at least one worker, not {workers}")
    firsts = list(first) if first is not None else [startup] * workers
    if len(firsts) != workers:
        raise ValueError(f"{workers} workers need {workers} first cluster starts, not {len(firsts)}")
    ordered = sorted(specs, key=lambda s: (-s.seconds, s.nodeid))
    built = [_mixed(ordered, firsts, startup)]
    by_profile = _by_profile(ordered, firsts, startup)
    if by_profile is not None:
        built.append(by_profile)
    candidates = built
    if len(set(firsts)) > 1:  # where every first cluster is ready at once, a seat is as good as another
        candidates = [seated for lanes in built for seated in (lanes, _reseated(lanes, firsts, startup))]
    best = min(candidates, key=makespan)  # the mixed plan as built on a tie
    for lane in best:
        lane.specs = _run_order(lane)
    return best


def _run_order(lane: Lane) -> list[Spec]:
    """A lane's specs in the order its worker runs them: those needing no cluster first, then each
    profile's in the order the lane got them, longest first, except that a profile followed by
    another ends with the spec its worker prepares the next cluster behind: its shortest of at
    least :data:`PREPARE_COVER_SECONDS` (else its longest), so the lane need not wait for that
    cluster nor hold it long unused."""
    groups = [[s for s in lane.specs if s.profile == profile] for profile in lane.profiles]  # longest first
    ordered = [s for s in lane.specs if s.profile is None]
    for group in groups[:-1]:
        covering = [s for s in group if s.seconds >= PREPARE_COVER_SECONDS]
        cover = covering[-1] if covering else group[0]
        ordered += [s for s in group if s is not cover] + [cover]
    return ordered + (groups[-1] if groups else [])


def _soonest(lanes: Sequence[Lane], spec: Spec, startup: float) -> Lane:
    def ends(index: int) -> tuple[float, bool, int]:
        lane = lanes[index]
        return (lane.seconds + lane.cost(spec, startup), not lane.has_cluster_for(spec), index)

    return lanes[min(range(len(lanes)), key=ends)]


def _mixed(ordered: Sequence[Spec], firsts: Sequence[float], startup: float) -> list[Lane]:
    lanes = [Lane(first=seconds) for seconds in firsts]
    for spec in ordered:
        _soonest(lanes, spec, startup).add(spec, startup)
    return lanes


def _by_profile(ordered: Sequence[Spec], firsts: Sequence[float], startup: float) -> list[Lane] | None:
    workers = len(firsts)
    profiles = list(dict.fromkeys(s.profile for s in ordered if s.profile is not None))
    if not profiles or len(profiles) > workers:
        return None
    counts = dict.fromkeys(profiles, 1)

    def lanes_of(profile: str, count: int) -> list[Lane]:
        lanes = [Lane() for _ in range(count)]
        for spec in (s for s in ordered if s.profile == profile):
            _soonest(lanes, spec, startup).add(spec, startup)
        return lanes

    planned = {profile: lanes_of(profile, 1) for profile in profiles}
    for _ in range(workers - len(profiles)):
        last = max(profiles, key=lambda p: (makespan(planned[p]), -profiles.index(p)))
        more = lanes_of(last, counts[last] + 1)
        if makespan(more) >= makespan(planned[last]):
            break  # another cluster would not end that profile sooner
        counts[last] += 1
        planned[last] = more
    built = [lane for profile in profiles for lane in planned[profile]]
    built += [Lane() for _ in range(workers - len(built))]
    lanes = _reseated(built, firsts, startup)  # sorted is stable: profile order on a tie
    for spec in (s for s in ordered if s.profile is None):
        _soonest(lanes, spec, startup).add(spec, startup)
    return lanes


def _reseated(built: Sequence[Lane], firsts: Sequence[float], startup: float) -> list[Lane]:
    """The same lanes on other workers: the most to run after its first cluster is ready to the
    worker whose first cluster is ready soonest, lanes needing no cluster last. Building a plan
    spec by spec puts a profile's lanes where that profile's longest spec first fitted, which in
    a run of many workers is the workers that boot last (the whole suite's three
    ``container-scope`` lanes went to the last three of twenty and ended 25-50 s after the rest)."""

    def work(lane: Lane) -> float:
        return lane.seconds - lane.first if lane.profiles and lane.first is not None else lane.seconds

    ranked = sorted(built, key=lambda lane: (not lane.profiles, -work(lane)))
    slots = sorted(range(len(firsts)), key=lambda index: (firsts[index], index))
    seated = [Lane(first=seconds) for seconds in firsts]
    for slot, lane in zip(slots, ranked, strict=True):
        for spec in lane.specs:
            seated[slot].add(spec, startup)
    return seated


def prepare_delays(specs: Sequence[Spec]) -> dict[str, float]:
    """For a lane's specs in run order: each spec followed by one of another profile, and how
    long after it starts its worker prepares that next cluster: when the spec is expected to
    have :data:`PREPARE_COVER_SECONDS` left, counting it :data:`PREPARE_EARLY` shorter than
    measured (a spec's length varies from run to run). Sooner, the cluster would wait unused,
    or start among the other workers' first clusters and slow them (three such starts in the
    first 90 s of a whole-suite run put its last worker's first cluster 20 s later)."""
    return {
        spec.nodeid: max(0.0, spec.seconds * (1 - PREPARE_EARLY) - PREPARE_COVER_SECONDS)
        for spec, following in itertools.pairwise(specs)
        if spec.profile is not None and following.profile not in (None, spec.profile)
    }


def makespan(lanes: Sequence[Lane]) -> float:
    """The planned wall seconds of a run: its longest lane."""
    return max((lane.seconds for lane in lanes), default=0.0)


def worker_count(
    specs: Sequence[Spec],
    available_memory: int,
    cores: float,
    *,
    memory_per_worker: int = MEMORY_PER_WORKER,
    reserve: int = MEMORY_RESERVE,
    tolerance: float = PLAN_TOLERANCE,
) -> int:
    """How many xdist workers a run on embedded clusters gets when ``-n`` is not given (0: serial).

    At most what the memory holds (``available_memory`` less ``reserve``, ``memory_per_worker``
    each), what ``cores`` keep up with (:data:`CPU_PER_WORKER` each) and one per spec that needs
    a cluster; of those, the fewest whose plan ends within ``tolerance`` of the soonest (a worker
    that does not shorten the run costs a cluster for nothing). Each plan is the one the run
    would get (:func:`first_clusters`): a worker more is a later lane, whose first cluster is
    ready last, and the longest spec goes to the worker that boots first. Measured on 2 cores
    (2026-12-02): the whole suite took 350-364 s with 20 workers, 345 s with 24 and 349 s with 28
    (in a slow hour); tier0 gets 10 (97.9-99.9 s with 10 and 99.5-104.2 s with 11, in turn
    within one hour). One worker is no worker: the run stays in the pytest process.
    """
    needing = sum(1 for spec in specs if spec.profile is not None)
    by_cpu = int(max(cores, 1) / CPU_PER_WORKER)
    ceiling = min(max(0, available_memory - reserve) // memory_per_worker, by_cpu, needing)
    if ceiling < 2:
        return 0
    ends = {
        n: makespan(plan(specs, n, CLUSTER_SWITCH_SECONDS, first_clusters(n, cores)))
        for n in range(1, ceiling + 1)
    }
    best = min(ends.values())
    workers = min(n for n, end in ends.items() if end <= best * (1 + tolerance))
    return 0 if workers == 1 else workers
