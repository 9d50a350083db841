"""The findings page's question (c): do cosines concentrate at low temperature, and why. The statistics it rests on,
read from ``concentration_vs_scale.csv.gz`` and ``mechanism_vs_scale.csv.gz``: the random-pair mean cosine and the
width of its q05-q95 band, uniformity, and the softmax's effective negatives and hardest-negative weight, by scale."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sweep.report import (
    INHERITED,
    UNPAIRED,
    Control,
    Section,
    Strength,
    by_number,
    flat_config,
    folder_facts,
    interval,
    num,
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
from sweep.report import lowest as lowest_of
from sweep.stats import difference_in_differences

from .design import facts_of, versus_best
from .literature import BGE, E5, E5_TEMPERATURE, WANG_LIU
from .reanchor import FOLDER as TUNED_RATES
from .reanchor import reanchor

FINETUNE = "mnrl_finetune_minilm"  # the fine-tuned transformer: the strongest evidence of the high-scale rise
UNIFORMITY = "mnrl_scale_uniformity"  # the mechanism test: MNRL with a uniformity term
CIRCULAR = (
    "the test is circular: the uniformity term penalises the very statistics it is used to explain (uniformity, and "
    "with it the random-pair cosines), on one static model at one learning rate: suggestive, not a mechanism shown"
)


def _band(folder: Path, condition: dict[str, object] | None = None) -> pd.DataFrame:
    """Per scale: random-pair mean cosine, q05-q95 width, uniformity (with its interval) and the softmax's
    effective negatives and hardest-negative weight (final stage)."""
    conc, mech = table(folder, "concentration_vs_scale"), table(folder, "mechanism_vs_scale")
    for column, value in (condition or {}).items():
        conc, mech = conc[conc[column] == value], mech[mech[column] == value]
    rand = conc[(conc["kind"] == "rand") & (conc["stage"] == "final")].set_index("scale")
    out = pd.DataFrame({"mean": rand["mean"], "width": rand["q95"] - rand["q05"]})
    for statistic, name in (
        ("sim_uniformity", "uniformity"),
        ("sim_effective_negatives", "negatives"),
        ("sim_hardest_negative_weight", "hardest"),
    ):
        rows = mech[mech["statistic"] == statistic].set_index("scale")
        out[name], out[f"{name}_low"], out[f"{name}_high"] = rows["mean"], rows["ci_low"], rows["ci_high"]
        out[f"{name}_untrained"] = rows["untrained"]  # the untrained model at the same scale
    return out.sort_index()


def _pattern(band: pd.DataFrame) -> tuple[float, float, bool]:
    """(scale of the narrowest band, scale of the best uniformity, whether the best uniformity's interval lies
    below the highest scale's) over the trained scales."""
    trained = _by_scale(band[band.index > 0])
    top, uniform = max(trained), min(trained, key=lambda s: trained[s]["uniformity"])
    narrow = min(trained, key=lambda s: trained[s]["width"])
    return narrow, uniform, bool(trained[uniform]["uniformity_high"] < trained[top]["uniformity_low"])


def _by_scale(band: pd.DataFrame) -> dict[float, dict[str, float]]:
    return {float(str(scale)): {str(k): float(v) for k, v in row.items()} for scale, row in band.iterrows()}


def question_c(results: Path) -> Section:
    question = "(c) Why do cosines concentrate at low temperature, and do they?"
    main = results / "mnrl_scale"
    if not present(main):
        return untested(question, [main], "run `+experiment=mnrl_scale`")
    band = _by_scale(_band(main))
    init = table(main, "concentration_vs_scale").query("kind == 'rand' and stage == 'init'").iloc[0]
    narrow, uniform, separates = _pattern(_band(main))
    top = max(band)
    rows = [
        "| scale | temperature | random-pair mean cosine | q05-q95 width | uniformity [95% CI] | effective negatives "
        "(untrained, same scale) | hardest-negative weight (untrained, same scale) |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {s:g} | {temperature(s)} | {num(r['mean'])} | {num(r['width'])} | {num(r['uniformity'])} "
            f"{interval(r['uniformity_low'], r['uniformity_high'])} | {r['negatives']:.1f} "
            f"({r['negatives_untrained']:.1f}) | {num(r['hardest'])} ({num(r['hardest_untrained'])}) |"
            for s, r in band.items()
        ),
    ]
    evidence = [
        "`mnrl_scale` (concentration_vs_scale.csv.gz, mechanism_vs_scale.csv.gz; scale 0 does not learn; before "
        f"training: random-pair mean {num(init['mean'])}, width {num(init['q95'] - init['q05'])}):\n\n  "
        + "\n  ".join(rows)
        + "\n",
        f"narrowest random-pair band at scale {narrow:g}; best (lowest) uniformity at scale {uniform:g}; at the "
        f"highest scale {top:g} the band is {num(band[top]['width'])} wide around {num(band[top]['mean'])}",
    ]
    tuned, held_at, tuned_words = results / TUNED_RATES, [], {}
    if present(tuned) and not table(tuned, "concentration_vs_scale").empty:
        for value in sorted(table(tuned, "concentration_vs_scale")["learning_rate"].unique()):
            rate_band = _band(tuned, {"learning_rate": value})
            n, u, held = _pattern(rate_band)
            at = _by_scale(rate_band)
            top_here = max(at)
            if held and u < top_here and n < top_here and at[top_here]["mean"] > at[u]["mean"]:
                held_at.append(float(value))
            tuned_words[float(value)] = (
                f"{num(at[u]['mean'])} at scale {u:g} to {num(at[top_here]['mean'])} at {top_here:g}, band "
                f"{num(at[n]['width'])} at its narrowest ({n:g}) and {num(at[top_here]['width'])} at {top_here:g}"
            )
            evidence.append(
                f"`{TUNED_RATES}` lr {value:g} (10 seeds, the rates tuned for scale): random-pair mean "
                f"{num(at[u]['mean'])} at scale {u:g} (best uniformity) to {num(at[top_here]['mean'])} at "
                f"{top_here:g}; narrowest band at {n:g} ({num(at[n]['width'])} wide), {num(at[top_here]['width'])} at "
                f"{top_here:g}"
            )
    lr, replicated = results / "mnrl_scale_lr", 0
    if present(lr):
        for value in sorted(table(lr, "concentration_vs_scale")["learning_rate"].unique()):
            n, u, held = _pattern(_band(lr, {"learning_rate": value}))
            replicated += int(held and u < top and n < top)
            evidence.append(f"`mnrl_scale_lr` lr {value:g}: narrowest band at scale {n:g}, best uniformity at {u:g}")
    for name in ("mnrl_scale_isotropic", "mnrl_scale_batch"):
        folder = results / name
        if present(folder) and not table(folder, "concentration_vs_scale").empty:
            own = _band(folder)
            n, u, _ = _pattern(own)
            evidence.append(f"`{name}`: narrowest band at scale {n:g}, best uniformity at scale {u:g}")
            if name == "mnrl_scale_isotropic":
                evidence.append(_from_isotropic(folder, own))
        elif not present(folder):
            evidence.append(f"{status(folder)}: untested")
    best, high = band[uniform], band[top]
    narrows = high["width"] < best["width"]
    finetuned = _finetuned(results / FINETUNE)
    evidence += [finetuned] if finetuned else []
    evidence.append(
        f"the softmax's concentration at scale {top:g} after training, against the untrained model at the same scale: "
        f"effective negatives {high['negatives']:.1f} vs {high['negatives_untrained']:.1f}, hardest-negative weight "
        f"{num(high['hardest'])} vs {num(high['hardest_untrained'])}: set by the scale before any training, not learned"
    )
    why_lines, why_words, why_strength = _uniformity_test(results / UNIFORMITY)
    evidence += why_lines
    answer = (
        f"They move {'up' if high['mean'] > best['mean'] else 'down'} and "
        f"{'narrow' if narrows else 'do not narrow'}: past scale {uniform:g} the random-pair cosines go from "
        f"{num(best['mean'])} to {num(high['mean'])} at scale {top:g} (untrained {num(init['mean'])}; band "
        f"{num(best['width'])} to {num(high['width'])}, narrowest at {narrow:g}, uniformity best at {uniform:g})"
        + (f"; {finetuned.split(': ', 1)[1]}" if finetuned else "")
        + _tuned_words(results, held_at, tuned_words)
        + f". Why: {why_words}."
    )
    start = f"the anisotropic start (random pairs at {num(init['mean'])} before training)"
    isotropic = results / "mnrl_scale_isotropic"
    controls = []
    if present(isotropic) and not table(isotropic, "concentration_vs_scale").empty:
        n, u, iso_held = _pattern(_band(isotropic))
        graded = strength([facts_of(isotropic)], iso_held, 1)
        controls.append(Control(start, isotropic.name, graded, agrees=iso_held and n < top and u < top))
    if held_at:  # the tuned rates lead: each rate where the pattern holds is a distinct condition
        described = strength(
            [facts_of(tuned, start=False)], True, len(held_at), [start], method=UNPAIRED, controls=controls
        )
    else:
        facts = [facts_of(main, start=False)] + ([facts_of(lr, start=False)] if present(lr) else [])
        described = strength(
            facts, separates and not narrows, 1 + replicated, [start], method=UNPAIRED, controls=controls
        )
    return Section(
        question,
        answer,
        lowest_of([("the description", described), *([("the why", why_strength)] if why_strength else [])]),
        evidence,
        [
            scope(folder, folder_facts(folder).n_seeds)
            for folder in (tuned, main, results / UNIFORMITY)
            if present(folder)
        ],
        [
            f"{E5}; {BGE}: here the highest scale, {top:g} (temperature {temperature(top)}), "
            f"{'raises' if high['mean'] > best['mean'] else 'lowers'} the mean and "
            f"{'narrows' if narrows else 'widens'} the band: the E5/BGE squeeze is "
            f"{'' if narrows else 'not '}reproduced at these scales (their {E5_TEMPERATURE:g} is scale "
            f"{1 / E5_TEMPERATURE:g}{', beyond the grid' if 1 / E5_TEMPERATURE > top else ''})",
            f"{WANG_LIU}: agrees up to scale {uniform:g}, disagrees beyond it (uniformity worsens as the temperature "
            "falls further)",
        ],
        [
            (
                "a start whose random pairs the highest scale does not move above their untrained cosine"
                if present(results / "mnrl_scale_isotropic")
                else f"an isotropic start ({status(results / 'mnrl_scale_isotropic')}: is the high-scale rise the "
                f"anisotropic start, random pairs at {num(init['mean'])}, left in place?)"
            )
            + f", larger batches ({status(results / 'mnrl_scale_batch')}), scales up to E5's "
            f"{1 / E5_TEMPERATURE:g}, longer training; for the why, the uniformity test at other scales and "
            "learning rates",
        ],
    )


