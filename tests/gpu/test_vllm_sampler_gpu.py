"""The vLLM sampler for real (GPU machines with the gpu extra; skipped elsewhere): SmolLM2-135M-Instruct
through vllm.LLM with the requests build_requests makes. Seeded rows make the same call reproducible;
n per prompt, stop strings and finish reasons come back as the probe expects. (Identical draws across
other batch compositions are not asserted: vLLM does not promise batch-invariant numerics.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def _ready() -> bool:
    if importlib.util.find_spec("vllm") is None:
        return False
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module")
def sampler():
    if not _ready():
        pytest.skip("needs CUDA and vLLM")
    from hydra import compose, initialize_config_dir

    import boundlab.builtins  # noqa: F401
    from boundlab.config import register_configs
    from boundlab.sampling import build_sampler

    register_configs()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        cfg = compose(config_name="probe", overrides=["model=smollm2_135m", "sampler=vllm",
                                                      "sampler.vllm.gpu_memory_utilization=0.3"])
    s = build_sampler(cfg.model, cfg.sampler)
    yield s
    s.close()


def test_seeded_rows_reproduce_whatever_the_grouping(sampler):
    from boundlab.sampling.base import GenSettings

    gen = GenSettings(temperature=1.0, top_p=0.95, max_new_tokens=24)
    a = sampler.generate([("What is 2+3?", 3), ("Name a colour.", 2)], gen, 11)
    b = sampler.generate([("What is 2+3?", 3), ("Name a colour.", 2)], gen, 11)
    assert [[c.text for c in g] for g in a] == [[c.text for c in g] for g in b]
    assert [len(g) for g in a] == [3, 2]
    # Each row has its own seed: a prompt's samples are not copies of one draw (24 tokens at T = 1).
    assert len({c.text for c in a[0]}) > 1


def test_stop_strings_and_lengths(sampler):
    from boundlab.sampling.base import GenSettings

    out = sampler.generate([("Count from 1 to 50, one number per line.", 4)],
                           GenSettings(temperature=0.6, max_new_tokens=64, stop=("\n5",)), 0)
    for c in out[0]:
        assert "\n5" not in c.text
        assert c.finish in ("stop", "eos", "length") and 0 < c.n_tokens <= 64
