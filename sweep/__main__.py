"""`python -m sweep ...`: run a study (see `python -m sweep --help`)."""

import signal
import sys

# A signal while the libraries import (seconds) ends the process quietly; sweep.app then installs the clean handlers.
for _signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_signum, lambda signum, frame: sys.exit(128 + signum))

from sweep.app import main  # noqa: E402 - after the handlers above

if __name__ == "__main__":
    main()
