"""The Python side of the "Python (interp-rpc)" kernel: the IPython shell it
runs cells in.

The kernel (the C++ in src/kernel) imports this package on its loader thread
and wires the shell to Jupyter's messages. Nothing here is an API of its own.
"""
