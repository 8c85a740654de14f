"""A TCP proxy on 127.0.0.1 in front of PostgreSQL, run in the test's own event loop, that makes the
faults of a real network and a real database restart happen on demand:

- `stop()` / `start()`: the port refuses connections (a database that is down), then accepts them again
  on the same port (it is back);
- `blackhole = True`: connections are accepted and never answered (a firewall dropping packets);
- `cut_all()`: every open connection is torn down at once (a restart, a failover, pg_terminate_backend);
- `trap_commit(marker, forward=...)`: on the connection that has carried `marker` (say an idempotency key,
  which travels as a statement parameter), the next commit point — a COMMIT, or outside BEGIN … COMMIT the
  statement that carries `marker` again (a transaction of one statement: db/lean.py's LeanTransaction sends
  a keyed transfer's every write, the key's with them, so) — is either dropped unsent together with the
  connection (it never committed), or delivered and the connection cut before its answer comes back (it
  committed, and the client cannot know);
- `silence(marker)` / `silence_all()`: an open connection stops forwarding, in one direction or both, from
  the moment `marker` passes (say mid-transaction) or at once, while both its sockets stay open: what
  either end sends is swallowed and neither learns that the other closed (a network that drops packets, not
  one that refuses them: a half-open connection). The server's session lives on until its own timeouts end
  it (`idle_in_transaction_session_timeout`, keepalives), as behind a real partition. New connections are
  forwarded as usual (or blackholed, with `blackhole`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass
class _Trap:
    marker: bytes
    forward: bool  # deliver the COMMIT (it commits) before cutting, or cut before it is sent
    sprung: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class _Silence:
    marker: bytes
    up: bool  # swallow what the client sends after the marker
    down: bool  # swallow what the server sends, from the marker's own answer on
    fell: asyncio.Event = field(default_factory=asyncio.Event)
    count: int = 0  # connections it silenced


class _Link:
    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.seen_marker = False
        self.in_transaction = False  # between a BEGIN it forwarded and the COMMIT or ROLLBACK ending it
        self.cut_on_reply: _Trap | None = None
        self.silent_up = False
        self.silent_down = False

    @property
    def silent(self) -> bool:
        return self.silent_up or self.silent_down

    def cut(self) -> None:
        for writer in (self.client, self.upstream):
            if writer is not None:
                writer.transport.abort()


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.blackhole = False
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._trap: _Trap | None = None
        self._silence: _Silence | None = None

    async def start(self) -> TcpProxy:
        """Listen (on the same port as before, after a stop)."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        """Stop listening and cut every connection: from now on, connecting is refused."""
        if self._server is not None:
            self._server.close()
            self._server = None
        self.cut_all()
        await asyncio.sleep(0)

    def cut_all(self) -> None:
        for link in list(self._links):
            link.cut()
        self._links.clear()

    def silence(self, marker: str, *, direction: str = "both") -> _Silence:
        """From now until `speak()`, every connection that carries `marker` goes silent right after it: the
        chunk carrying it reaches the server (the statement runs), then `direction` ("up": what the client
        sends, "down": what the server answers, from that statement's answer on, "both") is swallowed.
        Returns the armed silence: its `fell` is set when a connection went silent, `count` says how many."""
        self._silence = _Silence(
            marker.encode(), up=direction in ("up", "both"), down=direction in ("down", "both")
        )
        return self._silence

    def speak(self) -> None:
        """Disarm `silence`: connections opened or used from now on are forwarded (silent ones stay so)."""
        self._silence = None

    def silence_all(self, *, direction: str = "both") -> int:
        """Every connection open now goes silent at once (idle or busy); how many did."""
        for link in self._links:
            link.silent_up = link.silent_up or direction in ("up", "both")
            link.silent_down = link.silent_down or direction in ("down", "both")
        return len(self._links)

    @property
    def silent_links(self) -> int:
        return sum(1 for link in self._links if link.silent)

    def trap_commit(self, marker: str, *, forward: bool) -> asyncio.Event:
        """Arm the trap for the next COMMIT on a connection that carried `marker`; set once it is sprung."""
        self._trap = _Trap(marker.encode(), forward)
        return self._trap.sprung

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        link = _Link(writer)
        self._links.add(link)
        try:
            if self.blackhole:
                await reader.read()  # hold the connection, answer nothing, until the client gives up
                return
            try:
                upstream_reader, link.upstream = await asyncio.open_connection(*self.target)
            except OSError:
                return
            up = asyncio.ensure_future(self._pump_up(reader, link))
            down = asyncio.ensure_future(self._pump_down(upstream_reader, link))
            pumps = {up, down}
            try:
                # Either side closing closes the other, as the server's close reaches a direct client; not
                # across a silent direction: its packets are lost, a close as well (the other end never
                # learns of it, as behind a network that drops packets).
                pending = pumps
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    if (up in done and not link.silent_up) or (down in done and not link.silent_down):
                        break
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            link.cut()
            self._links.discard(link)

    async def _pump_up(self, reader: asyncio.StreamReader, link: _Link) -> None:
        assert link.upstream is not None
        while chunk := await reader.read(65536):
            if link.silent_up:
                continue  # lost on the way
            silence = self._silence
            if silence is not None and silence.marker in chunk:
                link.silent_up, link.silent_down = silence.up, silence.down
                silence.count += 1
                silence.fell.set()
            trap = self._trap
            link.in_transaction = link.in_transaction or b"BEGIN" in chunk
            if trap is not None:
                again = link.seen_marker and trap.marker in chunk and not link.in_transaction
                link.seen_marker = link.seen_marker or trap.marker in chunk
                if (link.seen_marker and b"COMMIT" in chunk) or again:
                    self._trap = None
                    if not trap.forward:
                        trap.sprung.set()
                        link.cut()
                        return
                    link.cut_on_reply = trap
            if b"COMMIT" in chunk or b"ROLLBACK" in chunk:
                link.in_transaction = False
            link.upstream.write(chunk)
            await link.upstream.drain()

    async def _pump_down(self, reader: asyncio.StreamReader, link: _Link) -> None:
        while chunk := await reader.read(65536):
            if link.silent_down:
                continue  # lost on the way
            if link.cut_on_reply is not None:  # the server answered the COMMIT: it committed
                link.cut_on_reply.sprung.set()
                link.cut()
                return
            link.client.write(chunk)
            with contextlib.suppress(ConnectionError):
                await link.client.drain()
