"""The worker template: the program whose forks are a ProcessPool's workers.

A worker started as a new ``python3.14`` pays for its interpreter's start
(15 ms with ``site``) and for loading the worker code, each worker of each
pool. The template pays once: it starts as the caller's Python would, with
the caller's environment, loads the worker code (child.py's ``Loaded``), and
then forks a worker on each request, as multiprocessing's forkserver does.
spawn.py is the caller's side, and says when a template is replaced.

Usage::

    python3 template.py CONTROL

CONTROL is the descriptor of a SOCK_SEQPACKET socket to the process that
started it (spawn.py puts it at CONTROL_FD). A
request passes descriptors: the worker's five ends (see child.py), then the
caller's stdout, stderr and working directory as the request is made, and a
pipe for the worker's exit status; its data is the caller's umask. The
reply is the worker's pid, with a pidfd for it, or why there is no worker.

The template is the workers' parent, so it reaps them: when one ends, its
exit status (as ``subprocess`` gives a returncode: negative for a signal)
goes down its status pipe. At the end of CONTROL (the caller closed it, to
replace this template, or ended) it takes no more requests, and exits once
its last worker has ended: each worker ends with its pool, by its lifeline.
It runs no thread, so a fork copies a consistent process.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import io
import os
import select
import signal
import socket
import struct
import sys
from types import ModuleType

#: Where the caller puts the template's end of the control socket.
CONTROL_FD = 3
#: A request's data: the caller's umask (-1: unknown, keep the template's).
REQUEST = struct.Struct("<i")
#: The descriptors a request passes, in order.
REQUEST_FDS = ("requests", "replies", "lifeline", "files", "stop_board",
               "stdout", "stderr", "cwd", "status")
#: The worker's descriptors among them (child.serve's arguments).
WORKER_ENDS = 5
#: A reply's data: the worker's pid, or 0 followed by why there is none.
REPLY = struct.Struct("<i")
#: What goes down a status pipe: the returncode.
STATUS = struct.Struct("<i")
#: Room for a request's data (a request is REQUEST.size bytes).
REQUEST_ROOM = 64


def _load_child() -> ModuleType:
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_interp_rpc_process_child",
                                                  os.path.join(here, "child.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor above stderr that is not in ``keep``."""
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _become_worker(child: ModuleType, loaded: object, control: socket.socket,
                   fds: list[int], umask: int) -> None:
    """In the forked process: take on what a worker started now by the
    caller would have, serve the pool, and exit; never returns."""
    code = 1
    try:
        ends = fds[:WORKER_ENDS]
        stdout, stderr, cwd = fds[WORKER_ENDS:WORKER_ENDS + 3]
        control.detach()  # closed below: its object must never close a reused number
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        if isinstance(sys.stdout, io.TextIOWrapper):
            # As Python sets stdout up at its start: line by line to a terminal.
            sys.stdout.reconfigure(line_buffering=os.isatty(1))
        os.fchdir(cwd)
        if umask >= 0:
            os.umask(umask)
        _close_all_but(set(ends))
        sys.argv = [child.__file__ or "child.py", *map(str, ends)]
        child.serve(loaded, *ends)
        code = 0
    except SystemExit as exc:  # as the interpreter would exit with it
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class _Template:
    """The template's state: its control socket and the workers it reaps."""

    def __init__(self, control: socket.socket, child: ModuleType, loaded: object) -> None:
        self.control = control
        self.child = child
        self.loaded = loaded
        self.accepting = True
        #: Each living worker's pidfd: its pid and status pipe.
        self.workers: dict[int, tuple[int, int]] = {}
        self.events = select.poll()
        self.events.register(control.fileno(), select.POLLIN)

    def run(self) -> None:
        while self.accepting or self.workers:
            for fd, _ in self.events.poll():
                if self.accepting and fd == self.control.fileno():
                    self._serve_request()
                elif fd in self.workers:
                    self._report_exit(fd)

    def _serve_request(self) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(self.control, REQUEST_ROOM, len(REQUEST_FDS))
        except OSError:
            data, fds = b"", []
        if not data:  # the caller is done with this template
            for fd in fds:
                os.close(fd)
            self.accepting = False
            self.events.unregister(self.control.fileno())
            self.control.close()
            return
        if len(fds) != len(REQUEST_FDS) or len(data) != REQUEST.size:
            for fd in fds:
                os.close(fd)
            self._reply(REPLY.pack(0) + b"a malformed request", [])
            return
        (umask,) = REQUEST.unpack(data)
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            self._reply(REPLY.pack(0) + f"fork() failed: {exc}".encode(), [])
            return
        if pid == 0:
            _become_worker(self.child, self.loaded, self.control, fds, umask)
        status = fds[-1]
        for fd in fds[:-1]:
            os.close(fd)
        pidfd = os.pidfd_open(pid)  # before it is reaped: it cannot name another process
        self.workers[pidfd] = (pid, status)
        self.events.register(pidfd, select.POLLIN)
        self._reply(REPLY.pack(pid), [pidfd])

    def _reply(self, data: bytes, fds: list[int]) -> None:
        with contextlib.suppress(OSError):  # the caller gave up on the request:
            socket.send_fds(self.control, [data], fds)  # the worker's pipes end it

    def _report_exit(self, pidfd: int) -> None:
        pid, status = self.workers.pop(pidfd)
        self.events.unregister(pidfd)
        _, wait_status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):  # the pool no longer asks
            os.write(status, STATUS.pack(os.waitstatus_to_exitcode(wait_status)))
        os.close(status)
        os.close(pidfd)


def main(control_fd: int) -> None:
    # Ctrl-C in a terminal reaches the whole process group: the pool, not
    # the template or its workers, decides what an interrupt means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # What the caller had open and inheritable (posix_spawn, unlike
    # subprocess, passes it on) must not stay open here for good.
    _close_all_but({control_fd})
    control = socket.socket(fileno=control_fd)
    child = _load_child()
    loaded = child.Loaded()
    gc.freeze()  # what is loaded now stays shared: a worker's collections never copy it
    _Template(control, child, loaded).run()


if __name__ == "__main__":
    main(int(sys.argv[1]))
