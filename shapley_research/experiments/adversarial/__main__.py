"""``python -m shapley_research.experiments.adversarial generate ...``: see :func:`main`."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
