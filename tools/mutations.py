"""Mutation checks of the statistics' tests: break the verdict engine (or the resampler, or the interaction test) in
one known way at a time and expect the tests named for that way to fail.

    python tools/mutations.py            # every mutation, after a baseline run of their tests unmutated
    python tools/mutations.py --fast     # the quick subset that `tests/test_mutations.py` runs in CI
    python tools/mutations.py --only seed-df,one-seed-worse

The repository's working tree (without .git, caches and research/results/) is copied once to a temporary folder; each
mutation replaces ONE piece of source text there (the harness stops with an error when the text is not found exactly
once, so it fails loudly when the code moves: then update `MUTATIONS`), runs its small named subset of tests with
``PYTHONPATH`` on the copy, and restores the file. A mutation is *caught* when pytest reports failing tests (exit 1);
one whose tests pass *survived*; any other exit (collection or usage error) is a harness error. It prints a table
``mutation | tests | caught?`` and exits 1 if a mutation survived or a run erred, else 0.

The harness lives in tools/ (not under tests/) because it runs pytest itself; `tests/test_mutations.py` (marker
``mutations``) runs the ``--fast`` subset.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERDICTS, BOOTSTRAP, INTERACTIONS = (
    "sweep/stats/verdicts.py",
    "sweep/stats/bootstrap.py",
    "sweep/stats/interactions.py",
)
# not copied: version control, caches, virtualenvs (CI's .venv is in the tree), run outputs, the published results
SKIPPED = (".git", "__pycache__", "*_cache", ".venv", "venv", "*.egg-info", ".gpukit", "site", "results", "sweep_runs")
ENGINE_TESTS, END_TO_END = "tests/stats/test_scale_verdicts.py", "tests/stats/test_verdict_simulation.py"


@dataclass(frozen=True)
class Mutation:
    """One way to break the source: ``old`` (found exactly once in ``path``) becomes ``new``."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    fast: bool = False


MUTATIONS = (
    Mutation(
        "seed-term-dropped",  # (i) the draws of the seed means without the scale x seed error
        VERDICTS,
        "draws += np.sqrt(scaled / n_seeds) * rng.standard_normal((n_scales, n_draws))",
        "draws += 0 * rng.standard_normal((n_scales, n_draws))",
        (f"{ENGINE_TESTS}::test_the_simultaneous_intervals_cover_every_true_difference_at_the_level[3]",),
        fast=True,
    ),
    Mutation(
        "intervals-1.5x-wide",  # (ii)
        VERDICTS,
        "return differences, critical * se, critical",
        "return differences, 1.5 * critical * se, critical",
        (f"{ENGINE_TESTS}::test_the_simultaneous_intervals_cover_every_true_difference_at_the_level[3]",),
        fast=True,
    ),
    Mutation(
        "per-pair-quantile",  # (iii) max-t replaced by each pair's own quantile (no multiplicity correction)
        VERDICTS,
        "critical = float(np.quantile(studentised.max(axis=0), level))",
        "critical = float(np.quantile(studentised, level, axis=1).mean())",
        (f"{ENGINE_TESTS}::test_without_pair_covariance_the_engine_is_the_two_way_anova_and_tukey[3]",),
        fast=True,
    ),
    Mutation(
        "seed-df-(S-1)R",  # (iv) the wrong degrees of freedom of the seed-level error
        VERDICTS,
        "df = (n_scales - 1) * (n_seeds - 1)",
        "df = (n_scales - 1) * n_seeds",
        (f"{ENGINE_TESTS}::test_without_pair_covariance_the_engine_is_the_two_way_anova_and_tukey[3]",),
        fast=True,
    ),
    Mutation(
        "pairs-within-seed",  # (v) Sigma_e from the same-seed covariance: the seed-specific pair noise counted twice
        BOOTSTRAP,
        "across = (total @ total.T - within) / ((n_resamples - 1) * n_seeds * (n_seeds - 1))",
        "across = within / ((n_resamples - 1) * n_seeds)",
        (f"{END_TO_END}::test_the_resampled_intervals_cover_every_true_difference_at_their_level",),
    ),
    Mutation(
        "one-seed-worse",  # (vi) one seed with pair covariance treated as informative: it could say worse
        VERDICTS,
        "informative = df > 0 or (n_seeds > 1 and pair_covariance is not None)",
        "informative = df > 0 or pair_covariance is not None",
        (f"{ENGINE_TESTS}::test_one_seed_never_says_worse_or_equivalent_whatever_the_gap",),
        fast=True,
    ),
    Mutation(
        "interaction-chi2",  # (vii) the Wald F of the interaction referred to a chi-square (too many rejections)
        INTERACTIONS,
        "float(stats.f.sf(statistic, len(names), df_denom))",
        "float(stats.chi2.sf(statistic * len(names), len(names)))",
        (
            "tests/stats/test_interactions.py::test_the_mixed_models_f_test_is_the_exact_anova_f_of_the_balanced_"
            "block_design",
            "tests/stats/test_interactions.py::test_the_mixed_model_rejects_no_interaction_at_about_its_level_and_"
            "finds_a_real_one",
        ),
        fast=True,
    ),
    Mutation(
        "pairs-covariance-dropped",  # the evaluation pairs' error left out of the draws
        VERDICTS,
        "draws += root @ rng.standard_normal((n_scales, n_draws))",
        "draws += 0 * root @ rng.standard_normal((n_scales, n_draws))",
        (f"{ENGINE_TESTS}::test_with_one_seed_the_intervals_cover_the_trained_models_not_the_scales",),
        fast=True,
    ),
    Mutation(
        "margin-doubled",  # equivalence declared against twice the margin
        VERDICTS,
        "equivalent = (low >= -margin) & (high <= margin)",
        "equivalent = (low >= -2 * margin) & (high <= 2 * margin)",
        (f"{ENGINE_TESTS}::test_equivalence_is_declared_for_a_gap_at_the_margin_at_most_at_the_level[10]",),
        fast=True,
    ),
)


