"""The paper's figures and tables from the probe store, for a base and the models trained from it:
`python report.py base=RUN_DIR runs=[RUN_DIR] out=REPORT_DIR` (see conf/report.yaml)."""

import hydra

import boundlab.builtins  # noqa: F401 - registers every built-in plug-in (one list)
from boundlab.cli import friendly_errors, known_choices
from boundlab.rundir.owner import owns_output_dir
from boundlab.config import as_typed, check_keys, register_configs
from boundlab.report.schema import ReportMain

register_configs()


@owns_output_dir("report")  # before Hydra writes .hydra/ into another run's dir
@known_choices(schema=ReportMain)
@hydra.main(version_base="1.3", config_path="conf", config_name="report")
@friendly_errors
def main(cfg):
    from boundlab.report.build import run

    check_keys(cfg)
    run(as_typed(cfg, ReportMain))  # typed from here down


if __name__ == "__main__":
    main()
