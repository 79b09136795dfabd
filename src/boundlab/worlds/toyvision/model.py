"""The visual toy world's tiny VLM: a one-layer CLIP vision tower, Llava's projector, and the
second-edition toy world's language model, as a `LlavaForConditionalGeneration` with a `LlavaProcessor`
(both load with `from_pretrained` / `AutoProcessor`, and TRL's GRPOTrainer trains them as a VLM).

Why this shape. The model has to (1) read the expression off the picture and (2) execute it as the
text world's base does. (2) is what toyworld2's base already learned from its corpus, so the language
model starts from that base (`toyworld2/assets/base`) and keeps its char tokenizer, plus `<image>`.
(1) is made small by the picture's layout (`render`): one glyph per 12x12 cell and a 12-pixel
patch, so each of the 16 image tokens carries one cell, right-aligned before the prompt's `;`, where
the text world's prompt has its characters. Pretraining (`pretrain`) then trains the tower and the
projector to read, and the language model, at a lower rate, to take its question from image tokens,
on the base corpus itself: the decision rates stay set by the corpus, and the audit measures them.
"""

from __future__ import annotations

from pathlib import Path

from boundlab.worlds.toyvision import render

IMAGE_TOKEN = "<image>"
# A chat template for TRL's conversational VLM path: the user turn's blocks in order (an image block
# becomes IMAGE_TOKEN, which the processor expands), no role markers, nothing for the generation
# prompt. So TRL's prompt renders to exactly the probe's string (`task.TEMPLATE`).
CHAT_TEMPLATE = ("{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}"
                 "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}" + IMAGE_TOKEN +
                 "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
                 "{% endfor %}")
VISION = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
              image_size=render.SIZE, patch_size=render.CELL, num_channels=3)


def build_tokenizer():
    """toyworld2's char tokenizer plus the image token (the last id)."""
    from boundlab.worlds.toyworld2.tokenizer import build_tokenizer as tw2

    tok = tw2()
    tok.add_tokens([IMAGE_TOKEN], special_tokens=True)
    return tok


def build_processor(tokenizer=None):
    from transformers import CLIPImageProcessor, LlavaProcessor

    tokenizer = tokenizer or build_tokenizer()
    images = CLIPImageProcessor(do_resize=False, do_center_crop=False, do_rescale=True,
                                do_normalize=True, image_mean=[0.5] * 3, image_std=[0.5] * 3,
                                do_convert_rgb=True, size={"height": render.SIZE, "width": render.SIZE},
                                crop_size={"height": render.SIZE, "width": render.SIZE})
    # 16 patches + CLS, less the CLS that the `default` feature strategy drops: 16 image tokens.
    return LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=render.CELL,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          image_token=IMAGE_TOKEN, chat_template=CHAT_TEMPLATE)


def build_config(text_config, tokenizer):
    from transformers import CLIPVisionConfig, LlavaConfig

    text = text_config.to_dict()
    text["vocab_size"] = len(tokenizer)
    # Image tokens (16) lengthen every prompt: room for them and the longest trace.
    text["max_position_embeddings"] = max(text.get("max_position_embeddings", 128), 160)
    for k in ("architectures", "_name_or_path", "transformers_version", "dtype", "torch_dtype"):
        text.pop(k, None)
    cfg = LlavaConfig(vision_config=CLIPVisionConfig(**VISION).to_dict(), text_config=text,
                      image_token_id=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN),
                      vision_feature_layer=-1, vision_feature_select_strategy="default",
                      projector_hidden_act="gelu", image_seq_length=render.GRID * render.GRID,
                      tie_word_embeddings=True)
    cfg.pad_token_id = tokenizer.pad_token_id
    cfg.eos_token_id = tokenizer.eos_token_id
    return cfg


def build_vlm(lm_dir: Path, tokenizer=None):
    """A fresh VLM whose language model is the text model in `lm_dir` (its embeddings grown by the
    image token's row, initialised as the mean of the others) and whose tower and projector are new."""
    import torch
    from transformers import AutoModelForCausalLM, LlavaForConditionalGeneration

    tokenizer = tokenizer or build_tokenizer()
    lm = AutoModelForCausalLM.from_pretrained(lm_dir)
    model = LlavaForConditionalGeneration(build_config(lm.config, tokenizer))
    state = lm.model.state_dict()
    emb = state["embed_tokens.weight"]
    grown = torch.cat([emb, emb.mean(0, keepdim=True)], 0)
    if grown.shape[0] != len(tokenizer):
        raise ValueError(f"{lm_dir}: its vocabulary ({emb.shape[0]}) is not the toy2 tokenizer's")
    state["embed_tokens.weight"] = grown
    missing, unexpected = model.model.language_model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if "rotary" not in m]:
        raise ValueError(f"{lm_dir}: its weights do not fit the VLM's language model "
                         f"(missing {missing}, unexpected {unexpected})")
    model.tie_weights()
    return model
