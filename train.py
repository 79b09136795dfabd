"""Train with RL or distillation and probe every checkpoint: `python train.py algo=grpo`.

`python train.py resume=RUN_DIR` does not go through Hydra (which would create a run dir first):
boundlab.resume runs it with the run's own saved config. So does a SLURM requeue of the job that
made the run dir named by `hydra.run.dir=` (boundlab.rundir.slurm).
"""

import sys

import hydra
from hydra.core.hydra_config import HydraConfig

import boundlab.builtins  # noqa: F401 - registers every built-in plug-in (one list)
from boundlab.cli import friendly_errors, known_choices
from boundlab.rundir.owner import owns_output_dir
from boundlab.sweep import sweep_job
from boundlab.config import TrainMain, as_typed, check_keys, register_configs
from boundlab.probe.fit import fit_probe_settings
from boundlab.validate import validate

register_configs()


@owns_output_dir("train")  # before Hydra writes .hydra/ into another run's dir
@known_choices(schema=TrainMain)
@hydra.main(version_base="1.3", config_path="conf", config_name="train")
@friendly_errors
@sweep_job  # in a -m sweep, a bad job is reported and the others still run
def main(cfg):
    from boundlab.apps import train_run as run

    check_keys(cfg)
    cfg = fit_probe_settings(cfg, "train")
    validate(cfg)
    run(as_typed(cfg, TrainMain), HydraConfig.get().runtime.output_dir)  # typed from here down


if __name__ == "__main__":
    from boundlab import resume

    argv = resume.requeue_argv(sys.argv[1:])  # a SLURM requeue continues the run dir it made
    if resume.requested(argv):
        sys.exit(resume.main(argv))
    main()
