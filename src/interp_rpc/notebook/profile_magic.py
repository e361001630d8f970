"""%parallel_profile: the profile of the last %parallel_map or %%parallel run,
shown, stored or exported."""

from __future__ import annotations

import keyword
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from interp_rpc.notebook import options, profile_view

if TYPE_CHECKING:
    from interp_rpc.notebook.magics import ParallelMagics


@options.plain_help
@magic_arguments()
@kwds(usage="%(prog)s [--functions] [--export PATH] [-o NAME]")
@argument("--functions", action="store_true",
          help="show the function profile (of a %%parallel_map --profile run)")
@argument("--export", metavar="PATH",
          help="write the profile: .json as a Chrome trace (Perfetto, chrome://tracing), "
               ".pstats as the merged function stats")
@argument("-o", "--out", metavar="NAME", help="store the Profile in this variable")
def parallel_profile(self: ParallelMagics, line: str) -> None:
    """Timeline (one lane per worker, one bar per item), utilization, queue
    wait, serialization cost and slowest items of the last %parallel_map
    or %%parallel run; its function profile with --functions."""
    args, rest = options.parse(parallel_profile, line)
    if args is None:
        return
    if rest:
        raise UsageError(f"%parallel_profile takes only options, not {rest!r}")
    if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
        raise UsageError(f"-o NAME must be a Python identifier, not {args.out!r}")
    last = self.notebook_pool.last_profile
    if last is None:
        print("No parallel run to profile yet: run %parallel_map or %%parallel first.")
        return
    if args.out:
        assert self.shell is not None
        self.shell.user_ns[args.out] = last
    if args.export:
        print(profile_view.export(last, args.export))
    if args.export or args.out:
        return
    profile_view.show(last, functions=args.functions)
