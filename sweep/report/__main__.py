"""``python -m sweep.report {loss-vs-scale,study,pooled,tuned,findings}``: write figures (PNG) and the CSV
behind each, pool one comparison of scales over results folders, compare each scale at its own best learning rate
(or other condition), or write a findings page answering the questions of a YAML file from results folders."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

import pandas as pd

from sweep.config import missing_store
from sweep.errors import MissingInput, QuestionsError, Refused
from sweep.report.loss_curves import DEFAULT_PROFILES, loss_table, parse_scales, parse_similarities, profile_label
from sweep.report.loss_figures import write_loss_vs_scale
from sweep.stats import DEFAULT_MARGIN
from sweep.tracking import library_versions

T = TypeVar("T")


def _arg_type(parse: Callable[[str], T]) -> Callable[[str], T]:
    """Turn a parser's ValueError into an argparse error that shows its message."""

    def wrapped(text: str) -> T:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from error

    return wrapped


def _profile(text: str) -> tuple[str, list[float]]:
    """A ``--similarities`` value: the text as given (the profile name) and its numbers."""
    return text.strip(), parse_similarities(text)


def loss_vs_scale_command(args: argparse.Namespace) -> list[Path]:
    """The analytic MNRL loss (and gradient) vs scale for each similarity profile."""
    if args.from_csv:  # redraw a published loss_vs_scale.csv (analytic and measured curves alike)
        from sweep.report.results_folder import read_csv

        return write_loss_vs_scale(read_csv(args.from_csv / "loss_vs_scale.csv"), args.out, gradient=args.gradient)
    if args.similarities:
        profiles = dict(args.similarities)
    else:
        profiles = {profile_label(sims): sims for sims in DEFAULT_PROFILES.values()}
    table = loss_table(profiles, args.scales)
    if args.measure_batches:
        from sweep.report.measured import measure_batches, measured_loss_table  # loads a model: only when asked

        measured = measure_batches(args.override, args.model, args.measure_batches, args.batch_size)
        logging.info("%s: mean cosine %s", measured.label, {k: round(v, 4) for k, v in measured.summary().items()})
        table = pd.concat([table, measured_loss_table(measured, args.scales)], ignore_index=True)
    return write_loss_vs_scale(table, args.out, gradient=args.gradient)


def study_command(args: argparse.Namespace) -> list[Path]:
    """The figures of one study's trials, read from MLflow or redrawn from a results folder's CSVs."""
    options = {"n_resamples": args.resamples, "level": args.level, "margin": args.margin}
    if args.from_csv:
        from sweep.report.folder_comparison import redraw_results_folder

        return redraw_results_folder(args.from_csv, args.out, args.untrained_from, **options)
    from sweep.report.live_study import write_live_study  # mlflow is slow to import and only needed here

    written = write_live_study(args.tracking_uri, args.out, args.experiment, args.parent_run_id, **options)
    if args.untrained_from is None:
        return written
    from sweep.report.folder_comparison import redraw_results_folder

    # the folder just written, its missing untrained splits filled from the sibling: redrawn from its own CSVs
    return redraw_results_folder(args.out, args.out, args.untrained_from, recompute=False, **options)


def pooled_command(args: argparse.Namespace) -> list[Path]:
    """Scale a vs b pooled over the distinct conditions of results folders (`sweep.report.pooled`)."""
    from sweep.report.pooled import pooled_command as run

    return run(args)


def tuned_command(args: argparse.Namespace) -> list[Path]:
    """Each scale at its own best value of a condition, compared with the best over seeds (`sweep.report.tuned`)."""
    from sweep.report.tuned import tuned_command as run

    return run(args)