def _tuned_words(results: Path, held_at: list[float], words: dict[float, str]) -> str:
    """The answer's words on the tuned learning rates (`mnrl_scale_lr_tuned`): at how many of them the pattern holds,
    and the numbers at the best rate."""
    tuned = reanchor(results)
    if tuned is None or not words:
        return ""
    rate = tuned.best_rate if tuned.best_rate in words else next(iter(words))
    return (
        f"; with the learning rate tuned (`{TUNED_RATES}`, 10 seeds) the pattern holds at {len(held_at)} of "
        f"{len(words)} rates (lr {rate:g}: {words[rate]})"
    )


def _finetuned(folder: Path) -> str | None:
    """The strongest evidence that a high scale moves random pairs up: the fine-tuned transformer at its highest
    scale against its untrained self (None when that study has not run)."""
    if not present(folder):
        return None
    rand = table(folder, "concentration_vs_scale").query("kind == 'rand'")
    top = float(rand["scale"].max())
    init = rand[(rand["stage"] == "init")].iloc[0]
    last = rand[(rand["stage"] == "final") & (rand["scale"] == top)].iloc[0]
    return (
        f"`{folder.name}` (all-MiniLM-L6-v2 fine-tuned, {folder_facts(folder).n_seeds} seeds): fine-tuning "
        f"all-MiniLM-L6-v2 at scale {top:g} moves random pairs from {num(init['mean'])} to {num(last['mean'])} "
        f"(band {num(init['q95'] - init['q05'])} to {num(last['q95'] - last['q05'])})"
    )


