"""The probe key covers everything that can change a verdict (issue 10, item 7), and a probe whose
key is new only because the verifier changed re-verifies its stored completions instead of sampling
them again."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from boundlab.config import VerifyConfig
from boundlab.probe.context import ProbeContext
from boundlab.probe.runner import probe_model, sampling_settings, score_samples_file
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import Store, probe_key
from boundlab.probe.verdicts import probe_settings
from boundlab.sampling.base import Completion, GenSettings, Sampler
from boundlab.tasks.base import Problem, Task
from boundlab.verify import build_verifier, verifier_options
from boundlab.verify.math import MathVerifier


def build(name, **change):
    """The verifier as probe.py builds it (verifier_options over the whole default `verify` config),
    with each change set where that key lives: shared, `verify.math` or `verify.code`. A key the
    config does not have (cache_size) goes to the constructor directly."""
    from omegaconf import OmegaConf

    cfg, direct = OmegaConf.structured(VerifyConfig), {}
    for k, v in change.items():
        where = next((p for p in (k, f"math.{k}", f"code.{k}") if OmegaConf.select(cfg, p) is not None), None)
        if where is None:
            direct[k] = v
        else:
            OmegaConf.update(cfg, where, v)
    return build_verifier(name, **verifier_options(name, cfg), **direct)


def key_for(verifier, sampling=None):
    settings = probe_settings(sampling or {"temperature": 1.0}, verifier)
    return probe_key("model", "task", settings)


def test_math_identity_names_settings_version_and_libraries():
    v = build("math")
    ident = v.identity()
    assert ident == {
        "name": "math", "version": MathVerifier.version,
        "settings": {"deadline_s": 2.0, "extraction": "lenient", "max_answer_chars": 512},
        "libraries": {"math-verify": metadata.version("math-verify"),
                      "latex2sympy2_extended": metadata.version("latex2sympy2_extended"),
                      "sympy": metadata.version("sympy")},
    }
    # Built by hand with the same effective settings: the same identity (defaults count).
    assert MathVerifier().identity() == ident
    json.dumps(ident)  # it goes into the key as JSON


@pytest.mark.parametrize("change", [{"max_answer_chars": 64}, {"deadline_s": 5.0}])
def test_a_setting_that_can_change_a_verdict_changes_the_key(change):
    assert key_for(build("math", **change)) != key_for(build("math"))


@pytest.mark.parametrize("change", [{"workers": 7}, {"cache_size": 10}, {"timeout_s": 9.0},
                                    {"memory_mb": 64}, {"allow_weak_isolation": True}])
def test_settings_that_cannot_change_a_math_verdict_leave_the_key(change):
    assert key_for(build("math", **change)) == key_for(build("math"))


def test_a_setting_added_later_joins_the_key_without_a_code_change():
    # verify.math.extraction (issue 22) was added after the key: nobody had to remember to add it.
    plain, extra = build("math"), build("math", extraction="boxed")
    assert extra.identity()["settings"]["extraction"] == "boxed"
    assert key_for(extra) != key_for(plain)


def test_verifier_version_and_library_versions_change_the_key(monkeypatch):
    class Bumped(MathVerifier):
        version = MathVerifier.version + 1

    base = key_for(MathVerifier())
    assert key_for(Bumped()) != base
    import boundlab.verify.base as vb

    monkeypatch.setattr(vb, "_installed", lambda dist: "0.0-other" if dist == "math-verify" else metadata.version(dist))
    assert key_for(MathVerifier()) != base


def test_toy_and_exact_keys_ignore_the_settings_they_do_not_read():
    assert build("toy").identity() == {"name": "toy", "version": 1, "settings": {}}
    assert build("toy", max_answer_chars=3).identity()["settings"] == {}
    assert build("exact").identity()["settings"] == {"marker": "A:"}
    assert build_verifier("exact", marker="=>").identity()["settings"] == {"marker": "=>"}


def test_code_identity_keeps_its_limits_and_drops_the_math_keys():
    v = build("code", allow_weak_isolation=True)
    try:
        ident = v.identity()
    finally:
        v.close()
    assert ident["name"] == "code" and ident["python"]
    s = ident["settings"]
    assert s["timeout_s"] == 3.0 and s["memory_mb"] == 1024 and s["allow_weak_isolation"] is True
    assert not {"workers", "deadline_s", "max_answer_chars", "extraction"} & set(s)


# -- the case: same store, changed verify.math.max_answer_chars -------------------------
def _task() -> Task:
    return Task("mini", [Problem("a", "What is 1/2?", r"\frac{1}{2}"), Problem("b", "2+2?", "4")])


def _samples(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"problem_id": pid, "completion": c}) + "\n" for pid, c in [
        ("a", r"so \boxed{0.5}"), ("a", r"so \boxed{\frac{1}{2}}"), ("b", r"\boxed{4}"), ("b", r"\boxed{4}")]))
    return path


def test_changed_max_answer_chars_gives_a_new_key_and_fresh_verdicts(tmp_path, capsys):
    store = Store(tmp_path / "s.sqlite")
    path = _samples(tmp_path)
    v512, v3 = build("math"), build("math", max_answer_chars=3)
    try:
        first, _ = score_samples_file(_task(), path, v512, store, bootstrap_iters=10, progress=False)
        assert first.curve.at(1) == 1.0
        second, _ = score_samples_file(_task(), path, v3, store, bootstrap_iters=10, progress=False)
        # \frac{1}{2} is 11 characters: too long under the new setting, so 3 of 4 are correct.
        assert second.key != first.key
        assert second.curve.at(1) == 0.75
        assert [r.outcome for r in store.samples(second.key, "a")] == ["correct", "too_long"]
        # The old verdicts are still there, under their own key.
        assert [r.outcome for r in store.samples(first.key, "a")] == ["correct", "correct"]
        assert store.probe_info(second.key)["settings"]["verifier"]["settings"]["max_answer_chars"] == 3
    finally:
        v512.close()
        v3.close()
        store.close()


class CountingSampler(Sampler):
    """Fixed completions per prompt; counts what it was asked to generate."""
    rows_per_call = 4

    def __init__(self, texts):
        self.texts, self.rows = texts, 0

    def generate(self, requests, settings, seed):
        self.rows += sum(cnt for _, cnt in requests)
        out = []
        for prompt, cnt in requests:
            pid = "a" if "1/2" in prompt else "b"
            out.append([Completion(self.texts[pid][i % len(self.texts[pid])], 5, "length")
                        for i in range(cnt)])
        return out


def test_a_changed_verifier_reverifies_stored_completions_instead_of_resampling(tmp_path, capsys):
    store = Store(tmp_path / "s.sqlite")
    task = _task()
    texts = {"a": [r"\boxed{0.5}", r"\boxed{\frac{1}{2}}"], "b": [r"\boxed{4}", r"\boxed{5}"]}
    gen = GenSettings(max_new_tokens=5)
    v512, v3 = build("math"), build("math", max_answer_chars=3)
    try:
        s1 = CountingSampler(texts)
        r1 = probe_model(ProbeContext(task, store, v512, progress=False), ProbeSpec(4, gen, 0, bootstrap_iters=10),
                         s1, "fp")
        assert s1.rows == 8 and r1.c.tolist() == [4, 2]
        capsys.readouterr()
        s2 = CountingSampler(texts)
        r2 = probe_model(ProbeContext(task, store, v3, progress=False), ProbeSpec(4, gen, 0, bootstrap_iters=10),
                         s2, "fp")
        assert s2.rows == 0  # nothing sampled again
        assert r2.key != r1.key and r2.c.tolist() == [2, 2]  # \frac{1}{2} is too long now
        assert capsys.readouterr().out == (
            f"[boundlab] re-verified 8 stored completions under verifier math v{MathVerifier.version} (sampled for probe "
            f"{r1.key}; the verifier changed, not the samples)\n")
        # Same texts, indices and sampling details; fresh verdicts.
        old, new = store.samples(r1.key), store.samples(r2.key)
        assert [(r.problem_id, r.idx, r.text, r.n_tokens, r.info) for r in new] == \
               [(r.problem_id, r.idx, r.text, r.n_tokens, r.info) for r in old]
        # How sampling ended is kept; the verdict details are the math verifier's own (issue 22).
        assert new[0].info == {"finish": "length", "answer_from": "boxed", "boxed": True}
        # Raising n samples only what neither probe has, and takes nothing twice.
        s3 = CountingSampler(texts)
        r3 = probe_model(ProbeContext(task, store, v3, progress=False), ProbeSpec(6, gen, 0, bootstrap_iters=10),
                         s3, "fp")
        assert s3.rows == 4 and r3.key == r2.key and r3.n.tolist() == [6, 6]
        assert "re-verified" not in capsys.readouterr().out
        # Other sampling settings are another probe: nothing is taken over from it.
        s4 = CountingSampler(texts)
        probe_model(ProbeContext(task, store, v3, progress=False),
                    ProbeSpec(2, GenSettings(max_new_tokens=6), 0, bootstrap_iters=10), s4, "fp")
        assert s4.rows == 4
    finally:
        v512.close()
        v3.close()
        store.close()


def test_probes_stored_before_the_verifier_was_keyed_are_reverified(tmp_path, capsys):
    # A store written by the previous version: settings without "verifier", same sampling.
    store = Store(tmp_path / "s.sqlite")
    task = _task()
    gen = GenSettings(max_new_tokens=5)
    old_settings = sampling_settings(gen, 0, "raw")
    old_key = probe_key("fp", task.fingerprint(), old_settings)
    store.ensure_probe(old_key, "fp", task.fingerprint(), old_settings, "m", task.name)
    from boundlab.probe.store import SampleRow
    # Stale verdicts: the old verifier called a correct answer wrong.
    store.add_samples(old_key, [SampleRow("a", 0, r"\boxed{0.5}", "0.5", False, None, "wrong", 5),
                                SampleRow("b", 0, r"\boxed{4}", "4", True, None, "correct", 5)])
    v = build("math")
    try:
        s = CountingSampler({"a": ["x"], "b": ["x"]})
        res = probe_model(ProbeContext(task, store, v, progress=False), ProbeSpec(1, gen, 0, bootstrap_iters=10),
                          s, "fp")
        assert s.rows == 0 and res.key != old_key and res.c.tolist() == [1, 1]
        assert (f"re-verified 2 stored completions under verifier math v{MathVerifier.version}"
                in capsys.readouterr().out)
    finally:
        v.close()
        store.close()


def test_report_by_model_name_takes_the_newest_verifiers_probe(tmp_path):
    from boundlab.report.inputs import find_probe

    store = Store(tmp_path / "s.sqlite")
    sampling = {"temperature": 1.0}
    keys = []
    for v in (build("math"), build("math", max_answer_chars=3)):
        settings = probe_settings(sampling, v)
        keys.append(probe_key("fp", "tfp", settings))
        store.ensure_probe(keys[-1], "fp", "tfp", settings, "mymodel", "t")
        v.close()
    assert find_probe(store, "mymodel", "tfp")["key"] == keys[1]
    # Other sampling settings are another probe: still ambiguous, say so.
    other = probe_settings({"temperature": 0.6}, MathVerifier())
    store.ensure_probe(probe_key("fp", "tfp", other), "fp", "tfp", other, "mymodel", "t")
    from boundlab.config import ConfigError
    with pytest.raises(ConfigError, match="model name 'mymodel' matches 3 probes"):
        find_probe(store, "mymodel", "tfp")
    store.close()
