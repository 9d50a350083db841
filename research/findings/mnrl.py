"""The findings page's question (a), is 20 the right MNRL scale: a `Section` from the folders' CSVs with `sweep.stats`'
interactions (differences in differences) and `sweep.report.pooled_report` (the best scale against 20, pooled over
conditions); the re-anchor at a tuned learning rate leads (`reanchor`)."""

from __future__ import annotations

import math
from pathlib import Path

from sweep.report import (
    Section,
    best_row,
    complete_trials,
    flat_config,
    folder_facts,
    interval,
    num,
    objective,
    pooled_report,
    present,
    row_at,
    scope,
    signed,
    status,
    strength,
    table,
    temperature,
    tidy,
    untested,
)
from sweep.stats import DEFAULT_MARGIN, gap_by_condition

from .design import versus_best
from .literature import CLIP, DEFAULT, SIMCSE, SIMCSE_DEV, SIMCSE_UNSUPERVISED_DEV
from .reanchor import FOLDER, reanchor
from .training import batch_evidence, convergence_evidence, did_line

MNRL_FOLDERS = ("mnrl_scale", "mnrl_scale_lr", "mnrl_scale_lr_low", "mnrl_scale_data", "normalize")


def question_a(results: Path) -> Section:
    question = "(a) Is 20 the right MNRL scale?"
    main = results / "mnrl_scale"
    if not present(main):
        return untested(question, [main], "run `+experiment=mnrl_scale`")
    paired, test = table(main, "paired_comparison"), table(main, "paired_comparison_test")
    best = best_row(paired)
    ranked = paired.sort_values("spearman", ascending=False)["scale"]
    a = float(best["scale"]) if best["scale"] != DEFAULT else float(ranked.iloc[1])
    at20, test20 = row_at(paired, DEFAULT), row_at(test, DEFAULT)
    if at20 is None:
        return untested(question, [main], "a run of `mnrl_scale` at the default scale 20")
    held = paired[paired["in_confidence_set"].astype(bool)].sort_values("p_best", ascending=False)
    members = ", ".join(f"{r['scale']:g} (P(best) {num(r['p_best'])})" for _, r in held.iterrows())
    folders = [results / name for name in MNRL_FOLDERS if present(results / name)]
    pooled = pooled_report(folders, a, DEFAULT, objective(main)).table
    row = pooled[pooled["role"] == "pooled"].iloc[0]
    n_conditions = int((pooled["role"] == "condition").sum())
    dropped = pooled[pooled["role"] == "duplicate"]
    evidence = [
        f"`mnrl_scale`: best scale {best['scale']:g} ({num(best['spearman'])}); 95% confidence set for the best "
        f"{members}; scale 20: {num(at20['spearman'])}, {versus_best(paired, at20)}"
        + (f"; on test 20 is {versus_best(test, test20)}" if test20 is not None else ""),
        f"pooled {a:g} vs 20 over {n_conditions} distinct MNRL conditions of {', '.join(f.name for f in folders)}: "
        f"{signed(row['mean'])} {interval(row['ci_low'], row['ci_high'])} (random effects over conditions); "
        f"{a:g} beats 20 in {row['n_a_beats_b']} of {row['n_pairs']} seed pairs; {len(dropped)} deterministic "
        f"re-runs dropped ({'; '.join(f'{d.source} {d.condition}' for d in dropped.itertuples())})",
    ]
    facts = [folder_facts(f) for f in folders]
    bests: list[float] = []
    interacts, change = False, ""
    lr = results / "mnrl_scale_lr"
    if present(lr):
        frame = tidy(lr, objective(lr))
        gaps = gap_by_condition(frame)
        bests = [float(b) for b in gaps["best"]]
        labels = "; ".join(f"{c}: {b:g}" for c, b in zip(gaps["condition"], gaps["best"], strict=True))
        line, interacts, change = did_line(lr, frame, a, "does the optimum move with the learning rate")
        evidence += [f"`mnrl_scale_lr`: best scale per learning rate {labels}", line]
    low = results / "mnrl_scale_lr_low"
    if present(low):  # the learning rates below mnrl_scale_lr's best
        verdicts = table(low, "paired_comparison")
        for condition, rows in verdicts.groupby("condition", sort=True):
            top = best_row(rows, str(condition))
            bests.append(float(top["scale"]))
            equal = ", ".join(f"{s:g}" for s in rows.loc[rows["verdict"] == "equivalent", "scale"]) or "none"
            evidence.append(
                f"`mnrl_scale_lr_low` {condition}: best scale {top['scale']:g} ({num(top['spearman'])}); "
                f"equivalent to it within the margin: {equal}"
            )
        evidence += _own_learning_rate_line(low)
    moves = len(set(bests)) > 1
    beats = bool(row["ci_low"] > 0)
    confounds = ["the learning rate (the best scale moves with it)"] if moves else []
    scopes = [scope(f, fact.n_seeds) for f, fact in zip(folders, facts, strict=True)]
    training = [e for e in (batch_evidence(results), convergence_evidence(results)) if e is not None]
    for extra in training:
        evidence += extra.lines
        scopes += extra.scopes
        confounds += extra.confounds
    answer = (
        f"{'No, but nearly' if beats else 'Not shown otherwise'}: scale {a:g} beats the default 20 by "
        f"{signed(row['mean'])} {interval(row['ci_low'], row['ci_high'])} pooled over {n_conditions} distinct MNRL "
        f"conditions, a small gap"
        + (" that leaves 20 in mnrl_scale's own 95% confidence set" if bool(at20["in_confidence_set"]) else "")
        + (
            ", and the best scale moves with the learning rate"
            if moves
            else f", and the best scale stays at {a:g} at every learning rate tried"
        )
        + (
            f"{'; the gap changes with it' if moves else ' although the gap changes with it'} (difference in "
            f"differences {change})."
            if interacts
            else "."
        )
        + "".join(extra.summary for extra in training)
    )
    judged = strength(facts, beats, n_conditions, confounds)
    tuned = reanchor(results)
    if tuned is not None:  # the strongest evidence leads: the learning rate tuned per scale, 10 seeds
        answer = (
            f"{tuned.summary}. The earlier answer ('No, but nearly': {a:g} beats 20 by {signed(row['mean'])} "
            f"{interval(row['ci_low'], row['ci_high'])} pooled over {n_conditions} conditions, most at learning "
            f"rates above the best) is superseded by `{FOLDER}`: the pooled gap was a property of untuned learning "
            "rates." + _lead_scope(results / FOLDER)
        )
        evidence = [
            *tuned.lines,
            f"superseded for the headline by `{FOLDER}` (learning rates not tuned per scale):",
            *evidence,
        ]
        scopes = [scope(results / FOLDER, tuned.facts.n_seeds), *scopes]
        controls = [tuned.control] if tuned.control is not None else []
        judged = strength([tuned.facts], tuned.plateau, 1, controls=controls)
    lead, lead_words = (tuned.best, f"`{FOLDER}`'s best on test") if tuned is not None else (a, "the best here")
    default_words = (
        (
            f"agrees: 20 is {'as good as' if tuned.plateau else 'worse than'} the best ({tuned.best:g}) on test "
            f"within the {DEFAULT_MARGIN:g} margin, each scale at its own learning rate (`{FOLDER}`)"
        )
        if tuned is not None
        else f"{'disagrees' if beats else 'agrees'} on this set-up"
    )
    simcse = max(SIMCSE_DEV, key=lambda t: SIMCSE_DEV[t])
    by_t = ", ".join(f"{t:g}: {v:g}" for t, v in SIMCSE_DEV.items())
    nearest = min(SIMCSE_DEV, key=lambda t: abs(math.log(t * lead)))
    agree = "agrees" if f"{nearest:g}" == f"{simcse:g}" else "disagrees"
    return Section(
        question,
        answer,
        judged,
        evidence,
        scopes,
        [
            f"sentence-transformers' default scale 20 (temperature 0.05): {default_words}",
            f"{SIMCSE}: {by_t}; peak at temperature {simcse:g} (scale {1 / simcse:g}); {lead_words} is temperature "
            f"{temperature(lead)} (scale {lead:g}), nearest the table's {nearest:g}: {agree} within that table's "
            f"spacing; the table's {max(SIMCSE_DEV.values()):g} is the supervised model's score (unsupervised "
            f"SimCSE's best STS-B dev score is {SIMCSE_UNSUPERVISED_DEV:g})",
            *_learned_line(results),
        ],
        [
            _real_missing(results)
            + "a random start at a tuned learning rate (`mnrl_scale_isotropic` ran at 0.05), an out-of-domain check "
            "of the tuned study (sts_ood: it scores STSB alone), other batch sizes and data (`mnrl_scale_batch`, "
            "`mnrl_scale_datasize` ran at one untuned rate)",
        ],
    )


