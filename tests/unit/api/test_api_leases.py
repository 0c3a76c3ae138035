"""The Lease rule both the operator and the scheduler follow (client-go's tryAcquireOrRenew), as tables."""

from __future__ import annotations

import pytest

from nrop.api.leases import (
    Decision,
    LeaseRecord,
    Observation,
    candidate_identity,
    decide,
    lease_valid,
    observe,
    record_for,
    released,
)

ME, OTHER = "host-a_1111", "host-b_2222"
T0 = "2025-01-01T00:00:00.000000Z"
T1 = "2025-01-01T00:00:10.000000Z"


def held(holder: str, duration: int = 15, transitions: int = 3) -> LeaseRecord:
    return LeaseRecord(holder, duration, T0, T0, transitions)


@pytest.mark.parametrize(
    ("observation", "now", "leading", "expected"),
    [
        pytest.param(None, 0.0, False, Decision.CREATE, id="no-lease-create"),
        pytest.param(Observation(held(""), 100.0), 100.0, False, Decision.ACQUIRE, id="empty-holder-acquire"),
        pytest.param(
            Observation(held("", duration=1), 100.0),
            100.0,
            False,
            Decision.ACQUIRE,
            id="released-lease-acquire-at-once",
        ),
        pytest.param(Observation(held(OTHER), 100.0), 100.0, False, Decision.WAIT, id="other-fresh-wait"),
        pytest.param(
            Observation(held(OTHER), 100.0), 114.9, False, Decision.WAIT, id="other-just-before-expiry-wait"
        ),
        pytest.param(
            Observation(held(OTHER), 100.0),
            115.0,
            False,
            Decision.ACQUIRE,
            id="other-expired-at-duration-acquire",
        ),
        pytest.param(
            Observation(held(OTHER), 100.0), 500.0, False, Decision.ACQUIRE, id="other-long-expired-acquire"
        ),
        pytest.param(
            Observation(held(OTHER, duration=60), 100.0),
            130.0,
            False,
            Decision.WAIT,
            id="holders-own-duration-counts",
        ),
        pytest.param(Observation(held(ME), 100.0), 101.0, True, Decision.RENEW, id="mine-renew"),
        pytest.param(Observation(held(ME), 100.0), 500.0, True, Decision.RENEW, id="mine-even-expired-renew"),
        pytest.param(
            Observation(held(ME), 100.0), 101.0, False, Decision.RENEW, id="mine-not-yet-leading-renew"
        ),
        pytest.param(
            Observation(held(OTHER), 100.0), 101.0, True, Decision.LOST, id="leading-but-other-holds-lost"
        ),
        pytest.param(
            Observation(held(OTHER), 100.0), 116.0, True, Decision.ACQUIRE, id="leading-other-expired-acquire"
        ),
    ],
)
def test_decide(observation: Observation | None, now: float, leading: bool, expected: Decision) -> None:
    assert decide(observation, now, ME, leading) is expected


@pytest.mark.parametrize(
    ("previous", "record", "now", "expected_at"),
    [
        pytest.param(None, held(OTHER), 50.0, 50.0, id="first-read-starts-the-clock"),
        pytest.param(Observation(held(OTHER), 10.0), held(OTHER), 50.0, 10.0, id="unchanged-keeps-the-clock"),
        pytest.param(
            Observation(held(OTHER), 10.0),
            LeaseRecord(OTHER, 15, T0, T1, 3),
            50.0,
            50.0,
            id="renewed-restarts-the-clock",
        ),
        pytest.param(
            Observation(held(OTHER), 10.0), held(ME), 50.0, 50.0, id="new-holder-restarts-the-clock"
        ),
    ],
)
def test_observe_uses_the_local_clock(
    previous: Observation | None, record: LeaseRecord, now: float, expected_at: float
) -> None:
    observation = observe(previous, record, now)
    assert observation.record == record and observation.observed_at == expected_at


def test_a_holder_that_stops_renewing_expires_by_the_local_clock() -> None:
    # The renewTime in the lease is never compared with our clock: only how long it stayed the same.
    stale = LeaseRecord(OTHER, 15, T0, "1999-01-01T00:00:00.000000Z", 0)
    first = observe(None, stale, 1000.0)
    assert decide(first, 1000.0, ME, False) is Decision.WAIT
    later = observe(first, stale, 1014.0)
    assert decide(later, 1014.0, ME, False) is Decision.WAIT
    assert decide(observe(later, stale, 1015.0), 1015.0, ME, False) is Decision.ACQUIRE
    assert lease_valid(later, 1014.999) and not lease_valid(later, 1015.0)


@pytest.mark.parametrize(
    ("decision", "current", "expected"),
    [
        pytest.param(
            Decision.CREATE, None, LeaseRecord(ME, 15, T1, T1, 0), id="create-starts-at-zero-transitions"
        ),
        pytest.param(
            Decision.ACQUIRE,
            held(OTHER, transitions=3),
            LeaseRecord(ME, 15, T1, T1, 4),
            id="acquire-bumps-transitions",
        ),
        pytest.param(
            Decision.ACQUIRE,
            held("", transitions=0),
            LeaseRecord(ME, 15, T1, T1, 1),
            id="acquire-empty-bumps-too",
        ),
        pytest.param(
            Decision.RENEW,
            held(ME, transitions=3),
            LeaseRecord(ME, 15, T0, T1, 3),
            id="renew-keeps-acquire-and-transitions",
        ),
    ],
)
def test_record_for(decision: Decision, current: LeaseRecord | None, expected: LeaseRecord) -> None:
    assert record_for(decision, current, ME, 15, T1) == expected


@pytest.mark.parametrize("decision", [Decision.WAIT, Decision.LOST], ids=["wait", "lost"])
def test_nothing_to_write_for_wait_or_lost(decision: Decision) -> None:
    with pytest.raises(ValueError, match="no record to write"):
        record_for(decision, held(OTHER), ME, 15, T1)


def test_released_record_empties_the_holder() -> None:
    assert released(held(ME, transitions=7), T1) == LeaseRecord("", 1, T1, T1, 7)
    assert released(held(ME), T1).spec()["holderIdentity"] == ""


def test_lease_spec_round_trip() -> None:
    record = LeaseRecord(ME, 15, T0, T1, 2)
    lease = {"spec": record.spec()}
    assert lease["spec"] == {
        "holderIdentity": ME,
        "leaseDurationSeconds": 15,
        "acquireTime": T0,
        "renewTime": T1,
        "leaseTransitions": 2,
    }
    assert LeaseRecord.from_lease(lease) == record
    assert LeaseRecord.from_lease({"spec": {}}) == LeaseRecord()
    assert LeaseRecord.from_lease({}) == LeaseRecord()


def test_candidate_identity_is_the_host_and_a_uuid_per_process() -> None:
    first, second = candidate_identity("pod-0"), candidate_identity("pod-0")
    assert first != second
    host, sep, unique = first.partition("_")
    assert (host, sep, len(unique)) == ("pod-0", "_", 36)
