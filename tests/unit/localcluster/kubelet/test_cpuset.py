"""CPUSet: the Linux list format and set algebra, as ``k8s.io/utils/cpuset`` behaves."""

from __future__ import annotations

import pytest

from nrop.localcluster.kubelet.cm.cpuset import CPUSet, CPUSetParseError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", [], id="empty-string-is-empty-set"),
        pytest.param("0", [0], id="single"),
        pytest.param("0-3", [0, 1, 2, 3], id="range"),
        pytest.param("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11], id="mixed"),
        pytest.param("5-5", [5], id="degenerate-range"),
        pytest.param("3,1,2", [1, 2, 3], id="unsorted-input"),
        pytest.param("1-3,2-4", [1, 2, 3, 4], id="overlapping-ranges"),
    ],
)
def test_parse(text: str, expected: list[int]) -> None:
    assert CPUSet.parse(text).to_list() == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("1.3", 'strconv.Atoi: parsing "1.3": invalid syntax', id="not-an-integer"),
        pytest.param("asd", 'strconv.Atoi: parsing "asd": invalid syntax', id="letters"),
        pytest.param("3-1", 'invalid range "3-1" (3 > 1)', id="descending-range"),
        pytest.param("1,,2", 'strconv.Atoi: parsing "": invalid syntax', id="empty-element"),
        pytest.param("1-2-3", 'strconv.Atoi: parsing "2-3": invalid syntax', id="two-dashes"),
        pytest.param(" 1", 'strconv.Atoi: parsing " 1": invalid syntax', id="whitespace-is-not-trimmed"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(CPUSetParseError) as exc:
        CPUSet.parse(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("cpus", "text"),
    [
        pytest.param([], "", id="empty"),
        pytest.param([5], "5", id="single"),
        pytest.param([0, 1, 2, 3], "0-3", id="one-range"),
        pytest.param([11, 10, 8, 3, 2, 1, 0], "0-3,8,10-11", id="ranges-and-singles"),
        pytest.param([1, 3, 5], "1,3,5", id="no-ranges"),
        pytest.param([7, 8], "7-8", id="pair-collapses"),
    ],
)
def test_format(cpus: list[int], text: str) -> None:
    assert str(CPUSet(cpus)) == text
    assert CPUSet.parse(text) == CPUSet(cpus)


def test_algebra_and_iteration() -> None:
    a, b = CPUSet.parse("0-5"), CPUSet.parse("4-7")
    assert list(a | b) == list(range(8))
    assert (a & b).to_list() == [4, 5]
    assert (a - b).to_list() == [0, 1, 2, 3]
    assert a.union(b, [10]).to_list() == [0, 1, 2, 3, 4, 5, 6, 7, 10]
    assert CPUSet.of(4, 5).is_subset_of(a) and a.is_superset_of(CPUSet.of(0))
    assert list(CPUSet.of(9, 2, 5)) == [2, 5, 9]
    assert 3 in a and 7 not in a
    assert len(a) == a.size() == 6
    assert not CPUSet() and CPUSet().is_empty()
    assert hash(CPUSet.of(1, 2)) == hash(CPUSet.parse("1-2"))
    assert repr(CPUSet.of(1, 2, 3)) == 'CPUSet("1-3")'


def test_immutable_and_validated() -> None:
    s = CPUSet.of(1)
    with pytest.raises(AttributeError):
        s._cpus = frozenset()  # type: ignore[misc]
    with pytest.raises(ValueError):
        CPUSet([-1])
