"""Similarity concentration of sentence embeddings: cosine distributions, alignment, uniformity.

Every statistic is computed on L2-normalized embeddings (the functions normalize their inputs, given
as torch tensors or numpy arrays of shape (n, d)), in float64.

Metrics returned by :func:`concentration_statistics` (stable names, logged to MLflow):

=================================  ==============================================================
name                               meaning
=================================  ==============================================================
``sim_{D}_{stat}``                 statistic ``stat`` of cosine distribution ``D`` (below);
                                   ``stat`` in ``mean, std, q05, q25, q50, q75, q95, iqr, min,
                                   max`` (std with ddof=0, quantiles linear, iqr = q75 - q25)
``D = high``                       STSB validation pairs with gold score >= ``high_threshold``
``D = low``                        STSB validation pairs with gold score <= ``low_threshold``
``D = rand``                       ``n_random_pairs`` seeded random pairs (i != j) of the distinct
                                   eval sentence embeddings (both sides, exact duplicate rows
                                   removed)
``D = pos``                        positive pairs of the held-out training slice (train pairs only)
``D = neg``                        in-batch negatives of that slice at ``batch_size`` (train only)
``sim_gap``                        mean of the positive distribution (``pos``, else ``high``) minus
                                   ``sim_rand_mean``
``sim_p_rand_above_pos``           P(random-pair cosine > positive-pair cosine), ties half
                                   (= 1 - AUC); positive distribution as for ``sim_gap``
``sim_anisotropy``                 mean random-pair cosine (= ``sim_rand_mean``; 0 is isotropic)
``sim_alignment``                  Wang & Isola 2020 alignment, mean ||f(x) - f(x+)||^2 over the
                                   positive pairs (``pos``, else ``high``); 0 is perfect, max 4
``sim_uniformity``                 Wang & Isola 2020 uniformity, log mean exp(-2 ||f(x) - f(y)||^2)
                                   over pairs of the distinct eval sentences (at most 2048, seeded);
                                   lower is more uniform, -4 for orthonormal vectors
``sim_effective_rank``             Roy & Vetterli 2007 effective rank of the distinct eval
                                   sentence embeddings, in [1, min(n, d)]
``sim_softmax_pos_prob``           mean softmax probability of the positive over the loss's
                                   candidates (the batch's positives and hard negatives) with its
                                   similarity and current scale ``sim_softmax_scale`` (1/C at scale 0)
``sim_softmax_entropy``            mean entropy (nats) of that softmax (ln C at scale 0)
``sim_effective_negatives``        Wang & Liu 2021: mean exp(entropy) of the softmax over the
                                   negatives alone (C - 1 at scale 0, 1 when one negative dominates)
``sim_hardest_negative_weight``    mean largest weight among those negatives (1/(C - 1) at scale 0)
``sim_loss_at_scale_{s}``          mean MNRL loss of the held-out batches at scale s, for every s of
                                   ``loss_scales``, from the same similarities (ln C at scale 0)
``sim_tolerance``                  Wang & Liu 2021 tolerance: mean cosine of the ``high`` pairs
=================================  ==============================================================

A distribution that is empty (e.g. no gold score above the threshold) is skipped with all its
metrics, and so are the metrics that need it; ``pos``, ``neg`` and the ``sim_softmax_*`` metrics
exist only when training pairs are given. Non-finite embeddings raise ``ValueError`` instead of
yielding NaN metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from scipy.stats import rankdata

Embeddings = torch.Tensor | np.ndarray

SUMMARY_KEYS = ("mean", "std", "q05", "q25", "q50", "q75", "q95", "iqr", "min", "max")
_QUANTILES = {"q05": 0.05, "q25": 0.25, "q50": 0.50, "q75": 0.75, "q95": 0.95}


def _raw(x: Embeddings) -> torch.Tensor:
    """``x`` as a float64 CPU tensor of shape (n, d), checked finite."""
    t = x.detach().cpu() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    t = t.to(torch.float64)
    if t.ndim != 2:
        raise ValueError(f"embeddings must have shape (n, d), got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError("embeddings contain NaN or infinite values")
    return t


def _unit(x: Embeddings) -> torch.Tensor:
    """Rows of ``x`` as a float64 CPU tensor scaled to unit L2 norm (zero rows stay zero)."""
    return torch.nn.functional.normalize(_raw(x), dim=1)


def summarize(values: np.ndarray) -> dict[str, float]:
    """Mean, std (ddof=0), quantiles 5/25/50/75/95 (linear), iqr = q75 - q25, min and max."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("cannot summarize an empty array")
    q = dict(zip(_QUANTILES, np.quantile(v, list(_QUANTILES.values())), strict=True))
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        **{k: float(val) for k, val in q.items()},
        "iqr": float(q["q75"] - q["q25"]),
        "min": float(v.min()),
        "max": float(v.max()),
    }


