"""A generated checkpoint laid out like a Hugging Face safetensors release:
K shards model-0000i-of-0000K.safetensors, all of one size except a smaller
last one, each with a real safetensors header (one BF16 tensor) and random
(incompressible, unique) weights; plus the index, configs and tokenizer.
"""
import json
import os

_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
    "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 131072, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0", "use_cache": True, "vocab_size": 128256,
}
_GENERATION = {"bos_token_id": 128000, "do_sample": True, "eos_token_id": [128001, 128008, 128009],
               "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.43.0"}
_TOKENIZER_BYTES = 9_085_657  # the size of a Llama 3 tokenizer.json
_ROW = 4096 * 2               # one BF16 row of hidden_size values


def _random_text(n):
    # Printable, like a tokenizer's vocabulary and merges.
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 \",:{}"
    table = bytes(alphabet[i % len(alphabet)] for i in range(256))
    return os.urandom(n).translate(table)


def _write_random(f, n):
    step = 8 << 20
    while n > 0:
        k = min(step, n)
        f.write(os.urandom(k))
        n -= k


def _write_shard(path, tensor, data_bytes):
    rows = data_bytes // _ROW
    header = {"__metadata__": {"format": "pt"},
              tensor: {"dtype": "BF16", "shape": [rows, 4096], "data_offsets": [0, rows * _ROW]}}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        _write_random(f, rows * _ROW)
    return 8 + len(h) + rows * _ROW


def generate(folder, total_bytes, shards):
    """Writes the checkpoint into `folder` (created); returns {path: size}.
    The files add up to about `total_bytes` (within one BF16 row per shard)."""
    os.makedirs(folder, exist_ok=True)
    small = {
        "config.json": json.dumps(_CONFIG, indent=2).encode() + b"\n",
        "generation_config.json": json.dumps(_GENERATION, indent=2).encode() + b"\n",
        "special_tokens_map.json": b'{"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}\n',
        "tokenizer_config.json": b'{"added_tokens_decoder": {' + _random_text(50_000) + b"}}\n",
        "tokenizer.json": b'{"version": "1.0", "model": {"vocab": {' + _random_text(_TOKENIZER_BYTES) + b"}}}\n",
    }
    index_guess = 400 * 32 + 200
    budget = total_bytes - sum(len(v) for v in small.values()) - index_guess
    if budget < shards * 4 * _ROW:
        raise ValueError("checkpoint of %d bytes is too small for %d shards" % (total_bytes, shards))
    # shards-1 full shards and a last one of about 55 % of a full one.
    full = int(budget / (shards - 0.45))
    sizes = [full] * (shards - 1) + [budget - full * (shards - 1)]
    files = {}
    weight_map = {}
    for i, data in enumerate(sizes, 1):
        name = "model-%05d-of-%05d.safetensors" % (i, shards)
        tensor = "model.layers.%d.mlp.down_proj.weight" % i
        files[name] = _write_shard(os.path.join(folder, name), tensor, data - 256)
        weight_map[tensor] = name
    for layer in range(32):
        for part in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.up_proj"):
            weight_map["model.layers.%d.%s.weight" % (layer, part)] = "model-%05d-of-%05d.safetensors" % (
                layer * shards // 32 + 1, shards)
    small["model.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": sum(files.values())}, "weight_map": weight_map}, indent=2).encode() + b"\n"
    for name, body in small.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(body)
        files[name] = len(body)
    return files
