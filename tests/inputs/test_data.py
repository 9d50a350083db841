"""Data location lookup and local CSV loading."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NoReturn

import datasets
import pytest

from sweep.errors import ConfigError
from sweep.inputs import data
from tests.helpers import REPO

SHARED = REPO.parent / "shared" / "data"


def test_local_copy_is_found_without_a_path(compose_cfg, monkeypatch):
    monkeypatch.delenv("SWEEP_DATA_DIR", raising=False)
    cfg = compose_cfg()
    assert data.find_local_dir(None) == SHARED.resolve()
    source = data.resolve_source(cfg.data, "train")
    assert source.local_file == SHARED.resolve() / "nli" / "triplet.csv"


def test_the_local_copy_is_found_from_the_current_folder_or_above_never_from_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv("SWEEP_DATA_DIR", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    nested = tmp_path / "project" / "notebooks"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert data.find_local_dir(None) == (tmp_path / "shared" / "data").resolve()
    (tmp_path / "shared" / "data").rmdir()
    found = data.find_local_dir(None)  # whatever a folder above tmp_path holds (/tmp may), never the checkout's
    assert found is None or any(found == (above / "shared" / "data").resolve() for above in nested.parents)


def test_env_variable_overrides_the_location(compose_cfg, monkeypatch, tmp_path):
    (tmp_path / "stsb").mkdir()
    (tmp_path / "stsb" / "validation.csv").write_text("sentence1,sentence2,score\na b,a c,0.5\nd e,f g,0.1\n")
    monkeypatch.setenv("SWEEP_DATA_DIR", str(tmp_path))
    cfg = compose_cfg()
    assert cfg.data.local_dir == str(tmp_path)
    assert data.resolve_source(cfg.data, "validation").local_file == tmp_path / "stsb" / "validation.csv"
    loaded = data.load_split(cfg.data, "validation")
    assert loaded.column_names == ["sentence1", "sentence2", "score"] and len(loaded) == 2


def test_auto_falls_back_to_the_hub_and_hub_source_uses_hub_names(compose_cfg, tmp_path):
    cfg = compose_cfg(f"data.local_dir={tmp_path}")
    assert data.resolve_source(cfg.data, "train").hub == ("sentence-transformers/all-nli", "triplet", "train")
    cfg = compose_cfg("data.source=hub")
    assert data.resolve_source(cfg.data, "validation").describe() == "hub:sentence-transformers/stsb[validation]"


def test_missing_dir_and_malformed_files_are_named(compose_cfg, tmp_path):
    with pytest.raises(ConfigError, match="data.local_dir"):
        data.resolve_source(compose_cfg(f"data.local_dir={tmp_path / 'nope'}").data, "train")
    bad = tmp_path / "bad.csv"
    bad.write_text("anchor,other\nx,y\n")
    with pytest.raises(ConfigError, match="missing \\['positive', 'negative'\\]"):
        data.load_split(compose_cfg(f"data.train.local_file={bad}").data, "train")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        data.load_split(compose_cfg(f"data.train.local_file={empty}").data, "train")
    holes = tmp_path / "holes.csv"
    holes.write_text("anchor,positive,negative\nx,,z\n")
    with pytest.raises(ConfigError, match="empty values"):
        data.load_split(compose_cfg(f"data.train.local_file={holes}").data, "train")


def test_subset_and_heldout_are_seeded_and_disjoint(compose_cfg):
    cfg = compose_cfg("data.train.max_samples=100")
    first = data.load_all(cfg.data, heldout_pairs=50)
    again = data.load_all(cfg.data, heldout_pairs=50)
    assert len(first["train"]) == 100 and len(first["heldout"]) == 50
    assert first["train"]["anchor"] == again["train"]["anchor"]
    heldout = set(zip(first["heldout"]["anchor"], first["heldout"]["positive"], strict=True))
    assert not heldout & set(zip(first["train"]["anchor"], first["train"]["positive"], strict=True))


def test_unreadable_hub_dataset_fails_before_any_trial(compose_cfg):
    """A hub split that cannot be read (offline, or no such dataset) is a config error naming the split and the
    fix, raised by open_sweep before the study or any MLflow run exists."""
    from sweep.study.lifecycle import open_sweep

    cfg = compose_cfg("data.source=hub", "data.train.hub_name=sweep-tests/no-such-dataset")
    with pytest.raises(ConfigError, match=r"data\.train=.*no-such-dataset.*cannot be read.*SWEEP_DATA_DIR"):
        open_sweep(cfg)
    assert not (Path(cfg.paths.root) / "mlflow.db").exists()


def test_the_training_rows_do_not_depend_on_the_heldout_slice(compose_cfg):
    """Held-out pairs come from the end of one seeded permutation, the training subset from its start: asking for
    held-out pairs (statistics on) must not change which rows a capped training set trains on."""
    cfg = compose_cfg("data.train.max_samples=100")
    without = data.load_all(cfg.data, heldout_pairs=0)
    with_heldout = data.load_all(cfg.data, heldout_pairs=50)
    assert with_heldout["train"]["anchor"] == without["train"]["anchor"]


def write_triplets(path: Path, rows: int) -> Path:
    """A training CSV of `rows` distinct (anchor, positive, negative) rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("anchor,positive,negative\n" + "".join(f"a{i},p{i},n{i}\n" for i in range(rows)))
    return path


