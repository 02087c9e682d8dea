"""``python -m specviz``: dispatch to :func:`specviz.cli.main`."""

import sys

from specviz.cli import main

if __name__ == "__main__":
    sys.exit(main())
