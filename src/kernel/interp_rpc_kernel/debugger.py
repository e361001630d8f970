"""JupyterLab's debugger in the kernel: the debug_request messages of the
Jupyter protocol, answered with debugpy, as ipykernel answers them.

Threads. The kernel's control thread (C++, src/kernel/debugger.cpp) hands
each debug_request to this module's own thread over a socket pair, and waits
for the reply there; it never runs Python while a debugger may be tracing, so
debugpy neither stops nor traces it. This thread is one of debugpy's own
kind (``is_pydev_daemon_thread``): debugpy never traces it nor stops it,
whatever breakpoints say. It waits on two sockets at once: requests from the
control thread, and messages from debugpy's adapter, whose events (a cell
stopped at a breakpoint) go to IOPub as debug_event messages at any time.

The cells run on the main thread, as always; a cell stopped at a breakpoint
waits inside debugpy, on the main thread, until a continue or step request
comes through here.

debugpy is imported on the first ``initialize`` request, not before: a
kernel that never debugs never loads it. It then starts debugpy's adapter
process, which this thread talks to as a DAP client, on the loopback.
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from interp_rpc_kernel.cell_files import (
    CELL_FILE_SUFFIX,
    HASH_METHOD,
    HASH_SEED,
    cell_directory,
    cell_file_name,
    cell_file_prefix,
    keeping_leading_empty_lines,
)
from interp_rpc_kernel.dap_connection import DapConnection, DapConnectionClosed, Message
from interp_rpc_kernel.namespace_variables import NamespaceVariables, is_shown

#: How long a request waits for debugpy's answer. Starting the adapter, or a
#: step on a loaded machine, takes seconds; no answer at all means debugpy
#: is stuck, and the frontend gets an error rather than a hang.
ADAPTER_TIMEOUT = 60.0
#: Where debugpy's adapter listens for this kernel: the loopback only.
ADAPTER_HOST = "127.0.0.1"

#: The modules whose frames the debugger hides and steps over: the kernel's
#: own machinery, between the cell and the main loop. Stepping out of a
#: cell's last line ends the step instead of entering IPython.
KERNEL_MODULES = (
    "IPython", "interp_rpc_kernel", "traitlets", "asyncio", "concurrent", "selectors",
    "contextlib", "codeop", "threading", "debugpy", "_pydevd_bundle", "_pydev_bundle",
    "pydevd", "pydevd_file_utils",
)

#: The kernel's thread that imports IPython as it starts
#: (interpreter_startup.cpp).
IPYTHON_IMPORT_THREAD = "interp-rpc-import"

#: Requests answered without debugpy (before any initialize, too).
_STATIC_COMMANDS = frozenset({
    "debugInfo", "inspectVariables", "richInspectVariables", "modules", "copyToGlobals",
    "dumpCell", "source", "configurationDone",
})

_FRAME_LENGTH = struct.Struct(">I")


class DebuggerError(Exception):
    """A request that cannot be answered; its message goes to the frontend."""


def _response(request: Message, success: bool = True, **fields: Any) -> Message:
    return {
        "type": "response",
        "request_seq": request.get("seq", 0),
        "seq": 0,
        "success": success,
        "command": request.get("command", ""),
        **fields,
    }


def _arguments(request: Message) -> dict[str, Any]:
    arguments = request.get("arguments", {})
    if not isinstance(arguments, dict):
        raise DebuggerError(f"'{request['command']}': 'arguments' must be an object")
    return arguments


def _string_argument(request: Message, name: str) -> str:
    value = _arguments(request).get(name)
    if not isinstance(value, str):
        raise DebuggerError(f"'{request['command']}' needs the string argument '{name}'")
    return value


def _source_path(request: Message) -> str:
    source = _arguments(request).get("source")
    path = source.get("path") if isinstance(source, dict) else None
    if not isinstance(path, str):
        raise DebuggerError(f"'{request['command']}' needs 'source' with a string 'path'")
    return path


def _wait_for_ipython_import() -> None:
    """Two threads importing modules that import each other deadlock (Python
    raises _DeadlockError in one): debugpy is imported once the kernel's
    import of IPython, which may still run when the first initialize comes,
    is over."""
    for thread in threading.enumerate():
        if thread.name == IPYTHON_IMPORT_THREAD:
            thread.join(ADAPTER_TIMEOUT)


def _shell() -> Any:
    """IPython's shell, or None while the kernel has not started it."""
    getipython = sys.modules.get("IPython.core.getipython")
    return None if getipython is None else getipython.get_ipython()


