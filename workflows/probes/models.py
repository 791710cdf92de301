"""The small real models the probes train and checkpoint, and their deterministic synthetic data.

`TinyTransformer` is a decoder-style language model (token and position embeddings, pre-norm
transformer layers under a causal mask, a linear head) built from stock torch modules. The data is
synthetic but learnable: every sequence follows `next = (3 * token + 7) mod vocab` from a random
start, so the loss falls as the model trains and a run is reproducible from its seed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a TinyTransformer."""

    vocab: int = 256
    width: int = 128
    layers: int = 2
    heads: int = 4
    seq_len: int = 64

    def name(self) -> str:
        return f"tiny-transformer(vocab={self.vocab},width={self.width},layers={self.layers},heads={self.heads},seq={self.seq_len})"

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class TinyTransformer(nn.Module):
    """A small decoder-only transformer language model."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.width % config.heads:
            raise ValueError(f"width {config.width} is not a multiple of heads {config.heads}")
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.width)
        self.position = nn.Parameter(torch.randn(config.seq_len, config.width) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                config.width,
                config.heads,
                dim_feedforward=4 * config.width,
                dropout=0.0,
                batch_first=True,
                norm_first=True,
            )
            for _ in range(config.layers)
        )
        self.norm = nn.LayerNorm(config.width)
        self.head = nn.Linear(config.width, config.vocab)
        self.mask: torch.Tensor
        mask = nn.Transformer.generate_square_subsequent_mask(config.seq_len)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        x = self.embed(tokens) + self.position[:length]
        mask = self.mask[:length, :length]
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        logits: torch.Tensor = self.head(self.norm(x))
        return logits


def synthetic_batches(
    config: ModelConfig, batch_size: int, count: int, seed: int, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`count` (inputs, targets) batches of learnable sequences, made once on `device`."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        start = torch.randint(0, config.vocab, (batch_size, 1), generator=generator)
        steps = [start]
        for _ in range(config.seq_len):
            steps.append((steps[-1] * 3 + 7) % config.vocab)
        tokens = torch.cat(steps, dim=1).to(device)
        batches.append((tokens[:, :-1], tokens[:, 1:]))
    return batches


def parameters_per_layer(width: int) -> int:
    """Parameters of one transformer layer: attention 4w²+4w, MLP 8w²+5w, two norms 4w."""
    return 12 * width * width + 13 * width
