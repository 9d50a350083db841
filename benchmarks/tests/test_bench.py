"""The benchmark's pure parts: the table writer, the ratios and verdicts, the overrides it passes to
`python -m sweep`, and the baseline script's CLI. Nothing here is timed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.__main__ import guarded, main, parse_args
from benchmarks.gpu import gpu_rows
from benchmarks.packing import PackRun, packing_rows, study_overrides
from benchmarks.pruning import PruneResult, prune_overrides, pruning_rows
from benchmarks.runners import PLAIN_ST, BaselineRun, FrameworkSweep, FrameworkTrial, grid_override
from benchmarks.settings import DEFAULT_GRID, FULL, QUICK, PruneVariant, expected_seconds, reuses_sweep
from benchmarks.sweeps import SweepMeasurements, agreement_details, trial_overhead_rows, whole_sweep_rows
from benchmarks.table import COLUMNS, Row, Stat, machine_description, markdown_table, render_report


def test_stat_formats_median_and_range():
    assert Stat.of([3.0, 1.0, 2.0]).fmt("s", 1) == "2.0 s [1.0, 3.0]"
    assert Stat.of([1.25]).fmt(digits=3) == "1.250"
    assert Stat.of([]).fmt() == "-"


def test_row_verdicts():
    assert Row("2", "m", "", "", Stat.of([1.01, 1.2, 0.9]), "<= 1.05").verdict == "met"
    assert Row("3", "m", "", "", Stat.of([0.9]), "<= 0.75").verdict == "not met"
    assert Row("6", "m", "", "", Stat.of([1.3]), ">= 1").verdict == "met"
    assert Row("6", "m", "", "", Stat.of([1.3]), "").verdict == "info"
    assert Row("7", "gpu", "-", "-", None, "", status="skipped").verdict == "skipped"


def test_markdown_table_has_ratio_columns_and_escapes_pipes():
    rows = [
        Row("2", "per-trial wall time", "10.00 s", "9.50 s", Stat.of([1.05, 1.02, 1.10]), "<= 1.05", "a | b"),
        Row("7", "GPU", "-", "-", None, "", "skipped: no GPU", status="skipped"),
    ]
    table = markdown_table(rows).splitlines()
    assert table[0].startswith(
        "| # | measurement | framework | baseline | ratio: median [min, max] | goal | verdict | n |"
    )
    assert set(table[1].replace("|", "")) == {"-"}
    assert "1.050 [1.020, 1.100]" in table[2] and "| met | 3 |" in table[2] and "a \\| b" in table[2]
    assert "| skipped | 0 |" in table[3]
    assert all(line.count("|") - line.count("\\|") == len(COLUMNS) + 1 for line in table)


def test_report_names_machine_and_quick_mode():
    machine = machine_description()
    assert {"cpu", "cores", "torch", "sentence-transformers", "date"} <= set(machine)
    report = render_report(
        [Row("1", "baseline", "-", "1 s", None, "", status="reference")], machine, QUICK, 60.0, ["- a detail"]
    )
    assert (
        "Quick mode" in report and "| 1 | baseline |" in report and "## Details" in report and machine["cpu"] in report
    )


def _trial(number, scale, wall, train=None, value=0.7, state="COMPLETE", steps=20, phases=None):
    value = value if state == "COMPLETE" else None
    return FrameworkTrial(number, scale, state, value, wall, train, steps, number == 0, phases or {})


def _baseline(scale, trial_s, load_s=1.0, process=20.0, spearman=0.7):
    return BaselineRun(
        scale,
        process,
        {
            "trial_s": trial_s,
            "load_s": load_s,
            "train_s": trial_s - 1,
            "import_s": 5.0,
            "stsb_validation_spearman": spearman,
        },
    )


def test_trial_overhead_pairs_by_scale_and_counts_loading_in_the_first_trial():
    m = SweepMeasurements(
        baseline=[[_baseline(5.0, 10.0), _baseline(20.0, 10.0)]],
        framework_off=[FrameworkSweep(40.0, [_trial(0, 5.0, 11.0, 9.0), _trial(1, 20.0, 10.5, 9.0)], [])],
        framework_on=[FrameworkSweep(45.0, [_trial(0, 5.0, 13.2, 9.0), _trial(1, 20.0, 12.0, 9.0)], [])],
    )
    off, on, train = trial_overhead_rows(m)
    assert off.ratio.values == pytest.approx((1.0, 1.05))  # first trial: 11 / (10 + 1 load)
    assert on.ratio.values == pytest.approx((1.2, 1.2))
    assert train.ratio.values == pytest.approx((1.0, 1.0))
    whole_off, _ = whole_sweep_rows(m)
    assert whole_off.ratio.values == pytest.approx((1.0,))  # 40 s / (20 + 20) s
    details = agreement_details(m)
    assert "0.00e+00" in details[0]


def test_pruning_rows_compare_steps_and_best_scale():
    grid = FrameworkSweep(
        100.0,
        [
            _trial(i, s, 10.0, value=v, steps=12)
            for i, (s, v) in enumerate([(1.0, 0.60), (5.0, 0.64), (20.0, 0.65), (50.0, 0.63)])
        ],
        [],
    )
    pruned = FrameworkSweep(
        60.0,
        [
            _trial(0, 20.0, 10.0, value=0.65, steps=12),
            _trial(1, 1.0, 3.0, state="PRUNED", steps=4),
            _trial(2, 5.0, 10.0, value=0.648, steps=12),
            _trial(3, 50.0, 3.0, state="PRUNED", steps=4),
        ],
        [],
    )
    wrong = FrameworkSweep(60.0, [_trial(0, 1.0, 10.0, value=0.60, steps=12)], [])
    variant = PruneVariant("median, shuffled", "median", "shuffled")
    rows = pruning_rows(QUICK, [PruneResult(None, grid), PruneResult(variant, pruned), PruneResult(variant, wrong)])
    assert rows[0].verdict == "reference" and "48 steps" in rows[0].baseline
    assert rows[1].ratio.values == pytest.approx((32 / 48,)) and rows[1].verdict == "not met"  # 0.67 > 0.5
    assert "best scale 20" in rows[1].note and "2/4 trials pruned" in rows[1].note
    assert rows[2].verdict == "not met" and "2 grid point(s)" in rows[2].note  # cheap, but the wrong scale


def test_prune_overrides():
    grid = prune_overrides(FULL, None)
    assert "study.pruner.name=none" in grid and grid_override(FULL.prune_scales) in grid
    shuffled = prune_overrides(FULL, PruneVariant("x", "successive_halving", "shuffled"))
    scale_arg = next(a for a in shuffled if a.startswith("study.search_space.loss.scale="))
    assert sorted(float(x) for x in scale_arg.split("=")[1].strip("[]").split(",")) == sorted(FULL.prune_scales)
    assert f"study.pruner.min_resource={FULL.prune_eval_steps}" in shuffled
    tpe = prune_overrides(FULL, PruneVariant("x", "median", "tpe", sampler="tpe"))
    assert "~study.search_space.loss.scale" in tpe and "study.sampler.name=tpe" in tpe
    assert f"study.n_trials={len(FULL.prune_scales)}" in tpe


def test_settings_fit_the_budget():
    budget = (
        "items 1-7 take about 15 min; item 8 (packing, a transformer) ~30; 9 ~1.5; 10 (two 5-seed grids, live) ~28; "
        "11 (three 9-trial studies) ~6; 12 (a tiny study, then three commands that train nothing, 3 times) ~1.5"
    )
    assert expected_seconds(FULL) <= 83 * 60, budget
    assert expected_seconds(QUICK) < expected_seconds(FULL)
    assert QUICK.steps < FULL.steps and QUICK.repeats <= FULL.repeats


def test_plain_st_help_and_bench_help():
    done = subprocess.run([sys.executable, str(PLAIN_ST), "--help"], capture_output=True, text=True, timeout=60)
    assert (
        done.returncode == 0
        and "--scale" in done.stdout
        and "--data-dir" in done.stdout
        and "--eval-steps" in done.stdout
    )
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--help"])
    assert exit_info.value.code == 0
    args = parse_args(["--quick", "--out", "/tmp/x", "--race-folders", "a/one,b/two"])
    assert args.quick and str(args.out) == "/tmp/x" and args.race_folders == ("a/one", "b/two")


def test_the_benchmark_writes_beside_the_studies_and_skips_the_race_without_folders(tmp_path, monkeypatch):
    """Without --out the report goes to $SWEEP_HOME/bench (else sweep_runs/bench), never into a checkout's folders;
    item 9 replays only the folders it is given, and says so when there are none."""
    monkeypatch.delenv("SWEEP_HOME", raising=False)
    assert parse_args([]).out == Path("sweep_runs") / "bench" and parse_args([]).race_folders == ()
    monkeypatch.setenv("SWEEP_HOME", str(tmp_path / "home"))
    assert parse_args([]).out == tmp_path / "home" / "bench"

    report = main(["--only", "9"])
    assert "Command: `python -m benchmarks --only 9` (full mode" in report
    (row,) = [line for line in report.splitlines() if line.startswith("| 9 |")]
    assert "| skipped |" in row and "--race-folders" in row
    assert (tmp_path / "home" / "bench" / "README.md").read_text() == report


def test_gpu_row_says_why():
    (row,) = gpu_rows()
    assert row.item == "7" and row.verdict == "skipped"


def test_a_failing_measurement_becomes_a_failed_row():
    def boom():
        raise RuntimeError("framework failed (1): python -m sweep ...\nTraceback\nValueError: bad")

    (row,) = guarded("4", "item 4: pruning", boom)
    assert row.verdict == "failed" and "RuntimeError" in row.note and "ValueError: bad" in row.note
    assert guarded("7", "gpu", gpu_rows)[0].item == "7"


def test_full_mode_prunes_the_sweep_it_already_ran():
    """Item 4's reference is item 3's framework sweep in full mode (same grid and schedule: the default grid)."""
    assert reuses_sweep(FULL) and FULL.scales == DEFAULT_GRID
    assert not reuses_sweep(QUICK)


def test_plain_st_is_plain():
    """The baseline is the code a user writes without the framework: it imports nothing from `sweep`."""
    tree = ast.parse(PLAIN_ST.read_text())
    modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "sentence_transformers" in modules and not [m for m in modules if m.split(".")[0] == "sweep"]


def test_packing_rows_read_trials_per_hour_against_one_at_a_time_and_the_floor():
    def run(pack, workers, span, walls=(3.0, 2.4, 2.6, 2.5)):
        trials = [_trial(i, s, w) for i, (s, w) in enumerate(zip(QUICK.pack_scales, walls, strict=True))]
        return PackRun("static_minilm", pack, workers, FrameworkSweep(span + 10, trials, []), span)

    runs = [run(1, 1, 10.0), run(2, 1, 8.0), run(4, 1, 5.0), run(1, 2, 6.0)]
    floor, *packed = packing_rows("static_minilm", 2.0, runs)
    assert floor.goal == "<= 1.2" and floor.ratio.values == pytest.approx((1.2, 1.3, 1.25)), "first trial left out"
    assert [r.ratio.values[0] for r in packed] == pytest.approx([10 / 8, 2.0, 10 / 6])
    assert "pack 4" in packed[1].measurement and "2 workers" in packed[2].measurement
    assert packed[1].framework == "2880/h" and "1.60 x the floor's 1800/h" in packed[1].note
    assert "study.stats.enabled=false" not in study_overrides(QUICK, "static_minilm")
    assert {1, 2, 4} <= set(QUICK.pack_sizes) and 8 in FULL.pack_sizes and "minilm_l1" in FULL.pack_models


def synthetic_folder(root: Path, histories: bool, rates: tuple[float, ...] = ()) -> str:
    """A published folder's shape (trials.csv, predictions.npz, config.yaml, with ``histories`` its
    validation_history.csv) with 3 scales x 3 seeds, scale 1 far worse (and far behind at each validation); with
    `rates`, one such family per learning rate (``trial.learning_rate``), the worse scale 20 in the second."""
    import numpy as np
    import yaml

    from sweep.report.predictions_file import PREDICTIONS_FILE, write_predictions

    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 300)
    trials, predictions, history = [], [], []
    grid = [(r, s, k) for r in rates or (None,) for s in (1.0, 10.0, 20.0) for k in (0.0, 1.0, 2.0)]
    for number, (rate, scale, seed) in enumerate(grid):
        worse = scale == (20.0 if rates and rate == rates[1] else 1.0)
        noise = rng.normal(0, 3.0 if worse else 1.0, 300) + np.random.default_rng(int(seed)).normal(0, 1, 300)
        trials.append(
            {
                "trial_number": number,
                "state": "COMPLETE",
                "loss.scale": scale,
                "trial.seed": seed,
                "trial_wall_time_s": 10.0 + number,
                **({"trial.learning_rate": rate} if rates else {}),
            }
        )
        predictions.append(
            pd.DataFrame({"trial_number": number, "split": "validation", "gold": gold, "cosine": gold + noise})
        )
        final, offset = (0.5 if worse else 0.8) + 0.01 * seed, rng.normal(0, 0.003)  # seed luck, trial's own
        for step in (0, 10, 20, 30, 40, 50):
            value = final - 0.2 * (1 - step / 50) + offset + rng.normal(0, 0.001)
            history.append({"trial_number": number, "state": "COMPLETE", "scale": scale, "step": step, "value": value})
    folder = root / "research" / "results" / "study"
    folder.mkdir(parents=True)
    pd.DataFrame(trials).to_csv(folder / "trials.csv", index=False)
    write_predictions(pd.concat(predictions), folder / PREDICTIONS_FILE)
    if histories:
        pd.DataFrame(history).to_csv(folder / "validation_history.csv", index=False)
    config = {
        "trial": {"max_steps": 50},
        "stats": {"seed": 0, "paired": {"resamples": 200, "level": 0.95, "margin": 0.001}},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return "research/results/study"


def test_the_race_replay_drops_the_worse_scale_in_every_seed_order_and_counts_its_trials(tmp_path, monkeypatch):
    """Every order drops scale 1 after 2 seeds and races the tied two to the third, 8 of 9 trials."""
    from benchmarks import race

    name = synthetic_folder(tmp_path, histories=False)
    monkeypatch.chdir(tmp_path)  # a folder is a path given on the command line, relative to where it runs

    result = race.replay(QUICK, name, lambda text: None)
    assert len(result.runs) == QUICK.race_orders and result.full_trials == 9
    assert {run.trials for run in result.runs} == {8} and {run.kept for run in result.runs} == {frozenset({10.0, 20.0})}
    steps, wall, same = race.race_rows(result)
    assert steps.ratio is not None and steps.ratio.median == 8 / 9 and steps.verdict == "not met"
    assert result.full_set == frozenset({10.0, 20.0}) and same.verdict == "met" and same.framework == "2 of 2 orders"
    assert wall.verdict == "info" and "(full grid: 9)" in steps.note
    assert [row.goal for row in race.race_rows(result, goals=False)] == ["", "", ""]


def test_the_race_over_steps_is_replayed_from_the_validation_histories(tmp_path, monkeypatch):
    """With the folder's validation histories the replay also races over steps: scale 1 is stopped at a validation
    of its first round and its other trial is not trained, unless the queue put both its trials before two finished
    ones showed how a lead moves (2 of the 6 orders here); every race ends on the full grid's set, with fewer steps."""
    from benchmarks import race
    from benchmarks.settings import Settings

    name = synthetic_folder(tmp_path, histories=True)
    monkeypatch.chdir(tmp_path)
    every_order = Settings(**{**QUICK.__dict__, "race_folders": (name,), "race_orders": None})
    rows, results = race.measure_race(every_order, lambda text: None)
    seeds, steps = results
    assert not seeds.stop_early and steps.stop_early and len(steps.runs) == 6
    assert all(run.kept == steps.full_set == frozenset({10.0, 20.0}) for run in steps.runs)
    assert [run.history.startswith("stopped early: 1;") for run in steps.runs] == [False, True, True, True, True, False]
    assert [run.steps for run in steps.runs] == [400, 360, 360, 360, 360, 400] and {r.steps for r in seeds.runs} == {
        400
    }
    labels = [row.measurement for row in rows]
    assert sum("race over seeds and steps" in label for label in labels) == 3
    assert rows[3].goal == "<= 0.3" and rows[0].goal == "<= 0.5"


