"""Entry point of the standalone bundle: the same `tpuscope` command as the pip install."""

import sys

from tpuscope.cli import console_main

if __name__ == "__main__":
    sys.exit(console_main())
