"""`python -m sweep ...`: run a study (see `python -m sweep --help`)."""

import sys

from sweep.signals import exit_code, signal_name, stop_while_importing

# A signal while the libraries import (seconds) ends the process quietly; sweep.app then installs the clean handlers.
stop_while_importing()

if __name__ == "__main__":
    try:
        from sweep.app import main

        main()
    except KeyboardInterrupt as interrupt:  # before sweep.app's handlers, or one its clean-up did not catch
        print(f"sweep: interrupted by {signal_name(interrupt)}", file=sys.stderr)
        sys.exit(exit_code(interrupt))
