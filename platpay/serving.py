"""`platpay serve --workers N`: uvicorn's supervisor, but the parent accepts every connection and hands it
to the server process holding the fewest open connections (ties in turn).

uvicorn's own `--workers` shares one listening socket between its processes and whichever wakes first
accepts: keep-alive connections end up split 1/7 or 8/0 between two processes as often as 4/4, so a
second process often adds nothing. Here the parent (uvicorn's `Multiprocess`: health checks, restart of a
dead process, SIGHUP/SIGTTIN/SIGTTOU, SIGTERM to every process and a wait for each to drain) binds the
socket, and a thread of it accepts and passes each connection's descriptor over a Unix socket pair
(SCM_RIGHTS) to a process; the process serves it with uvicorn's own HTTP protocol
(`loop.connect_accepted_socket`), so keep-alive, limits, the access log and the graceful drain are
uvicorn's as before. A process reports each connection it closes with one byte back on the same pair:
the parent always knows how many connections each process holds. The cost is one hand-off per new
connection in the parent (tens of microseconds), none per request."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import select
import socket
import threading
from typing import Any, cast

from uvicorn import Config, Server
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors import multiprocess

from platpay.loops import running_loop

logger = logging.getLogger("uvicorn.error")


class OneSendPerTurn:
    """A connection's transport whose writes within one turn of the event loop leave as one send: uvicorn
    writes a response's head and its body separately (two system calls, two TCP segments for the client to
    read); joined, they cost one. The bytes are the same, in the same order, at most one turn later (a
    stream's later chunks go out as they come: each turn's writes are sent at its end). Everything else is
    the transport's own."""

    __slots__ = ("_chunks", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._chunks: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._chunks:
            self._loop.call_soon(self.send_now)
        self._chunks.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def send_now(self) -> None:
        """Send what was written and is waiting for the turn's end."""
        chunks, self._chunks = self._chunks, []
        if chunks and not self._transport.is_closing():
            self._transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(chunk) for chunk in self._chunks)

    def close(self) -> None:
        self.send_now()  # what was written goes before the close, as the transport's own buffer does
        self._transport.close()

    def write_eof(self) -> None:
        self.send_now()
        self._transport.write_eof()

    def abort(self) -> None:
        self._chunks = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneSendPerTurnProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools) on a `OneSendPerTurn` transport: `Config(http=...)` (a class at
    module level: `--workers` hands the config to its processes by pickling it)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # running_loop() keeps the loop in the connection's context. uvloop (PostgreSQL's default loop) runs a
        # transport's callbacks in one context of its own, which each request's task copies, so a request there
        # never looks it up again; asyncio's loop (SQLite's) runs them in fresh copies: one lookup per request.
        self._joined = OneSendPerTurn(transport, running_loop())
        super().connection_made(cast(asyncio.Transport, self._joined))

    def eof_received(self) -> None:
        # The client half-closed: asyncio's transport closes itself when this returns, so what this turn
        # wrote (an answer to the last request) is sent first.
        self._joined.send_now()
        super().eof_received()


# Seconds a hand-off may wait for a process whose queue of connections to take is full (a hung process):
# past it the connection goes to another process.
_HANDOFF_TIMEOUT_SECONDS = 2.0
# How long the accepting thread waits in select() before it looks at the process list and exit again.
_POLL_SECONDS = 0.2
_CLOSED = b"c"  # a process → parent: one of the connections you handed me has closed
_READY = b"r"  # a process → parent: my application has started, I serve what you hand me


