"""ProcessPool: the pool contract over worker processes.

pool (the executor), engine (which worker runs what: the dispatch, a reader
thread per worker that also watches it, close), worker_process (one OS
process and its pipes), spawn (how a worker process starts: forked by the
worker template, template.py), handle (one call), futures, framing
(messages on a pipe, both sides), child (what a worker process runs),
interpreter (which Python the workers run).
"""

from interp_rpc.process.pool import ProcessPool

__all__ = ["ProcessPool"]
