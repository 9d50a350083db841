"""``python -m research.findings``: ``research/results/FINDINGS.md``, one page with one section per question this
repository's studies exist to answer, each with its answer, evidence (numbers read from the results folders' CSVs,
never typed), strength by the rule stated at the top (`literature.STRENGTH_RULE`), scope, literature and what would
change it. Questions (a)-(b) are in `mnrl` (with `reanchor`), (c) in `concentration`, (d) in `finetune`, (e) in
`angle`, (g) in `schedule`; (f) and the page are here. ``research/tests/test_findings_page.py`` regenerates the
page from the committed CSVs and compares.

The page's second paragraph still names the command and the constants' file the page came from before this code
left the package: it is kept word for word so that the committed page stays what the CSVs give, byte for byte."""

from __future__ import annotations

from pathlib import Path

from sweep.report import (
    TUNED,
    UNPAIRED,
    Section,
    best_row,
    flat_config,
    folder_design,
    interval,
    num,
    plural,
    present,
    render,
    scope,
    signed,
    strength,
    table,
    untested,
)

from .angle import question_e
from .concentration import question_c
from .datasize import question_b
from .design import facts_of
from .finetune import question_d
from .forest import lead_lines, write_forest_figure
from .literature import (
    ST_ADAPTIVE,
    ST_ADAPTIVE_LAYERS,
    ST_ADAPTIVE_ONE_LAYER,
    ST_ADAPTIVE_SOURCE,
    STRENGTH_RULE,
)
from .mnrl import question_a
from .schedule import question_g
from .summary import practitioners_summary

STATIC_FLOOR = "mnrl_scale"  # static embeddings from the same MiniLM's token embeddings, untrained (scale 0)


def question_f(results: Path) -> Section:
    question = "(f) The layers x dimensions trade-off of Matryoshka2d"
    folder = results / "matryoshka2d"
    if not present(folder):
        return untested(question, [folder], "run `+experiment=matryoshka2d`")
    grid = table(folder, "layer_grid_heatmap").query("split == 'test'")  # the held-out split, as its figure draws
    wide = grid.pivot_table(
        index=["scale", "layer", "dim"], columns="wrapper.name", values=["mean", "ci_low", "ci_high"]
    )
    paired = table(folder, "paired_comparison")
    scale = float(best_row(paired, "wrapper.name=matryoshka2d")["scale"])
    at = wide.loc[scale]
    full = at.index.max()
    one = (at.index.get_level_values("layer").min(), full[1])
    gain = at["mean"]["matryoshka2d"] - at["mean"]["None"]
    cell = gain.idxmax()
    share = {w: at.loc[one, ("mean", w)] / at.loc[full, ("mean", w)] for w in ("matryoshka2d", "None")}
    floor_folder = results / STATIC_FLOOR
    floor_rows = table(floor_folder, "spearman_vs_scale").query("scale == 0 and split == 'test'")
    floor = float(floor_rows["mean"].iloc[0]) if present(floor_folder) and len(floor_rows) else None
    gain_share = {
        w: (at.loc[one, ("mean", w)] - floor) / (at.loc[full, ("mean", w)] - floor) if floor is not None else None
        for w in ("matryoshka2d", "None")
    }

    def separates_at(s: float) -> bool:
        row = wide.loc[(s, cell[0], cell[1])]
        return bool(row[("ci_low", "matryoshka2d")] > row[("ci_high", "None")])

    scales = sorted(wide.index.get_level_values("scale").unique())
    gains = "; ".join(
        f"{s:g}: {signed(wide.loc[(s, *cell), ('mean', 'matryoshka2d')] - wide.loc[(s, *cell), ('mean', 'None')])}"
        for s in scales
    )
    dims = sorted(at.index.get_level_values("dim").unique())
    rows = ["| layers \\ dims | " + " | ".join(f"{d:g}" for d in dims) + " |", "|---" * (len(dims) + 1) + "|"]
    for layer in sorted(at.index.get_level_values("layer").unique()):
        cells = [f"{num(at.loc[(layer, d), ('mean', 'matryoshka2d')])} ({signed(gain[(layer, d)])})" for d in dims]
        rows.append(f"| {layer:g} | " + " | ".join(cells) + " |")
    floor_words = (
        f"; above the floor of static embeddings built from the same MiniLM's token embeddings, untrained "
        f"({STATIC_FLOOR} scale 0, test {num(floor)}) it keeps {gain_share['matryoshka2d']:.0%} of the gain with "
        f"the wrapper, {gain_share['None']:.0%} without"
        if floor is not None
        else ""
    )
    evidence = [
        f"`matryoshka2d` layer_grid_heatmap.csv, STSB test at the wrapper's best validation scale {scale:g}: "
        "Matryoshka2d (its gain over plain MNRL):\n\n  " + "\n  ".join(rows) + "\n",
        f"{plural(one[0], 'layer')} x {one[1]:g} dims keeps {share['matryoshka2d']:.1%} of the "
        f"{full[0]:g} x {full[1]:g} cell's test score with the wrapper, {share['None']:.1%} without{floor_words} "
        "(point estimates from the cells' means over seeds: the study kept no per-seed grid, so these shares have no "
        "interval)",
        f"gain at {plural(cell[0], 'layer')} x {cell[1]:g} dims by scale {gains}; seed intervals "
        f"{interval(at.loc[cell, ('ci_low', 'matryoshka2d')], at.loc[cell, ('ci_high', 'matryoshka2d')])} vs "
        f"{interval(at.loc[cell, ('ci_low', 'None')], at.loc[cell, ('ci_high', 'None')])} (unpaired t over seeds: "
        "the cells are not compared paired)",
        f"{full[0]:g} x {full[1]:g} (MiniLM cut to {full[0]:g} layers; the uncut 6-layer model never ran): scale "
        f"{scale:g} is best with the wrapper; {signed(gain[full])} against plain MNRL on test, seed "
        f"intervals {interval(at.loc[full, ('ci_low', 'matryoshka2d')], at.loc[full, ('ci_high', 'matryoshka2d')])} "
        f"vs {interval(at.loc[full, ('ci_low', 'None')], at.loc[full, ('ci_high', 'None')])}",
    ]
    pays = bool(at.loc[full, ("ci_high", "matryoshka2d")] < at.loc[full, ("ci_low", "None")])
    kept = (
        f"keeps {gain_share['matryoshka2d']:.0%} of the gain over static token embeddings "
        f"({gain_share['None']:.0%} without the wrapper; {share['matryoshka2d']:.1%} of the raw score; point "
        "estimates, no interval)"
        if floor is not None
        else f"keeps {share['matryoshka2d']:.1%} of the score ({share['None']:.1%} without the wrapper)"
    )
    answer = (
        f"Small cells gain, the largest one {'pays' if pays else 'barely moves'}: on STSB test at scale {scale:g} the "
        f"wrapper lifts {plural(cell[0], 'layer')} x {cell[1]:g} dims by {signed(gain[cell])} and changes "
        f"{full[0]:g} x {full[1]:g} by {signed(gain[full])}, while {plural(one[0], 'layer')} {kept}."
    )
    facts = [facts_of(folder)]
    held = [s for s in scales if separates_at(s)]
    return Section(
        question,
        answer,
        strength(facts, separates_at(scale), len(held), method=UNPAIRED),
        evidence,
        [scope(folder, facts[0].n_seeds) + " (the grid: each cell's Spearman with t-intervals over seeds)"],
        [
            f"{ST_ADAPTIVE_SOURCE}: about {ST_ADAPTIVE_ONE_LAYER:.0%} of the full performance from one layer, "
            f"{ST_ADAPTIVE[0]:g} with all {ST_ADAPTIVE_LAYERS} layers and about {ST_ADAPTIVE[1]:g} with half "
            f"({ST_ADAPTIVE[1] / ST_ADAPTIVE[0]:.1%}): another loss on a {ST_ADAPTIVE_LAYERS / full[0]:g}x deeper "
            "model, so only the ratio compares; "
            f"here one of {full[0]:g} layers of a Matryoshka2d cut keeps {share['matryoshka2d']:.1%} of the raw score, "
            "less of its gain over static embeddings",
        ],
        [
            "the uncut 6-layer model, an untrained layer x dim grid, paired per-cell differences, more steps, a start "
            "model not trained at scale 20"
        ],
    )


