"""The practitioner's summary at the top of the findings page: five lines that say what to do, each generated from
the study that carries it, with the strength of the section it comes from."""

from __future__ import annotations

from pathlib import Path

from sweep.report import Section, num, present, table, temperature
from sweep.stats import DEFAULT_MARGIN

from .angle import RERUN, rerun_lines
from .finetune import FINETUNE_FOLDERS, advice_line
from .literature import DEFAULT, MINILM_SCALE
from .reanchor import FOLDER, reanchor
from .start_temperature import starts_words, study_lines

# the fine-tuning bullet's title by what study 2 says (`start_temperature.follows`)
FINETUNE_ADVICE = {
    "follows": "try its own training temperature first",
    "shared": "tune its temperature like any other",
    "not followed": "do not assume its own training temperature",
    "unclear": "try its own training temperature, then tune",
}


def agreed_word(words: set[str]) -> str:
    """Study 2's word over its arms (`start_temperature.follows`): theirs when they agree; ``not followed`` when
    they differ and none follows the start (the start's temperature is not carried over in any arm); else
    ``unclear``."""
    if len(words) == 1:
        return next(iter(words))
    return "not followed" if words and "follows" not in words else "unclear"


def _label(section: Section) -> str:
    return f"*{section.strength.label}*, question {section.question.split(' ')[0]}"


def practitioners_summary(results: Path, sections: dict[str, Section]) -> list[str]:
    """Markdown lines (a heading and up to five bullets) from the results folders and the page's sections by
    letter; a bullet whose study has not run says so."""
    lines = ["## Practitioner's summary", ""]
    tuned = reanchor(results)
    if tuned is not None:
        plateau = ", ".join(f"{s:g}" for s in tuned.as_good)
        lines += [
            f"- **Tune the learning rate before the scale** ({_label(sections['a'])}): over the learning rates of "
            f"`{FOLDER}` it moves the default scale's STSB test score by {num(tuned.lr_effect)}, while the scales "
            f"of the plateau differ by {num(tuned.scale_effect)} at the best rate.",
            f"- **Any scale in {plateau} will do** ({_label(sections['a'])}): each at its own best learning rate, "
            f"these are as good as the best on test (within the {DEFAULT_MARGIN:g} margin); the library default "
            f"{DEFAULT:g} {'is' if DEFAULT in tuned.as_good else 'is not'} among them.",
        ]
    else:
        lines.append(f"- the learning-rate-tuned scale study (`{FOLDER}`) has not run")
    used = [(results / name, condition) for name, condition in FINETUNE_FOLDERS if present(results / name)]
    if used:
        bests = sorted({advice_line(folder, condition)[1] for folder, condition in used})
        controlled = study_lines(results)
        title = FINETUNE_ADVICE[agreed_word({said.word for said in controlled})]
        lines.append(
            f"- **Fine-tuning a pretrained model: {title}** ({_label(sections['d'])}): fine-tuning all-MiniLM-L6-v2 "
            f"(trained at {temperature(MINILM_SCALE)}) the best temperature is "
            f"{' and '.join(temperature(b) for b in bests)} in {len(used)} studies; "
            + (
                "; ".join(f"with {starts_words(said)}, {said.own_scale}" for said in controlled) + "."
                if controlled
                else "whether that is the start model's own temperature or a general optimum is not separated yet."
            )
        )
    if present(results / RERUN):
        _, per_rate, out = rerun_lines(results / RERUN)
        without = [rate for rate, (w, _) in per_rate.items() if w.startswith("0,")]
        lines.append(
            f"- **AnglE: try it without the cosine term** ({_label(sections['e'])}): the best weight triple has no "
            f"cosine term at {len(without)} of {len(per_rate)} learning rates where CoSENT trains, and every triple "
            f"with it is {'out of' if out else 'not all out of'} the confidence set (with repeated data: check on "
            "yours)."
        )
    concentration = table(results / "mnrl_scale", "concentration_vs_scale") if present(results / "mnrl_scale") else None
    if concentration is not None and not concentration.empty:
        rand = concentration[(concentration["kind"] == "rand") & (concentration["stage"] == "final")]
        top = rand.loc[rand["scale"].idxmax()]
        lines.append(
            f"- **Re-derive similarity thresholds after training at a high scale** ({_label(sections['c'])}): at "
            f"scale {top['scale']:g} the cosines of random pairs end at {num(top['mean'])} on average, so a "
            "threshold set for another scale moves."
        )
    return [*lines, ""]
