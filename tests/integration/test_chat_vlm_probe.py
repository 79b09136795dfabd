"""A real chat VLM's prompt with images (issue 15): probe.py, through `model=hf model.vision=true`,
on the MathVista fixture, with a tiny randomly initialised chat VLM and its processor built here and
saved to tmp (nothing downloads).

Which VLM. Qwen2.5-VL's own classes are tried first (`Qwen2_5_VLForConditionalGeneration`,
`Qwen2_5_VLProcessor`). transformers 5.x refuses to build that processor without torchvision: a
ProcessorMixin checks its `video_processor` against `VideoProcessorMixin`, a class that exists only
with torchvision, even when no video is given. The torchvision wheels this machine can install are
built against CUDA torch and do not import against torch 2.13.0+cpu (`operator torchvision::nms does
not exist`), so here that case is skipped with that reason and a GPU install (which has torchvision)
runs it. The LLaVA-style fallback always runs: `LlavaForConditionalGeneration` (a Qwen2 language
model) with a `LlavaProcessor` whose chat template is Qwen's format with `<image>` as the image
placeholder (`<|vision_start|><image><|vision_end|>`).

Checked: probe.py exits 0 with n = 2; the prompt the hf sampler fed is the processor's chat
template over image blocks then text, with the task's system turn; its token ids hold exactly one
run of image tokens per image; and TRL's rendering of `visual_row` is the same string.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VISTA = ROOT / "tests/data/visual_benchmarks/mathvista"
SYSTEM = "You are a helpful assistant."

# Qwen2-VL / Qwen2.5-VL's chat template (its `chat_template.json`), with the image placeholder a
# parameter: Qwen's own, or `<image>` for the LLaVA fallback.
def _qwen_template(image: str) -> str:
    return ("{% set image_count = namespace(value=0) %}{% for message in messages %}"
            "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful "
            "assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n"
            "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
            "{% else %}{% for content in message['content'] %}"
            "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
            "{% set image_count.value = image_count.value + 1 %}"
            "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
            "<|vision_start|>" + image + "<|vision_end|>"
            "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
            "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _tokenizer(extra: list[str]):
    """A byte-level BPE over the 256 byte symbols (no merges) with Qwen's special tokens: small, and
    it encodes any text, so the benchmark's questions need no vocabulary of their own."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    t = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                          "<|vision_end|>", *extra])
    return PreTrainedTokenizerFast(tokenizer_object=t, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def _text_config(vocab: int, **extra) -> dict:
    return dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                tie_word_embeddings=True, **extra)


def _build_qwen(out: Path) -> str:
    from transformers import (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor,
                              Qwen2VLImageProcessor)

    tok = _tokenizer(["<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"])
    template = _qwen_template("<|image_pad|>")
    tok.chat_template = template
    try:
        from transformers import Qwen2VLVideoProcessor

        proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(min_pixels=56 * 56,
                                                                         max_pixels=112 * 112),
                                   tokenizer=tok, video_processor=Qwen2VLVideoProcessor(),
                                   chat_template=template)
    except (AttributeError, ImportError, TypeError) as e:
        pytest.skip(f"Qwen2_5_VLProcessor cannot be built here ({type(e).__name__}: {str(e).strip().splitlines()[0]}); transformers "
                    f"checks its video_processor against VideoProcessorMixin, which needs torchvision")
    ids = tok.convert_tokens_to_ids
    special = dict(bos_token_id=ids("<|endoftext|>"), eos_token_id=ids("<|im_end|>"),
                   pad_token_id=ids("<|endoftext|>"))  # read from the text config, not the outer one
    cfg = Qwen2_5_VLConfig(
        text_config=_text_config(len(tok), rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                                 **special),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                           fullatt_block_indexes=[0]),
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"), **special)
    Qwen2_5_VLForConditionalGeneration(cfg).save_pretrained(out)
    proc.save_pretrained(out)
    return "<|image_pad|>"


def _build_llava(out: Path) -> str:
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor, Qwen2Config)

    tok = _tokenizer(["<image>"])
    template = _qwen_template("<image>")
    tok.chat_template = template
    side = 28  # 2 x 2 patches of 14: four image tokens per image (the CLS is dropped)
    images = CLIPImageProcessor(do_resize=True, size={"height": side, "width": side}, do_center_crop=False,
                                crop_size={"height": side, "width": side}, do_convert_rgb=True)
    proc = LlavaProcessor(image_processor=images, tokenizer=tok, patch_size=14,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          image_token="<image>", chat_template=template)
    ids = tok.convert_tokens_to_ids
    cfg = LlavaConfig(vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                                     num_attention_heads=2, image_size=side,
                                                     patch_size=14).to_dict(),
                      text_config=Qwen2Config(**_text_config(len(tok))).to_dict(),
                      image_token_id=ids("<image>"), vision_feature_layer=-1,
                      vision_feature_select_strategy="default", image_seq_length=4, tie_word_embeddings=True)
    cfg.pad_token_id, cfg.eos_token_id = ids("<|endoftext|>"), ids("<|im_end|>")
    LlavaForConditionalGeneration(cfg).save_pretrained(out)
    proc.save_pretrained(out)
    return "<image>"


