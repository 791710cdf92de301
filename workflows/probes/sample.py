"""`python -m workflows.probes sample --dest DIR`: the dataset sample the suite image carries.

Why it exists: a cluster without an object store stages step 2 from `DATASET_FALLBACK`
(`file:///opt/gpuplane-acceptance`, workflows/suites/settings.py), a folder inside the suite image.
The image build runs this generator instead of downloading anything, so the build fetches no data
set or weights, and the same bytes come out on a laptop, in the tests and in the image: every byte
is a function of the seed and the sizes (SHAKE-256, not `random`, so no Python version or platform
changes them). It writes, as step 2 copies it (`data/` and `model/`):

- `data/`: token shards (`train-NNNNN-of-NNNNN.bin`, little-endian uint16) of sequences that
  follow the rule the training probe's synthetic data follows (`next = (3 * token + 7) mod 256`,
  workflows/probes/models.py), and `meta.json` describing them with a SHA-256 per shard. The
  training probe generates its batches in memory and reads none of this: the shards exist so
  that staging moves a realistic set of files, and so a job that wants to train on the staged
  copy can.
- `model/`: a tiny Llama-architecture causal language model in Hugging Face layout
  (`config.json`, `generation_config.json`, `model.safetensors` in float16, a byte-level BPE
  `tokenizer.json` with `tokenizer_config.json`): the files an OpenAI-compatible server such as
  vLLM loads for `--model DIR`. Its weights are pseudo-random: it has learned nothing, what it
  generates is noise, and only the latency of a request means anything. It is about 3 MB, far
  from the size of real base weights, so staging it says little about a pool's storage.

Exit status: 0 written; 2 usage error (a destination that is not empty, bad sizes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .cli import byte_size

DATA_DIR = "data"
MODEL_DIR = "model"
SEED = 0

# the training probe's data (workflows/probes/models.py: ModelConfig's defaults, synthetic_batches)
VOCAB = 256
SEQ_LEN = 64
MULTIPLIER, INCREMENT = 3, 7
SHARD_SEQUENCES = 65_536
"""At most this many sequences per shard file (65 tokens of 2 bytes each: about 8 MiB)."""
DATA_BYTES = 32 * 1024 * 1024

BOS, EOS = "<s>", "</s>"
INIT_RANGE = 0.02
"""The standard deviation of the weights (Llama's `initializer_range`), drawn uniformly."""


@dataclass(frozen=True)
class LlamaShape:
    """The sample model's shape. head_dim 64 is one every vLLM attention backend supports."""

    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    head_dim: int = 64
    max_position_embeddings: int = 2048

    @property
    def vocab_size(self) -> int:
        """256 byte tokens (id = the byte's value), then BOS and EOS."""
        return VOCAB + 2


MODEL = LlamaShape()


def next_token(token: int) -> int:
    """The rule every sequence of the data follows, as models.synthetic_batches makes them."""
    return (token * MULTIPLIER + INCREMENT) % VOCAB


def _stream(seed: int, name: str, size: int) -> bytes:
    """`size` deterministic bytes for one named purpose."""
    return hashlib.shake_256(f"gpuplane-sample/{seed}/{name}".encode()).digest(size)


def _write(path: Path, content: bytes) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    path.write_bytes(content)
    path.chmod(0o644)  # every uid reads it: the Jobs run as 1000, the Workflow's pods as 65532
    return len(content)


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()


# --- data ---------------------------------------------------------------------------------------


def data_files(data_bytes: int, seed: int = SEED) -> Iterator[tuple[str, bytes]]:
    """The shards and meta.json of about `data_bytes` of sequences (at least one sequence)."""
    record = 2 * (SEQ_LEN + 1)
    sequences = max(1, data_bytes // record)
    count = -(-sequences // SHARD_SEQUENCES)
    # each start's whole sequence (SEQ_LEN inputs and the next token), encoded once
    encoded = []
    for start in range(VOCAB):
        tokens = [start]
        for _ in range(SEQ_LEN):
            tokens.append(next_token(tokens[-1]))
        encoded.append(struct.pack(f"<{len(tokens)}H", *tokens))
    shards = []
    for index in range(count):
        size = min(SHARD_SEQUENCES, sequences - index * SHARD_SEQUENCES)
        starts = _stream(seed, f"data/{index}", size)
        name = f"train-{index:05d}-of-{count:05d}.bin"
        content = b"".join(encoded[s] for s in starts)
        shards.append(
            {"file": name, "sequences": size, "sha256": hashlib.sha256(content).hexdigest()}
        )
        yield name, content
    meta = {
        "description": "synthetic token sequences from the acceptance suite's sample generator",
        "generator": "python -m workflows.probes sample",
        "seed": seed,
        "dtype": "uint16-le",
        "vocab": VOCAB,
        "tokensPerSequence": SEQ_LEN + 1,
        "rule": f"next = ({MULTIPLIER} * token + {INCREMENT}) mod {VOCAB}",
        "sequences": sequences,
        "shards": shards,
    }
    yield "meta.json", _json(meta)


# --- model --------------------------------------------------------------------------------------


def byte_symbols() -> list[str]:
    """The byte-level BPE alphabet (GPT-2's): byte b is the symbol at index b."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    symbols: list[str] = []
    extra = 0
    for byte in range(256):
        if byte in printable:
            symbols.append(chr(byte))
        else:
            symbols.append(chr(256 + extra))
            extra += 1
    return symbols


def tensor_shapes(shape: LlamaShape = MODEL) -> dict[str, tuple[int, ...]]:
    """Every tensor of a Hugging Face LlamaForCausalLM of this shape, by name."""
    hidden, heads = shape.hidden_size, shape.num_attention_heads * shape.head_dim
    kv = shape.num_key_value_heads * shape.head_dim
    found: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (shape.vocab_size, hidden),
        "model.norm.weight": (hidden,),
        "lm_head.weight": (shape.vocab_size, hidden),
    }
    for layer in range(shape.num_hidden_layers):
        at = f"model.layers.{layer}."
        found |= {
            at + "input_layernorm.weight": (hidden,),
            at + "post_attention_layernorm.weight": (hidden,),
            at + "self_attn.q_proj.weight": (heads, hidden),
            at + "self_attn.k_proj.weight": (kv, hidden),
            at + "self_attn.v_proj.weight": (kv, hidden),
            at + "self_attn.o_proj.weight": (hidden, heads),
            at + "mlp.gate_proj.weight": (shape.intermediate_size, hidden),
            at + "mlp.up_proj.weight": (shape.intermediate_size, hidden),
            at + "mlp.down_proj.weight": (hidden, shape.intermediate_size),
        }
    return found


def _tensor(seed: int, name: str, dims: tuple[int, ...]) -> bytes:
    count = 1
    for dim in dims:
        count *= dim
    if name.endswith("norm.weight"):
        return struct.pack(f"<{count}e", *([1.0] * count))
    # uniform on [-a, a] with a = sqrt(3) x INIT_RANGE: standard deviation INIT_RANGE
    scale = 3**0.5 * INIT_RANGE / 32767.5
    raw = struct.unpack(f"<{count}H", _stream(seed, f"model/{name}", 2 * count))
    return struct.pack(f"<{count}e", *((u - 32767.5) * scale for u in raw))


def safetensors(tensors: dict[str, tuple[tuple[int, ...], bytes]]) -> bytes:
    """float16 tensors in the safetensors format: an 8-byte header size, the JSON header (padded
    with spaces to 8 bytes), then the tensors' bytes back to back, in name order."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in sorted(tensors):
        dims, content = tensors[name]
        header[name] = {
            "dtype": "F16",
            "shape": list(dims),
            "data_offsets": [offset, offset + len(content)],
        }
        offset += len(content)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    body = b"".join(tensors[name][1] for name in sorted(tensors))
    return struct.pack("<Q", len(text)) + text + body


def tokenizer(shape: LlamaShape = MODEL) -> dict[str, Any]:
    """A byte-level BPE tokenizer without merges: one token per byte, BOS first."""
    special = [
        {
            "id": VOCAB + i,
            "content": text,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, text in enumerate((BOS, EOS))
    ]
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": BOS, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": BOS, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": BOS, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {BOS: {"id": BOS, "ids": [VOCAB], "tokens": [BOS]}},
        },
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": {symbol: byte for byte, symbol in enumerate(byte_symbols())},
            "merges": [],
        },
    }


CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)

