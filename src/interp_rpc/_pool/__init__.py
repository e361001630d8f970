"""InterpreterPool, the caller's side of the engine: the executor (pool),
its maps (map, chunk_sizer), futures (futures, callbacks), what a reply means
(replies, remote_classes), how a target is named (targets), the C++ module
(engine), option checks (validation) and what happens at exit (exit_policy,
exit_status). Nothing here imports the notebook layer or IPython."""