BUILDERS = {"qwen2_5_vl": _build_qwen, "llava_qwen_chat": _build_llava}

# probe.py with the hf sampler's `_encode` recording what it fed the model (prompts, token ids, images).
RUNNER = """
import json, runpy, sys
from boundlab.sampling import hf
log, original = sys.argv.pop(1), hf.HFSampler._encode
def _encode(self, prompts, images=None):
    enc = original(self, prompts, images)
    ids = enc["input_ids"].tolist()
    with open(log, "a") as f:
        for i, (p, ims) in enumerate(zip(prompts, images)):
            f.write(json.dumps({"prompt": p, "images": ims, "ids": ids[i],
                                "mask": enc["attention_mask"][i].tolist()}) + "\\n")
    return enc
hf.HFSampler._encode = _encode
sys.argv[0] = sys.argv[1]; sys.argv.pop(1)
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture(scope="module", params=list(BUILDERS))
def chat_vlm(request, tmp_path_factory):
    import torch

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp(request.param)
    placeholder = BUILDERS[request.param](out)
    return out, placeholder


def _overrides(model_dir: Path) -> list[str]:
    return ["model=hf", f"model.path={model_dir}", "model.vision=true", "model.dtype=float32",
            "task=mathvista", f"task.path={VISTA / 'testmini.jsonl'}", f"task.visual.image_dir={VISTA}",
            "task.chat=true", f"task.system={SYSTEM}"]


def test_probe_feeds_one_image_run_per_image(chat_vlm, tmp_path):
    model_dir, placeholder = chat_vlm
    runner, log = tmp_path / "run_probe.py", tmp_path / "fed.jsonl"
    runner.write_text(RUNNER)
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), WANDB_MODE="offline",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(runner), str(log), str(ROOT / "probe.py"), *_overrides(model_dir),
                           "probe.n=2", "probe.max_new_tokens=4", "sampler=hf", "sampler.device=cpu",
                           "sampler.batch_size=4", "logger=none", "verify.workers=1",
                           "probe.bootstrap_iters=50", f"hydra.run.dir={tmp_path / 'run'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with (tmp_path / "run" / "passk.csv").open() as f:
        assert [int(r["k"]) for r in csv.DictReader(f)] == [1, 2]

    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
    image_id = processor.tokenizer.convert_tokens_to_ids(placeholder)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    questions = [json.loads(line) for line in (VISTA / "testmini.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * len(questions)  # n = 2 rows per problem, every problem sampled
    for row in rows:
        p = row["prompt"]
        assert p.startswith(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
                            f"<|vision_start|>{placeholder}<|vision_end|>"), p[:200]
        assert p.endswith("<|im_end|>\n<|im_start|>assistant\n")
        assert p.count(placeholder) == len(row["images"]) == 1
        ids = [t for t, m in zip(row["ids"], row["mask"]) if m]
        runs = sum(1 for i, t in enumerate(ids) if t == image_id and (i == 0 or ids[i - 1] != image_id))
        assert runs == len(row["images"]), (runs, row["images"])
        assert ids.count(image_id) > 1  # the processor expanded the placeholder to the image's tokens


def test_training_rows_render_to_the_probe_prompt(chat_vlm):
    """TRL's GRPO renders `visual_row`'s prompt with the processor's chat template (after its own
    `prepare_multimodal_messages`): the string must be the one the probe samples from."""
    from hydra import compose, initialize_config_dir
    from transformers import AutoProcessor
    from trl.data_utils import prepare_multimodal_messages

    from boundlab.config import register_configs
    from boundlab.probe.spec import load_task
    from boundlab.training.app import visual_row

    model_dir, placeholder = chat_vlm
    processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        task = load_task(compose(config_name="probe", overrides=_overrides(model_dir)))
    for p in task.problems:
        row = visual_row(task, p, processor)
        assert len(row["images"]) == len(p.images) == 1
        trl_text = processor.apply_chat_template(prepare_multimodal_messages(row["prompt"], row["images"]),
                                                 tokenize=False, add_generation_prompt=True)
        assert trl_text == task.render(p, processor)
        assert trl_text.count(placeholder) == 1


def test_export_writes_the_processor_rendered_prompt(chat_vlm, tmp_path):
    """`export=` with a VLM: each line's `prompt` is the processor-rendered string the probe feeds."""
    model_dir, placeholder = chat_vlm
    out = tmp_path / "prompts.jsonl"
    env = dict(os.environ, BOUNDLAB_STORE=str(tmp_path / "store.sqlite"), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(ROOT / "probe.py"), *_overrides(model_dir), f"export={out}",
                           "logger=none", f"hydra.run.dir={tmp_path / 'run'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(r["prompt"].count(f"<|vision_start|>{placeholder}<|vision_end|>") == len(r["images"]) == 1
                        and r["prompt"].startswith(f"<|im_start|>system\n{SYSTEM}<|im_end|>") for r in rows)
