"""The findings page's question (e): AnglE's w1-w3 and its three temperatures. `angle_weights` and `angle_scales`
trained every grid point at the static model's learning rate 0.05, where CoSENT alone diverges (`cosent_scale_lr`);
their answer is withdrawn and kept as evidence. `angle_weights_lr` reruns the weight triples at learning rates where
CoSENT trains ("1,0,0" is plain CoSENT, so the comparison with it is paired inside the study)."""

from __future__ import annotations

from pathlib import Path

from sweep.report import (
    Section,
    against_best,
    best_row,
    by_number,
    flat_config,
    folder_facts,
    num,
    present,
    row_at,
    scope,
    strength,
    table,
    untested,
)

from .literature import ANGLE_PAPER, ANGLE_RELEASED, ANGLE_SOURCE, DEFAULT

RERUN = "angle_weights_lr"  # the weight triples at learning rates where CoSENT trains
COSENT_ONLY = "weights=1,0,0"
PAPER = "weights=1,1,1"


def _weights(point: str) -> tuple[float, ...]:
    return tuple(float(w) for w in point.removeprefix("weights=").split(","))


def _scales_point(scales: tuple[float, ...]) -> str:
    return ", ".join(f"{name}_scale={s:g}" for name, s in zip(("cos", "ibn", "angle"), scales, strict=True))


def _old_answer(results: Path) -> Section:
    question = "(e) AnglE's w1-w3 and its three temperatures"
    weights, scales = results / "angle_weights", results / "angle_scales"
    if not (present(weights) and present(scales)):
        return untested(question, [weights, scales], "run angle_weights and angle_scales")
    pw, ps = table(weights, "paired_comparison"), table(scales, "paired_comparison")
    by_w = pw.assign(w=pw["point"].map(_weights)).set_index("w")
    best_w, best_s = best_row(pw), best_row(ps)
    paper_w, released = by_w.loc[[ANGLE_PAPER[0]]].iloc[0], ANGLE_RELEASED[0]

    def direction(w: tuple[float, ...]) -> float:  # cosine between weight vectors: the nearest grid point in ratio
        dot = sum(a * b for a, b in zip(w, released, strict=True))
        return dot / (sum(a * a for a in w) * sum(b * b for b in released)) ** 0.5 if any(w) else 0.0

    near = max(by_w.index, key=direction)
    without = by_w[[w[0] == 0 for w in by_w.index]]["spearman"]
    with_cos = by_w[[w[0] > 0 for w in by_w.index]]["spearman"]
    on_s = ps.set_index("point")
    paper_s, released_s = (on_s.loc[_scales_point(p)] for p in (ANGLE_PAPER[1], ANGLE_RELEASED[1]))
    untrained = float(table(weights, "angle_weights_heatmap")["untrained"].iloc[0])
    evidence = [
        f"`angle_weights`: best w = {best_w['point'].removeprefix('weights=')} ({num(best_w['spearman'])}); "
        f"without the cosine term (w1 = 0) {num(without.min())}-{num(without.max())}, with it "
        f"{num(with_cos.min())}-{num(with_cos.max())}; untrained model {num(untrained)}",
        f"the paper's w = 1, 1, 1: {num(paper_w['spearman'])}, {against_best(paper_w)}; the released "
        f"{', '.join(f'{w:g}' for w in released)} is nearest in ratio to the grid's "
        f"{', '.join(f'{w:g}' for w in near)}: {num(by_w.loc[[near]].iloc[0]['spearman'])}, "
        f"{against_best(by_w.loc[[near]].iloc[0])}",
        f"`angle_scales`: best ({best_s['point']}) {num(best_s['spearman'])}; the paper's scales "
        f"({_scales_point(ANGLE_PAPER[1])}): {num(paper_s['spearman'])}, {against_best(paper_s)}; the released "
        f"({_scales_point(ANGLE_RELEASED[1])}): {num(released_s['spearman'])}, {against_best(released_s)}",
    ]
    lr, rate = results / "cosent_scale_lr", float(str(flat_config(weights).get("trial.learning_rate")))
    if present(lr):
        slow = table(lr, "paired_comparison")
        condition = str(min(slow["condition"].unique(), key=lambda c: float(str(c).split("=")[-1])))
        at20 = row_at(slow, DEFAULT, condition)
        if at20 is not None:
            evidence.append(
                f"the confound: CoSENT alone at scale 20 and {condition} (`cosent_scale_lr`) reaches "
                f"{num(at20['spearman'])} (untrained {num(untrained)}; {against_best(at20)}), where these grids train "
                f"at lr {rate:g}"
            )
    separates = paper_w["verdict"] == "worse" and paper_s["verdict"] == "worse"
    answer = (
        f"Drop the cosine term and lower the scales on this set-up: w1 = 0 scores {num(without.min())}-"
        f"{num(without.max())} against {num(with_cos.min())}-{num(with_cos.max())} with it, the paper's 1, 1, 1 is "
        f"{num(paper_w['diff_to_best'])} below the best {best_w['point'].removeprefix('weights=')}, and the lowest "
        f"scales ({best_s['point']}) beat the paper's {' / '.join(f'{s:g}' for s in ANGLE_PAPER[1])} by "
        f"{num(paper_s['diff_to_best'])}; the cosine "
        "term's learning rate is the confound."
    )
    facts = [folder_facts(weights), folder_facts(scales)]
    return Section(
        question,
        answer,
        strength(facts, bool(separates), 2 if separates else 1, [f"the learning rate (CoSENT term at lr {rate:g})"]),
        evidence,
        [scope(weights, facts[0].n_seeds), scope(scales, facts[1].n_seeds)],
        [
            f"AnglE paper: w 1, 1, 1 and temperatures 0.05 / 0.05 / 1.0 (scales {_scales_point(ANGLE_PAPER[1])}): "
            f"{'disagrees' if separates else 'agrees'} here",
            f"released defaults cosine_w {released[0]:g}, ibn_w {released[1]:g}, angle_w {released[2]:g}, all scales "
            f"20; {ANGLE_SOURCE}: their dropped cosine term agrees",
        ],
        ["the same grids at a learning rate where CoSENT at scale 20 trains (`cosent_scale_lr`), a transformer model"],
    )


