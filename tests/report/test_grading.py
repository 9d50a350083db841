"""The strength rule (`sweep.report.grading`): a table of evidence and the label it must get, one row per clause of the
rule and per confound the design implies; fewer seeds never give a stronger label; every grade can be made again
from the evidence it recorded; the rule's words name every clause."""

from __future__ import annotations

import itertools

import pytest

from sweep.report.evidence import bound, interval
from sweep.report.grading import (
    CONFOUNDED,
    EDGE,
    FIXED,
    INHERITED,
    LABELS,
    MODERATE,
    NO_INTERVAL,
    PAIRED,
    RATE,
    SHORT_RUN,
    START,
    STRONG,
    TUNED,
    UNPAIRED,
    UNTESTED,
    WEAK,
    Control,
    Design,
    Facts,
    lowest,
    regrade,
    strength,
    strength_rule,
)

CLEAN = Design(steps=120, passes=0.9, rate=TUNED, rate_words="0.005", scales=(10.0, 20.0))


def folder(seeds: int = 3, confirmed: bool = True, design: Design = CLEAN, words: str = "seeds") -> Facts:
    return Facts("study", seeds, confirmed, words, design)


def controlled_by(label_design: Design) -> Control:
    """A control of the start model's scale graded by the rule itself, with the given design."""
    return Control(START, "random_start", strength([folder(design=label_design)], True, 1))


# (what the evidence is, the arguments of `strength`, the label it must get, words the reason must hold)
TABLE = [
    ("no study", ([], True, 1), {}, UNTESTED, "no study"),
    ("1 seed, separates, confirmed", ([folder(1)], True, 2), {}, WEAK, "1 seed"),
    ("2 seeds", ([folder(2)], True, 2), {}, WEAK, "2 seeds"),
    (
        "1 fine-tuning seed per start model",
        ([folder(1, words="fine-tuning seeds per start model")], True, 3),
        {},
        WEAK,
        "1 fine-tuning seed per start model",
    ),
    ("the verdict does not separate", ([folder()], False, 1), {}, WEAK, "not distinguishable"),
    ("test does not confirm", ([folder(confirmed=False)], True, 1), {}, WEAK, "test does not confirm"),
    ("a point estimate", ([folder()], True, 1), {"method": NO_INTERVAL}, WEAK, "no interval"),
    ("weak before confounded", ([folder(2, design=Design(rate=FIXED))], True, 2), {}, WEAK, "2 seeds"),
    ("3 seeds, one condition", ([folder()], True, 1), {}, MODERATE, "paired verdict separates"),
    ("3 seeds, two conditions, paired", ([folder()], True, 2), {}, STRONG, "2 distinct conditions"),
    ("unpaired in two conditions", ([folder()], True, 2), {"method": UNPAIRED}, MODERATE, "unpaired t over seeds"),
    ("a named confound", ([folder()], True, 2, ["the run length"]), {}, CONFOUNDED, "the run length"),
    (
        "start model trained at a scale compared",
        ([folder(design=Design(start_scale=20.0, scales=(10.0, 20.0, 50.0)))], True, 1),
        {},
        CONFOUNDED,
        "trained at scale 20, among the scales compared",
    ),
    (
        "start model trained outside the scales compared",
        ([folder(design=Design(start_scale=20.0, scales=(50.0, 100.0)))], True, 1),
        {},
        MODERATE,
        "",
    ),
    (
        "one untuned learning rate",
        ([folder(design=Design(rate=FIXED, rate_words="0.05"))], True, 1),
        {},
        CONFOUNDED,
        "one value (0.05), not tuned",
    ),
    ("a rate at the grid's edge", ([folder(design=Design(rate=EDGE))], True, 2), {}, CONFOUNDED, "not bracketed"),
    ("a rate tuned on the same set-up elsewhere", ([folder(design=Design(rate=INHERITED))], True, 1), {}, MODERATE, ""),
    ("repeated data", ([folder(design=Design(passes=3.3))], True, 2), {}, CONFOUNDED, "3.3 passes"),
    ("one pass", ([folder(design=Design(passes=1.0))], True, 2), {}, STRONG, ""),
    (
        "a short run",
        ([folder(design=Design(steps=SHORT_RUN - 69))], True, 2),
        {},
        CONFOUNDED,
        f"a short run (31 steps, fewer than {SHORT_RUN})",
    ),
    (
        "a start-model confound lifted by a clean control",
        ([folder(design=Design(start_scale=20.0))], True, 1),
        {"controls": [controlled_by(CLEAN)]},
        MODERATE,
        "controlled by `random_start` (moderate)",
    ),
    (
        "a control at an untuned rate does not lift it",
        ([folder(design=Design(start_scale=20.0))], True, 1),
        {"controls": [controlled_by(Design(rate=FIXED))]},
        CONFOUNDED,
        "`random_start` does not control it (confounded)",
    ),
    (
        "a control that disagrees does not lift it",
        ([folder(design=Design(start_scale=20.0))], True, 1),
        {"controls": [Control(START, "random_start", strength([folder()], True, 1), agrees=False)]},
        CONFOUNDED,
        "it disagrees",
    ),
    (
        "a control of another kind does not lift it",
        ([folder(design=Design(start_scale=20.0))], True, 1),
        {"controls": [Control(RATE, "rates", strength([folder()], True, 1))]},
        CONFOUNDED,
        "among the scales compared",
    ),
]


