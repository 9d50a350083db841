"""Re-derive the statistics of every published ``research/results/`` folder from its shipped CSVs and predictions, as
``python -m sweep.report study --from-csv`` does (and ``tuned`` for a folder that ships an own-best table): run after
a change of the verdict method, so that no folder keeps numbers of the old one.

Research code beside the notebooks (it names this repository's folders); it runs the package's public command,
``python -m sweep.report``.
Usage: ``python -m notebooks.rederive [NAME ...]`` (default: every folder with a ``trials.csv``), then
``python -m research.findings`` for the findings page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "research" / "results"


def report(arguments: list[str]) -> int:
    """``python -m sweep.report ARGUMENTS`` from the repository root: the public command, its exit code."""
    return subprocess.run([sys.executable, "-m", "sweep.report", *arguments], cwd=ROOT, check=False).returncode


# the own-best tables: (the folder written, the folders of one set-up, the condition tuned per scale)
TUNED = {
    "mnrl_scale_lr_low": (["mnrl_scale_lr", "mnrl_scale_lr_low"], "trial.learning_rate"),
    "mnrl_scale_lr_tuned": (["mnrl_scale_lr_tuned"], "trial.learning_rate"),
}


def untrained_from(folder: Path) -> list[str]:
    """The ``--untrained-from`` the folder's last report command used (its ``provenance.json``), as arguments."""
    provenance = folder / "provenance.json"
    words = json.loads(provenance.read_text())["command"].split() if provenance.exists() else []
    return ["--untrained-from", words[words.index("--untrained-from") + 1]] if "--untrained-from" in words else []


def rederive(name: str) -> int:
    """Recompute one folder in place; the report command's exit code."""
    folder = RESULTS / name
    relative = str(folder.relative_to(ROOT))
    code = report(["study", "--from-csv", relative, "--out", relative, *untrained_from(folder)])
    if code == 0 and name in TUNED:
        folders, condition = TUNED[name]
        folder_paths = (f"research/results/{f}" for f in folders)
        code = report(["tuned", *folder_paths, "--condition", condition, "--out", relative])
    return code


def main(names: list[str]) -> int:
    chosen = names or sorted(p.parent.name for p in RESULTS.glob("*/trials.csv"))
    failed = [name for name in chosen if rederive(name) != 0]
    print(
        f"re-derived {len(chosen) - len(failed)} of {len(chosen)} folders" + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
