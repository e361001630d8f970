"""pool.profile(): what a profile holds (model), how it is recorded from the
engine's records and the workers' item times (recorder), and its Chrome Trace
Event export (trace). Its notebook renderings live in interp_rpc.display."""

from interp_rpc.profiling.model import ItemRecord, Profile

__all__ = ["ItemRecord", "Profile"]
