"""`python -m sweep ...`: run a study (see `python -m sweep --help`)."""

from sweep.app import main

if __name__ == "__main__":
    main()
