"""Rebuild the toy world's shipped base and teacher models (src/boundlab/worlds/toyworld/assets/), then
measure them. Same as:

    python -m boundlab.worlds.toyworld.pretrain --seed 0 && python -m boundlab.worlds.toyworld.measure --n 256

Extra arguments go to the pretraining (e.g. --threads 2, --out /tmp/toy).
"""

import sys

from boundlab.worlds.toyworld import measure, pretrain

if __name__ == "__main__":
    pretrain.main(sys.argv[1:] or ["--seed", "0"])
    out = [a for a in sys.argv[1:] if a.startswith("--out")]
    if not out:
        measure.main(["--n", "256"])
