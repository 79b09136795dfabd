"""pass@k of any model on any task: `python probe.py model=... task=... probe=...`.

Also: `export=FILE.jsonl` (write prompts for another engine) and `samples=FILE.jsonl` (score
completions made elsewhere, no model).
"""

import hydra
from hydra.core.hydra_config import HydraConfig

from boundlab.cli import friendly_errors
from boundlab.config import check_keys, register_configs
from boundlab.probe.fit import fit_probe_settings

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="probe")
@friendly_errors
def main(cfg):
    from boundlab.probe.app import run

    check_keys(cfg)
    cfg = fit_probe_settings(cfg, "probe")
    run(cfg, HydraConfig.get().runtime.output_dir)


if __name__ == "__main__":
    main()
