"""Every loss (and wrapper) trains on the tiny BERT through the study machinery; the AnglE composite is the weighted
sum of its three objectives; the learnable scale is trained by the trainer's optimizer; bad configs are refused."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from datasets import Dataset
from mlflow.tracking import MlflowClient
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss, MatryoshkaLoss

from sweep.config.checks import CONFIG_DIR, with_values
from sweep.config.scale_temperature import scale_values
from sweep.errors import ConfigError
from sweep.inputs.model import build_model
from sweep.losses import LOSSES, learning_rate_mapping, loss_values
from sweep.losses.angle_composite import AnglECompositeLoss
from sweep.losses.gist import guide_model
from sweep.losses.learnable_scale import LearnableScaleMultipleNegativesRankingLoss
from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.losses.spec import BaseModel
from sweep.losses.uniformity import UniformityRegularizedMNRL, uniformity
from sweep.names import ROLE_TRIAL, TAG_ROLE
from sweep.study.lifecycle import finish, open_sweep
from sweep.study.validation import check_config
from tests.helpers import build_trial_loss

LOSS_CONFIGS = sorted(p.stem for p in (Path(CONFIG_DIR) / "loss").glob("*.yaml"))
SCORED = ("data=stsb_pairs",)
NEEDS = {  # overrides a loss needs beyond the tiny defaults (model=tiny_bert, NLI triplets)
    "cosent": SCORED,
    "angle": SCORED,
    "angle_composite": SCORED,
    "cached_mnrl": (
        "loss.mini_batch_size=3",
        "loss.scale=0",
    ),  # the zero-gradient control (scale 20 in the wrapper test)
}
TWO_STEPS = ("trial.max_steps=2", "trial.eval_steps=2", "stats.enabled=false", "+study.search_space.trial.seed=[0]")

S1 = [
    "A man is playing a guitar.",
    "A woman is slicing an onion.",
    "Kids play football.",
    "A cat sleeps.",
    "The sky is blue.",
    "A plane lands.",
]
S2 = [
    "Someone plays an instrument.",
    "A person cuts a vegetable.",
    "Children kick a ball.",
    "A dog barks loudly.",
    "Stocks fell today.",
    "An aircraft touches down.",
]
GOLD = [0.9, 0.85, 0.7, 0.2, 0.0, 0.95]


def run_sweep(cfg):
    sweep = open_sweep(cfg)
    sweep.run()
    return finish(sweep)


def metric_history(cfg, key: str) -> list[float]:
    client = MlflowClient(cfg.tracking.uri)
    experiment = client.get_experiment_by_name(cfg.tracking.experiment_name)
    (run,) = [r for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get(TAG_ROLE) == ROLE_TRIAL]
    return [m.value for m in sorted(client.get_metric_history(run.info.run_id, key), key=lambda m: m.step)]


def test_the_registry_has_one_config_per_loss():
    assert set(LOSS_CONFIGS) == set(LOSSES)


@pytest.mark.slow
@pytest.mark.parametrize("loss", LOSS_CONFIGS)
def test_every_loss_trains_two_steps_with_finite_spearman(compose_cfg, shared_root, loss):
    cfg = compose_cfg(f"loss={loss}", *NEEDS.get(loss, ()), *TWO_STEPS, f"name=loss_{loss}", shared_root)
    table = run_sweep(cfg)
    assert table.state.tolist() == ["COMPLETE"]
    assert math.isfinite(table.stsb_val[0]) and math.isfinite(table.stsb_test[0])
    if cfg.loss.get("scale") == 0:
        assert metric_history(cfg, "max_weight_change") == [0.0]


@pytest.mark.parametrize(
    ("loss", "wrapper"),
    [
        ("cosent", ["loss.wrapper.name=matryoshka", "loss.wrapper.dims='32,16,8'", "loss.wrapper.weights=[1,1,0.5]"]),
        ("cached_mnrl", ["loss.wrapper.name=matryoshka", "loss.wrapper.dims=[32,8]", "loss.mini_batch_size=3"]),
        (
            "angle_composite",
            [
                "loss.wrapper.name=adaptive_layer",
                "loss.wrapper.n_layers_per_step=-1",
                "loss.wrapper.layer_weighting=log",
            ],
        ),
        ("mnrl", ["loss.wrapper.name=matryoshka2d", "loss.wrapper.dims='32,16'", "loss.wrapper.kl_temperature=0.5"]),
    ],
)
def test_wrappers_train_two_steps(compose_cfg, shared_root, loss, wrapper):
    table = run_sweep(
        compose_cfg(f"loss={loss}", *NEEDS.get(loss, ()), *wrapper, *TWO_STEPS, f"name=wrap_{loss}", shared_root)
    )
    assert table.state.tolist() == ["COMPLETE"] and math.isfinite(table.stsb_val[0])


@pytest.mark.slow
def test_learnable_scale_is_trained_by_the_trainer_and_logged(compose_cfg):
    cfg = compose_cfg(
        "loss=learnable_scale",
        "loss.scale=10",
        "loss.scale_learning_rate=0.05",  # the scale's own rate: tiny BERT trains at 1e-3 (a transformer's ceiling)
        "trial.max_steps=4",
        *TWO_STEPS[1:],
        "name=learned",
    )
    table = run_sweep(cfg)
    assert table.state.tolist() == ["COMPLETE"]
    scales = metric_history(cfg, "learned_scale")
    assert len(scales) == cfg.trial.max_steps  # logged at every logging step (trial.logging_steps=1)
    assert all(math.isfinite(s) for s in scales) and max(abs(s - 10.0) for s in scales) > 0.01, scales


@pytest.fixture
def tiny(compose_cfg):
    cfg = compose_cfg()
    model = build_model(cfg.model, seed=0)
    model.eval()  # no dropout: the same inputs give the same embeddings in every call
    return cfg, model


def test_angle_composite_equals_the_weighted_sum_of_its_objectives(tiny):
    _, model = tiny
    with torch.no_grad():  # values compared, no gradient: a loss with one would warn on float()
        labels = torch.tensor(GOLD)
        w1, w2, w3, s_cos, s_ibn, s_angle, threshold = 0.3, 0.5, 2.0, 10.0, 15.0, 2.0, 0.8
        composite = AnglECompositeLoss(
            model, w1, w2, w3, cos_scale=s_cos, ibn_scale=s_ibn, angle_scale=s_angle, positive_threshold=threshold
        )
        total = composite([model.preprocess(S1), model.preprocess(S2)], labels)

        cos_term = CoSENTLoss(model, scale=s_cos)([model.preprocess(S1), model.preprocess(S2)], labels)
        angle_term = AnglELoss(model, scale=s_angle)([model.preprocess(S1), model.preprocess(S2)], labels)
        a = F.normalize(model(model.preprocess(S1))["sentence_embedding"], dim=-1)
        b = F.normalize(model(model.preprocess(S2))["sentence_embedding"], dim=-1)
        logits = s_ibn * a @ b.T  # every second text of the batch is a candidate
        positive = labels >= threshold
        ibn_term = (torch.logsumexp(logits, dim=1) - logits.diagonal())[positive].mean()

        expected = w1 * cos_term + w2 * ibn_term + w3 * angle_term
        assert float(total) == pytest.approx(float(expected), rel=1e-5)
        terms = composite.logged_metrics()
        assert terms["loss_cos"] == pytest.approx(float(cos_term), rel=1e-5)
        assert terms["loss_ibn"] == pytest.approx(float(ibn_term), rel=1e-5)
        assert terms["loss_angle"] == pytest.approx(float(angle_term), rel=1e-5)
        only_cos = AnglECompositeLoss(model, 1.0, 0.0, 0.0, cos_scale=s_cos)(
            [model.preprocess(S1), model.preprocess(S2)], labels
        )
        assert float(only_cos) == pytest.approx(float(cos_term), rel=1e-5)


def test_uniformity_of_known_point_sets():
    """Wang & Isola's uniformity, log mean exp(-t |u_i - u_j|^2) over pairs: orthogonal unit vectors are 2 apart
    squared (log e^{-2t} = -2t), identical ones 0 apart (log 1 = 0, the least uniform), and scale does not matter."""
    assert float(uniformity(torch.eye(4), t=2.0)) == pytest.approx(-4.0)
    assert float(uniformity(torch.eye(3) * 7.0, t=0.5)) == pytest.approx(-1.0)
    assert float(uniformity(torch.ones(5, 3))) == pytest.approx(0.0, abs=1e-6)
    antipodal = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])  # one pair, 4 apart squared
    assert float(uniformity(antipodal, t=2.0)) == pytest.approx(-8.0)


def test_uniformity_term_adds_its_weighted_value_to_mnrl_and_pushes_pairs_apart(tiny):
    _, model = tiny
    features = [model.preprocess(S1), model.preprocess(S2)]
    with torch.no_grad():  # values compared, no gradient
        plain = ScaledMultipleNegativesRankingLoss(model, scale=20.0)(features, torch.tensor([]))
        off = UniformityRegularizedMNRL(model, scale=20.0, uniformity_weight=0.0)(features, torch.tensor([]))
        assert float(off) == float(plain)  # weight 0 is plain MNRL, bit for bit
        embeddings = torch.cat([model(f)["sentence_embedding"] for f in features])
        weighted = UniformityRegularizedMNRL(model, scale=20.0, uniformity_weight=0.5)(features, torch.tensor([]))
        assert float(weighted) == pytest.approx(float(plain) + 0.5 * float(uniformity(embeddings)), rel=1e-5)

    points = torch.randn(12, 8) + 3.0  # clustered: cosines near 1
    points.requires_grad_(True)
    before = uniformity(points.detach())
    uniformity(points).backward()
    torch.optim.SGD([points], lr=0.5).step()
    cosines = F.normalize(points.detach(), dim=-1) @ F.normalize(points.detach(), dim=-1).T
    assert float(uniformity(points.detach())) < float(before)  # one step spreads them
    assert float(cosines[~torch.eye(12, dtype=torch.bool)].mean()) < 0.99


def test_in_batch_negatives_term_is_zero_without_positive_pairs(tiny):
    _, model = tiny
    composite = AnglECompositeLoss(model, 0.0, 1.0, 0.0, positive_threshold=2.0)
    loss = composite([model.preprocess(S1), model.preprocess(S2)], torch.tensor(GOLD))
    assert float(loss.detach()) == 0.0
    loss.backward()  # still part of the graph


def test_learnable_scale_moves_after_optimizer_steps_and_is_reported(tiny):
    _, model = tiny
    loss = LearnableScaleMultipleNegativesRankingLoss(model, scale=20.0)
    assert loss.logged_metrics()["learned_scale"] == pytest.approx(20.0)
    assert "logit_scale" in dict(loss.named_parameters())
    optimizer = torch.optim.AdamW(loss.parameters(), lr=0.05, weight_decay=0.0)
    for _ in range(3):
        optimizer.zero_grad()
        loss([model.preprocess(S1), model.preprocess(S2)], None).backward()
        optimizer.step()
    metrics = loss.logged_metrics()
    assert abs(metrics["learned_scale"] - 20.0) > 0.5
    assert metrics["learned_temperature"] == pytest.approx(1.0 / metrics["learned_scale"])


def test_learnable_scale_is_clamped_at_max_scale(tiny):
    _, model = tiny
    loss = LearnableScaleMultipleNegativesRankingLoss(model, scale=50.0, max_scale=50.0)
    with torch.no_grad():
        loss.logit_scale.fill_(math.log(500.0))
    assert loss.clamp_()  # after an optimizer step (ScaleClampCallback), not in the forward pass
    assert loss.logged_metrics()["learned_scale"] == pytest.approx(50.0)


def test_trainer_optimizer_holds_logit_scale_with_its_own_learning_rate(compose_cfg, tmp_path):
    cfg = compose_cfg("loss=learnable_scale", "loss.scale=20", "loss.scale_learning_rate=0.5")
    model = build_model(cfg.model, seed=0)
    loss = build_trial_loss(model, cfg)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        report_to="none",
        use_cpu=True,
        learning_rate=1e-3,
        learning_rate_mapping=learning_rate_mapping(cfg.loss),
    )
    train = Dataset.from_dict({"anchor": S1, "positive": S2})
    optimizer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train, loss=loss).create_optimizer()
    (group,) = [g for g in optimizer.param_groups if any(p is loss.logit_scale for p in g["params"])]
    assert group["lr"] == 0.5 and len(group["params"]) == 1


def test_a_wrapped_loss_keeps_its_logged_metrics(compose_cfg):
    cfg = compose_cfg("loss=learnable_scale", "loss.wrapper.name=matryoshka", "loss.wrapper.dims='32,16'")
    loss = build_trial_loss(build_model(cfg.model, seed=0), cfg)
    assert isinstance(loss, MatryoshkaLoss) and loss.matryoshka_dims == (32, 16)
    assert loss.logged_metrics()["learned_scale"] == pytest.approx(20.0)


def test_gist_guide_base_is_a_frozen_copy_of_the_untrained_base_model(compose_cfg):
    cfg = compose_cfg("loss=gist", "loss.guide=base")
    base = BaseModel(cfg.model, cfg.trial.seed)
    guide, model = guide_model(cfg.loss.guide, base, "cpu"), build_model(cfg.model, seed=cfg.trial.seed)
    assert not any(p.requires_grad for p in guide.parameters())
    assert all(torch.equal(a, b) for a, b in zip(guide.state_dict().values(), model.state_dict().values(), strict=True))


def test_resolve_loss_expands_the_weights_string(compose_cfg):
    cfg = compose_cfg("loss=angle_composite", "data=stsb_pairs", "loss.weights='0.5,1,0'")
    cfg = with_values(cfg, loss_values(cfg.loss))
    assert (cfg.loss.w1, cfg.loss.w2, cfg.loss.w3) == (0.5, 1.0, 0.0)


def refused(cfg) -> ConfigError:
    with pytest.raises(ConfigError) as error:
        check_config(cfg, load=False)
    return error.value


@pytest.mark.parametrize(
    ("overrides", "key", "named"),
    [
        (["loss=cosent"], "data.train.columns", ["cosent", "anchor", "negative"]),
        (["loss=angle_composite"], "data.train.columns", ["angle_composite", "anchor"]),
        (["data=stsb_pairs"], "data.train.columns", ["mnrl", "score"]),
        (["loss=gist", "data=stsb_pairs"], "data.train.columns", ["gist", "score"]),
        (["loss=angle_composite", "data=stsb_pairs", "loss.w1=-1"], "loss.w1", ["-1"]),
        (
            ["loss=angle_composite", "data=stsb_pairs", "loss.w1=0", "loss.w2=0", "loss.w3=0"],
            "loss.w1/w2/w3",
            ["not all zero"],
        ),
        (
            ["loss=angle_composite", "data=stsb_pairs", "+study.search_space.loss.weights=['1,0,0','0,0,0']"],
            "loss.weights",
            ["not all zero", "0,0,0"],
        ),
        (["loss=angle_composite", "data=stsb_pairs", "loss.weights='1,1'"], "loss.weights", ["three numbers"]),
        (
            ["loss.wrapper.name=matryoshka", "loss.wrapper.dims='64,32'"],
            "loss.wrapper.dims",
            ["64,32", "model dimension 32"],
        ),
        (["loss.wrapper.name=matryoshka", "loss.wrapper.dims='32,16,16'"], "loss.wrapper.dims", ["distinct"]),
        (["loss.wrapper.name=matryoshka2d", "loss.wrapper.dims='16,32'"], "loss.wrapper.dims", ["decreasing"]),
        (["loss.wrapper.name=matryoshka", "loss.wrapper.dims='32,x'"], "loss.wrapper.dims", ["int"]),
        (
            ["loss.wrapper.name=matryoshka", "loss.wrapper.dims='32,16'", "loss.wrapper.weights=[1]"],
            "loss.wrapper.weights",
            ["2 numbers"],
        ),
        (
            ["loss.wrapper.name=adaptive_layer", "loss.wrapper.n_layers_per_step=3"],
            "loss.wrapper.n_layers_per_step",
            ["3", "2 layers"],
        ),
        (
            ["loss.wrapper.name=matryoshka2d", "loss.wrapper.dims='32'", "loss.wrapper.n_layers_per_step=0"],
            "loss.wrapper.n_layers_per_step",
            ["-1"],
        ),
        (
            ["loss.wrapper.name=adaptive_layer", "loss.wrapper.kl_temperature=-1"],
            "loss.wrapper.kl_temperature",
            [">= 0"],
        ),
        (
            ["loss.wrapper.name=adaptive_layer", "model=static_minilm"],
            "loss.wrapper.name",
            ["adaptive_layer", "transformer"],
        ),
        (["loss=cached_mnrl", "loss.wrapper.name=adaptive_layer"], "loss.wrapper.name", ["cached_mnrl"]),
        (["loss.wrapper.name=nope"], "loss.wrapper.name", ["matryoshka2d"]),
        (["loss=gist", "model=static_minilm"], "model.kind", ["gist"]),
        (["loss=cached_mnrl", "model=static_minilm"], "model.kind", ["cached_mnrl"]),
        (["loss=gist", "+study.search_space.loss.scale=[0,20]"], "loss.scale", ["> 0"]),
        (["loss=gist", "loss.margin_strategy=nope"], "loss.margin_strategy", ["relative"]),
        (["loss=learnable_scale", "loss.scale=0"], "loss.scale", ["> 0"]),
        (["loss=learnable_scale", "trial.weight_decay=0.01"], "trial.weight_decay", ["logit_scale"]),
        (["loss=learnable_scale", "loss.max_scale=5"], "loss.max_scale", [">= 20"]),
        (["loss=cosent", "data=stsb_pairs", "loss.similarity=euclid"], "loss.similarity", ["cosine, dot"]),
        (["loss=cached_mnrl", "loss.mini_batch_size=0"], "loss.mini_batch_size", [">= 1"]),
        (["loss=mnrl_uniformity", "loss.uniformity_weight=-0.1"], "loss.uniformity_weight", ["-0.1", ">= 0"]),
        (["loss=mnrl_uniformity", "loss.uniformity_t=0"], "loss.uniformity_t", ["> 0"]),
    ],
)
def test_bad_loss_configs_are_refused_naming_the_key_and_value(compose_cfg, overrides, key, named):
    error = refused(compose_cfg(*overrides))
    assert error.key == key, str(error)
    for text in named:
        assert text in str(error), (text, str(error))


def test_scale_and_temperature_of_gist_are_consistent(compose_cfg):
    cfg = compose_cfg("loss=gist")
    cfg = with_values(cfg, scale_values(cfg.loss))
    assert cfg.loss.scale == pytest.approx(100.0) and cfg.loss.temperature == pytest.approx(0.01)
