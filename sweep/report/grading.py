"""The strength rule of a findings page, written once: the labels, what a claim's evidence must hold for each, the
confounds the rule reads from the design of the trainings compared (`Design`), the controls that lift them
(`Control`), and the rule in words for the top of a page (`strength_rule`).

`strength` grades one claim from the `Facts` of the folders it rests on; `lowest` grades an answer that rests on
several claims (its lowest label); `regrade` recomputes a grade from the evidence it recorded, so that a page's test
can check that every label it prints is the rule's. Public through `sweep.report`; `sweep.report.evidence` reads a
folder's `Facts` and `Design`.

The rule, lowest label first (the lowest that applies):

- *untested*: no study.
- *weak*: fewer than `MIN_SEEDS` independent seeds of the trainings compared (counted as the folder says: a study of
  start models may hold one fine-tuning seed per start), no interval (a point estimate), a verdict that does not
  separate (its interval includes 0: not distinguishable, which is not equivalent), or test that does not confirm
  the choice made on validation.
- *confounded*: otherwise, while a confound is not controlled: one the page names, or one the design implies (a start
  model trained at a scale among those compared; the learning rate one value, not tuned; the learning rate chosen at
  the edge of the rates tried, not bracketed; the data repeated; a run shorter than `SHORT_RUN` steps). A control
  study of the confound's kind lifts it only when it agrees and is itself *moderate* or *strong* by this rule.
- *moderate*: the verdict separates with `MIN_SEEDS` or more seeds and test confirms, in one condition (or in several
  with an unpaired method).
- *strong*: the same with the paired verdict method (seeds as blocks, paired over seeds), in two or more distinct
  conditions (deterministic re-runs count once).

Fewer seeds never give a stronger label: below `MIN_SEEDS` every claim is *weak* at most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

UNTESTED, WEAK, CONFOUNDED, MODERATE, STRONG = "untested", "weak", "confounded", "moderate", "strong"
LABELS = (UNTESTED, WEAK, CONFOUNDED, MODERATE, STRONG)  # lowest first

MIN_SEEDS = 3  # a claim about scale rests on at least this many seeds
SHORT_RUN = 100  # a run of fewer optimizer steps is a confound: the ranking may still be changing

# how the claim's intervals were made
PAIRED, UNPAIRED, NO_INTERVAL = "paired", "unpaired", "no interval"
METHOD_WORDS = {PAIRED: "paired verdict separates", UNPAIRED: "unpaired t over seeds separates"}

# how a folder's learning rate was set (`Design.rate`)
TUNED, INHERITED, EDGE, FIXED = "tuned", "inherited", "edge", "fixed"

# the kinds of confound a design implies; a `Control` names the kind it controls
START, RATE, REPEATED, SHORT, NAMED = "start model", "learning rate", "repeated data", "short run", "named"


@dataclass(frozen=True)
class Design:
    """How the trainings of one folder ran, as far as the rule reads it; a field left at its default is not known
    and implies nothing."""

    steps: int | None = None  # the fewest optimizer steps of any training compared
    passes: float | None = None  # the most passes over the training data
    rate: str | None = None  # TUNED (bracketed), INHERITED (tuned on the same set-up elsewhere), EDGE or FIXED
    rate_words: str = ""  # the rate(s) in words, e.g. "0.05" or "0.003, the lowest of 0.003-0.01"
    start_scale: float | None = None  # the scale a contrastively trained start model was trained at
    scales: tuple[float, ...] = ()  # the scales compared (the start's scale is a confound when among them)

    def confounds(self) -> list[tuple[str, str]]:
        """(kind, words) of each confound this design implies."""
        found = []
        if self.start_scale is not None and (
            not self.scales or min(self.scales) <= self.start_scale <= max(self.scales)
        ):
            found.append(
                (START, f"the start model was trained at scale {self.start_scale:g}, among the scales compared")
            )
        words = f" ({self.rate_words})" if self.rate_words else ""
        if self.rate == FIXED:
            found.append((RATE, f"the learning rate: one value{words}, not tuned"))
        elif self.rate == EDGE:
            found.append((RATE, f"the learning rate chosen at the edge of the rates tried{words}: not bracketed"))
        if self.passes is not None and self.passes > 1.05:
            found.append((REPEATED, f"the data repeated ({self.passes:.1f} passes)"))
        if self.steps is not None and self.steps < SHORT_RUN:
            found.append((SHORT, f"a short run ({self.steps} steps, fewer than {SHORT_RUN})"))
        return found


@dataclass(frozen=True)
class Facts:
    """What the strength rule needs from one results folder."""

    name: str
    n_seeds: int
    confirmed: bool
    seed_words: str = "seeds"  # what n_seeds counts (e.g. "fine-tuning seeds per start model")
    design: Design = field(default_factory=Design)


@dataclass(frozen=True)
class Basis:
    """The evidence a grade was made from (`regrade` recomputes it)."""

    facts: tuple[Facts, ...]
    separates: bool
    distinct: int
    confounds: tuple[str, ...]
    method: str
    controls: tuple[Control, ...]


@dataclass(frozen=True)
class Strength:
    label: str
    reason: str
    basis: Basis | tuple[tuple[str, Strength], ...] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"**{self.label}** ({self.reason})"


@dataclass(frozen=True)
class Control:
    """A study that controls one kind of confound of a claim (`START`, `RATE`, `REPEATED`, `SHORT`, or the words of a
    named confound): it lifts the confound when it ``agrees`` with the claim and its own ``strength`` is moderate or
    strong."""

    kind: str
    name: str
    strength: Strength
    agrees: bool = True


def _count(n: int, words: str) -> str:
    return f"{n} {words.replace('seeds', 'seed', 1) if n == 1 else words}"


def strength(
    facts: Sequence[Facts],
    separates: bool,
    distinct: int,
    confounds: Sequence[str] = (),
    *,
    method: str = PAIRED,
    controls: Sequence[Control] = (),
) -> Strength:
    """The rule of the module docstring applied to the folders a claim rests on (``facts``), whether its verdict
    separates, in how many distinct conditions it holds, the confounds the page names, the method of its intervals
    (`PAIRED`, `UNPAIRED`, `NO_INTERVAL`) and the controls of its confounds."""
    if method not in (PAIRED, UNPAIRED, NO_INTERVAL):
        raise ValueError(f"method must be one of {PAIRED}, {UNPAIRED}, {NO_INTERVAL}; got {method!r}")
    basis = Basis(tuple(facts), separates, distinct, tuple(confounds), method, tuple(controls))
    if not facts:
        return Strength(UNTESTED, "no study", basis)
    fewest = min(facts, key=lambda f: f.n_seeds)
    seeds = _count(fewest.n_seeds, fewest.seed_words)
    unconfirmed = [f.name for f in facts if not f.confirmed]
    problems = [seeds] if fewest.n_seeds < MIN_SEEDS else []
    problems += ["no interval (a point estimate)"] if method == NO_INTERVAL else []
    problems += [] if separates else ["the verdict does not separate (not distinguishable)"]
    problems += [f"test does not confirm the validation choice in {', '.join(unconfirmed)}"] if unconfirmed else []
    if problems:
        return Strength(WEAK, "; ".join(problems), basis)
    base = STRONG if distinct >= 2 and method == PAIRED else MODERATE
    conditions = f"{distinct} distinct condition{'s' if distinct != 1 else ''}"
    held = f"{seeds}, {METHOD_WORDS[method]}, test confirms, {conditions}"
    held += " (unpaired: moderate at most)" if distinct >= 2 and method != PAIRED else ""
    where: dict[tuple[str, str], list[str]] = {}
    for f in facts:
        for pair in f.design.confounds():
            where.setdefault(pair, []).append(f"`{f.name}`")
    found = [(kind, f"{words} ({', '.join(names)})") for (kind, words), names in where.items()]
    found += [(NAMED, c) for c in confounds]
    kept, lifted = [], []
    for kind, words in dict.fromkeys(found):
        mine = [c for c in controls if c.kind in (kind, words)]
        good = [c for c in mine if c.agrees and c.strength.label in (MODERATE, STRONG)]
        if good:
            lifted.append(f"{words}: controlled by `{good[0].name}` ({good[0].strength.label})")
            continue
        failed = "".join(
            f"; `{c.name}` does not control it ({c.strength.label}{', and it disagrees' if not c.agrees else ''})"
            for c in mine
        )
        kept.append(words + failed)
    controlled = f"; controlled: {'; '.join(lifted)}" if lifted else ""
    if kept:
        return Strength(
            CONFOUNDED, f"{base} by the rule otherwise: {held}; not controlled: {'; '.join(kept)}{controlled}", basis
        )
    return Strength(base, held + controlled, basis)


def lowest(parts: Sequence[tuple[str, Strength]]) -> Strength:
    """An answer that rests on several claims, each graded by `strength`: the lowest of their labels, with every
    part's label and reason (``parts``: (what the claim is, its strength))."""
    if not parts:
        return Strength(UNTESTED, "no claim", ())
    label = min((s.label for _, s in parts), key=LABELS.index)
    return Strength(label, "; ".join(f"{what}: {s.label}, {s.reason}" for what, s in parts), tuple(parts))