def test_the_live_race_rows_compare_steps_wall_time_and_the_confidence_sets():
    """Item 10: the race's steps count a stopped trial up to its stop; the set row fails when the sets differ."""
    from benchmarks.live_race import LiveRace, live_race_rows

    full = FrameworkSweep(100.0, [_trial(n, s, 10.0, steps=120) for n, s in enumerate((1.0, 10.0, 20.0))], [])
    stopped = _trial(2, 1.0, 4.0, state="PRUNED", steps=40)
    raced = FrameworkSweep(50.0, [_trial(0, 10.0, 10.0, steps=120), _trial(1, 20.0, 10.0, steps=120), stopped], [])
    same = LiveRace("mnrl_scale", 5, full, raced, frozenset({10.0, 20.0}), frozenset({10.0, 20.0}))
    steps, wall, answer = live_race_rows(same)
    assert (steps.framework, steps.baseline) == ("280 steps", "360 steps") and steps.ratio.median == 280 / 360
    assert steps.verdict == "not met" and "1 of them stopped at a validation" in steps.note
    assert wall.ratio.median == 0.5 and wall.verdict == "info"
    assert answer.verdict == "met" and answer.framework == "{10, 20}"
    other = LiveRace("mnrl_scale", 5, full, raced, frozenset({10.0, 20.0}), frozenset({10.0}))
    assert live_race_rows(other)[2].verdict == "not met"