def findings_command(args: argparse.Namespace) -> list[Path]:
    """A findings page: the questions of ``--questions`` answered from the results folders (`sweep.report.answers`).
    A file that cannot be answered: one line on stderr and exit code 2, before any number is computed."""
    from sweep.report.answers import write_questions_page

    try:
        print(write_questions_page(args.questions, args.results, args.page or args.results / "findings.md"))
    except (QuestionsError, MissingInput, Refused) as error:  # e.g. a scale with no COMPLETE trial, unpaired seeds
        print(f"python -m sweep.report findings: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    return []  # one page, no figures: no provenance.json beside it (the page names its generator)


def build_parser() -> argparse.ArgumentParser:
    """The ``sweep.report`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m sweep.report", description="Write report figures (PNG) and the CSV behind each."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    loss = commands.add_parser(
        "loss-vs-scale",
        help="analytic MultipleNegativesRankingLoss on one anchor vs scale",
        description="Loss CE(scale * sims, 0) and its gradient vs scale, for similarity profiles "
        "'positive,negative,...'. Writes loss_vs_scale.{png,csv} (columns profile, scale, loss).",
    )
    loss.add_argument(
        "--similarities",
        action="append",
        metavar="POS,NEG,...",
        type=_arg_type(_profile),
        help="cosine similarities, positive first (repeatable); default: "
        + "; ".join(f"{name} {profile_label(s)}" for name, s in DEFAULT_PROFILES.items()),
    )
    loss.add_argument(
        "--scales",
        type=_arg_type(parse_scales),
        default="0:50",
        help="a:b (integers, inclusive), a:b:step or s1,s2,... (all >= 0; default 0:50)",
    )
    loss.add_argument(
        "--measure-batches",
        type=int,
        default=0,
        metavar="K",
        help="also draw the mean MNRL loss of K real training batches (seeded, from the project config's data) "
        "encoded by the base model or --model: the profiles this dataset actually produces",
    )
    loss.add_argument(
        "--batch-size", type=int, default=64, help="rows per measured batch (default 64, the CPU trial's)"
    )
    loss.add_argument("--model", help="a saved SentenceTransformer to measure with (default: the config's base model)")
    loss.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Hydra override of the project config for the measured batches, e.g. data=nli_stsb or model=minilm "
        "(repeatable)",
    )
    loss.add_argument(
        "--from-csv", type=Path, metavar="DIR", help="redraw DIR/loss_vs_scale.csv instead of computing the curves"
    )
    loss.add_argument("--out", type=Path, required=True, help="output directory")
    loss.add_argument(
        "--gradient",
        action="store_true",
        help="also write d loss / d similarity: columns grad_0.. in the CSV (when all profiles have the same "
        "length) and loss_vs_scale_gradient.{png,csv} (long format, figure for the positive)",
    )
    loss.set_defaults(run=loss_vs_scale_command)

    study = commands.add_parser(
        "study",
        help="figures of a study's trials from MLflow",
        description="Spearman, similarity concentration, training loss, AnglE weights and learned scale vs scale "
        "for the trials (child runs) of one study; only COMPLETE trials enter the quality figures.",
    )
    study.add_argument("--tracking-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI)")
    which = study.add_mutually_exclusive_group(required=True)
    which.add_argument("--experiment", help="experiment (= study) name; uses its newest study run")
    which.add_argument("--parent-run-id", help="run id of the study's parent run")
    which.add_argument(
        "--from-csv",
        type=Path,
        metavar="DIR",
        help="redraw a published results folder from its trials.csv, config.yaml and figure CSVs (no MLflow)",
    )
    study.add_argument(
        "--untrained-from",
        type=Path,
        metavar="DIR",
        help="with --from-csv: a results folder with the same base model whose scale-0 rows give the untrained "
        "baseline when DIR has none (the configs are checked)",
    )
    study.add_argument("--out", type=Path, required=True, help="output directory")
    study.add_argument(
        "--level", type=float, default=0.95, help="level of the paired comparison (paired_comparison.csv; 0.95)"
    )
    study.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the paired comparison")
    study.add_argument(
        "--margin", type=float, default=DEFAULT_MARGIN, help="equivalence margin in Spearman (stats.paired.margin)"
    )
    study.set_defaults(run=study_command)

    pooled = commands.add_parser(
        "pooled",
        help="scale a vs scale b pooled over the distinct conditions of results folders",
        description="Per (folder, condition, seed) the paired difference a - b of a metric; one line per condition "
        "and the pooled mean with its interval (random effects over conditions) and sign consistency. Deterministic "
        "re-runs (same config and seed, or the same values at every scale) are dropped and named.",
    )
    pooled.add_argument("folders", nargs="+", type=Path, metavar="FOLDER", help="results folders (with trials.csv)")
    pooled.add_argument("--a", type=float, required=True, help="the scale compared")
    pooled.add_argument("--b", type=float, required=True, help="the scale it is compared with (e.g. the default 20)")
    pooled.add_argument("--metric", default="stsb_validation_spearman", help="a trials.csv column (higher is better)")
    pooled.add_argument("--level", type=float, default=0.95, help="level of the intervals (0.95)")
    pooled.add_argument(
        "--tolerance",
        type=float,
        help="units of one seed whose values agree within this at every scale are one run (default 1e-4, "
        "sweep.stats.pooling.SAME_RUN_TOLERANCE; 0: only bit-identical values)",
    )
    pooled.add_argument("--out", type=Path, help="also write pooled_<a>_vs_<b>.csv and .md here")
    pooled.set_defaults(run=pooled_command, from_csv=None)

    tuned = commands.add_parser(
        "tuned",
        help="each scale at its own best learning rate (or other condition), compared with the best scale",
        description="Over results folders of one set-up (same seeds, configs that differ only in the condition's "
        "values and the grid): for each scale the value of --condition with the highest mean validation score, then "
        "best - this per scale, paired by seed, with the verdict engine's simultaneous intervals (seeds as blocks), "
        "on validation and on test (the honest read: nothing was chosen on it). Prints the table and one "
        "answer line; --out writes own_best_<condition>.csv and .md.",
    )
    tuned.add_argument("folders", nargs="+", type=Path, metavar="FOLDER", help="results folders (with trials.csv)")
    tuned.add_argument(
        "--condition",
        required=True,
        help="the config key tuned per scale, e.g. trial.learning_rate (a trials.csv "
        "column, or a config.yaml key for a folder that ran one value)",
    )
    tuned.add_argument(
        "--validation", default="stsb_validation_spearman", help="the metric the choice is made on (higher is better)"
    )
    tuned.add_argument("--test", default="stsb_test_spearman", help="the metric that confirms it (higher is better)")
    tuned.add_argument("--level", type=float, default=0.95, help="simultaneous level of the intervals (0.95)")
    tuned.add_argument(
        "--margin", type=float, default=DEFAULT_MARGIN, help="equivalence margin in Spearman (stats.paired.margin)"
    )
    tuned.add_argument(
        "--out",
        dest="tuned_out",
        type=Path,
        help="also write own_best_<condition>.csv and .md here (no provenance.json: the markdown names its command)",
    )
    tuned.set_defaults(run=tuned_command, from_csv=None, out=None)

    findings = commands.add_parser(
        "findings",
        help="a findings page: your questions answered from your results folders",
        description="For each question of a YAML file (a comparison over results folders: best_scale, pooled, "
        "interaction or tuned; docs/reports.md shows one): the answer, the evidence read from the folders' CSVs, its "
        "strength by the rule stated at the page's top, and its scope.",
    )
    findings.add_argument(
        "--questions", type=Path, required=True, metavar="FILE", help="the questions file (YAML; see docs/reports.md)"
    )
    findings.add_argument(
        "--results", type=Path, default=Path("results"), help="the directory the file's folders are in (results)"
    )
    findings.add_argument("--out", dest="page", type=Path, help="the page (default: RESULTS/findings.md)")
    findings.set_defaults(run=findings_command, from_csv=None, out=None)
    return parser


# The folder arguments each command reads from (argparse dest: the option), checked before any work.
INPUT_FOLDERS = {"from_csv": "--from-csv", "untrained_from": "--untrained-from", "results": "--results"}


def _unusable_paths(args: argparse.Namespace) -> str | None:
    """What makes the command's output folder or tracking store unusable, found before any work: an ``--out`` that is
    a file, or a SQLite tracking store that does not exist (reading one would create it, empty)."""
    out = getattr(args, "out", None)  # a folder, but findings' page
    if args.command != "findings" and out is not None and out.exists() and not out.is_dir():
        return f"--out {out}: is a file, not a folder: name a folder (created if missing)"
    reads_mlflow = args.command == "study" and args.from_csv is None
    return missing_store(args.tracking_uri) if reads_mlflow else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand and print the paths it wrote."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for dest, option in INPUT_FOLDERS.items():
        folder = getattr(args, dest, None)
        if folder is not None and not folder.is_dir():  # else: "nothing written", or a page of "untested", exit 0
            parser.exit(2, f"{parser.prog} {args.command}: error: {option} {folder}: no such folder\n")
    refusal = _unusable_paths(args)
    if refusal:
        parser.exit(2, f"{parser.prog} {args.command}: error: {refusal}\n")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        paths = args.run(args)
    except ValueError as error:  # bad input, e.g. an unknown experiment: a message, not a traceback
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    if not paths:
        if args.out is not None:  # pooled without --out only prints
            logging.warning("nothing written: the runs lack the columns the figures need")
        return 0
    for path in [*paths, write_provenance(args.out, argv, args.from_csv)]:
        print(path)
    return 0


def write_provenance(out_dir: Path, argv: Sequence[str] | None, source: Path | None = None) -> Path:
    """Record next to the figures the command that made them, the library versions and the git commit; for
    figures redrawn from the results folder ``source``, also its record of the run that made the data."""

    command = ["python", "-m", "sweep.report", *(sys.argv[1:] if argv is None else argv)]
    path = Path(out_dir) / "provenance.json"
    record: dict[str, object] = {
        "command": shlex.join(command),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": library_versions(),
    }
    if source is not None and (source / "provenance.json").exists():  # redrawn: keep how the data was made
        earlier = json.loads((source / "provenance.json").read_text())
        record["data_from"] = earlier.get("data_from", earlier)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
