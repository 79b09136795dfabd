"""Shared by the on-policy tests (test_onpolicy_smoke, test_remedies): a composed training config on
the first edition's model, and an on-policy trainer built in process on eight `Q:a-3*4;` prompts with
a parity reward (completions end at varied lengths within 8 tokens, so the reward varies)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def train_cfg(*overrides):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from boundlab.config import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="train", overrides=["experiment=toy1", *overrides])


def build_trainer(cfg, out_dir):
    from datasets import Dataset

    from boundlab.algos import BuildInputs
    from boundlab.algos.onpolicy import build_onpolicy
    from boundlab.models import load_model, load_tokenizer

    tok = load_tokenizer(cfg.model)
    model = load_model(cfg.model)
    data = Dataset.from_list([{"prompt": f"Q:{i}-3*4;", "problem_id": f"p{i}"} for i in range(8)])

    def parity(prompts, completions, problem_id, **_):
        return [float(len(c) % 2) for c in completions]

    return build_onpolicy(cfg.algo.name, BuildInputs(cfg, model, tok, data, [parity], [], str(out_dir), []))