def _phases(before, steps, after, preparing=0.1, final_scoring=0.2, keeping=0.0):
    spans = {"time_preparing_s": preparing, "time_final_scoring_s": final_scoring, "time_keeping_s": keeping}
    share = {"time_outside_steps_share": (before + after) / (before + steps + after)}
    return {"time_before_steps_s": before, "time_steps_s": steps, "time_after_steps_s": after, **share, **spans}


def test_the_between_trials_rows_are_each_trials_share_outside_its_steps_after_the_first():
    """Item 11: the first trial of the process (which loads the data and model) is named apart, not pooled."""
    from benchmarks.between_trials import between_trials_rows

    trials = [
        _trial(0, 10.0, 14.0, phases=_phases(3.0, 9.0, 2.0)),
        _trial(1, 20.0, 10.0, phases=_phases(0.2, 9.5, 0.3)),
        _trial(2, 50.0, 10.0, phases=_phases(0.6, 9.0, 0.4, keeping=0.3)),
        _trial(3, 1.0, 4.0, state="PRUNED", steps=40, phases=_phases(0.5, 3.0, 0.5)),
    ]
    outside, before, after = between_trials_rows(FrameworkSweep(40.0, trials, []), 1, "statistics on")
    assert outside.ratio.values == pytest.approx((0.05, 0.1)) and outside.verdict == "not met"  # median 0.075
    assert "the first trial of the process: 0.357" in outside.note
    assert before.ratio.values == pytest.approx((0.02, 0.06)) and after.ratio.values == pytest.approx((0.03, 0.04))
    assert "keeping 0.15 s [0.00, 0.30]" in after.note and before.verdict == "info"
    assert "statistics on" in outside.measurement and "(statistics on)" in after.measurement


