"""A custom engine profile's bad terms are named with the control they were typed in, in both languages."""

from __future__ import annotations

from _messages import caught, expect, inner

from specviz.app import profiles
from specviz.core import profiles as stack_profiles


def test_an_unknown_term_names_the_terms_box():
    exc = caught(profiles.efficiency, profiles.CUSTOM, "c_fixed=1")
    expect(
        exc,
        "{control}: {cause}",
        {
            "control": inner("Custom profile terms (name=value, …)"),
            "cause": inner(
                "engine term {name!r} is not one of {allowed}", name="c_fixed", allowed=", ".join(stack_profiles.TERMS)
            ),
        },
        shows=("'c_fixed'", "overhead_s"),
    )