class HandoffServer(Server):
    """A server process's uvicorn `Server` that listens on nothing: it serves the connections the parent
    hands it over `channel`, and reports each one's end back on it."""

    def __init__(self, config: Config, channel: socket.socket) -> None:
        super().__init__(config)
        self._channel = channel
        self._protocol_class: Any = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # lifespan startup, no listener of its own
        loop = asyncio.get_running_loop()
        report = self._report_closed

        class Counted(self.config.http_protocol_class):  # type: ignore[name-defined]
            def connection_lost(self, exc: Exception | None) -> None:
                try:
                    super().connection_lost(exc)
                finally:
                    report()

        self._protocol_class = Counted
        self._channel.setblocking(False)
        loop.add_reader(self._channel.fileno(), self._take_connections)
        with contextlib.suppress(OSError):
            self._channel.send(_READY)

    def _create_protocol(self) -> asyncio.Protocol:
        return self._protocol_class(
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
            _loop=asyncio.get_running_loop(),
        )

    def _take_connections(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                message, fds, _flags, _address = socket.recv_fds(self._channel, 64, 64)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message, fds = b"", []
            if not message and not fds:  # the parent has gone: no connection will come any more
                loop.remove_reader(self._channel.fileno())
                self.should_exit = True
                return
            for fd in fds:
                connection = socket.socket(fileno=fd)
                task = loop.create_task(self._serve_connection(connection))
                self.server_state.tasks.add(task)
                task.add_done_callback(self.server_state.tasks.discard)

    async def _serve_connection(self, connection: socket.socket) -> None:
        try:
            # Said outright, not left to asyncio: it sets TCP_NODELAY only on a socket whose protocol reads
            # IPPROTO_TCP, and a socket accepted from a listener made without one (uvicorn's bind_socket)
            # reads 0. Without it a response's head and body (two writes) wait on the client's delayed
            # ACK: ~40 ms per request on a keep-alive connection (bench/README.md, serve_balance).
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await asyncio.get_running_loop().connect_accepted_socket(self._create_protocol, connection)
        except OSError:  # the client left before we took it
            connection.close()
            self._report_closed()

    def _report_closed(self) -> None:
        with contextlib.suppress(OSError):  # the parent has gone, or is stopping
            self._channel.send(_CLOSED)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        with contextlib.suppress(ValueError, OSError):  # take no more connections; drain the ones we have
            asyncio.get_running_loop().remove_reader(self._channel.fileno())
        await super().shutdown(sockets=sockets)


class BalancedProcess(multiprocess.Process):
    """One server process and the parent's end of its hand-off channel."""

    def __init__(self, config: Config, sockets: list[socket.socket]) -> None:
        self.channel, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.open_connections = 0  # handed to it and not reported closed (the accepting thread's count)
        self.ready = False  # it has said it serves (its application started)
        self.gone = False  # its end of the channel is closed: it has exited
        self.retiring = False
        super().__init__(config, [child_end])  # passed to the spawned process like uvicorn's listener
        self._child_end: socket.socket | None = child_end

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()  # the spawned process gets only its own end
        for name in ("channel", "_child_end", "process"):
            state.pop(name, None)
        return state

    def start(self) -> None:
        super().start()
        if self._child_end is not None:
            self._child_end.close()  # the child holds its copy: its end closes when it exits
            self._child_end = None

    def target(self, sockets: list[socket.socket] | None = None) -> None:  # pragma: no cover
        assert sockets
        self._channel_in_child = sockets[0]
        super().target(None)

    @property
    def server(self) -> Server:
        if self._server is None:
            self._server = HandoffServer(self.config, self._channel_in_child)
        return self._server

    def handoff(self, connection: socket.socket) -> bool:
        """Pass `connection` to this process; False if it cannot take it."""
        try:
            socket.send_fds(self.channel, [b"h"], [connection.fileno()])
        except TimeoutError:  # its queue is full: a hung process (uvicorn's health check replaces it)
            return False
        except OSError:  # it has exited
            self.gone = True
            return False
        self.open_connections += 1
        return True

    def read_reports(self) -> None:
        """What the process says: it is ready; connections it closed. Marks it gone once its end closes."""
        try:
            data = self.channel.recv(4096)
        except (BlockingIOError, InterruptedError, TimeoutError):
            return
        except OSError:
            data = b""
        if not data:
            self.gone = True
            self.ready = False
            return
        if _READY in data:
            self.ready = True
        self.open_connections = max(0, self.open_connections - data.count(_CLOSED))

    def terminate(self) -> None:
        self.retiring = True
        super().terminate()
        self.channel.close()

    def kill(self) -> None:
        self.retiring = True
        super().kill()
        self.channel.close()


class BalancedMultiprocess(multiprocess.Multiprocess):
    """uvicorn's supervisor with the accepting thread (the processes it starts are `BalancedProcess`es)."""

    def __init__(self, config: Config, listener: socket.socket) -> None:
        super().__init__(config, sockets=[])
        self.listener = listener
        self._turn = itertools.count()
        self._accepting = threading.Thread(target=self._accept_forever, name="platpay-accept", daemon=True)

    def run(self) -> None:
        # uvicorn's supervisor starts, restarts (a dead or hung process, SIGHUP) and adds (SIGTTIN) its
        # processes by the module's name `Process`: ours while this supervisor runs (`serve`'s parent
        # process runs nothing else).
        original = multiprocess.Process
        multiprocess.Process = BalancedProcess  # type: ignore[misc]
        try:
            super().run()
        finally:
            multiprocess.Process = original  # type: ignore[misc]

    def init_processes(self) -> None:
        super().init_processes()
        self._accepting.start()

    def terminate_all(self) -> None:
        self.should_exit.set()
        if self._accepting.is_alive():
            self._accepting.join()  # no connection is handed to a process after this point
        with contextlib.suppress(OSError):
            self.listener.close()  # what waits in the backlog is refused, as uvicorn's supervisor does
        super().terminate_all()

    def _alive(self) -> list[BalancedProcess]:
        return [
            process
            for process in list(self.processes)
            if isinstance(process, BalancedProcess) and not process.retiring and not process.gone
        ]

    def _accept_forever(self) -> None:
        self.listener.setblocking(False)
        while not self.should_exit.is_set():
            alive = self._alive()
            channels = {process.channel: process for process in alive}
            # Until a process has started, connections wait in the backlog (as with uvicorn's own).
            watched = [*channels, self.listener] if any(p.ready for p in alive) else [*channels]
            if not watched:
                self.should_exit.wait(_POLL_SECONDS)
                continue
            try:
                readable, _, _ = select.select(watched, [], [], _POLL_SECONDS)
            except (OSError, ValueError):  # a channel closed under us (a process replaced): look again
                continue
            for ready in readable:
                if ready is not self.listener:
                    channels[ready].read_reports()
            if self.listener in readable and not self.should_exit.is_set():
                self._accept_ready([process for process in alive if process.ready and not process.gone])

    def _accept_ready(self, serving: list[BalancedProcess]) -> None:
        while serving:
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # out of descriptors, a connection reset in the backlog: go on
                logger.warning("accept failed: %s", error)
                return
            try:
                self._dispatch(connection, serving)
            finally:
                connection.close()  # the process holds its own copy

    def _dispatch(self, connection: socket.socket, serving: list[BalancedProcess]) -> None:
        turn = next(self._turn)
        count = len(serving)
        # Fewest open connections first; among equals, the next one in turn.
        ranked = sorted(range(count), key=lambda i: (serving[i].open_connections, (i - turn) % count))
        connection.setblocking(True)
        for index in ranked:
            process = serving[index]
            process.channel.settimeout(_HANDOFF_TIMEOUT_SECONDS)
            if process.handoff(connection):
                return
        logger.warning("no server process could take a connection: closed")


def run(app: str, **options: Any) -> None:
    """`uvicorn.run(app, workers=N, ...)` with the connections balanced over the N processes (`app`: an
    import string, as uvicorn's workers need)."""
    config = Config(app, **options)
    listener = config.bind_socket()
    # uvicorn's processes call listen() on the shared socket themselves; ours never see it.
    listener.listen(config.backlog)
    try:
        BalancedMultiprocess(config, listener).run()
    finally:
        with contextlib.suppress(OSError):
            listener.close()
