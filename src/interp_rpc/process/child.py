"""What a worker process runs, once the worker template (template.py) has
forked it.

It imports only the standard library and loads the worker code every
subinterpreter worker runs (``_worker/main.py``) by path, so a call runs
here exactly as it would in a subinterpreter: same unpickling, target
resolution, chunk loop and replies. The template loads that code once
(``load_worker``), and each worker it forks serves its pool with it
(``serve``). The engine's extension module is loaded only when a call first
needs it: for the column packer, by the first result that is a list or
tuple; for the chunk loops' stoppable items, by the first chunk its map may
stop.

A worker has five descriptors from its pool: requests are read from the
pipe REQUESTS and replies written to the pipe REPLIES (see framing.py), a
result's large buffers beside its pickle; the socket FILES passes the
descriptors of new shared memory segments both ways (segments.py);
STOP_BOARD is the memory of the pool's maps' stop flags (stop_board.py);
LIFELINE is a pipe whose other end only the pool holds. When the pool's
process ends, however it ends (even SIGKILL), the pipe reports end-of-file
and this process exits at once, so no worker outlives its pool.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import select
import socket
import struct
import sys
import threading
import time
from types import ModuleType

#: The tag of the setup message and its reply; calls have positive ids.
SETUP_TAG = 0
#: A reply's fixed fields: kind, deserialize ns, result serialize ns,
#: started and finished (time.monotonic_ns(), one clock for every process).
REPLY_META = struct.Struct("<iqqqq")
#: The exit code of a worker whose pool went away.
ORPHANED_EXIT_CODE = 70
#: The tag of relayed output (what a call prints into a notebook cell),
#: sent while the call runs and before its reply.
OUTPUT_TAG = -1
#: Relayed output's fixed fields: the caller's queue id, the item printing
#: (-1: none) and the stream (an index into OUTPUT_STREAMS); the text follows.
OUTPUT_META = struct.Struct("<qqB")
OUTPUT_STREAMS = ("stdout", "stderr")
#: How long a worker watches its request pipe after a reply before it
#: sleeps in read(): a caller's next call usually comes within it, and a
#: worker found awake saves the wake-up that dominates a tiny call. As long
#: as an InterpreterPool's idle worker spins (core/job_queue.hpp).
REQUEST_SPIN_NS = 50_000
#: The engine's extension module, as the package imports it.
ENGINE_MODULE = "interp_rpc._core"


def _load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _engine(package: str) -> ModuleType | None:
    """The package's extension module (loaded here once, under its own name,
    so that a target importing interp_rpc finds it loaded); None where it
    does not load."""
    engine = sys.modules.get(ENGINE_MODULE)
    if engine is not None:
        return engine
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(package, "_core" + suffix)
        if os.path.exists(path):
            break
    else:
        return None
    try:
        spec = importlib.util.spec_from_file_location(ENGINE_MODULE, path)
        assert spec is not None and spec.loader is not None
        engine = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(engine)
    except ImportError:
        return None
    sys.modules[ENGINE_MODULE] = engine
    return engine


def _watch_lifeline(fd: int) -> None:
    """Exit when the pool's process is gone (the pipe's write end closed)."""
    try:
        while os.read(fd, 1):
            pass
    finally:
        os._exit(ORPHANED_EXIT_CODE)


def _await_request(requests: select.poll, spin_ns: int) -> None:
    """Watch the request pipe (polled by ``requests``) for up to
    ``spin_ns`` without sleeping; then return, readable or not (the read
    that follows sleeps until it is)."""
    clock = time.monotonic_ns
    deadline = clock() + spin_ns
    while not requests.poll(0) and clock() < deadline:
        pass


class Loaded:
    """The worker code, loaded once in the template; every worker it forks
    shares it (copy-on-write)."""

    def __init__(self) -> None:
        here = os.path.dirname(os.path.abspath(__file__))
        self.package = os.path.dirname(here)
        self.segments = _load(os.path.join(here, "segments.py"), "_interp_rpc_process_segments")
        self.board = _load(os.path.join(here, "stop_board.py"), "_interp_rpc_process_stop_board")
        self.framing = _load(os.path.join(here, "framing.py"), "_interp_rpc_process_framing")
        self.worker = _load(os.path.join(self.package, "_worker", "main.py"),
                            "_interp_rpc_worker")


def serve(loaded: Loaded, requests: int, replies: int, lifeline: int, files_fd: int,
          stop_board: int) -> None:
    """Serve the pool until it closes the request pipe."""
    segments, board, framing, worker = (loaded.segments, loaded.board, loaded.framing,
                                        loaded.worker)
    # Calls see a fresh __main__, as in a subinterpreter, not the template's.
    main = ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    worker.keep_no_failures("a ProcessPool's worker keeps no frames: no debugging session "
                            "reaches another process")
    threading.Thread(target=_watch_lifeline, args=(lifeline,), name="interp-rpc lifeline",
                     daemon=True).start()
    # Replies go out from this thread, relayed output from whichever thread
    # prints (a call may start threads): one message at a time.
    sending = threading.Lock()

    files = socket.socket(fileno=files_fd)
    memory = segments.SharedMemory()

    def send(tag: int, parts: list[object]) -> None:
        with sending:
            framing.send(replies, files, memory, tag, parts)

    def send_output(queue_id: int, item: int | None, stream: str, text: str) -> None:
        meta = OUTPUT_META.pack(queue_id, -1 if item is None else item,
                                OUTPUT_STREAMS.index(stream))
        send(OUTPUT_TAG, [meta, text.encode("utf-8", "surrogatepass")])

    vars(worker)["output_transport"] = send_output  # see main.output_transport
    vars(worker)["load_engine"] = lambda: _engine(loaded.package)
    vars(worker)["stop_board"] = board.map_board(stop_board)
    out_of_band = worker.wire.OutOfBand(framing.SHARED_THRESHOLD)
    vars(worker)["result_out_of_band"] = out_of_band
    returned = worker.wire.RETURNED
    clock = time.monotonic_ns
    receive = framing.Receiver(requests, files, memory).receive
    try:
        tag, parts = receive()
        started = clock()
        kind, reply = worker.setup(memoryview(parts[0]))
        send(SETUP_TAG, [REPLY_META.pack(kind, 0, 0, started, clock()), reply])
        request_ready = select.poll()
        request_ready.register(requests, select.POLLIN)
        while True:
            _await_request(request_ready, REQUEST_SPIN_NS)
            tag, parts = receive()
            started = clock()
            kind, reply, deserialize_ns, result_ns = worker.execute(
                memoryview(parts[0]), [memoryview(p) for p in parts[1:]])
            # Parts in the pool's shared segments arrive as memoryviews.
            in_segments = any(type(part) is memoryview for part in parts)
            del parts
            meta = REPLY_META.pack(kind, deserialize_ns, result_ns, started, clock())
            buffers = out_of_band.buffers if kind == returned else []
            if in_segments:
                # Arguments over the pool's segments (cheap to let go: the
                # segments hold their memory) go before the reply, which
                # then tells the pool the segments are free: its next call
                # reuses them rather than fill new memory.
                worker.after_reply.clear()
            send(tag, [meta, reply, *buffers])
            del reply
            out_of_band.buffers.clear()  # the result itself can go now
            worker.after_reply.clear()  # and the call's arguments (see main.py)
    except (framing.ChannelClosed, BrokenPipeError):
        return  # the pool closed the pipe: it is done with this worker

