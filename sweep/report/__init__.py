"""Reporting for scale sweeps: analytic loss-vs-scale curves and study figures from MLflow.

- ``sweep.report.loss_curves``: ``loss_vs_scale``, ``parse_scales``, ``DEFAULT_PROFILES`` (torch).
- ``sweep.report.runs``: ``load_trials``, ``load_metric_history`` (MLflow).
- ``sweep.report.figures``: the figure writers (PNG + SVG + CSV each).
- CLI: ``python -m sweep.report {loss-vs-scale,study} --help``.

Nothing is re-exported here, so that each subcommand imports only what it needs.
"""
