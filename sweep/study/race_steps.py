"""Racing over steps as well as seeds (`study.race.stop_early`): the Optuna pruner that stops a trial of a race's
first rounds at a validation once it cannot enter the set for the best.

Each trial reports its STSB validation Spearman to Optuna at every evaluation (`sweep.training.trainer`), so the
study's storage holds every trial's history: `RaceStopper.prune` reads the histories of the trial's family (the same
condition, `Race.family`), its own included, and asks `sweep.stats.early_stop.stop_early` (the rule and its
evidence are that module's). Only trials of the first `study.race.min_seeds` seeds are judged: those rounds train
every point; the points the race keeps after them train in full. The trial then ends PRUNED with the reason as its
attribute ``sweep.race.stopped`` and run tag (`sweep.study.run_loop`); `Race.racing` leaves its point out, so its
other first-round trials are discarded without training and a rerun trains neither again. A stopped trial is never a
score: the round's comparison reads COMPLETE trials only.
"""

from __future__ import annotations

import optuna
import pandas as pd
from optuna.trial import FrozenTrial, TrialState

from sweep.names import ATTR_DISCARDED, PARAM_SEED
from sweep.stats import HISTORY_COLUMNS, stop_early
from sweep.study import grid_queue
from sweep.study.race import Race

LOGGED = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.PRUNED)


class RaceStopper(optuna.pruners.BasePruner):
    """`study.race.stop_early`'s pruner (see the module docstring); ``reasons``: why it stopped each trial (by
    number), for the trial's records."""

    def __init__(self, race: Race) -> None:
        self.race = race
        self.reasons: dict[int, str] = {}

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        point = grid_queue.grid_point(trial)
        step = trial.last_step
        if step is None or PARAM_SEED not in point or not self.race.first_round(point[PARAM_SEED]):
            return False
        key = self.race.key(point)
        history, last_step = self.history(study, self.race.family(key))
        if last_step is None:
            return False
        margin = self.race.settings.margin
        decision = stop_early(history, self.race.label(key), step, last_step, self.race.round_level, margin)
        if decision.stop:
            self.reasons[trial.number] = decision.reason
        return decision.stop

    def history(self, study: optuna.Study, family: str) -> tuple[pd.DataFrame, int | None]:
        """(every logged validation of the family's trials as `HISTORY_COLUMNS`, each point named by its label
        (`Race.label`: unique within a family), the last step of its finished trials (None before one finished))."""
        rows, last = [], None
        for trial in study.get_trials(deepcopy=False, states=LOGGED):
            point = grid_queue.grid_point(trial)
            if trial.user_attrs.get(ATTR_DISCARDED) or PARAM_SEED not in point:
                continue
            key = self.race.key(point)
            if self.race.family(key) != family:
                continue
            seed = point[PARAM_SEED]
            label = self.race.label(key)
            rows += [(label, seed, step, value) for step, value in trial.intermediate_values.items()]
            if trial.state == TrialState.COMPLETE and trial.intermediate_values:
                last = max(last or 0, max(trial.intermediate_values))
        return pd.DataFrame(rows, columns=HISTORY_COLUMNS), last
