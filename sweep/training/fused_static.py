"""K static models stacked into one fused model: one table of K x V token embeddings (a single parameter) and one
`embedding_bag` call that embeds a batch for every member at once (issue 50, "fused trial arrays")."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from torch import Tensor, nn


class FusedStaticEmbedding(nn.Module):
    r"""K static embedding models (sentence-transformers' `StaticEmbedding`, mean of token embeddings, then the
    optional `Normalize`) trained as one module whose weights are stacked.

    The K tables of V x D are one parameter of K*V x D rows: member k's token t is row k*V + t. For a batch of B
    texts given as StaticEmbedding gives them (``input_ids`` of all texts end to end, ``offsets`` where each starts),
    each member's ids are shifted by k*V and its offsets by the ids before them, so one ``F.embedding_bag`` (mode
    mean) embeds all K x B bags:

    .. math::
        e_{k,b} = \frac{1}{|b|} \sum_{t \in b} W[kV + t], \qquad
        \hat e_{k,b} = e_{k,b} / \max(\lVert e_{k,b} \rVert_2, \epsilon) \text{ (when normalize)}

    Inputs: ``input_ids`` (N,) and ``offsets`` (B,), shared by the members (they read the same batches), or one
    batch per member (`embed_member_columns`: members of different seeds read different batches of one size).
    ``sparse=True``: the gradient holds only the rows the batch touched (`FusedAdamW` writes them into a dense buffer
    kept zero elsewhere), instead of a dense K*V x D tensor filled at every step.
    Output: K x B x D. The members' parameters are disjoint rows, so the gradient of a sum of per-member losses
    gives each member exactly its own gradient.

    Reference: sentence-transformers `StaticEmbedding` (an `nn.EmbeddingBag`, mode mean) and `Normalize`
    (``F.normalize(p=2, dim=1)``).
    """

    def __init__(self, weights: Tensor, normalize: bool = True, sparse: bool = False) -> None:
        super().__init__()
        if weights.dim() != 3:
            raise ValueError(f"weights must be K x V x D, got shape {tuple(weights.shape)}")
        self.members, self.vocab_size, self.dim = weights.shape
        self.weight = nn.Parameter(weights.detach().clone().reshape(self.members * self.vocab_size, self.dim))
        self.normalize, self.sparse = normalize, sparse

    @classmethod
    def from_static(
        cls, embeddings: Sequence[StaticEmbedding], normalize: bool = True, sparse: bool = False
    ) -> FusedStaticEmbedding:
        """Stack the tables of K StaticEmbedding modules of one shape (copies: the modules are left as they were)."""
        return cls(torch.stack([e.embedding.weight.detach() for e in embeddings]), normalize, sparse)

    def member_weights(self) -> Tensor:
        """The tables as K x V x D (a view of the parameter)."""
        return self.weight.view(self.members, self.vocab_size, self.dim)

    def embed_columns(self, columns: Sequence[dict[str, Tensor]]) -> list[Tensor]:
        """Each column of a batch that every member reads (anchors, positives, ...: StaticEmbedding's features)
        embedded, K x B_c x D: `embed_member_columns` with that batch for every member."""
        return self.embed_member_columns([columns] * self.members)

    def embed_member_columns(self, batches: Sequence[Sequence[dict[str, Tensor]]]) -> list[Tensor]:
        """Each column embedded, K x B_c x D, where member k reads its own batch ``batches[k]`` (members of other
        seeds read other batches of the same sizes), with one ``embedding_bag`` call for every member and column:
        the dense gradient of the K*V x D table is then filled once per step, not once per column (on the CPU that
        fill is most of the backward pass)."""
        if len(batches) != self.members:
            raise ValueError(f"{len(batches)} batches for {self.members} members")
        ids, bags, sizes = [], [], [column["offsets"].numel() for column in batches[0]]
        start = 0
        for k, columns in enumerate(batches):  # member by member, column by column: the rows of the output
            for column in columns:
                ids.append(column["input_ids"] + k * self.vocab_size)
                bags.append(column["offsets"] + start)
                start += column["input_ids"].numel()
        embedded = F.embedding_bag(torch.cat(ids), self.weight, torch.cat(bags), mode="mean", sparse=self.sparse)
        embedded = embedded.view(self.members, sum(sizes), self.dim)
        if self.normalize:
            embedded = F.normalize(embedded, p=2, dim=-1)
        return list(embedded.split(sizes, dim=1))

    def forward(self, input_ids: Tensor, offsets: Tensor) -> Tensor:
        """One batch of B texts, read by every member: K x B x D."""
        return self.embed_member_columns([[{"input_ids": input_ids, "offsets": offsets}]] * self.members)[0]
