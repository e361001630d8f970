"""What every worker interpreter runs: main.py, which the engine executes in
each new subinterpreter, and the modules it loads beside it by path (wire,
profiling), which the caller imports from here too. Standard library only:
a worker must start without importing interp_rpc."""