QUESTIONS = (question_a, question_b, question_c, question_d, question_e, question_f, question_g)


def scope_paragraph(results: Path) -> str:
    """What every answer on the page stands on, read from the folders' configs and trials: the models, the run
    lengths, the data; and that no answer rests yet on a real transformer at a tuned learning rate."""
    folders = [f for f in sorted(results.iterdir()) if f.is_dir() and present(f) and (f / "config.yaml").is_file()]
    configs = {f: flat_config(f) for f in folders}
    cuts = sorted({int(str(c["model.num_layers"])) for c in configs.values() if c.get("model.num_layers")})
    steps = [s for f in folders if (s := folder_design(f).steps) is not None]
    data = sorted({str(c.get("data.train.local_file")).split("/")[0] for c in configs.values()})
    tuned_real = [
        f.name
        for f in folders
        if configs[f].get("model.kind") == "transformer"
        and not configs[f].get("model.num_layers")
        and folder_design(f).rate == TUNED
    ]
    if not steps:
        return "**Scope of every answer below.** No study has run yet."
    return (
        "**Scope of every answer below.** Small models on a CPU: static embeddings built from "
        "all-MiniLM-L6-v2's token embeddings (most studies), "
        + (
            f"that model cut to {' or '.join(str(c) for c in cuts)} layer{'s' if cuts[-1] != 1 else ''}, "
            if cuts
            else ""
        )
        + "or the whole model fine-tuned briefly at one untuned learning rate; "
        f"{min(steps):,} to {max(steps):,} optimizer steps, on {', '.join(data)} data; STSB validation or in-domain "
        "retrieval chose, their test splits confirm. "
        + (
            "The real transformer at a tuned learning rate: "
            f"{', '.join(f'`{name}`' for name in tuned_real)} (its row and grade lead the page)."
            if tuned_real
            else "No answer rests on a real transformer fine-tuned at a tuned learning rate yet."
        )
        + " Each section and each summary line names its own studies' scope."
    )


def findings_page(results: Path) -> str:
    """The markdown of ``FINDINGS.md`` from the results folders under ``results``."""
    lines = [
        "# Findings: which temperature, and why?",
        "",
        *lead_lines(results),
        "Generated by `python -m research.findings` (this repository's research code on the public `sweep.report` and"
        " `sweep.stats` API) from the CSVs of the results folders (no number typed by hand; the literature values are"
        " constants of `research/findings/literature.py` with their source). Scale = "
        "1/temperature. All studies ran on a 2-core CPU with small models: they say what this set-up shows, not what "
        "full-size training would find.",
        "",
        scope_paragraph(results),
        "",
        STRENGTH_RULE,
        "",
    ]
    sections = {question.__name__.removeprefix("question_"): question(results) for question in QUESTIONS}
    lines += practitioners_summary(results, sections)
    for section in sections.values():
        lines += render(section)
    return "\n".join(lines).rstrip() + "\n"


def write_findings_page(results: Path, out: Path) -> Path:
    """The page and the figure it leads with (`forest.write_forest_figure`, beside the page)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(findings_page(results))
    write_forest_figure(results, out.parent)
    return out
