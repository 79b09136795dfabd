"""The held-out evaluation slice of the second-edition toy world (`task.toy2.slice=heldout`, issue 40):
problems never used in calibration, pretraining, the audit or RL training.

What was used, and so is excluded:

- calibration and the audit: the shipped bases r1-r4 were audited (`audit.py`, `per_tier=50` on every
  tier) and their support checked (`docs/toy2_calibration/support_*.py`, the first 50 of B3, B4 and
  H2, up to n = 4096) on the first `CALIBRATION_PER_TIER` problems of every tier of the test split;
  the corpus shares were re-set from those numbers. The pilot's default slice (the first 24 per
  tier) lies inside them. `calibration_problems()` names them.
- pretraining: the corpora of the shipped base and teacher exclude every test and train question
  (`world.Corpus`, `world.held_out`), and the fresh problems below are in neither shipped corpus
  (replayed from their seeds: `shipped_corpus_questions`, and the slow test that runs it).
- RL training: the default mix takes the first 67 B3 and 67 B4 problems of the train pool; the
  slice takes the last `TRAIN_TAIL` of each, which `task.train_problems` withholds from every mix.

The slice, per tier (`HELDOUT_SIZES`): the test split's problems past the calibration ones, then the
train pool's tail (B3, B4: the test split holds only 100 of each), then fresh problems (H1: the
train pool's 400 H1 are all in the default mix). Every other B3 problem of the world is in the
shipped corpus (B3 has 586 problems in all), so the train tail is the only unused B3 left.

Fresh problems come from `FRESH_SEED`: `fresh_candidates` draws them in order, and
`assets/heldout.json` records the candidates drawn and those found in a shipped corpus (dropped),
so the slice is rebuilt without replaying the corpora.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path

from boundlab.worlds.toyworld2.paths import assets_dir

CALIBRATION_PER_TIER = 50
HELDOUT_SIZES = {"H1": 100, "H2": 100, "B3": 100, "B4": 100, "X": 50}
# Problems taken from the end of the RL train pool, per tier.
TRAIN_TAIL = {"B3": 50, "B4": 50}
# Fresh problems per tier, drawn from FRESH_SEED.
FRESH = {"H1": 50}
FRESH_SEED = 20261206
HELDOUT_FILE = assets_dir() / "heldout.json"


def _tier_indices(split: str) -> dict[str, list[int]]:
    from boundlab.worlds.toyworld2.world import splits

    out: dict[str, list[int]] = {}
    for i, p in enumerate(splits()[split]):
        out.setdefault(p.tier, []).append(i)
    return out


def calibration_problems() -> list[str]:
    """Ids (`tw2-test-NNNN`) of the test problems calibration and the audit used: the first
    CALIBRATION_PER_TIER of every tier."""
    return sorted(f"tw2-test-{i:04d}" for idx in _tier_indices("test").values()
                  for i in idx[:CALIBRATION_PER_TIER])


def withheld_train_ids() -> frozenset[str]:
    """Ids (`tw2-train-NNNN`) of the train pool's problems that belong to the held-out slice."""
    idx = _tier_indices("train")
    return frozenset(f"tw2-train-{i:04d}" for t, n in TRAIN_TAIL.items() for i in idx[t][-n:])


def fresh_candidates(tier: str, count: int, seed: int = FRESH_SEED) -> list[str]:
    """The first `count` problems of `tier` drawn from `seed`, none a test or train question and no
    two alike (before the shipped-corpus check)."""
    from boundlab.worlds.toyworld2.world import random_problem, splits

    taken = {p.question for s in splits().values() for p in s}
    rng = random.Random(f"{seed}/{tier}")
    out: list[str] = []
    while len(out) < count:
        q = random_problem(tier, rng, frozenset(taken))
        taken.add(q)
        out.append(q)
    return out


@lru_cache(maxsize=1)
def _file() -> dict:
    return json.loads(Path(HELDOUT_FILE).read_text())


def fresh_questions() -> dict[str, list[str]]:
    """tier -> the fresh problems of the slice: the recorded candidates minus those found in a
    shipped corpus, the first FRESH[tier] of them."""
    out = {}
    for tier, n in FRESH.items():
        rec = _file()["fresh"][tier]
        dropped = set(rec["in_shipped_corpus"])
        out[tier] = [q for q in rec["drawn"] if q not in dropped][:n]
    return out