def _uniformity_test(folder: Path) -> tuple[list[str], str, Strength | None]:
    """Does a push on every pair remove the high-scale rise? The change of the rise (random-pair mean at the
    highest scale minus at 10) from uniformity weight 0 to each weight, paired by seed: (lines, the answer's words,
    the strength of the mechanism claim, None when no mechanism is claimed)."""
    if not present(folder):
        untried = f"not established (the test with a uniformity term, {status(folder)})"
        return [f"{status(folder)}: the mechanism test with a uniformity term"], untried, None
    frame = tidy(folder, "sim_rand_mean")
    conditions = by_number(list(frame["condition"].unique()))
    scales = sorted(frame["scale"].unique())
    low, high = float(scales[0]), float(scales[-1])
    lines, removed = [], []
    for condition in conditions[1:]:
        did = difference_in_differences(frame, high, low, conditions[0], condition)
        lines.append(
            f"`{folder.name}`: random-pair mean at scale {high:g} minus at {low:g}: {signed(did.gap1)} at "
            f"{did.cond1}, {signed(did.gap2)} at {did.cond2}; change {signed(did.estimate)} "
            f"{interval(did.ci_low, did.ci_high)} ({did.design} t over {did.n1} seeds)"
        )
        removed.append((condition, did.ci_high < 0 and did.gap2 <= 0, did))
    keys = ["condition", "scale", "seed"]
    both = tidy(folder, "sim_effective_negatives").merge(
        tidy(folder, "sim_effective_negatives_init"), on=keys, suffixes=("", "_untrained")
    )
    ratio = both.assign(value=both["value"] / both["value_untrained"])
    relative = ratio[ratio["scale"] == high].groupby("condition")["value"].mean()
    lines.append(
        f"`{folder.name}`: effective negatives at scale {high:g} relative to the untrained model at the same scale: "
        + "; ".join(f"{condition}: {relative[condition]:.2f}x" for condition in conditions)
    )
    tuned = reanchor(folder.parent)
    rate_from = (
        f"{flat_config(folder).get('trial.learning_rate')}, bracketed by `mnrl_scale_lr_low` with `mnrl_scale_lr`"
    )
    facts = [
        facts_of(folder, INHERITED, rate_from, start=False) if tuned is not None else facts_of(folder, start=False)
    ]
    gone = [condition for condition, is_gone, _ in removed if is_gone]
    if gone:
        words = (
            f"a uniformity term, which pushes on easy negatives too, removes the rise ({gone[0]}): the softmax's "
            "neglect of easy negatives at a high scale is the mechanism, on this set-up"
        )
        return lines, words, strength(facts, True, 1, [CIRCULAR])
    shrinks = [(c, did) for c, _, did in removed if did.ci_high < 0]
    if not shrinks:
        words = (
            "a uniformity term, which pushes on easy negatives too, does not shrink the rise: the neglect of easy "
            "negatives is not shown to be the mechanism"
        )
        return lines, words, None
    condition, did = max(shrinks, key=lambda pair: -pair[1].estimate)
    share = -did.estimate / did.gap1
    paired = table(folder, "paired_comparison")
    at_top = {c: row_at(paired, high, c) for c in (conditions[0], condition)}
    costs = "; ".join(
        f"at {c} scale {high:g} is "
        + ("the best" if bool(r["best"]) else versus_best(paired[paired["condition"] == c], r))
        for c, r in at_top.items()
        if r is not None
    )
    words = (
        f"a uniformity term, which pushes on easy negatives too, removes {share:.0%} of the rise from {low:g} to "
        f"{high:g} ({condition}: {signed(did.gap1)} to {signed(did.gap2)}, change {signed(did.estimate)} "
        f"{interval(did.ci_low, did.ci_high)}) and with it the high scale's cost ({costs}). That suggests the "
        f"softmax's neglect of easy negatives is {'most of' if share >= 0.5 else 'part of'} the mechanism on this "
        "set-up, no more: the term acts on the very statistic it is used to explain, on one static model at one "
        "learning rate; the rest of the rise is not explained"
    )
    return lines, words, strength(facts, True, 1, [CIRCULAR])


def _from_isotropic(folder: Path, band: pd.DataFrame) -> str:
    """What the random start says: at its highest scale, are random pairs and uniformity above their untrained
    values (a low temperature pulling cosines together), or only not brought down?"""
    conc = table(folder, "concentration_vs_scale")
    init = conc[(conc["kind"] == "rand") & (conc["stage"] == "init")]["mean"].mean()
    mech = table(folder, "mechanism_vs_scale")
    untrained = mech[mech["statistic"] == "sim_uniformity"]["untrained"].mean()
    last = band.iloc[-1]  # the highest scale (band is sorted by scale)
    top, mean, uniformity = float(band.index[-1]), float(last["mean"]), float(last["uniformity"])
    above = mean > init and uniformity > untrained
    return (
        f"`{folder.name}` (random start): at scale {top:g} random pairs end at {num(mean)} against "
        f"{num(init)} untrained and uniformity at {num(uniformity)} against {num(untrained)}: "
        + (
            "a low temperature pulls cosines together from an isotropic start, it does not only fail to spread them"
            if above
            else "from an isotropic start a low temperature does not pull cosines together"
        )
    )
