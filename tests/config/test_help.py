"""`python -m sweep --help` lists, per config group, only the options a user can choose."""

from __future__ import annotations

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
