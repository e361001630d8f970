"""How a ProcessPool starts a worker process: the worker template forks it.

One template (template.py) serves every pool of this process, while what a
new Python would start from is unchanged: the environment, the site
directories (where ``pip install`` puts the ``.pth`` files that extend
``sys.path``) and the worker code's files. When one of them has changed, the
next worker comes from a new template, and the old one is retired: it
takes no more requests, and exits once its last worker has ended. A
template that has died is replaced at the next worker's start.

So a worker sees what a ``python3.14`` started by its caller at that moment
would see: that environment, the caller's working directory, umask,
stdout and stderr as the worker starts. Its resource limits, CPU affinity
and nice value are those of its template's start; its hash seed is its
template's (shared with the template's other workers, as multiprocessing's
forked workers share theirs).

A ``ForkedProcess`` is the pool's handle on a worker, in place of a
``subprocess.Popen``: the pool is not the worker's parent, so the template
reports the worker's exit status. A pidfd from the template names the
process, for signals and to see it end, with no pid-reuse race.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import site
import socket
import threading
from pathlib import Path
from socket import recv_fds, send_fds

from interp_rpc.process.interpreter import python_executable
from interp_rpc.process.template import CONTROL_FD, REPLY, REQUEST, STATUS

TEMPLATE_PROGRAM = Path(__file__).with_name("template.py")
#: The files a template loads at its start: a change to one makes a new template.
TEMPLATE_SOURCES = tuple(
    Path(__file__).parent / name for name in (
        "template.py", "child.py", "framing.py", "segments.py", "stop_board.py",
        "../_worker/main.py", "../_worker/wire.py"))
#: How long a template may take to answer a request (its start included,
#: on a loaded machine) before the worker's start fails.
ANSWER_SECONDS = 60.0
#: How long the template may take to report an ended worker's exit status.
STATUS_SECONDS = 5.0
#: How long a template that closed its socket may take to end.
ENDED_SECONDS = 1.0


def exit_description(returncode: int | None) -> str:
    """How a worker process ended, as a person reads it."""
    if returncode is None:
        return ("ended, and its exit status is unknown: the worker template that "
                "started it ended first")
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (signal {-returncode})"
    return f"exited with code {returncode}"


def _readable(fd: int, timeout: float | None) -> bool:
    ready = select.poll()
    ready.register(fd, select.POLLIN)
    return bool(ready.poll(None if timeout is None else max(0, round(timeout * 1000))))


class ForkedProcess:
    """A worker the template forked; ``returncode`` as ``subprocess`` gives
    it, once known (None while it runs, and if its template ended first).

    The pool's threads use it at once (a reader reaps it while ``close()``
    terminates it), so its descriptors close only once no thread is
    waiting on them, and a signal is never sent through a closed one (whose
    number may name something else by then)."""

    def __init__(self, pid: int, pidfd: int, status: int) -> None:
        self.pid = pid
        #: Readable once the process has ended (see select.poll).
        self.pidfd = pidfd
        self._status = status
        self.returncode: int | None = None
        self._ended = False
        self._lock = threading.Lock()
        self._waiting = 0
        self._closed = False

    def send_signal(self, signum: int) -> None:
        with self._lock:
            if self._ended or self._closed:
                return
            with contextlib.suppress(ProcessLookupError):  # it has ended
                signal.pidfd_send_signal(self.pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def wait(self, timeout: float | None = None) -> int | None:
        """The returncode once the process has ended (None: its template
        ended first and nobody knows it). TimeoutError after ``timeout``."""
        with self._lock:
            if self._ended or self._closed:
                return self.returncode
            self._waiting += 1
        try:
            if not _readable(self.pidfd, timeout):
                raise TimeoutError(f"worker process {self.pid} still runs")
            with self._lock:
                if not self._ended:
                    if _readable(self._status, STATUS_SECONDS):
                        report = os.read(self._status, STATUS.size)
                        if len(report) == STATUS.size:
                            (self.returncode,) = STATUS.unpack(report)
                    self._ended = True
                return self.returncode
        finally:
            with self._lock:
                self._waiting -= 1
                if self._closed and not self._waiting:
                    self._close_now()

    def close(self) -> None:
        """Release the descriptors, once no thread waits on them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._waiting:
                self._close_now()

    def _close_now(self) -> None:
        os.close(self.pidfd)
        os.close(self._status)


