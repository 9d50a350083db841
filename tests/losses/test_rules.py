"""The two halves of the loss registry name the same losses: the config rules the validation pass reads
(`sweep.losses.rules.RULES`, no torch) and the classes training builds (`sweep.losses.registry.LOSSES`); each rule
that mirrors a class (a schedule's scale holder, the similarity functions) agrees with it."""

from __future__ import annotations

import pytest

from sweep.losses import cosent, mnrl, rules
from sweep.losses.registry import LOSSES
from sweep.losses.rules import RULES


def test_the_rules_and_the_classes_list_the_same_losses_in_the_same_order():
    assert list(RULES) == list(LOSSES)


@pytest.mark.parametrize("name", list(LOSSES))
def test_a_loss_is_schedulable_exactly_when_its_spec_names_the_module_a_schedule_sets(name):
    assert RULES[name].schedulable == (LOSSES[name].scheduled is not None)


def test_the_similarity_names_the_rules_allow_are_the_ones_the_classes_map():
    assert tuple(mnrl.SIMILARITIES) == rules.SIMILARITIES
    assert tuple(cosent.PAIRWISE_SIMILARITIES) == rules.PAIRWISE_SIMILARITIES