def heldout_specs() -> list[tuple[str, str]]:
    """[(source, question)] of the slice, interleaved across tiers (a prefix stays stratified);
    source is `test:NNNN`, `train:NNNN` or `fresh`."""
    from boundlab.worlds.toyworld2.world import interleave, splits

    test, train = splits()["test"], splits()["train"]
    t_idx, r_idx = _tier_indices("test"), _tier_indices("train")
    fresh = fresh_questions()
    groups: dict[str, list[tuple[str, str]]] = {}
    for tier, size in HELDOUT_SIZES.items():
        rows = [(f"test:{i:04d}", test[i].question) for i in t_idx[tier][CALIBRATION_PER_TIER:]]
        tail = TRAIN_TAIL.get(tier, 0)
        rows += [(f"train:{i:04d}", train[i].question) for i in (r_idx[tier][-tail:] if tail else [])]
        rows += [("fresh", q) for q in fresh.get(tier, [])]
        if len(rows) < size:
            raise RuntimeError(f"held-out slice: {tier} has {len(rows)} problems, needs {size}")
        groups[tier] = rows[:size]
    return interleave(groups)


def shipped_corpus_questions(which: str = "base", steps: int | None = None) -> set[str]:
    """Every question of a shipped model's pretraining corpus, replayed from its train_info.json
    (seed, steps, batch size, mix): the stream `pretrain.py` drew, exactly. Minutes for the base."""
    from boundlab.worlds.toyworld2 import world
    from boundlab.worlds.toyworld2.paths import base_model_dir, teacher_model_dir

    info = json.loads(((base_model_dir() if which == "base" else teacher_model_dir())
                       / "train_info.json").read_text())
    if which == "base":
        corpus = world.Corpus(info["seed"], world.BaseMix(**info["mix"]), tiers=info["corpus_tiers"],
                              practice=world.Practice(**info["practice"]) if info.get("practice") else None,
                              ambiguous=float(info.get("ambiguous") or 0.0))
    else:
        corpus = world.Corpus(info["seed"], teacher=True, tiers=info["corpus_tiers"])
    # The exclusion the shipped models were trained with: the test and train questions only. (Today's
    # `world.held_out` adds the slice's fresh problems; a stream that never drew one is unchanged by
    # that, which is what the replay shows.)
    corpus._exclude = frozenset(p.question for s in world.splits().values() for p in s)
    out: set[str] = set()
    for _ in range(info["steps"] if steps is None else steps):
        for row in corpus.batch(info["batch_size"]):
            out.add(row[0][2:-1])  # the prompt is "Q:{question};"
    return out


def write_file(corpus: dict[str, set[str]], draw: int = 200, path: Path = HELDOUT_FILE) -> dict:
    """Draw `draw` candidates per fresh tier, mark those either shipped corpus holds, write the file."""
    seen = set().union(*corpus.values())
    data = {"seed": FRESH_SEED, "calibration_per_tier": CALIBRATION_PER_TIER, "sizes": HELDOUT_SIZES,
            "train_tail": TRAIN_TAIL, "fresh": {}}
    for tier, n in FRESH.items():
        drawn = fresh_candidates(tier, draw)
        hit = [q for q in drawn if q in seen]
        if len(drawn) - len(hit) < n:
            raise RuntimeError(f"{tier}: only {len(drawn) - len(hit)} of {draw} candidates are in no "
                               f"shipped corpus; draw more")
        data["fresh"][tier] = {"drawn": drawn, "in_shipped_corpus": hit}
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
    _file.cache_clear()
    return data


def main(argv: list[str] | None = None) -> None:
    """python -m boundlab.worlds.toyworld2.heldout [--corpus-json F]: rewrite assets/heldout.json, replaying
    the shipped corpora (tens of minutes on a busy core) or reading F ({"base": [...], "teacher":
    [...]}, the questions of each), and print the slice's counts."""
    import argparse
    from collections import Counter

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--corpus-json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.corpus_json is not None:
        corpus = {k: set(v) for k, v in json.loads(args.corpus_json.read_text()).items()}
    else:
        corpus = {w: shipped_corpus_questions(w) for w in ("teacher", "base")}
    data = write_file(corpus)
    for tier, rec in data["fresh"].items():
        print(f"{tier}: {len(rec['drawn'])} drawn, {len(rec['in_shipped_corpus'])} in a shipped corpus")
    rows = heldout_specs()
    from boundlab.worlds.toyworld2.world import tier_of

    print(f"wrote {HELDOUT_FILE}: {len(rows)} problems",
          dict(Counter((tier_of(q), s.split(":")[0]) for s, q in rows)))


if __name__ == "__main__":
    main()
