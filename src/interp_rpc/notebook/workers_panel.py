"""The kernel's side of JupyterLab's Workers panel: the comm target
``interp-rpc.workers`` (protocol in docs/workers-panel.md).

The panel opens a comm on the target; the kernel answers with the pool's
status (workers_status.py), then keeps sending it: every
``BUSY_REFRESH_SECONDS`` while a map runs or a worker is busy, also while a
cell blocks the main shell; when it changes; and every
``IDLE_HEARTBEAT_SECONDS`` otherwise.
Without a pool it says so once, and sends nothing more until one starts.

Who sends the updates:
- in the interp-rpc kernel, for a pool of this process, a C++ thread of the
  kernel, reading the engine's status board without any GIL
  (``_interp_rpc_kernel.start_workers_feed``);
- otherwise (ipykernel, a ProcessPool, a ClusterPool), this module's
  thread, which asks the pool for its status (``pool.status()``).
Either way this module's thread supervises: it follows the notebook's pool
as it is started, replaced or closed, and the map announced by the map magic
(running_maps.py).

JupyterLab sends a comm's messages to a subshell of its own, so the panel's
requests are answered while the main shell runs a cell: "stop_map" stops
the running %parallel_map as Ctrl-C on the main shell would (a SIGINT to the
main thread, which the kernel handles as it handles an interrupt), and
"open_profile" answers with the last run's profile, as MIME data.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from time import monotonic
from typing import TYPE_CHECKING, Any

from interp_rpc.display import profile_mime
from interp_rpc.notebook import live, running_maps, workers_status
from interp_rpc.notebook.running_maps import RunningMap

if TYPE_CHECKING:
    from interp_rpc.notebook.notebook_pool import NotebookPool, Pool

#: The comm target the extension opens.
TARGET = "interp-rpc.workers"

#: How often the status is sent while workers run (at least twice a second).
BUSY_REFRESH_SECONDS = live.REFRESH_SECONDS

#: How often it is sent while nothing runs and nothing changes.
IDLE_HEARTBEAT_SECONDS = 5.0

#: How often a pool of other processes (a ProcessPool, a ClusterPool) is
#: asked for its status while idle, to see a worker turn busy.
IDLE_POLL_SECONDS = 1.0

#: States of workers at work: the panel is then refreshed often.
AT_WORK = ("busy", "stuck", "debugging", "starting")

#: What the panel may ask for.
ACTIONS = ("stop_map", "open_profile", "refresh")


class PanelFeed:
    """One open panel: its comm, and the thread that keeps it updated."""

    def __init__(self, comm: Any, notebook: NotebookPool, parent_header: dict[str, Any],
                 on_closed: Callable[[PanelFeed], None]) -> None:
        self._comm = comm
        self._notebook = notebook
        self._parent_header = parent_header
        self._on_closed = on_closed
        self._changed = threading.Condition()
        self._stopping = False  # guarded by _changed
        self._woken = False  # guarded by _changed: the map changed, or a refresh was asked
        self._thread = threading.Thread(target=self._run, name="interp-rpc workers panel",
                                        daemon=True)
        self._kernel_feed: Any | None = None  # the kernel's C++ publisher, when it serves
        self._kernel_feed_pool: Pool | None = None
        self.sent = 0  # status messages this thread sent

    @property
    def comm_id(self) -> str:
        return str(self._comm.comm_id)

    def start(self) -> None:
        self._comm.on_msg(self._on_msg)
        self._comm.on_close(self._on_close)
        running_maps.subscribe(self._on_map)
        self._thread.start()

    def close(self) -> None:
        """Stop sending, and close the comm: the panel says the kernel
        does not serve it any more (the extension was unloaded)."""
        self.stop()
        if not getattr(self._comm, "_closed", False):
            self._comm.close()

    def stop(self) -> None:
        """Stop sending (idempotent); any thread but the feed's own."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        running_maps.unsubscribe(self._on_map)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()
        self._stop_kernel_feed()

    # ------------------------------------------------------------ messages

    def _send(self, data: dict[str, Any]) -> None:
        if not getattr(self._comm, "_closed", False):  # closed by the panel meanwhile
            self._comm.send(data)

    def _on_close(self, msg: dict[str, Any]) -> None:
        self.stop()
        self._on_closed(self)

    def _on_msg(self, msg: dict[str, Any]) -> None:
        """A request from the panel; a malformed one gets an error message
        that names what is wrong, and changes nothing."""
        data = msg.get("content", {}).get("data")
        if not isinstance(data, dict):
            self._send(workers_status.error_message(
                f"a Workers panel message must be a JSON object with an 'action', "
                f"not {type(data).__name__}"))
            return
        action = data.get("action")
        if action not in ACTIONS:
            self._send(workers_status.error_message(
                f"unknown action {str(action)[:80]!r}: the Workers panel may ask for "
                + ", ".join(ACTIONS)))
            return
        if action == "stop_map":
            self._send(stop_map())
        elif action == "open_profile":
            self._send(self._profile())
        else:
            self._wake()

    def _profile(self) -> dict[str, Any]:
        profile = self._notebook.last_profile
        if profile is None:
            return {"type": "profile", "version": workers_status.PROTOCOL_VERSION,
                    "data": None, "message": "No profile yet: run %parallel_map first."}
        data = {profile_mime.MIME_TYPE: profile_mime.data(profile),
                "text/plain": profile.text()}
        return {"type": "profile", "version": workers_status.PROTOCOL_VERSION, "data": data}

    # ------------------------------------------------------------ updates

    def _on_map(self, running: RunningMap | None) -> None:
        feed = self._kernel_feed
        if feed is not None:
            _tell_kernel_feed(feed, running, self._pool_info(self._kernel_feed_pool))
        self._wake()

    def _wake(self) -> None:
        with self._changed:
            self._woken = True
            self._changed.notify_all()

    def _wait(self, seconds: float) -> tuple[bool, bool]:
        """Wait ``seconds``, or until woken; returns whether to stop, and
        whether it was woken (the map changed, or the panel asked)."""
        with self._changed:
            self._changed.wait_for(lambda: self._stopping or self._woken, seconds)
            woken, self._woken = self._woken, False
            return self._stopping, woken

    def _open_pool(self) -> Pool | None:
        return self._notebook.pool if self._notebook.started else None

    def _pool_info(self, pool: Pool | None) -> dict[str, Any]:
        return workers_status.pool_info(
            type(pool).__name__, 0 if pool is None else pool.workers,
            self._notebook.stuck_after, self._notebook.last_profile is not None)

    def _run(self) -> None:
        said_no_pool = False
        last: dict[str, Any] | None = None
        last_sent = 0.0
        woken = True  # the first status goes out at once
        while True:
            pool = self._open_pool()
            pause = IDLE_HEARTBEAT_SECONDS
            try:
                if pool is None:
                    self._stop_kernel_feed()
                    if not said_no_pool:
                        self._send(workers_status.no_pool_message())
                        said_no_pool = True
                elif self._kernel_feed_serves(pool):
                    said_no_pool = False
                    if woken:  # a refresh asked for, or the map changed: send now
                        _tell_kernel_feed(self._kernel_feed, running_maps.current(),
                                          self._pool_info(pool))
                else:
                    said_no_pool = False
                    running = running_maps.current()
                    message = workers_status.status_message(
                        self._pool_info(pool), pool.status(), self._notebook.stuck_after,
                        running)
                    working = running is not None or any(message["totals"].get(state)
                                                         for state in AT_WORK)
                    if (woken or working or message != last
                            or monotonic() - last_sent >= IDLE_HEARTBEAT_SECONDS):
                        self._send(message)
                        self.sent += 1
                        last, last_sent = message, monotonic()
                    # A local pool's status is cheap to read: a worker that
                    # turns busy shows within one refresh. Another pool's is
                    # a round trip to its processes: read less often when idle.
                    pause = (BUSY_REFRESH_SECONDS
                             if working or live.engine_in_this_process(pool)
                             else IDLE_POLL_SECONDS)
            except Exception as exc:  # the pool failed or closed meanwhile: say so, go on
                self._send(workers_status.error_message(
                    f"the pool's status failed: {type(exc).__name__}: {exc}"))
            stopping, woken = self._wait(pause)
            if stopping:
                return

    # ----------------------------------------------- the kernel's publisher

    def _kernel_feed_serves(self, pool: Pool) -> bool:
        """Whether the kernel's C++ publisher sends this pool's status (it
        is started for it, or restarted after the pool was replaced)."""
        kernel = _kernel_publisher()
        if kernel is None or not live.engine_in_this_process(pool):
            return False
        if self._kernel_feed is not None and self._kernel_feed_pool is pool:
            return True
        self._stop_kernel_feed()
        feed = kernel.start_workers_feed(
            pool.live_feed(), self.comm_id, self._parent_header, BUSY_REFRESH_SECONDS,
            IDLE_HEARTBEAT_SECONDS)
        _tell_kernel_feed(feed, running_maps.current(), self._pool_info(pool))
        self._kernel_feed, self._kernel_feed_pool = feed, pool
        return True

    def _stop_kernel_feed(self) -> None:
        feed, self._kernel_feed, self._kernel_feed_pool = self._kernel_feed, None, None
        if feed is not None:
            feed.stop()


