"""Every figure the docs' Benchmark page quotes is one that `python -m benchmarks` wrote into a report under
benchmarks/results/
(quoted rounded is fine, typed or left over from an older run is not)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.]*\d)")
PAGE = ROOT / "docs" / "benchmark.md"
REPORTS = (
    "benchmarks/results/bench/README.md",
    "benchmarks/results/bench_packing/README.md",
    "benchmarks/results/bench_race/README.md",
    "benchmarks/results/bench_race_steps/README.md",
    "benchmarks/results/bench_between_trials/README.md",
    "benchmarks/results/bench_fused_static/README.md",
)


def measured() -> list[float]:
    return [float(x) for report in REPORTS for x in DECIMAL.findall((ROOT / report).read_text())]


def unmatched(quoted: str, numbers: list[float]) -> list[str]:
    """The decimals of `quoted` that no number of `numbers` rounds to (at the decimals quoted)."""
    missing = []
    for text in DECIMAL.findall(quoted):
        half_unit = 0.5 * 10.0 ** -len(text.split(".")[1]) + 1e-9
        if not any(abs(float(text) - n) <= half_unit for n in numbers):
            missing.append(text)
    return missing


def test_every_benchmark_figure_in_the_docs_is_in_a_generated_report():
    quoted = PAGE.read_text()
    assert len(DECIMAL.findall(quoted)) >= 20, "the Benchmark page quotes the benchmark's table"
    assert not unmatched(quoted, measured())


def test_a_figure_no_report_holds_is_caught():
    assert unmatched("ratio 0.90 and 3.94 s", [0.902, 3.1]) == ["3.94"]
