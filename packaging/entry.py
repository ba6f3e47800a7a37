"""Entry point of the standalone bundle: the same `tpuscope` command as the pip install."""

import multiprocessing
import sys

from tpuscope.cli import console_main

if __name__ == "__main__":
    # The pod page's worker processes are spawned: in a frozen bundle a child starts here too.
    multiprocessing.freeze_support()
    sys.exit(console_main())