def _real_missing(results: Path, name: str = "mnrl_finetune_minilm_lr") -> str:
    """What the real transformer at tuned learning rates still lacks: the study (not yet run), the seeds it
    pre-registered and has not finished (its row leads the page, graded there), or nothing."""
    folder = results / name
    if not present(folder):
        return (
            f"a real transformer fine-tuned at a tuned learning rate ({status(folder)}: all-MiniLM-L6-v2, itself "
            "trained at 20), "
        )
    planned, seeds = len(str(flat_config(folder).get("study.seeds", "")).split(",")), folder_facts(folder).n_seeds
    if seeds >= planned:
        return ""
    return (
        f"the rest of the real transformer's seeds (`{name}` finished {seeds} of {planned}; its row leads the page), "
    )


def _lead_scope(folder: Path) -> str:
    """The lead study's scope in the answer: its model, the scale its start was trained at, its run and its data, and
    whether any set outside the training domain was scored."""
    config, trials = flat_config(folder), complete_trials(folder)
    outside = [c for c in trials.columns if c.startswith("sts_ood")]
    return (
        f" This holds for static embeddings taken from all-MiniLM-L6-v2 (itself trained at {DEFAULT:g}), "
        f"{config.get('trial.max_steps')} steps on {config.get('data.train.local_file')}, scored on STSB"
        + (f" and out of domain ({', '.join(outside)})" if outside else " alone: no out-of-domain check")
        + "."
    )


