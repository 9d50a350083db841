"""The practitioner's summary at the top of the findings page: five lines that say what to do, each generated from
the studies that carry it, with the strength the rule (`sweep.report.grading`) gives that line's own evidence and the
scope of that evidence (model, steps, data)."""

from __future__ import annotations

import re
from pathlib import Path

from sweep.report import (
    WEAK,
    Section,
    Strength,
    flat_config,
    folder_facts,
    lowest,
    num,
    present,
    scope,
    strength,
    table,
    temperature,
)
from sweep.stats import DEFAULT_MARGIN

from .angle import RERUN, rerun_lines
from .finetune import FINETUNE, FINETUNE_FOLDERS, advice_line
from .literature import DEFAULT, MINILM_SCALE
from .reanchor import FOLDER, reanchor
from .start_temperature import starts_words, study_lines, study_strength

# the fine-tuning bullet's title by what study 2 says (`start_temperature.follows`), when its evidence is not weak
FINETUNE_ADVICE = {
    "follows": "try its own training temperature first",
    "shared": "tune its temperature like any other",
    "not followed": "do not assume its own training temperature",
    "unclear": "try its own training temperature, then tune",
}
NOT_SETTLED = "whether to keep its own training temperature is not settled"  # when study 2's evidence is weak


def agreed_word(words: set[str]) -> str:
    """Study 2's word over its arms (`start_temperature.follows`): theirs when they agree; ``not followed`` when
    they differ and none follows the start (the start's temperature is not carried over in any arm); else
    ``unclear``."""
    if len(words) == 1:
        return next(iter(words))
    return "not followed" if words and "follows" not in words else "unclear"


def _label(graded: Strength, section: Section) -> str:
    return f"*{graded.label}* by the rule, question {section.question.split(' ')[0]}"


def brief_scope(folder: Path) -> str:
    """A study's model, run length, data and seeds in a few words (`sweep.report.scope` has the whole of it):
    ``static embeddings (from all-MiniLM-L6-v2), 120 steps, nli/triplet.csv, 10 seeds``."""
    words = scope(folder, folder_facts(folder).n_seeds).split(": ", 1)[1]
    model = words.split(", loss ", 1)[0].replace("sentence-transformers/", "")
    model += " (full)" if "cut to" not in model and "static" not in model else ""
    seeds = words.rsplit("; ", 1)[1]
    if "model.name_or_path" in words:  # study 2: the study's own start models, one fine-tuning seed each
        cut = re.search(r"cut to (\d+) layer", model)
        model = f"its own start models ({f'{cut[1]}-layer transformer' if cut else 'static'})"
        seeds = seeds.replace("seed", "fine-tuning seed", 1) + " per start model"
    run = words.split(", loss ", 1)[1].split(", ", 1)[1].split(" x batch", 1)[0]
    data = words.split("trained on ", 1)[1].split(" (", 1)[0]
    return f"`{folder.name}`: {model}, {run}, {data}, {seeds}"


def _scope(results: Path, *names: str) -> str:
    """`` Scope: <each study's model, run length, data and seeds>.`` for the studies a bullet rests on."""
    found = [results / name for name in names if present(results / name)]
    return " Scope: " + "; ".join(brief_scope(folder) for folder in found) + "."