def rerun_lines(folder: Path) -> tuple[list[str], dict[str, str], int]:
    """Per learning rate of the rerun: the best triple, plain CoSENT and the paper's 1, 1, 1 against it. Returns the
    lines, plain CoSENT's verdict per learning rate, and in how many learning rates CoSENT alone is as good as or
    indistinguishable from the best (in the confidence set)."""
    paired = table(folder, "paired_comparison")
    lines, cosent, held = [], {}, 0
    for condition in by_number(list(paired["condition"].unique())):
        rows = paired[paired["condition"] == condition]
        top = best_row(rows, condition)
        without = rows[rows["point"].str.startswith("weights=0,")]["spearman"]
        on = rows.set_index("point")
        alone, paper = on.loc[COSENT_ONLY], on.loc[PAPER]
        cosent[condition] = "best" if bool(alone["best"]) else str(alone["verdict"])
        held += int(bool(alone["in_confidence_set"]))
        lines.append(
            f"`{folder.name}` {condition}: best w = {str(top['point']).removeprefix('weights=')} "
            f"({num(top['spearman'])}); plain CoSENT (1, 0, 0): {num(alone['spearman'])}, "
            + ("the best" if bool(alone["best"]) else against_best(alone))
            + f"; the paper's 1, 1, 1: {num(paper['spearman'])}, "
            + ("the best" if bool(paper["best"]) else against_best(paper))
            + f"; without the cosine term (w1 = 0) {num(without.min())}-{num(without.max())}"
        )
    return lines, cosent, held


def question_e(results: Path) -> Section:
    """The rerun at stable learning rates when it exists (the old answer withdrawn, its lines kept as evidence);
    otherwise the old answer."""
    old = _old_answer(results)
    folder = results / RERUN
    if not present(folder):
        return old
    lines, cosent, held = rerun_lines(folder)
    facts = folder_facts(folder)
    words = "; ".join(f"{condition}: {verdict}" for condition, verdict in cosent.items())
    separates = held == 0 or all(v in ("best", "equivalent") for v in cosent.values())
    answer = (
        "The lr 0.05 answer is withdrawn (every AnglE grid point trained where CoSENT alone diverges). At learning "
        f"rates where CoSENT trains (`{RERUN}`, {facts.n_seeds} seeds), plain CoSENT (w = 1, 0, 0) against the best "
        f"weight triple: {words}"
        + (
            ": adding AnglE's in-batch and angle terms buys nothing distinguishable over CoSENT on this set-up"
            if held == len(cosent)
            else ": some triple beats plain CoSENT at a learning rate where it trains"
        )
        + "; the three AnglE scales were not rerun at these rates."
    )
    return Section(
        old.question,
        answer,
        strength([facts], separates, len(cosent) if separates else 1),
        [*lines, "withdrawn (trained at lr 0.05, where CoSENT diverges):", *old.evidence],
        [scope(folder, facts.n_seeds), *old.scope],
        old.literature,
        ["the three AnglE scales at a stable learning rate, a transformer model, more seeds"],
    )