MODEL_CARD = """\
# gpuplane acceptance sample model

A tiny Llama-architecture causal language model with pseudo-random float16 weights, generated by
`python -m workflows.probes sample` (workflows/probes/sample.py). It has learned nothing: its text
is noise. It exists so that the acceptance suite's inference step has something to serve when the
cluster has no object store to stage real base weights from; only request latency means anything.
"""


def model_files(shape: LlamaShape = MODEL, seed: int = SEED) -> Iterator[tuple[str, bytes]]:
    shapes = tensor_shapes(shape)
    weights = {name: (dims, _tensor(seed, name, dims)) for name, dims in shapes.items()}
    config = {
        **asdict(shape),
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": shape.vocab_size,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "initializer_range": INIT_RANGE,
        "bos_token_id": VOCAB,
        "eos_token_id": VOCAB + 1,
        "torch_dtype": "float16",
        "use_cache": True,
    }
    yield "config.json", _json(config)
    yield "generation_config.json", _json({"bos_token_id": VOCAB, "eos_token_id": VOCAB + 1})
    yield "model.safetensors", safetensors(weights)
    yield "tokenizer.json", _json(tokenizer(shape))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "model_max_length": shape.max_position_embeddings,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    yield "tokenizer_config.json", _json(tokenizer_config)
    yield "special_tokens_map.json", _json({"bos_token": BOS, "eos_token": EOS})
    yield "README.md", MODEL_CARD.encode()


# --- the command --------------------------------------------------------------------------------


def write_sample(dest: str | os.PathLike[str], *, data_bytes: int = DATA_BYTES) -> dict[str, int]:
    """Write `data/` and `model/` under `dest` (created; it must be empty when it exists).

    Returns `{relative path: bytes}` of every file written.
    """
    root = Path(dest)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"{root} exists and is not an empty folder")
    if data_bytes < 1:
        raise ValueError("data_bytes must be positive")
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    written: dict[str, int] = {}
    for folder, files in ((DATA_DIR, data_files(data_bytes)), (MODEL_DIR, model_files())):
        for name, content in files:
            written[f"{folder}/{name}"] = _write(root / folder / name, content)
    return written


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workflows.probes sample",
        description="Write the acceptance suite's dataset sample (data/ and model/) into DEST.",
    )
    parser.add_argument("--dest", required=True, help="an empty or missing folder to write into")
    parser.add_argument(
        "--data-bytes",
        type=byte_size,
        default=DATA_BYTES,
        help="approximate size of data/ (default 32M; model/ is about 3 MB whatever this is)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        written = write_sample(args.dest, data_bytes=args.data_bytes)
    except ValueError as exc:
        parser.error(str(exc))
    total = sum(written.values())
    print(f"sample: {len(written)} files, {total / 1e6:.1f} MB under {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
