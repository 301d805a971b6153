"""A TCP proxy in front of Redis that a test can cut and restore: one client loses its connection
(and cannot make a new one) while the others, connected directly, carry on."""
from __future__ import annotations

import asyncio

from tests.faults.servers import free_port


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._transports: set[asyncio.Transport] = set()

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        return self

    async def cut(self) -> None:
        """Every connection dropped, no new one accepted until restore()."""
        self._server.close()
        for t in list(self._transports):
            t.abort()
        self._transports.clear()

    async def restore(self) -> None:
        await self.start()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._transports |= {writer.transport, up_writer.transport}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # the other side went away: close ours too
        finally:
            writer.transport.abort()