def _kernel_publisher() -> Any | None:
    """The interp-rpc kernel's module, when it has the C++ workers feed."""
    kernel = sys.modules.get("_interp_rpc_kernel")  # the kernel puts its module there
    return kernel if hasattr(kernel, "start_workers_feed") else None


def _tell_kernel_feed(feed: Any, running: RunningMap | None, pool: dict[str, Any]) -> None:
    if running is None or running.since is None:
        feed.set_map(pool, "", 0, 0, 0, 0)
    else:
        feed.set_map(pool, running.target, running.total, running.since[0], running.since[1],
                     running.started_ns)


def stop_map() -> dict[str, Any]:
    """Stop the running %parallel_map as Ctrl-C on the main shell would."""
    running = running_maps.current()
    if running is None:
        return {"type": "stop_map", "version": workers_status.PROTOCOL_VERSION,
                "stopped": False, "message": "No map is running."}
    # To the main thread itself: a blocking wait there fails with EINTR and
    # the kernel raises KeyboardInterrupt, whichever kernel it is.
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
    return {"type": "stop_map", "version": workers_status.PROTOCOL_VERSION, "stopped": True,
            "message": f"Stopping {running.target}: {running.done()} of {running.total} "
                       "items done."}


class WorkersPanels:
    """The comm target and the panels open on it, for one notebook pool."""

    def __init__(self, notebook: NotebookPool) -> None:
        self._notebook = notebook
        self._feeds: dict[str, PanelFeed] = {}
        self._lock = threading.Lock()

    def register(self) -> bool:
        """Listen on the target; False where no kernel serves comms (a terminal)."""
        manager = _comm_manager()
        if manager is None:
            return False
        manager.register_target(TARGET, self._open)
        return True

    def _open(self, comm: Any, msg: dict[str, Any]) -> None:
        feed = PanelFeed(comm, self._notebook, dict(msg.get("header", {})), self._forget)
        with self._lock:
            self._feeds[feed.comm_id] = feed
        feed.start()

    def _forget(self, feed: PanelFeed) -> None:
        with self._lock:
            self._feeds.pop(feed.comm_id, None)

    def close(self) -> None:
        """Stop every panel's updates and the target (the extension unloads)."""
        manager = _comm_manager()
        if manager is not None:
            manager.unregister_target(TARGET, self._open)
        with self._lock:
            feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            feed.close()


def _comm_manager() -> Any | None:
    """The kernel's comm manager; None outside a kernel."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    import comm

    return comm.get_comm_manager()