def regrade(graded: Strength) -> Strength:
    """``graded`` made again by the rule from the evidence it recorded; ValueError for a strength the rule did not
    make (no recorded evidence)."""
    if isinstance(graded.basis, Basis):
        b = graded.basis
        return strength(b.facts, b.separates, b.distinct, b.confounds, method=b.method, controls=b.controls)
    if isinstance(graded.basis, tuple):
        return lowest([(what, regrade(part)) for what, part in graded.basis])
    raise ValueError(f"a strength the rule did not make: {graded}")


def strength_rule(
    confounds: str = "the learning rate, a start model trained at the scale compared, data size tied to steps",
    reruns: str = "the same configuration and seed run twice",
) -> str:
    """The rule `strength` applies, in words for the top of a page; ``confounds`` and ``reruns``: examples of a
    named confound and of deterministic re-runs, in the words of the studies the page reads."""
    return (
        f"**Strength rule** (written once, in `sweep.report.grading`; the lowest label that applies): *{UNTESTED}*: no "
        f"study. *{WEAK}*: fewer than {MIN_SEEDS} independent seeds of the trainings compared (as the folder counts "
        "them: a study of start models may hold one fine-tuning seed per start), no interval (a point estimate), the "
        "verdict the claim rests on does not separate (its interval includes 0: not distinguishable, which is not "
        "equivalent), or test does not confirm the choice made on validation. "
        f"*{CONFOUNDED}*: moderate or strong otherwise, but a confound is not controlled: one named ({confounds}), or "
        "one the design implies: a start model trained at a scale among those compared, the learning rate one value "
        "(not tuned) or chosen at the edge of the rates tried (not bracketed), the data repeated (more than one "
        f"pass), a run of fewer than {SHORT_RUN} steps. A control study lifts a confound only when it agrees and is "
        f"itself moderate or strong by this rule. *{MODERATE}*: {MIN_SEEDS} or more seeds, a verdict that separates, "
        f"test confirms, in one condition (or in several with unpaired intervals). *{STRONG}*: the same with the "
        f"paired verdict method, in at least two distinct conditions (deterministic re-runs, such as {reruns}, count "
        "once)."
    )
