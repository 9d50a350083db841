"""Benchmark of the framework against plain sentence-transformers code, in ONE run, as ratios.

    python -m benchmarks [--quick] [--out DIR] [--data-dir DIR] [--keep-runs] [--only 1,2,3,...]
                          [--race-folders DIR,...] [--live-races EXPERIMENT,...]

Every measurement is a ratio against a baseline measured in the same run (so that a slow or busy machine
cancels out), reported as median [min, max] over repeats (and scales). The markdown table, the machine
description and the raw numbers go to `<out>/README.md` and `<out>/bench.json` (`--out`, default
`sweep_runs/bench`); the table is printed.

Rows (see `ITEMS` in `__main__`):
  1  baseline: `benchmarks/plain_st.py` (plain sentence-transformers, no `sweep` import), one process per scale
  2  per-trial overhead: framework trial wall time / baseline trial time, same steps and evaluations,
     with the similarity statistics disabled and enabled; and trainer time / trainer time
  3  whole sweep: one `python -m sweep` process over N scales / the sum of N baseline processes
  4  pruning: training steps of a pruned study / steps of the full grid, to find the same best scale
  5  layer x dim grid (`sweep.evaluation.layer_grid`) / one full-model STSB evaluation; naive per-layer re-encoding
  6  evaluation speed: the project's STSB evaluator / `model.encode` with default settings (sentences/s)
  7  GPU: skipped when there is none
  8  packing: trials per hour with study.pack=K and study.n_workers=N / one trial at a time, and a framework trial
     / the physical floor (the same steps and evaluations in a bare torch loop)
  9  racing the seeds: training steps and wall time of a race (`study.race`) / the full grid with every seed, and
     the share of seed orders on the same confidence set for the best, replayed over the results folders given
     with `--race-folders` (skipped without)
  10 racing the seeds and steps, live: training steps and wall time of the race over seeds and steps / the full
     grid, both run here, and whether they end on the same confidence set (`--live-races`)
  11 between trials: the share of a default trial's wall time outside its training steps, and its parts
  12 commands that train nothing: `python -m sweep --help`, a refused config and the rerun of a finished study,
     each in seconds against `python -c "import sweep"` (goal: <= 5 s each)

`--quick` shrinks steps, scales and repeats so that the whole run takes a couple of minutes: it checks that
the benchmark works; its ratios are dominated by fixed costs and say little about the full mode.

Why a subpackage of `sweep` and not a `benchmarks/` folder beside it (as Optuna keeps one): this benchmark is a
documented user command (`python -m benchmarks`) that measures the installed framework, and it ships its baseline
(`plain_st.py`) with it, so it must be importable from an installed wheel.

Modules: `settings` (sizes of a run), `table` (statistics, rows, the report), `runners` (the baseline and framework
processes), one module per measurement (`sweeps` items 1-3, `pruning` 4, `layer_grid` 5, `eval_speed` 6, `gpu` 7,
`packing` 8, `race` 9, `live_race` 10, `between_trials` 11,
`quick_answers` 12) with `inprocess` for what items 5 and 6 share, and
`__main__` (the command line).
"""
