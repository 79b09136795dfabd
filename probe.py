"""pass@k of any model on any task: `python probe.py model=... task=... probe=...`.

Also: `export=FILE.jsonl` (write prompts for another engine), `samples=FILE.jsonl` (score
completions made elsewhere, no model) and `match_entropy.of=BASE_DIR` (the temperature control:
boundlab.probe.entropy_match).
"""

import hydra
from hydra.core.hydra_config import HydraConfig

import boundlab.builtins  # noqa: F401 - registers every built-in plug-in (one list)
from boundlab.cli import friendly_errors, known_choices
from boundlab.rundir.owner import owns_output_dir
from boundlab.sweep import sweep_job
from boundlab.config import ProbeMain, as_typed, check_keys, register_configs
from boundlab.probe.fit import fit_probe_settings
from boundlab.validate import validate

register_configs()


@owns_output_dir("probe")  # before Hydra writes .hydra/ into another run's dir
@known_choices(schema=ProbeMain)
@hydra.main(version_base="1.3", config_path="conf", config_name="probe")
@friendly_errors
@sweep_job  # in a -m sweep, a bad job is reported and the others still run
def main(cfg):
    from boundlab.apps import probe_run as run

    check_keys(cfg)
    cfg = fit_probe_settings(cfg, "probe")
    validate(cfg)
    run(as_typed(cfg, ProbeMain), HydraConfig.get().runtime.output_dir)  # typed from here down


if __name__ == "__main__":
    main()
