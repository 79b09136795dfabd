"""Train with RL or distillation and probe every checkpoint: `python train.py algo=grpo`."""

import hydra
from hydra.core.hydra_config import HydraConfig

from boundlab.cli import friendly_errors
from boundlab.config import check_keys, register_configs
from boundlab.probe.fit import fit_probe_settings

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
@friendly_errors
def main(cfg):
    from boundlab.training.app import run

    check_keys(cfg)
    cfg = fit_probe_settings(cfg, "train")
    run(cfg, HydraConfig.get().runtime.output_dir)


if __name__ == "__main__":
    main()
