"""The findings page's question (g): does a temperature schedule (`loss.scale_schedule`: a cosine between two scales,
a linear warm-up or cool-down) beat the best constant scale? Read from `mnrl_scale_schedule_tuned` (at the tuned
learning rate) and `mnrl_scale_schedule`'s paired tables, whose rows are the studies' arms (``point``: "constant 10",
"cosine 5-50", ...) rather than scales."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sweep.report import (
    INHERITED,
    Section,
    flat_config,
    num,
    present,
    scope,
    status,
    strength,
    table,
    untested,
)

from .design import facts_of, versus_best
from .reanchor import FOLDER as TUNED_RATES
from .reanchor import reanchor

FOLDER = "mnrl_scale_schedule"
TUNED = "mnrl_scale_schedule_tuned"  # the same set-up at the tuned learning rate, cool-downs ending at 15 and 20
KUKLEVA = "Kukleva et al. 2023 (ICLR), temperature schedules for contrastive learning: a cosine schedule helps on"
KUKLEVA += " long-tailed image data"
JEONG = (
    "Jeong et al. 2024 (Findings of EACL 2024), on unsupervised sentence representations: a cool-down from high to "
    "low temperature"
)


def _is_constant(arm: str) -> bool:
    return arm.startswith("constant")


def _arms_answer(folder: Path) -> tuple[str, bool, list[str], pd.DataFrame]:
    """One schedule study: (answer, whether it separates, evidence lines, its arms' paired table)."""
    name = folder.name
    arms = table(folder, "paired_comparison").set_index("point")
    test = table(folder, "paired_comparison_test").set_index("point")
    best = str(arms.index[arms["best"].astype(bool)][0])
    constants = [a for a in arms.index if _is_constant(str(a))]
    schedules = [a for a in arms.index if not _is_constant(str(a))]
    top_constant = max(constants, key=lambda a: arms.loc[a, "spearman"])
    beaten = [a for a in schedules if arms.loc[a, "spearman"] > arms.loc[top_constant, "spearman"]]
    worse = [a for a in schedules if arms.loc[a, "verdict"] == "worse"]
    held = [a for a in schedules if bool(arms.loc[a, "in_confidence_set"])]
    equivalent = [a for a in schedules if arms.loc[a, "verdict"] == "equivalent" and a not in held]
    rate = flat_config(folder).get("trial.learning_rate")
    evidence = [
        f"`{name}` (learning rate {rate:g}): best arm {best} ({num(arms.loc[best, 'spearman'])}); "
        + "; ".join(
            f"{a}: {num(arms.loc[a, 'spearman'])}, {versus_best(arms.reset_index(), arms.loc[a], 'point')}"
            for a in arms.index
            if a != best
        ),
        f"`{name}` on test: best arm {test.index[test['best'].astype(bool)][0]}; in its 95% confidence set: "
        + ", ".join(str(a) for a in test.index[test["in_confidence_set"].astype(bool)]),
    ]
    if _is_constant(best) and not beaten:
        answer = (
            f"No at learning rate {rate:g}: the best constant arm, {top_constant}, is the best arm; "
            + (f"{_listed(held)} stay in the confidence set, not distinguishable from it, " if held else "")
            + (
                f"{_listed(equivalent)} {'is' if len(equivalent) == 1 else 'are'} as good (equivalent within the "
                "margin), "
                if equivalent
                else ""
            )
            + (f"and {_listed(worse)} {'is' if len(worse) == 1 else 'are'} worse" if worse else "and none is worse")
        )
        # "no schedule beats it" is shown only when each schedule is worse or equivalent, not merely not told apart
        separates = bool(arms.loc[schedules, "verdict"].isin(["worse", "equivalent"]).all())
    else:
        answer = (
            f"Possibly at learning rate {rate:g}: {best} is the best arm ({num(arms.loc[best, 'spearman'])}), "
            "above every constant tried"
        )
        separates = bool(arms.loc[constants, "verdict"].eq("worse").all())
    return answer, separates, evidence, arms


def question_g(results: Path) -> Section:
    question = "(g) Does a temperature schedule beat the best constant scale?"
    folders = [results / name for name in (TUNED, FOLDER) if present(results / name)]
    if not folders:
        return untested(question, [results / FOLDER], f"run `+experiment={FOLDER}`")
    answers = [_arms_answer(folder) for folder in folders]
    evidence = [line for _, _, lines, _ in answers for line in lines]
    evidence.append(
        f"`{FOLDER}`: the constant arms re-run `mnrl_scale`'s scales with the same seeds (deterministic re-runs, "
        "not replications)"
    )
    tuned = reanchor(results)
    rate_from = f"{tuned.best_rate:g}, the best rate of `{TUNED_RATES}` on the same set-up" if tuned is not None else ""
    facts = [
        facts_of(folder, INHERITED, rate_from) if folder.name == TUNED and tuned is not None else facts_of(folder)
        for folder in folders
    ]
    separating = [separates for _, separates, _, _ in answers]
    lead = answers[0][3]  # the lead study's arms (the tuned rate's, where it ran) hold the cool-down it tests
    cool = [str(a) for a in lead.index if _cools(str(a))]
    return Section(
        question,
        ". ".join(answer for answer, _, _, _ in answers) + ".",
        strength(
            facts[:1],
            separating[0],
            1,
            ["the run length (120 steps; a schedule may need a longer run)"],
        ),
        evidence,
        [scope(folder, fact.n_seeds) for folder, fact in zip(folders, facts, strict=True)],
        [
            f"{KUKLEVA}: not tested on that data here",
            f"{JEONG}: in `{folders[0].name}` (learning rate {flat_config(folders[0]).get('trial.learning_rate'):g}) "
            + ("; ".join(f"the cool-down {arm} {_verdict(lead, arm)}" for arm in cool) or "no cool-down was run"),
        ],
        [
            "longer training (a schedule has more room over thousands of steps), other periods of the cosine, "
            f"schedules on a transformer ({status(results / 'mnrl_finetune_minilm')})",
        ],
    )


def _cools(arm: str) -> bool:
    """A linear schedule from a lower to a higher scale: from a high temperature to a low one (a cool-down)."""
    if not arm.startswith("linear "):
        return False
    start, end = (float(x) for x in arm.removeprefix("linear ").split("-"))
    return start < end


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _verdict(arms: pd.DataFrame, arm: str) -> str:
    """How the named arm fared against the best arm, in words (``was not run`` when the study lacks it)."""
    if arm not in arms.index:
        return "was not run"
    verdict = str(arms.loc[arm, "verdict"])
    words = {
        "best": "is the best arm",
        "equivalent": "is equivalent to the best arm (within the margin), not better",
        "worse": "is worse than the best arm",
    }
    return words.get(verdict, f"is {verdict} from the best arm")