class KernelDebugger:
    """The kernel's side of a debug session (see the module docstring)."""

    def __init__(self, publish_event: Callable[[Message], None]) -> None:
        self._publish_event = publish_event
        self._adapter: DapConnection | None = None
        self._adapter_endpoint: tuple[str, int] | None = None
        self._seq = 0
        self._started = False
        self._breakpoints: dict[str, list[dict[str, Any]]] = {}
        self._stopped_threads: set[int] = set()
        self._attach_seq: int | None = None  # awaiting its "initialized" event
        self._namespace = NamespaceVariables()

    # -- the control thread's requests --------------------------------------

    def handle(self, request: Message) -> Message:
        """The response to one DAP request (never raises)."""
        try:
            command = request.get("command")
            if not isinstance(command, str):
                raise DebuggerError("a debug request needs a string 'command'")
            return self._dispatch(command, request)
        except DebuggerError as e:
            return _response(request, False, message=str(e), body={})
        except Exception as e:  # the thread serves on; the frontend learns why
            if isinstance(e, (DapConnectionClosed, TimeoutError)):
                self._lose_adapter()
            return _response(request, False, message=f"{type(e).__name__}: {e}", body={})

    def _dispatch(self, command: str, request: Message) -> Message:
        if command == "initialize":
            self._start()
            return self._forward(request)
        if command == "disconnect":
            try:
                return self._forward(request) if self._adapter else _response(request)
            finally:
                self._stop()
        if command in _STATIC_COMMANDS:
            handler: Callable[[Message], Message] = getattr(self, "_" + command)
            return handler(request)
        if not self._started:
            raise DebuggerError(
                f"'{command}': the debugger has not started (send 'initialize' first)"
            )
        if command == "attach":
            return self._attach(request)
        if command == "setBreakpoints":
            return self._set_breakpoints(request)
        if command == "variables":
            return self._variables(request)
        return self._forward(request)

    def before_interrupt(self, stopping: bool) -> Message:
        """The kernel is about to interrupt the cell, or to stop: a thread
        stopped at a breakpoint goes on first, so that the KeyboardInterrupt
        is raised in the cell's code, and not inside debugpy's wait, which
        would leave debugpy tracing every line at full cost until the cell
        ends (see resume_threads_left_stopped). A stop also ends the session,
        so that nothing is traced while the kernel exits."""
        try:
            if stopping and self._adapter is not None:
                self._forward({"type": "request", "command": "disconnect",
                               "arguments": {"restart": False, "terminateDebuggee": False}})
                self._stop()
            elif self._stopped_threads and self._adapter is not None:
                thread = min(self._stopped_threads)
                self._forward({"type": "request", "command": "continue",
                               "arguments": {"threadId": thread}})
        except Exception as e:  # the interrupt goes on anyway
            return {"released": False, "message": f"{type(e).__name__}: {e}"}
        return {"released": True}

    # -- debugpy ------------------------------------------------------------

    def _start(self) -> None:
        if self._started and self._adapter is not None:
            return
        if self._adapter_endpoint is None:
            _wait_for_ipython_import()
            import debugpy

            # Processes that cells or pools start are not debugged: debugpy
            # would otherwise inject itself into every Python they run.
            debugpy.configure(subProcess=False)
            host, port = debugpy.listen((ADAPTER_HOST, 0))
            self._adapter_endpoint = (str(host), int(port))
        self._adapter = DapConnection.connect(*self._adapter_endpoint, timeout=ADAPTER_TIMEOUT)
        keeping_leading_empty_lines.set()
        self._started = True

    def _stop(self) -> None:
        self._lose_adapter()
        keeping_leading_empty_lines.clear()
        self._breakpoints.clear()
        self._started = False

    def _lose_adapter(self) -> None:
        if self._adapter is not None:
            self._adapter.close()
            self._adapter = None
        self._stopped_threads.clear()
        self._attach_seq = None

    def _forward(self, request: Message) -> Message:
        """Sends a request to debugpy and returns its response, as the
        frontend numbered it."""
        if self._adapter is None:
            raise DebuggerError(f"'{request.get('command')}': debugpy is not connected")
        self._seq += 1
        seq = self._seq
        self._adapter.send({**request, "seq": seq})
        deadline = time.monotonic() + ADAPTER_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            message = self._adapter.receive(max(0.0, remaining))
            if message is None:
                raise TimeoutError(
                    f"debugpy did not answer '{request.get('command')}' in {ADAPTER_TIMEOUT:g} s"
                )
            if message.get("type") == "response" and message.get("request_seq") == seq:
                message["request_seq"] = request.get("seq", 0)
                return message
            self._from_adapter(message)

    def _from_adapter(self, message: Message) -> None:
        """A message debugpy sent unasked: an event for the frontend. (A
        response to a request of our own needs nothing more.)"""
        if message.get("type") != "event":
            return
        event = message.get("event")
        body = message.get("body") if isinstance(message.get("body"), dict) else {}
        assert isinstance(body, dict)
        if event == "initialized" and self._attach_seq is not None and self._adapter:
            # debugpy waits for configurationDone before it answers attach;
            # the frontend sends its own only after that answer.
            self._attach_seq = None
            self._seq += 1
            self._adapter.send({"type": "request", "seq": self._seq,
                                "command": "configurationDone"})
        elif event == "stopped" and isinstance(body.get("threadId"), int):
            self._stopped_threads.add(body["threadId"])
        elif event == "continued":
            if body.get("allThreadsContinued", True):
                self._stopped_threads.clear()
            else:
                self._stopped_threads.discard(body.get("threadId", -1))
        elif event == "thread" and body.get("reason") == "exited":
            self._stopped_threads.discard(body.get("threadId", -1))
        self._publish_event(message)

    def poll_adapter(self) -> None:
        """Handles what debugpy sent while no request waited for it."""
        if self._adapter is None:
            return
        try:
            while True:
                message = self._adapter.receive(0)
                if message is None:
                    return
                self._from_adapter(message)
        except (DapConnectionClosed, OSError, ValueError):
            self._lose_adapter()

    def adapter_socket(self) -> DapConnection | None:
        return self._adapter

    # -- requests answered here or changed on their way --------------------

    def _attach(self, request: Message) -> Message:
        assert self._adapter_endpoint is not None
        host, port = self._adapter_endpoint
        arguments = dict(_arguments(request))
        arguments["connect"] = {"host": host, "port": port}
        # Stepping may enter any library; the kernel's own frames are hidden.
        arguments.setdefault("justMyCode", False)
        arguments.setdefault("rules", [{"module": m, "include": False} for m in KERNEL_MODULES])
        self._attach_seq = self._seq + 1
        return self._forward({**request, "arguments": arguments})

    def _configurationDone(self, request: Message) -> Message:
        return _response(request)  # sent to debugpy during attach

    def _set_breakpoints(self, request: Message) -> Message:
        path = _source_path(request)
        response = self._forward(request)
        if response.get("success"):
            # Where debugpy put them (it may move one to the next line).
            placed = response.get("body", {}).get("breakpoints", [])
            self._breakpoints[path] = [{"line": b["line"]} for b in placed if "line" in b]
            if not self._breakpoints[path]:
                del self._breakpoints[path]
        return response

    def _variables(self, request: Message) -> Message:
        if not self._stopped_threads:
            reference = _arguments(request).get("variablesReference")
            if not isinstance(reference, int):
                raise DebuggerError("'variables' needs the integer 'variablesReference'")
            try:
                variables = self._namespace.children(reference)
            except KeyError:
                raise DebuggerError(f"no variable has the reference {reference}") from None
            return _response(request, body={"variables": variables})
        response = self._forward(request)
        body = response.get("body")
        if isinstance(body, dict) and isinstance(body.get("variables"), list):
            body["variables"] = [v for v in body["variables"] if is_shown(str(v.get("name")))]
        return response

    def _debugInfo(self, request: Message) -> Message:
        return _response(request, body={
            "isStarted": self._started,
            "hashMethod": HASH_METHOD,
            "hashSeed": HASH_SEED,
            "tmpFilePrefix": cell_file_prefix(),
            "tmpFileSuffix": CELL_FILE_SUFFIX,
            "breakpoints": [{"source": path, "breakpoints": points}
                            for path, points in self._breakpoints.items()],
            "stoppedThreads": sorted(self._stopped_threads),
            "richRendering": True,
            "exceptionPaths": ["Python Exceptions"],
            "copyToGlobals": True,
        })

    def _dumpCell(self, request: Message) -> Message:
        code = _string_argument(request, "code")
        path = cell_file_name(code)
        os.makedirs(cell_directory(), mode=0o700, exist_ok=True)
        Path(path).write_text(code, encoding="utf-8")
        return _response(request, body={"sourcePath": path})

    def _source(self, request: Message) -> Message:
        path = _source_path(request)
        if os.path.isfile(path):
            return _response(request, body={"content": Path(path).read_text(encoding="utf-8")})
        # A cell run before the debugger wrote it: IPython keeps its text.
        lines = linecache.getlines(path)
        if lines:
            return _response(request, body={"content": "".join(lines)})
        return _response(request, False, message=f"no source for {path}", body={})

    def _inspectVariables(self, request: Message) -> Message:
        shell = _shell()
        namespace = shell.user_ns if shell is not None else {}
        return _response(request, body={"variables": self._namespace.top_level(namespace)})

    def _richInspectVariables(self, request: Message) -> Message:
        name = _string_argument(request, "variableName")
        if not name.isidentifier():
            # The panel's groups ("special variables") have no value.
            return _response(request, body={"data": {}, "metadata": {}})
        data: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        if not self._stopped_threads:
            shell = _shell()
            if shell is not None:
                result = shell.user_expressions({name: name})[name]
                if result.get("status") == "ok":
                    data, metadata = result.get("data", {}), result.get("metadata", {})
        else:
            frame_id = _arguments(request).get("frameId")
            expression = f"__import__('IPython').get_ipython().display_formatter.format({name})"
            answer = self._forward({
                "type": "request", "command": "evaluate", "seq": request.get("seq", 0),
                "arguments": {"expression": expression, "frameId": frame_id,
                              "context": "clipboard"},
            })
            if not answer.get("success"):
                return _response(request, False, message=answer.get("message", ""), body={})
            data, metadata = ast.literal_eval(answer["body"]["result"])
        return _response(request, body={
            "data": data, "metadata": {k: v for k, v in metadata.items() if k in data}})

    def _copyToGlobals(self, request: Message) -> Message:
        destination = _string_argument(request, "dstVariableName")
        source = _string_argument(request, "srcVariableName")
        if not destination.isidentifier():
            raise DebuggerError(f"copyToGlobals: '{destination}' is no variable name")
        if not self._stopped_threads:
            raise DebuggerError("copyToGlobals: no cell is stopped")
        response = self._forward({
            "type": "request", "command": "setExpression", "seq": request.get("seq", 0),
            "arguments": {"expression": f"globals()[{destination!r}]", "value": source,
                          "frameId": _arguments(request).get("srcFrameId")},
        })
        return {**response, "command": request["command"]}

    def _modules(self, request: Message) -> Message:
        arguments = _arguments(request)
        modules = list(sys.modules.values())
        start = arguments.get("startModule", 0)
        count = arguments.get("moduleCount", len(modules))
        if not isinstance(start, int) or not isinstance(count, int):
            raise DebuggerError("modules: 'startModule' and 'moduleCount' must be integers")
        listed = []
        for index, module in enumerate(modules[start:start + count], start):
            origin = getattr(getattr(module, "__spec__", None), "origin", None)
            if isinstance(origin, str) and origin.endswith(".py"):
                listed.append({"id": index, "name": module.__name__, "path": origin})
        return _response(request, body={"modules": listed, "totalModules": len(modules)})


