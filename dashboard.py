"""The boundary dashboard: `python dashboard.py RUN_OR_SWEEP_DIR... [--port 8050]`, or
`--export FILE.html` for one self-contained file. See docs/dashboard.md."""

import sys

from boundlab.dashboard.main import main

if __name__ == "__main__":
    sys.exit(main())
