"""specviz.app.measured: where an old /measured-data link lands, and the pages' scenarios."""

import pytest

from specviz.app import measured


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ({}, measured.LIBRARY),
        ({"lang": "zh"}, measured.LIBRARY),
        ({"filter": "qwen"}, measured.LIBRARY),
        ({"runs": "1,2", "filter": "qwen"}, measured.LIBRARY),
        ({"k_given": "3", "no_bonus": "true"}, measured.LIBRARY),  # read options: not in links, the library's
        ({"runs": "1"}, measured.COMPARE),
        ({"hk": "4"}, measured.COMPARE),
        ({"hk": "4", "filter": "qwen", "runs": "1"}, measured.COMPARE),
    ],
)
def test_an_old_link_lands_on_the_page_its_query_names(query, page):
    assert measured.old_route(query) == page


def test_every_old_control_belongs_to_the_page_it_lands_on():
    old = {"runs", "filter", "hk"}
    assert {p.key for p in measured.LIBRARY_SPEC} | {p.key for p in measured.COMPARE_SPEC} == old
    assert {p.key for p in measured.LIBRARY_SPEC} == {"runs", "filter"}
    assert {p.key for p in measured.COMPARE_SPEC} == {"runs", "hk"}


def test_scenarios_are_frozen_and_hashable_from_the_controls():
    values = {"runs": [3, 1], "filter": "x", "hk": 4, "format": "auto", "k_given": 2, "no_bonus": True}
    library, comparison = measured.LibraryView.of(values), measured.Comparison.of(values)
    assert library == measured.LibraryView((3, 1), "x", measured.ReadOptions("auto", 2, True))
    assert hash(library) == hash(measured.LibraryView.of(dict(values)))
    assert comparison == measured.Comparison((3, 1), 4) and hash(measured.Published.of(values, "zh"))
    with pytest.raises(AttributeError):
        comparison.hk = 5
