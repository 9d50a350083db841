"""The findings page's question (c): do cosines concentrate at low temperature, and why. The statistics it rests on,
read from ``concentration_vs_scale.csv`` and ``mechanism_vs_scale.csv``: the random-pair mean cosine and the width of
its q05-q95 band, uniformity, and the softmax's effective negatives and hardest-negative weight, by scale."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sweep.report import (
    Section,
    folder_facts,
    interval,
    num,
    present,
    scope,
    status,
    strength,
    table,
    temperature,
    untested,
)

from .literature import BGE, E5, E5_TEMPERATURE, WANG_LIU


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
        "| hardest-negative weight |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {s:g} | {temperature(s)} | {num(r['mean'])} | {num(r['width'])} | {num(r['uniformity'])} "
            f"{interval(r['uniformity_low'], r['uniformity_high'])} | {r['negatives']:.1f} | {num(r['hardest'])} |"
            for s, r in band.items()
        ),
    ]
    evidence = [
        f"`mnrl_scale` (concentration_vs_scale.csv, mechanism_vs_scale.csv; scale 0 does not learn; before training: "
        f"random-pair mean {num(init['mean'])}, width {num(init['q95'] - init['q05'])}):\n\n  "
        + "\n  ".join(rows)
        + "\n",
        f"narrowest random-pair band at scale {narrow:g}; best (lowest) uniformity at scale {uniform:g}; at the "
        f"highest scale {top:g} the band is {num(band[top]['width'])} wide around {num(band[top]['mean'])}",
    ]
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
    answer = (
        f"Past scale {uniform:g} the random-pair cosines move {'up' if high['mean'] > best['mean'] else 'down'} "
        f"(mean {num(best['mean'])} to {num(high['mean'])} at scale {top:g}; untrained {num(init['mean'])}) "
        f"{'and narrow' if narrows else 'but do not narrow'} (band {num(best['width'])} to {num(high['width'])}; "
        f"narrowest at {narrow:g}, uniformity best at {uniform:g}); the data point to the softmax, which at high scale "
        f"puts {num(high['hardest'])} of its weight on the hardest negative (effective negatives "
        f"{best['negatives']:.1f} to {high['negatives']:.1f}) and leaves the other negatives where they are."
    )
    facts = [folder_facts(main)] + ([folder_facts(lr)] if present(lr) else [])
    start = f"the anisotropic start (random pairs at {num(init['mean'])} before training): the 'why' is untested"
    confounds = (
        [] if present(results / "mnrl_scale_isotropic") else [f"{start} ({status(results / 'mnrl_scale_isotropic')})"]
    )
    return Section(
        question,
        answer,
        strength(facts, separates and not narrows, 1 + replicated, confounds),
        evidence,
        [scope(main, facts[0].n_seeds)],
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
            f"{1 / E5_TEMPERATURE:g}, longer training",
        ],
    )


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