def copy_tree(destination: Path) -> Path:
    """The working tree without .git, caches and research/results/ under ``destination``."""
    ignored = shutil.ignore_patterns(*SKIPPED)
    return Path(shutil.copytree(ROOT, destination / "repo", ignore=ignored))


def check_imports_the_copy(tree: Path) -> None:
    """Stop unless Python run with ``PYTHONPATH`` on the copy imports the copy's ``sweep`` (not an installed one,
    whose unmutated code would let every mutation survive)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-c", "import sweep; print(sweep.__file__)"]
    found = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False).stdout.strip()
    if not found.startswith(str(tree)):
        raise SystemExit(f"the copy's sweep is not the one imported ({found or 'no sweep'}): check PYTHONPATH")


def run_tests(tree: Path, tests: tuple[str, ...]) -> tuple[int, float]:
    """(pytest's exit code, seconds) of ``tests`` on the copy ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    return result.returncode, time.monotonic() - start


def mutate(tree: Path, mutation: Mutation) -> tuple[str, int, float]:
    """Apply ``mutation`` on the copy, run its tests, restore the file: (``yes``/``NO``/``error N``, code, seconds)."""
    path = tree / mutation.path
    source = path.read_text()
    if source.count(mutation.old) != 1:
        raise SystemExit(
            f"mutation {mutation.name}: the text to replace occurs {source.count(mutation.old)} times in "
            f"{mutation.path} (needs exactly 1): update tools/mutations.py to the moved code"
        )
    path.write_text(source.replace(mutation.old, mutation.new))
    try:
        code, seconds = run_tests(tree, mutation.tests)
    finally:
        path.write_text(source)
    return ("yes" if code == 1 else "NO" if code == 0 else f"error {code}"), code, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the mutations marked fast (CI)")
    parser.add_argument("--only", default="", help="comma-separated mutation names")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the tests")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if (m.fast or not args.fast) and (not args.only or m.name in args.only.split(","))]
    if not chosen:
        raise SystemExit(f"no mutation matches --only {args.only!r}; known: {', '.join(m.name for m in MUTATIONS)}")
    with tempfile.TemporaryDirectory(prefix="mutations-") as folder:
        tree = copy_tree(Path(folder))
        check_imports_the_copy(tree)
        if not args.no_baseline:
            tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
            code, seconds = run_tests(tree, tests)
            print(f"baseline: {len(tests)} test(s) unmutated, exit {code} ({seconds:.0f} s)")
            if code != 0:
                print("the tests fail without a mutation: fix them first", file=sys.stderr)
                return 1
        rows = []
        for mutation in chosen:
            caught, _, seconds = mutate(tree, mutation)
            rows.append((mutation.name, " ".join(t.split("::")[-1] for t in mutation.tests), caught, seconds))
            print(f"  {mutation.name}: caught {caught} ({seconds:.0f} s)", flush=True)
    print("\n| mutation | tests | caught? |\n|---|---|---|")
    for name, tests, caught, seconds in rows:
        print(f"| {name} | {tests} | {caught} ({seconds:.0f} s) |")
    failed = [name for name, _, caught, _ in rows if caught != "yes"]
    if failed:
        print(f"\nnot caught: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