def practitioners_summary(results: Path, sections: dict[str, Section]) -> list[str]:
    """Markdown lines (a heading and up to five bullets) from the results folders and the page's sections by
    letter; a bullet whose study has not run says so."""
    lines = ["## Practitioner's summary", ""]
    tuned = reanchor(results)
    if tuned is not None:
        plateau = ", ".join(f"{s:g}" for s in tuned.as_good)
        change, widest = tuned.lr_change, tuned.widest
        # the learning rate's effect on 20 exceeds the plateau's largest difference, both intervals apart
        separates = change is not None and widest is not None and change.low > widest.high
        controls = [tuned.control] if tuned.control is not None else []
        first = strength([tuned.facts], separates, 1, controls=controls)
        fixed = flat_config(results / FINETUNE).get("trial.learning_rate") if present(results / FINETUNE) else None
        never = (
            f"; the real transformer's learning rate ({float(str(fixed)):g} in `{FINETUNE}`) was never varied"
            if fixed is not None
            else ""
        )
        lines += [
            f"- **Tune the learning rate before the scale** ({_label(first, sections['a'])}): over the learning "
            f"rates of `{FOLDER}` it moves the default scale's STSB test score by {num(tuned.lr_effect)}, while the "
            f"scales of the plateau differ by {num(tuned.scale_effect)} at the best rate; static embeddings only"
            f"{never}.{_scope(results, FOLDER)}",
            f"- **Any scale in {plateau} will do** ({_label(sections['a'].strength, sections['a'])}): each at its "
            f"own best learning rate, these are as good as the best on test (within the {DEFAULT_MARGIN:g} margin); "
            f"the library default {DEFAULT:g} {'is' if DEFAULT in tuned.as_good else 'is not'} among them."
            f"{_scope(results, FOLDER)}",
        ]
    else:
        lines.append(f"- the learning-rate-tuned scale study (`{FOLDER}`) has not run")
    used = [(results / name, condition) for name, condition in FINETUNE_FOLDERS if present(results / name)]
    if used:
        bests = sorted({advice_line(folder, condition)[1] for folder, condition in used})
        controlled = study_lines(results)
        graded = lowest(
            [("the all-MiniLM-L6-v2 fine-tunes", sections["d"].strength)]
            + [(f"study 2's {said.arm.words} arm", study_strength(said)) for said in controlled]
        )
        title = NOT_SETTLED if graded.label == WEAK else FINETUNE_ADVICE[agreed_word({s.word for s in controlled})]
        own = [line for said in controlled for line in said.lines if "own scale minus" in line]
        lines.append(
            f"- **Fine-tuning a pretrained model: {title}** ({_label(graded, sections['d'])}): fine-tuning "
            f"all-MiniLM-L6-v2 (trained at {temperature(MINILM_SCALE)}) the best temperature is "
            f"{' and '.join(temperature(b) for b in bests)} in {len(used)} studies, each at one untuned learning "
            "rate, from a model trained at that very temperature; "
            + (
                "; ".join(
                    f"with {starts_words(said)} ({said.facts[0].n_seeds} fine-tuning seed per start model, no "
                    f"interval), the start's own scale minus the best other scale on validation / test: "
                    f"{own_line.split(': ', 1)[1]}"
                    for said, own_line in zip(controlled, own, strict=True)
                )
                + "."
                if controlled
                else "whether that is the start model's own temperature or a general optimum is not separated yet."
            )
            + _scope(results, *(folder.name for folder, _ in used), *(said.arm.finetune for said in controlled))
        )
    if present(results / RERUN):
        _, per_rate, out, trains = rerun_lines(results / RERUN)
        clean = [rate for rate in per_rate if trains[rate]]
        without = [rate for rate in clean if per_rate[rate][0].startswith("0,")]
        lines.append(
            f"- **AnglE: try it without the cosine term** ({_label(sections['e'].strength, sections['e'])}): the "
            f"best weight triple has no cosine term at {len(without)} of the {len(clean)} learning "
            f"rate{'s' if len(clean) != 1 else ''} where CoSENT alone trains ({len(per_rate)} tried), and every "
            f"triple with it is {'out of' if out else 'not all out of'} the confidence set (with repeated data: "
            f"check on yours).{_scope(results, RERUN)}"
        )
    concentration = table(results / "mnrl_scale", "concentration_vs_scale") if present(results / "mnrl_scale") else None
    if concentration is not None and not concentration.empty:
        rand = concentration[(concentration["kind"] == "rand") & (concentration["stage"] == "final")]
        top = rand.loc[rand["scale"].idxmax()]
        parts = sections["c"].strength.basis
        described = parts[0][1] if isinstance(parts, tuple) and parts else sections["c"].strength
        lines.append(
            f"- **Re-derive similarity thresholds after training at a high scale** ({_label(described, sections['c'])}"
            f", the description): at scale {top['scale']:g} the cosines of random pairs end at {num(top['mean'])} "
            f"on average, so a threshold set for another scale moves.{_scope(results, 'mnrl_scale', FOLDER)}"
        )
    return [*lines, ""]