@pytest.mark.parametrize(("what", "arguments", "options", "label", "words"), TABLE, ids=[row[0] for row in TABLE])
def test_the_rule_gives_each_evidence_its_label(what, arguments, options, label, words) -> None:
    graded = strength(*arguments, **options)
    assert graded.label == label, f"{what}: {graded}"
    assert words in graded.reason
    assert regrade(graded) == graded


def test_fewer_seeds_never_give_a_stronger_label() -> None:
    designs = [CLEAN, Design(rate=FIXED), Design(start_scale=20.0), Design(steps=10)]
    for design, separates, confirmed, distinct, method in itertools.product(
        designs, (True, False), (True, False), (1, 2, 4), (PAIRED, UNPAIRED, NO_INTERVAL)
    ):
        labels = [
            LABELS.index(strength([folder(n, confirmed, design)], separates, distinct, method=method).label)
            for n in range(1, 12)
        ]
        assert labels == sorted(labels), (design, separates, confirmed, distinct, method)
        assert labels[0] <= LABELS.index(WEAK)  # one seed is weak at most


def test_an_answer_on_several_claims_takes_the_lowest_label_and_can_be_made_again() -> None:
    strong = strength([folder()], True, 4)
    weak = strength([folder(1)], True, 1)
    both = lowest([("the description", strong), ("the why", weak)])
    assert both.label == WEAK and both.reason.startswith("the description: strong")
    assert regrade(both) == both
    with pytest.raises(ValueError, match="did not make"):
        regrade(type(strong)(STRONG, "typed by hand"))


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method"):
        strength([folder()], True, 1, method="bootstrap")


def test_the_rules_words_name_every_clause() -> None:
    words = strength_rule()
    for clause in (*LABELS, "fewer than 3", "not bracketed", "more than one pass", f"fewer than {SHORT_RUN} steps"):
        assert clause in words
    assert "trained at a scale among those compared" in words and "itself moderate or strong" in words


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [(0.0123, 0.0456, "[0.012, 0.046]"), (-0.00013, 0.036, "[-0.0001, 0.036]"), (0.0003, 0.01, "[0.0003, 0.010]")],
)
def test_a_bound_near_zero_keeps_its_sign(low, high, text) -> None:
    """A bound printed as 0.000 read as touching 0 whether it excluded 0 or not (issue 51)."""
    assert interval(low, high) == text
    assert bound(0.0) == "0.000"
