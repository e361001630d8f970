"""Measure 5 for one contender, in a fresh process: how long until its pool is ready.

Usage (run by the harness): python3 bench/ready_probe.py CONTENDER WORKERS

Prints "ready_seconds S" on its last line. Like run.py, it is imported by the
workers it starts, so it does nothing outside the __main__ guard.
"""

if __name__ == "__main__":
    import sys

    from harness.probe import main

    sys.exit(main(sys.argv[1:]))
