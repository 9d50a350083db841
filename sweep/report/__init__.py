"""Reporting for scale sweeps: analytic loss-vs-scale curves and study figures from MLflow.

- ``sweep.report.loss_curves``: ``loss_vs_scale``, ``parse_scales``, ``DEFAULT_PROFILES`` (torch).
- ``sweep.report.runs``: ``load_trials``, ``load_metric_history`` (MLflow).
- ``sweep.report.summaries``: the tables behind the study figures (pandas/scipy, no matplotlib).
- ``sweep.report.axes``: shared drawing helpers (figure, save, scale/temperature axes, reference lines, panels).
- ``sweep.report.study_context``: library defaults, LR schedule, #candidates, untrained baseline from the params.
- ``sweep.report.scale_figures``: Spearman and concentration vs scale (baseline lines, defaults, n, shading).
- ``sweep.report.history_figures``: training-loss panels and learned-scale trajectories (with the LR schedule).
- ``sweep.report.mechanism_figures``: the sim_* mechanism statistics vs scale, with their untrained values.
- ``sweep.report.convergence_figures``: validation Spearman vs training step, one line per scale.
- ``sweep.report.loss_figures``: the analytic / measured loss vs scale and its gradient.
- ``sweep.report.grid_figures``: heatmaps over two swept values (AnglE weights/scales, layer x dim grid).
- ``sweep.report.study_figures``: ``write_study_figures`` and ``write_trials_table``, all of a study's outputs.
- ``sweep.report.results_folder``: a published ``results/<study>/`` folder read back (``--from-csv``).
- ``sweep.report.pooled``: scale a vs b pooled over the distinct conditions of results folders (``pooled``).
- CLI: ``python -m sweep.report {loss-vs-scale,study,pooled} --help``.

Nothing is re-exported here, so that each subcommand imports only what it needs.
"""