def test_item_12_reads_each_command_against_the_goal_in_seconds_and_runs_them_as_a_user_would(monkeypatch, tmp_path):
    """Item 12: the verdict is each command's median seconds against 5 s (the ratio to `import sweep` is beside it);
    the refusal is the finished study's own command with one bad value, and must exit 2, the others 0."""
    from benchmarks import quick_answers

    slow = quick_answers.answer_row("rerun", [4.0, 6.0, 7.0], [0.05, 0.05, 0.05])
    assert slow.verdict == "not met" and slow.ratio is not None and slow.ratio.median == pytest.approx(120.0)
    assert quick_answers.answer_row("--help", [1.0, 1.5, 9.0], [0.05, 0.05, 0.05]).verdict == "met"
    study = [sys.executable, "-m", "sweep", "+experiment=mnrl_scale", "name=bench"]
    runs: list[tuple[list[str], int]] = []

    def fake_timed(what, command, data_dir, timeout_s, log_dir=None, expected_code=0):
        runs.append((command, expected_code))
        return None, 1.0

    monkeypatch.setattr(quick_answers, "run_framework", lambda *a, **k: FrameworkSweep(9.0, [], study))
    monkeypatch.setattr(quick_answers, "run_timed", fake_timed)
    rows = quick_answers.measure_quick_answers(QUICK, "data", tmp_path, lambda text: None)
    assert [row.verdict for row in rows] == ["met"] * 3
    assert runs == [
        (quick_answers.BASELINE, 0),
        ([sys.executable, "-m", "sweep", "--help"], 0),
        ([*study, "study.timeout=-5"], 2),
        (study, 0),
    ]


