"""./dev bench: interp-rpc against its peers, side by side in one run.

Usage: ./dev bench [--quick] [--runs K] [--only NAME[,NAME]] [--with-ipyparallel]
                   [--no-dask] [--workers W] [--out PATH]
See bench/README.md for what each measure means, and --help for the options.

Workers of interp-rpc and of the process pools import this script as their
__main__, as multiprocessing's spawn does, so everything happens under the
__main__ guard: importing the script costs a worker nothing.
"""

if __name__ == "__main__":
    import sys

    from harness.cli import main

    sys.exit(main(sys.argv[1:]))