def _umask() -> int:
    """This process's umask, read without setting it (os.umask would, for
    a moment, in every thread); -1 where the kernel does not say."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return -1


def _mtime(path: str | Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _site_directories() -> list[str]:
    found = list(site.getsitepackages())
    with contextlib.suppress(AttributeError):  # a Python built without user site
        found.append(site.getusersitepackages())
    return found


class _Start:
    """What a new Python would start from, as a template was started."""

    def __init__(self) -> None:
        self.environment = dict(os.environb)
        self.sites = [(d, _mtime(d)) for d in _site_directories()]
        self.sources = [_mtime(p) for p in TEMPLATE_SOURCES]

    def still_holds(self) -> bool:
        return (os.environb == self.environment
                and all(_mtime(d) == t for d, t in self.sites)
                and [_mtime(p) for p in TEMPLATE_SOURCES] == self.sources)


class WorkerTemplate:
    """A running template process and the socket that asks it for workers.

    Started with posix_spawn, not subprocess: the pool keeps it for the
    life of this process and reaps it when it has ended (``reaped``), and a
    Popen still running at exit would warn of it."""

    def __init__(self) -> None:
        self.start = _Start()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        program = python_executable()
        try:
            # dup2 onto CONTROL_FD leaves that copy open across exec, and
            # only in the template: no other process started meanwhile
            # inherits the socket.
            self.pid = os.posix_spawn(
                program, [program, str(TEMPLATE_PROGRAM), str(CONTROL_FD)], os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, theirs.fileno(), CONTROL_FD),
                              (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                              (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)],
                setsigmask=(), setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._ended = os.pidfd_open(self.pid)  # not yet reaped: it names the template
        self.returncode: int | None = None
        self.control: socket.socket | None = ours

    def running(self) -> bool:
        return self._ended >= 0 and not _readable(self._ended, 0)

    def reaped(self) -> bool:
        """Whether it has ended, and is reaped now (retired templates only)."""
        if self.running():
            return False
        self.wait_ended(0)
        return True

    def fork(self, ends: list[int]) -> ForkedProcess:
        """A worker process with the pool's ``ends`` (see child.py).
        ConnectionError if this template has ended; OSError if it could not
        fork. An interrupted exchange retires the template (its reply
        would be read by the next request)."""
        control = self.control
        if control is None:
            raise ConnectionError("the worker template was retired")
        status_read, status_write = os.pipe()
        # O_PATH: a directory this process may enter but not list works too.
        cwd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        outputs = [_open_or_null(fd) for fd in (1, 2)]
        answered = False
        try:
            send_fds(control, [REQUEST.pack(_umask())],
                            [*ends, *(fd for fd, _ in outputs), cwd, status_write])
            if not _readable(control.fileno(), ANSWER_SECONDS):
                raise OSError(f"the worker template (pid {self.pid}) did not answer "
                              f"in {ANSWER_SECONDS:g} s")
            data, fds, _, _ = recv_fds(control, 1024, 1)
            answered = True
        except (BrokenPipeError, ConnectionResetError):
            raise ConnectionError(f"the worker template has ended{self._how()}") from None
        finally:
            for fd in (cwd, status_write, *(fd for fd, opened in outputs if opened)):
                os.close(fd)
            if not answered:
                self.retire()
                os.close(status_read)
        if not data:
            self.retire()
            for fd in fds:
                os.close(fd)
            os.close(status_read)
            raise ConnectionError(f"the worker template has ended{self._how()}")
        (pid,) = REPLY.unpack_from(data)
        if pid <= 0 or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            os.close(status_read)
            why = data[REPLY.size:].decode(errors="replace")
            raise OSError(f"the worker template could not start a worker: {why}")
        return ForkedProcess(pid, fds[0], status_read)

    def _how(self) -> str:
        """How the template ended, as a clause (its own errors went to
        stderr); empty while it still runs."""
        try:
            returncode = self.wait_ended(ENDED_SECONDS)
        except TimeoutError:
            return ""
        return "" if returncode is None else f": it {exit_description(returncode)}"

    def wait_ended(self, timeout: float) -> int | None:
        """Reap the template once it has ended; its returncode (None if
        another wait of this process took it). TimeoutError after
        ``timeout``."""
        if self._ended >= 0 and not _readable(self._ended, timeout):
            raise TimeoutError(f"the worker template (pid {self.pid}) still runs")
        if self.returncode is None and self._ended >= 0:
            with contextlib.suppress(ChildProcessError):  # reaped by someone's os.wait()
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            os.close(self._ended)
            self._ended = -1
        return self.returncode

    def retire(self) -> None:
        """No more requests: it exits once its last worker has ended."""
        if self.control is not None:
            self.control.close()
            self.control = None

    def forget(self) -> None:
        """Close this process's descriptors of it (in a forked child)."""
        self.retire()
        if self._ended >= 0:
            os.close(self._ended)
            self._ended = -1


def _open_or_null(fd: int) -> tuple[int, bool]:
    """``fd`` if it is open, else a new descriptor of /dev/null (a worker
    started by this process would find it closed; it gets nowhere to write
    instead); whether it was opened here."""
    try:
        os.fstat(fd)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC), True
    return fd, False


class _Templates:
    """This process's current template, and the retired ones to reap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: WorkerTemplate | None = None
        self.retired: list[WorkerTemplate] = []

    def start_worker(self, ends: list[int]) -> ForkedProcess:
        with self.lock:
            self.retired = [t for t in self.retired if not t.reaped()]
            for attempt in range(2):  # a template found ended is replaced once
                template = self._template()
                try:
                    return template.fork(ends)
                except ConnectionError:
                    self._retire_current()
                    if attempt:
                        raise
            raise AssertionError("unreachable")

    def _template(self) -> WorkerTemplate:
        current = self.current
        if current is not None and (current.control is None
                                    or not current.running()
                                    or not current.start.still_holds()):
            self._retire_current()
            current = None
        if current is None:
            current = self.current = WorkerTemplate()
        return current

    def _retire_current(self) -> None:
        if self.current is not None:
            self.current.retire()
            self.retired.append(self.current)
            self.current = None

    def template_pid(self) -> int | None:
        """The current template's process id (None: none runs)."""
        with self.lock:
            return None if self.current is None else self.current.pid

    def forget(self) -> None:
        """In a child forked from this process: these templates are not its
        (and the lock may have been held by a thread that is not here)."""
        for template in (self.current, *self.retired):
            if template is not None:
                template.forget()
        self.lock = threading.Lock()
        self.current = None
        self.retired = []


_templates = _Templates()
os.register_at_fork(after_in_child=_templates.forget)


def start_worker(ends: list[int]) -> ForkedProcess:
    """A new worker process with the pool's ``ends``, forked by the template."""
    return _templates.start_worker(ends)


def template_pid() -> int | None:
    return _templates.template_pid()