def test_item_11_runs_each_variant_in_a_folder_hydra_reads_as_one_value(monkeypatch, tmp_path):
    """A label with a comma once named the study's folder, and `paths.root=...,...` split Hydra's override."""
    from benchmarks import between_trials

    runs: list[tuple[Path, tuple[str, ...]]] = []

    def run(root, overrides, *args, **kwargs):
        runs.append((root, tuple(overrides)))
        return FrameworkSweep(1.0, [_trial(n, 1.0, 10.0, phases=_phases(0.2, 9.5, 0.3)) for n in range(2)], [])

    monkeypatch.setattr(between_trials, "run_framework", run)
    rows = between_trials.measure_between_trials(QUICK, "data", tmp_path, lambda text: None)
    assert len(runs) == len(between_trials.VARIANTS) and len(rows) == 3 * len(runs)
    assert not any("," in str(root) for root, _ in runs) and len({root for root, _ in runs}) == len(runs)
    assert [overrides[-1:] for _, overrides in runs][1:] == [("stats.histogram=false",), ("stats.enabled=false",)]


def test_a_study_with_a_learning_rate_axis_is_replayed_per_family(tmp_path, monkeypatch):
    """Each learning rate's scales race among themselves, as a live race runs them: scale 1 is out at the first
    rate, scale 20 at the second, and each family trains 8 of its 9 trials."""
    from benchmarks import race
    from benchmarks.settings import Settings

    name = synthetic_folder(tmp_path, histories=False, rates=(0.001, 0.003))
    monkeypatch.chdir(tmp_path)
    assert race.families(Path(name)) == [(("trial.learning_rate", 0.001),), (("trial.learning_rate", 0.003),)]
    every_order = Settings(**{**QUICK.__dict__, "race_folders": (name,), "race_orders": None})
    rows, results = race.measure_race(every_order, lambda text: None)
    assert [result.family for result in results] == ["trial.learning_rate=0.001", "trial.learning_rate=0.003"]
    assert [result.full_set for result in results] == [frozenset({10.0, 20.0}), frozenset({1.0, 10.0})]
    assert all(run.trials == 8 and run.kept == result.full_set for result in results for run in result.runs)
    assert "(trial.learning_rate=0.003)" in rows[3].measurement and len(rows) == 6
    assert rows[2].note.endswith("within the full grid's set in 6 of 6 orders")


