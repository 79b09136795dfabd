"""Per checkpoint: the box share and the truncated share land in boundary.csv, the W&B row and the
console, with the max_new_tokens warning."""

import csv

from boundlab.boundary.tracker import build_tracker
from boundlab.probe.context import ProbeContext
from boundlab.probe.spec import ProbeSpec
from boundlab.probe.store import Store
from boundlab.sampling.base import Completion, GenSettings
from boundlab.tasks.base import Problem, Task
from boundlab.verify import build_verifier


class ScriptedSampler:
    """Each model dir's name picks what it writes: the base boxes, the checkpoint is cut off."""

    def __init__(self, model_dir):
        self.kind = model_dir.rsplit("/", 1)[-1]
        self.rows_per_call = 64

    def generate(self, requests, settings, seed):
        out = []
        for _prompt, count in requests:
            if self.kind == "base":
                out.append([Completion(r"so $\boxed{3}$", 5, "eos")] * count)
            else:
                out.append([Completion("Given 3 apples and", 8, "length")] * (count - 1)
                           + [Completion("The answer is 3.", 5, "eos")])
        return out

    def close(self):
        pass


class Recorder:
    def __init__(self):
        self.logged = []

    def define_step_metric(self, *a):
        pass

    def log(self, m):
        self.logged.append(m)

    def log_line_plot(self, *a, **k):
        pass

    def log_table(self, *a, **k):
        pass

    def log_image(self, *a, **k):
        pass


def test_shares_per_checkpoint(tmp_path, capsys):
    task = Task("t", [Problem("a", "q", "3"), Problem("b", "q", "3")], verifier="math")
    for d in ("base", "ckpt"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "config.json").write_text("{\"which\": \"%s\"}" % d)
    store = Store(tmp_path / "s.sqlite")
    verifier = build_verifier("math", workers=1)
    logger = Recorder()
    try:
        tr = build_tracker(tmp_path / "run",
                           ProbeContext(task, store, verifier, lambda d: (ScriptedSampler(d), None), logger,
                                        progress=False),
                           ProbeSpec(n=4, gen=GenSettings(max_new_tokens=8), seed=0, bootstrap_iters=10))
        (tmp_path / "run").mkdir(exist_ok=True)
        tr.probe_base(str(tmp_path / "base"))
        tr.probe_checkpoint(5, str(tmp_path / "ckpt"))
    finally:
        verifier.close()
        store.close()
    with (tmp_path / "run" / "boundary.csv").open() as f:
        rows = {r["kind"]: r for r in csv.DictReader(f)}
    assert (rows["base"]["boxed_share"], rows["base"]["truncated_share"]) == ("1.000000", "0.000000")
    assert (rows["checkpoint"]["boxed_share"], rows["checkpoint"]["truncated_share"]) == ("0.000000", "0.750000")
    assert rows["checkpoint"]["pass@1"] == "0.250000"  # the stated answer counts, the cut-off never
    ck = [m for m in logger.logged if m.get("probe/step") == 5][0]
    assert (ck["probe/boxed_share"], ck["probe/truncated_share"]) == (0.0, 0.75)
    out = capsys.readouterr().out.splitlines()
    assert "[boundlab] probe checkpoint step 5: warning: 75% of completions were cut off before a " \
           "final answer: raise probe.max_new_tokens=8" in out