def _learned_line(results: Path) -> list[str]:
    """CLIP's learnable temperature against `learnable_scale`: where a trainable scale settles from each start."""
    folder = results / "learnable_scale"
    if not present(folder):
        return []
    trials = complete_trials(folder)
    ends = trials.groupby("loss.scale")["learned_scale"].agg(["min", "max"])
    low, high = ends[ends.index < ends.index.max()], ends.loc[ends.index.max()]
    return [
        f"{CLIP}: here a CLIP-style learnable scale (`{folder.name}`, static embeddings, one pass at lr "
        f"{float(str(flat_config(folder).get('trial.learning_rate'))):g}, not tuned) started at "
        f"{low.index.min():g}-{low.index.max():g} settles at {low['min'].min():.1f}-{low['max'].max():.1f}, and "
        f"from {ends.index.max():g} comes down to {high['min']:.1f}-{high['max']:.1f} within the pass: near the "
        "default 20, learnt where the loss is low rather than where STSB ranks best"
    ]


def _own_learning_rate_line(folder: Path) -> list[str]:
    """Each scale at its own best learning rate (``python -m sweep.report tuned``'s table, when the folder has it):
    the best scale, and 20 against it on test, which chose nothing."""
    own = table(folder, "own_best_learning_rate")
    if own.empty:
        return []
    top = own[own["verdict on test"] == "best"].iloc[0]
    at20 = own[own["scale"] == DEFAULT]
    place = str(top["place of best learning rate"])
    place = "inside the rates tried" if place == "inside" else place
    line = (
        f"`{folder.name}` with `mnrl_scale_lr`, each scale at its own best learning rate (chosen on validation): best "
        f"scale {top['scale']:g} (lr {top['best learning rate']:g}, {place})"
    )
    if not at20.empty:
        r = at20.iloc[0]
        line += (
            f"; on test 20 is {num(r['best - this on test'])} below it "
            f"{interval(r['test CI low'], r['test CI high'])}, {r['verdict on test']}"
        )
    return [line]