def test_a_study_chosen_by_another_objective_is_raced_on_it_over_the_seeds_alone(tmp_path, monkeypatch):
    """`eval.objective` a retrieval score on which scale 10 is far behind (on STSB scale 1 is): the rounds and the
    full grid's set compare that score, as a live race does, and no race over steps is replayed from the STSB
    validation histories (`study.race.stop_early` refuses such a study); one pass (``trial.max_steps`` null) counts
    the steps of the family's last evaluation in ``spearman_vs_step.csv``."""
    import numpy as np
    import pandas as pd
    import yaml

    from benchmarks import race
    from benchmarks.settings import Settings

    name = synthetic_folder(tmp_path, histories=True)
    folder = tmp_path / name
    trials = pd.read_csv(folder / "trials.csv")
    rng = np.random.default_rng(1)
    seed_luck = 0.01 * trials["trial.seed"]
    trials["retrieval_ndcg"] = np.where(trials["loss.scale"] == 10.0, 0.3, 0.6) + seed_luck + rng.normal(0, 0.002, 9)
    trials.to_csv(folder / "trials.csv", index=False)
    config = yaml.safe_load((folder / "config.yaml").read_text())
    config["trial"]["max_steps"] = None
    config["eval"] = {"objective": "retrieval_ndcg"}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    pd.DataFrame({"scale": [1.0, 1.0], "step": [0, 37], "mean": [0.5, 0.6]}).to_csv(
        folder / "spearman_vs_step.csv", index=False
    )
    monkeypatch.chdir(tmp_path)
    every_order = Settings(**{**QUICK.__dict__, "race_folders": (name,), "race_orders": None})
    rows, results = race.measure_race(every_order, lambda text: None)
    assert len(results) == 1 and not results[0].stop_early, "no race over steps on another objective"
    assert results[0].full_set == frozenset({1.0, 20.0}) and results[0].steps_per_trial == 37
    assert all(run.kept == frozenset({1.0, 20.0}) and run.trials == 8 for run in results[0].runs)


def test_the_fused_static_benchmark_writes_its_table_and_a_readme_made_from_it(tmp_path: Path) -> None:
    from benchmarks import fused_static

    args = ["--members", "2,3", "--vocab", "50", "--dim", "8", "--batch", "4", "--repeats", "1", "--out", str(tmp_path)]
    table = fused_static.main(args)
    written = pd.read_csv(tmp_path / "fused_static.csv")
    assert written.members.tolist() == [2, 3] and (written.drop(columns="members") > 0).all().all()
    ratios = (written.fused_s / written.separate_s).tolist()
    assert written.fused_over_separate.tolist() == pytest.approx(ratios, rel=1e-5)  # 6 significant digits
    readme = (tmp_path / "README.md").read_text()
    assert f"`python -m benchmarks.fused_static {' '.join(args)}`" in readme
    for row in table.itertuples(index=False):
        assert f"| {row.members} | {row.fused_s:.3f} | " in readme and f"| {row.fused_over_separate:.2f} |" in readme