@pytest.mark.parametrize("rows", [200, 2000])
def test_a_small_training_file_is_mostly_trained_on_and_the_log_says_so(compose_cfg, tmp_path, caplog, rows):
    """The default 1,024 held-out pairs took half of a 2,000-row file while the log said `train: 2000 rows`:
    at most HELDOUT_SHARE of the file is held out, and the logged train count is the rows trained on."""
    own = write_triplets(tmp_path / "own.csv", rows)
    cfg = compose_cfg(f"data.train.local_file={own}", "data.train.max_samples=null")
    with caplog.at_level(logging.INFO, logger=data.__name__):
        splits = data.load_all(cfg.data, heldout_pairs=1024)
    held = int(rows * data.HELDOUT_SHARE)
    assert len(splits["heldout"]) == held and len(splits["train"]) == rows - held
    assert not set(splits["heldout"]["anchor"]) & set(splits["train"]["anchor"])
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("train:")]
    assert line.startswith(f"train: {rows - held} rows trained on, {held} held out for the statistics")


@pytest.mark.parametrize("preset", ["nli_stsb", "stsb_pairs", "nli_pair_score"])
def test_the_shipped_training_data_keeps_the_default_heldout_pairs(compose_cfg, preset):
    """The cap never binds on the shipped local data at the default stats.heldout_pairs: default runs hold out
    exactly as many pairs as before it."""
    default = compose_cfg(tiny=False).stats.heldout_pairs
    splits = data.load_all(compose_cfg(f"data={preset}").data, heldout_pairs=default)
    assert len(splits["heldout"]) == default


def test_a_relative_file_is_read_from_the_working_directory_first(compose_cfg, monkeypatch, tmp_path):
    """A relative local_file that exists in the current directory is read from there, before the data directory
    (even for a name the data directory also holds)."""
    monkeypatch.chdir(tmp_path)
    write_triplets(tmp_path / "mine.csv", 3)
    cfg = compose_cfg("data.train.local_file=mine.csv")
    assert data.resolve_source(cfg.data, "train").local_file == tmp_path / "mine.csv"
    assert data.load_split(cfg.data, "train")["anchor"] == ["a0", "a1", "a2"]
    (tmp_path / "stsb").mkdir()
    (tmp_path / "stsb" / "validation.csv").write_text("sentence1,sentence2,score\nx y,x z,0.5\n")
    assert data.resolve_source(cfg.data, "validation").local_file == tmp_path / "stsb" / "validation.csv"


def _no_hub(*args: object, **kwargs: object) -> NoReturn:
    pytest.fail(f"the hub was asked for {args}")


@pytest.mark.parametrize("data_dir", ["found", "none"])
@pytest.mark.parametrize("named", ["nope.csv", "/nonexistent/nope.csv"])
def test_a_missing_file_the_user_named_stops_and_never_reads_the_hub(
    compose_cfg, monkeypatch, tmp_path, data_dir, named
):
    """A local_file the user named that exists nowhere is a config error naming the key and the paths tried,
    with or without a local data directory; it never falls back to the hub dataset of the preset."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWEEP_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "load_dataset", _no_hub)
    local_dir = (tmp_path / "shared" / "data").resolve()
    if data_dir == "found":  # a copy found from the current folder, whatever the folders above tmp_path hold
        local_dir.mkdir(parents=True)
    else:
        monkeypatch.setattr(data, "find_local_dir", lambda explicit: None)
    cfg = compose_cfg(f"data.train.local_file={named}")
    with pytest.raises(ConfigError, match="file not found") as error:
        data.load_split(cfg.data, "train")
    assert error.value.key == "data.train.local_file"
    tried = [tmp_path / named] + ([local_dir / named] if data_dir == "found" and named == "nope.csv" else [])
    assert all(str(path) in str(error.value) for path in tried)


def test_without_a_data_directory_the_shipped_files_come_from_the_hub(compose_cfg, monkeypatch, tmp_path):
    """On a machine without the local copy the presets' own file names read their hub datasets (data.source=auto)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(data, "find_local_dir", lambda explicit: None)
    for preset in ("nli_stsb", "stsb_pairs", "nli_pair_score"):
        cfg = compose_cfg(f"data={preset}")
        for split in data.DATA_SPLITS:
            assert data.resolve_source(cfg.data, split).hub == (
                cfg.data[split].hub_name,
                cfg.data[split].hub_subset,
                cfg.data[split].hub_split,
            )
