"""The one seeded draw: the same draws, in the same order, as the records written before it existed."""

from __future__ import annotations

import random

from harness.seeded_draw import seeded_sample, seeded_samples


def test_the_draw_is_random_sample_over_the_sorted_population_in_draw_order():
    population = {f"q{i}" for i in range(10)}  # a set: the draw must not depend on its iteration order
    assert seeded_sample(population, 4, 2024) == ["q7", "q2", "q4", "q1"]
    assert seeded_sample(reversed(sorted(population)), 4, 2024) == ["q7", "q2", "q4", "q1"]


def test_a_presorted_population_is_drawn_from_as_given():
    assert seeded_sample([5, 1, 4, 2, 3], 3, 3, presorted=True) == [1, 3, 2]
    assert seeded_sample([5, 1, 4, 2, 3], 3, 3) == random.Random(3).sample([1, 2, 3, 4, 5], 3)


def test_several_draws_continue_one_generator():
    assert seeded_samples([("fbdcea", 3), ("zyxwvu", 2)], 7) == [["c", "b", "d"], ["z", "u"]]
    # the second draw is not a fresh one with the same seed
    assert seeded_samples([("fbdcea", 3), ("zyxwvu", 2)], 7)[1] != seeded_sample("zyxwvu", 2, 7)