def pair_cosines(a: Embeddings, b: Embeddings) -> np.ndarray:
    """Row-wise cosine similarity cos(a[i], b[i])."""
    ua, ub = _unit(a), _unit(b)
    if ua.shape != ub.shape:
        raise ValueError(f"shape mismatch: {tuple(ua.shape)} vs {tuple(ub.shape)}")
    return (ua * ub).sum(dim=1).numpy()


def random_pair_indices(n: int, n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` ordered pairs (i, j), i != j, drawn uniformly with replacement from ``range(n)``."""
    if n < 2:
        raise ValueError(f"need at least 2 points for pairs, got {n}")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    j = rng.integers(0, n - 1, size=n_pairs)
    return i, j + (j >= i)  # skip i: j is uniform over the other n - 1 indices


def alignment(a: Embeddings, b: Embeddings, alpha: float = 2.0) -> float:
    """Wang & Isola 2020: mean ||f(x) - f(x+)||^alpha over positive pairs (a[i], b[i])."""
    ua, ub = _unit(a), _unit(b)
    return float((ua - ub).norm(dim=1).pow(alpha).mean())


def uniformity(x: Embeddings, t: float = 2.0, max_points: int | None = 2048, seed: int = 0) -> float:
    """Wang & Isola 2020: log mean_{i<j} exp(-t ||f(x_i) - f(x_j)||^2), on at most ``max_points`` rows.

    Rows beyond ``max_points`` are subsampled without replacement with ``seed``.
    """
    u = _unit(x)
    if max_points is not None and len(u) > max_points:
        u = u[np.random.default_rng(seed).choice(len(u), size=max_points, replace=False)]
    if len(u) < 2:
        raise ValueError(f"uniformity needs at least 2 points, got {len(u)}")
    sq = torch.pdist(u).pow(2)
    return float(torch.logsumexp(-t * sq, dim=0) - np.log(sq.numel()))


def effective_rank(x: Embeddings) -> float:
    """Roy & Vetterli 2007: exp(H(p)), p = singular values of the row-normalized matrix / their sum.

    The singular values are the square roots of the eigenvalues of the d x d Gram matrix U^T U, which is far
    cheaper than an SVD of the n x d matrix (n >> d here).
    """
    u = _unit(x)
    s = torch.linalg.eigvalsh(u.T @ u).clamp_min(0).sqrt()
    p = s / s.sum()
    return float(torch.exp(torch.special.entr(p).sum()))


def _similarities(anchors: torch.Tensor, candidates: torch.Tensor, similarity: str) -> torch.Tensor:
    """Batched anchor-candidate similarities as the loss computes them: cosine, or the dot product of the raw
    embeddings (``similarity="dot"``; equal to cosine only when the model normalizes)."""
    if similarity == "dot":
        return anchors @ candidates.transpose(1, 2)
    unit = torch.nn.functional.normalize
    return unit(anchors, dim=-1) @ unit(candidates, dim=-1).transpose(1, 2)


def in_batch_statistics(
    anchors: Embeddings,
    positives: Embeddings,
    batch_size: int,
    scale: float,
    seed: int = 0,
    *,
    negatives: Sequence[Embeddings] = (),
    similarity: str = "cosine",
    loss_scales: Sequence[float] = (),
) -> dict[str, Any]:
    """In-batch cosines and the MultipleNegativesRankingLoss softmax as the loss sees it.

    The pairs are shuffled with ``seed`` (as the training sampler does), then split into consecutive batches of
    ``batch_size``; a last incomplete batch is dropped unless it is the only one. Each anchor's candidates are the
    batch's positives followed by its hard negatives (one block per column of ``negatives``), as in the loss;
    logits are ``scale * sim`` with the loss's ``similarity`` (cosine, or dot of the raw embeddings). Returns
    ``positive`` (anchor-positive cosines), ``negative`` (cosines of every other candidate),
    ``softmax_positive_prob`` (mean softmax probability of the positive), ``softmax_entropy`` (mean entropy,
    nats), the Wang & Liu 2021 statistics over the negatives alone, r_j = exp(s sim_j) / sum_k exp(s sim_k):
    ``effective_negatives`` (mean exp(entropy of r), the number of negatives at scale 0) and
    ``hardest_negative_weight`` (mean max_j r_j), and ``loss_at_scale``: {s: mean MNRL loss at scale s} for every
    ``loss_scales`` value, from the same similarities (ln(#candidates) at scale 0).
    """
    raw = [_raw(x) for x in (anchors, positives, *negatives)]
    if any(x.shape != raw[0].shape for x in raw):
        raise ValueError(f"shape mismatch: {[tuple(x.shape) for x in raw]}")
    n, d = raw[0].shape
    if n == 0 or batch_size < 1:
        raise ValueError(f"need at least one pair and batch_size >= 1, got n={n}, batch_size={batch_size}")
    b = min(batch_size, n)
    keep = torch.as_tensor(np.random.default_rng(seed).permutation(n)[: (n // b) * b])
    batches = [x[keep].view(-1, b, d) for x in raw]  # (batches, b, d) per column
    candidates = torch.cat(batches[1:], dim=1)  # (batches, b * (1 + k), d): positives, then each negative column
    cos = _similarities(batches[0], candidates, "cosine")
    sim = cos if similarity == "cosine" else _similarities(batches[0], candidates, similarity)
    is_positive = torch.zeros(cos.shape[1:], dtype=torch.bool)
    is_positive[:, :b] = torch.eye(b, dtype=torch.bool)
    is_positive = is_positive.expand_as(cos)
    log_p = torch.log_softmax(scale * sim, dim=-1)
    negative_logits = (scale * sim).masked_fill(is_positive, -torch.inf)
    log_r = torch.log_softmax(negative_logits, dim=-1)
    r = log_r.exp()
    negative_entropy = -(r * log_r.masked_fill(is_positive, 0.0)).sum(dim=-1)
    positive_sim = sim[is_positive].view(sim.shape[:-1])
    return {
        "positive": cos[is_positive].numpy(),
        "negative": cos[~is_positive].numpy(),
        "softmax_positive_prob": float(log_p[is_positive].exp().mean()),
        "softmax_entropy": float(-(log_p.exp() * log_p).sum(dim=-1).mean()),
        "effective_negatives": float(negative_entropy.exp().mean()),
        "hardest_negative_weight": float(r.amax(dim=-1).mean()),
        "loss_at_scale": {
            float(s): float((torch.logsumexp(s * sim, dim=-1) - s * positive_sim).mean()) for s in loss_scales
        },
    }


def _softmax_metrics(in_batch: dict[str, Any], scale: float) -> dict[str, float]:
    """The ``sim_softmax_*`` metrics and Wang & Liu's two, from `in_batch_statistics` at `scale`."""
    return {
        "sim_softmax_scale": float(scale),
        "sim_softmax_pos_prob": in_batch["softmax_positive_prob"],
        "sim_softmax_entropy": in_batch["softmax_entropy"],
        "sim_effective_negatives": in_batch["effective_negatives"],
        "sim_hardest_negative_weight": in_batch["hardest_negative_weight"],
    }


def at_scale(
    metrics: dict[str, float],
    train_anchors: Embeddings,
    train_positives: Embeddings,
    *,
    train_negatives: Sequence[Embeddings] = (),
    batch_size: int = 64,
    scale: float = 20.0,
    similarity: str = "cosine",
    seed: int = 0,
) -> dict[str, float]:
    """`metrics` of `concentration_statistics` on the same embeddings and settings, moved to `scale`: only the
    softmax metrics depend on the scale, so only they are computed again (the distributions, alignment,
    uniformity and rank are the embeddings' own). A study reuses its untrained model's statistics this way for
    every trial's scale."""
    in_batch = in_batch_statistics(
        train_anchors, train_positives, batch_size, scale, seed, negatives=train_negatives, similarity=similarity
    )
    return {**metrics, **_softmax_metrics(in_batch, scale)}


def loss_metric(scale: float) -> str:
    """The metric name of the MNRL loss at ``scale``: ``sim_loss_at_scale_20``, ``sim_loss_at_scale_0.5``,
    ``sim_loss_at_scale_1e09`` (MLflow refuses the ``+`` of ``1e+09``; the name still reads back as a number)."""
    return f"sim_loss_at_scale_{scale:g}".replace("e+", "e")


def prob_random_above_positive(positive: np.ndarray, random: np.ndarray) -> float:
    """P(random > positive) with ties counted half, i.e. 1 - AUC = U_random / (n_random * n_positive).

    The Mann-Whitney U statistic of ``random`` comes from average ranks (O(n log n)).
    """
    pos = np.asarray(positive, dtype=np.float64).ravel()
    rnd = np.asarray(random, dtype=np.float64).ravel()
    if pos.size == 0 or rnd.size == 0:
        raise ValueError("both distributions must be non-empty")
    ranks = rankdata(np.concatenate([rnd, pos]))
    u_random = ranks[: rnd.size].sum() - rnd.size * (rnd.size + 1) / 2
    return float(u_random / (rnd.size * pos.size))


def concentration_statistics(
    eval_embeddings1: Embeddings,
    eval_embeddings2: Embeddings,
    gold_scores: np.ndarray,
    *,
    train_anchors: Embeddings | None = None,
    train_positives: Embeddings | None = None,
    train_negatives: Sequence[Embeddings] = (),
    batch_size: int = 64,
    scale: float = 20.0,
    similarity: str = "cosine",
    loss_scales: Sequence[float] = (),
    high_threshold: float = 0.8,
    low_threshold: float = 0.2,
    n_random_pairs: int = 10000,
    seed: int = 0,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Flat ``sim_*`` metrics (see the module docstring) and the cosine distributions they summarize.

    ``eval_embeddings1[i]``, ``eval_embeddings2[i]`` embed STSB pair i with gold score
    ``gold_scores[i]`` in [0, 1]. Training pairs (and their hard negatives), when given, add ``pos``, ``neg``,
    the softmax metrics at ``batch_size``, ``scale`` and ``similarity`` and the loss at each of ``loss_scales``.
    """
    e1, e2 = _unit(eval_embeddings1), _unit(eval_embeddings2)
    gold = np.asarray(gold_scores, dtype=np.float64).ravel()
    if not len(e1) == len(e2) == len(gold):
        raise ValueError(f"length mismatch: {len(e1)}, {len(e2)} embeddings, {len(gold)} gold scores")
    if n_random_pairs < 1:
        raise ValueError(f"n_random_pairs must be >= 1, got {n_random_pairs}")
    high, low = gold >= high_threshold, gold <= low_threshold
    cos_eval = pair_cosines(e1, e2)
    sentences = torch.unique(torch.cat([e1, e2]), dim=0)
    i, j = random_pair_indices(len(sentences), n_random_pairs, seed)
    distributions = {
        "high": cos_eval[high],
        "low": cos_eval[low],
        "rand": pair_cosines(sentences[i], sentences[j]),
    }
    metrics: dict[str, float] = {}
    if train_anchors is not None and train_positives is not None:
        in_batch = in_batch_statistics(
            train_anchors,
            train_positives,
            batch_size,
            scale,
            seed,
            negatives=train_negatives,
            similarity=similarity,
            loss_scales=loss_scales,
        )
        distributions["pos"] = pair_cosines(train_anchors, train_positives)
        distributions["neg"] = in_batch["negative"]
        metrics.update(_softmax_metrics(in_batch, scale))
        metrics.update({loss_metric(s): value for s, value in in_batch["loss_at_scale"].items()})
        positive_pairs = (train_anchors, train_positives)
    else:
        positive_pairs = (e1[torch.as_tensor(high)], e2[torch.as_tensor(high)])
    distributions = {name: v for name, v in distributions.items() if v.size > 0}
    for name, values in distributions.items():
        metrics.update({f"sim_{name}_{k}": v for k, v in summarize(values).items()})

    positive = distributions.get("pos", distributions.get("high"))
    if positive is not None:
        metrics["sim_gap"] = float(positive.mean() - distributions["rand"].mean())
        metrics["sim_p_rand_above_pos"] = prob_random_above_positive(positive, distributions["rand"])
        metrics["sim_alignment"] = alignment(*positive_pairs)
    if "high" in distributions:
        metrics["sim_tolerance"] = float(distributions["high"].mean())  # Wang & Liu 2021
    metrics["sim_anisotropy"] = metrics["sim_rand_mean"]
    metrics["sim_uniformity"] = uniformity(sentences, seed=seed)
    metrics["sim_effective_rank"] = effective_rank(sentences)
    return metrics, distributions
