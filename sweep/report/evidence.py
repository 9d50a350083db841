"""What a findings page stands on: the strength rule, the facts of a results folder that the rule reads (seeds,
whether test confirms the validation choice), a question's `Section` and its markdown (`render`), and small readers
of the folders (`table`, `best_row`, `row_at`, `tidy`, `scope`). Public through `sweep.report`; the generic page of
`sweep.report.question_file` and a project's own page code (such as this repository's ``research/findings``) build
on it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sweep.report.pooled import folder_frame
from sweep.report.results_folder import PAIRED_TEST_CSV, TRIALS_CSV, flat_config, read_csv, table_path
from sweep.stats.seed_paired import seed_paired_comparison

STSB_VALIDATION, STSB_TEST = "stsb_validation_spearman", "stsb_test_spearman"

UNTESTED, WEAK, CONFOUNDED, MODERATE, STRONG = "untested", "weak", "confounded", "moderate", "strong"


def strength_rule(
    confounds: str = "the learning rate, a start model trained at the scale compared, data size tied to steps",
    reruns: str = "the same configuration and seed run twice",
) -> str:
    """The rule `strength` applies, in words for the top of a page; ``confounds`` and ``reruns``: examples of a
    named confound and of deterministic re-runs, in the words of the studies the page reads."""
    return (
        "**Strength rule** (the lowest label that applies): *untested*: no study. *weak*: fewer than 3 seeds, or the "
        "verdict the claim rests on does not separate (its interval includes 0: not distinguishable), or test does "
        "not confirm the choice made on validation (the chosen scale outside test's confidence set for the best). "
        f"*confounded*: moderate or strong otherwise, but a named confound ({confounds}) is not controlled. "
        "*moderate*: 3 or more seeds, a paired verdict that separates, test confirms, in one condition. *strong*: "
        f"the same, replicated in at least two distinct conditions (deterministic re-runs, such as {reruns}, count "
        "once)."
    )


STRENGTH_RULE = strength_rule()
NOT_YET_RUN = "not yet run"


@dataclass(frozen=True)
class Facts:
    """What the strength rule needs from one results folder."""

    name: str
    n_seeds: int
    confirmed: bool


@dataclass(frozen=True)
class Strength:
    label: str
    reason: str

    def __str__(self) -> str:
        return f"**{self.label}** ({self.reason})"


def strength(facts: Sequence[Facts], separates: bool, distinct: int, confounds: Sequence[str] = ()) -> Strength:
    """`STRENGTH_RULE` applied to the folders a claim uses, whether its verdict separates, in how many distinct
    conditions it holds, and the confounds it leaves uncontrolled."""
    if not facts:
        return Strength(UNTESTED, "no study")
    seeds = min(f.n_seeds for f in facts)
    unconfirmed = [f.name for f in facts if not f.confirmed]
    problems = [f"{seeds} seed{'s' if seeds != 1 else ''}"] if seeds < 3 else []
    problems += [] if separates else ["the verdict does not separate (not distinguishable)"]
    problems += [f"test does not confirm the validation choice in {', '.join(unconfirmed)}"] if unconfirmed else []
    if problems:
        return Strength(WEAK, "; ".join(problems))
    base = STRONG if distinct >= 2 else MODERATE
    held = f"{seeds} seeds, paired verdict separates, test confirms, {distinct} distinct condition"
    held += "s" if distinct != 1 else ""
    if confounds:
        return Strength(CONFOUNDED, f"{base} by the rule otherwise: {held}; not controlled: {'; '.join(confounds)}")
    return Strength(base, held)


def num(value: float) -> str:
    return f"{value:.3f}"


def signed(value: float) -> str:
    return f"{value:+.3f}"


def interval(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]" if pd.notna(low) else "(no interval)"


def temperature(scale: float) -> str:
    return f"{1 / scale:.3g}" if scale else "none"


def plural(count: float, word: str) -> str:
    return f"{count:g} {word}{'s' if count != 1 else ''}"


def table(folder: Path, stem: str) -> pd.DataFrame:
    """``folder/stem.csv`` (or ``stem.csv.gz``: `sweep.report.results_folder.table_path`), or an empty frame when
    there is none."""
    path = table_path(folder, stem)
    return read_csv(path) if path.is_file() else pd.DataFrame()


def status(folder: Path) -> str:
    return f"`{folder.name}`" if (folder / TRIALS_CSV).is_file() else f"`{folder.name}`: {NOT_YET_RUN}"


def present(folder: Path) -> bool:
    return (folder / TRIALS_CSV).is_file()


def objective(folder: Path) -> str:
    """The metric the study chose on: ``eval.objective`` when it names a trials column, else STSB validation."""
    name = str(flat_config(folder).get("eval.objective"))
    trials = read_csv(folder / TRIALS_CSV)
    return name if name in trials else STSB_VALIDATION


def test_metric(metric: str) -> str:
    """The test partner of a validation metric (``captions30k_val_ndcg_at_10`` -> ``captions30k_test_ndcg_at_10``)."""
    return STSB_TEST if metric == STSB_VALIDATION else metric.replace("_val_", "_test_").replace("validation", "test")


def tidy(folder: Path, metric: str) -> pd.DataFrame:
    """The COMPLETE trials as (condition, scale, seed, value), read by `sweep.report.pooled.folder_frame`."""
    scale = float(read_csv(folder / TRIALS_CSV)["loss.scale"].dropna().iloc[0])
    return folder_frame(folder, metric, (scale, scale))[["condition", "scale", "seed", "value"]]


def by_number(labels: Sequence[str]) -> list[str]:
    """Condition labels ``name=value`` in the numeric order of their value (as given when not numeric)."""

    def key(label: str) -> float:
        try:
            return float(label.rsplit("=", 1)[-1])
        except ValueError:
            return float("inf")

    return sorted(labels, key=key)


def best_row(paired: pd.DataFrame, condition: str = "") -> pd.Series:
    rows = paired[(paired["condition"].astype("string").fillna("") == condition) & paired["best"].astype(bool)]
    return rows.iloc[0]


def row_at(paired: pd.DataFrame, scale: float, condition: str = "") -> pd.Series | None:
    rows = paired[(paired["condition"].astype("string").fillna("") == condition) & (paired["scale"] == scale)]
    return rows.iloc[0] if not rows.empty else None


def against_best(row: pd.Series) -> str:
    """``0.014 below the best [-0.026, 0.054], not distinguishable`` (a paired_comparison row)."""
    if row["best"]:
        return "best"
    return f"{num(row['diff_to_best'])} below the best {interval(row['ci_low'], row['ci_high'])}, {row['verdict']}"


def _confirmed_by_table(validation: pd.DataFrame, test: pd.DataFrame) -> bool:
    column = "point" if "point" in validation else "scale"
    chosen = validation[validation["best"].astype(bool)]
    if chosen.empty:
        return False
    for condition, row in zip(chosen["condition"].astype("string").fillna(""), chosen[column], strict=True):
        on_test = test[(test["condition"].astype("string").fillna("") == condition) & (test[column] == row)]
        if on_test.empty or not bool(on_test["in_confidence_set"].iloc[0]):
            return False
    return True


def _confirmed_by_seeds(folder: Path, metric: str) -> bool:
    """Without a test table: per condition, the scale chosen on ``metric`` is not worse on its test partner."""
    partner = test_metric(metric)
    if partner not in read_csv(folder / TRIALS_CSV):
        return False
    chosen, tested = tidy(folder, metric), tidy(folder, partner)
    for condition, group in chosen.groupby("condition"):
        best = seed_paired_comparison(group).query("best")["scale"]
        verdicts = seed_paired_comparison(tested[tested["condition"] == condition]).set_index("scale")["verdict"]
        if best.empty or verdicts.get(float(best.iloc[0])) in (None, "worse"):
            return False
    return True


def folder_facts(folder: Path) -> Facts:
    """Seeds (the fewest of any comparison) and whether test confirms the choice in every condition: from the
    paired tables, or, where the study chose on another metric or has none, from the trials by seed."""
    paired, metric = table(folder, "paired_comparison"), objective(folder)
    if not paired.empty and metric == STSB_VALIDATION:
        confirmed = (folder / PAIRED_TEST_CSV).is_file() and _confirmed_by_table(
            paired, table(folder, PAIRED_TEST_CSV[:-4])
        )
        return Facts(folder.name, int(paired["n_seeds"].min()), confirmed)
    frame = tidy(folder, metric)
    seeds = int(frame.groupby(["condition", "scale"])["seed"].nunique().min())
    return Facts(folder.name, seeds, seeds > 1 and _confirmed_by_seeds(folder, metric))


def scope(folder: Path, seeds: int) -> str:
    """Model, loss, steps, data and evaluation of a study, from its ``config.yaml`` and trials."""
    config, trials = flat_config(folder), read_csv(folder / TRIALS_CSV)
    name = config.get("model.name_or_path")
    layers = config.get("model.num_layers")
    model = f"static embeddings of {name}" if config.get("model.kind") == "static" else f"{name}"
    model += f" cut to {layers} layer{'s' if layers != 1 else ''}" if layers else ""
    steps = config.get("trial.max_steps")
    run = f"{steps} steps" if steps else "one pass"
    rows = "swept" if "data.train.max_samples" in trials.columns else config.get("data.train.max_samples") or "all"
    swept = [c for c in trials.columns if "." in c and c not in ("loss.scale", "trial.seed")]
    sweep = f"; swept: {', '.join(swept)}" if swept else ""
    metric = objective(folder)
    batch = "" if "trial.batch_size" in swept else f" x batch {config.get('trial.batch_size')}"
    rate = "" if "trial.learning_rate" in swept else f", lr {config.get('trial.learning_rate')}"  # swept: not it
    return (
        f"`{folder.name}`: {model}, loss {config.get('loss.name')}, {run}{batch}{rate}, "
        f"trained on {config.get('data.train.local_file')} ({rows} rows)"
        f"{sweep}; chosen on {metric}, confirmed on {test_metric(metric)}; {seeds} seed{'s' if seeds != 1 else ''}"
    )


@dataclass
class Section:
    """One question of the page and its six parts."""

    question: str
    answer: str
    strength: Strength
    evidence: list[str] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)
    literature: list[str] = field(default_factory=list)
    change: list[str] = field(default_factory=list)


PARTS = ("Answer", "Evidence", "Strength", "Scope", "Literature", "What would change it")


def render(section: Section) -> list[str]:
    def bullets(items: list[str]) -> list[str]:
        return [f"- {item}" for item in items] or ["- none"]

    return [
        f"## {section.question}",
        "",
        f"**Answer.** {section.answer}",
        "",
        "**Evidence.**",
        "",
        *bullets(section.evidence),
        "",
        f"**Strength.** {section.strength}",
        "",
        "**Scope.**",
        "",
        *bullets(section.scope),
        "",
        "**Literature.**",
        "",
        *bullets(section.literature),
        "",
        "**What would change it.**",
        "",
        *bullets(section.change),
        "",
    ]


def untested(question: str, folders: Sequence[Path], change: str) -> Section:
    """A question none of whose study folders exists."""
    names = ", ".join(status(f) for f in folders)
    return Section(question, f"Untested: {names}.", strength([], False, 0), [names], [], [], [change])