def resume_threads_left_stopped() -> None:
    """Main thread, after each cell: lets the threads debugpy still holds
    stopped run again, if the cell ended while stopped.

    An interrupt that comes while a cell waits at a breakpoint raises
    KeyboardInterrupt inside debugpy's wait, which ends the cell (debugpy
    tells the frontend the thread continued) but leaves the thread marked
    stopped, so debugpy would stop the next cell at its first line, telling
    no one, and answer no continue. Resuming here is what a continue request
    does. Nothing to do unless debugpy runs.
    """
    lifecycle = sys.modules.get("_pydevd_bundle.pydevd_thread_lifecycle")
    constants = sys.modules.get("_pydevd_bundle.pydevd_constants")
    if lifecycle is None or constants is None:
        return
    info = getattr(threading.current_thread(), "additional_info", None)
    if info is not None and info.pydev_state == constants.STATE_SUSPEND:
        lifecycle.resume_threads("*")


class DebuggerThread(threading.Thread):
    """Serves the control thread's debug requests (see the module docstring).

    Frames on ``requests``: a 4-byte big-endian length, then JSON. In:
    ``{"id": n, "request": {...}}`` (a debug request) or ``{"id": n,
    "kernel": "interrupt" | "stop"}`` (the kernel is about to interrupt the
    cell, or stop); out: ``{"id": n, "reply": {...}}``.
    """

    # debugpy neither traces nor stops this thread.
    pydev_do_not_trace = True
    is_pydev_daemon_thread = True

    def __init__(self, requests: socket.socket, debugger: KernelDebugger) -> None:
        super().__init__(name="interp-rpc debugger", daemon=True)
        self._requests = requests
        self._debugger = debugger

    def run(self) -> None:
        buffer = b""
        while True:
            adapter = self._debugger.adapter_socket()
            if adapter is not None and adapter.has_buffered_message():
                self._debugger.poll_adapter()
                continue
            waiting: list[Any] = [self._requests]
            if adapter is not None:
                waiting.append(adapter)
            readable, _, _ = select.select(waiting, [], [])
            if adapter is not None and adapter in readable:
                self._debugger.poll_adapter()
            if self._requests not in readable:
                continue
            chunk = self._requests.recv(65536)
            if not chunk:
                return  # the kernel is gone
            buffer += chunk
            while len(buffer) >= _FRAME_LENGTH.size:
                (length,) = _FRAME_LENGTH.unpack_from(buffer)
                if len(buffer) < _FRAME_LENGTH.size + length:
                    break
                frame = json.loads(buffer[_FRAME_LENGTH.size:_FRAME_LENGTH.size + length])
                buffer = buffer[_FRAME_LENGTH.size + length:]
                if "kernel" in frame:
                    reply = self._debugger.before_interrupt(frame["kernel"] == "stop")
                else:
                    reply = self._debugger.handle(frame["request"])
                body = json.dumps({"id": frame["id"], "reply": reply}).encode("utf-8")
                self._requests.sendall(_FRAME_LENGTH.pack(len(body)) + body)


def start(requests_fd: int, publish_event: Callable[[Message], None]) -> None:
    """Starts the debugger's thread on the kernel's end of the request
    socket pair (a descriptor it now owns). Called on the control thread, on
    the first debug request, which marks that thread as one of debugpy's
    own: it runs no more Python, but debugpy would list it among the
    threads to stop."""
    control = threading.current_thread()
    control.pydev_do_not_trace = True  # type: ignore[attr-defined]
    control.is_pydev_daemon_thread = True  # type: ignore[attr-defined]
    requests = socket.socket(fileno=requests_fd)
    requests.setblocking(True)
    DebuggerThread(requests, KernelDebugger(publish_event)).start()
