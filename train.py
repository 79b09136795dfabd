"""Train with RL or distillation and probe every checkpoint: `python train.py algo=grpo`."""

import hydra
from hydra.core.hydra_config import HydraConfig

from boundlab.cli import friendly_errors, known_choices
from boundlab.config import check_keys, register_configs
from boundlab.validate import validate

register_configs()


@known_choices
@hydra.main(version_base="1.3", config_path="conf", config_name="train")
@friendly_errors
def main(cfg):
    from boundlab.training.app import run

    check_keys(cfg)
    validate(cfg)
    run(cfg, HydraConfig.get().runtime.output_dir)


if __name__ == "__main__":
    main()
