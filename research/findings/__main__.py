"""``python -m research.findings [--results DIR] [--out PAGE]``: write this repository's findings page from the
results folders' CSVs (default ``research/results/FINDINGS.md``) and print its path."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .page import write_findings_page


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m research.findings", description="This repository's findings page from its results folders."
    )
    parser.add_argument(
        "--results", type=Path, default=Path("research/results"), help="the results directory (research/results)"
    )
    parser.add_argument("--out", type=Path, help="the page (default: RESULTS/FINDINGS.md)")
    args = parser.parse_args(argv)
    print(write_findings_page(args.results, args.out or args.results / "FINDINGS.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
