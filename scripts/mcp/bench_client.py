"""Benchmark client using the official Python SDK (PyPI `mcp`): the same measurements as
benches/mcp.rs. Usage: python bench_client.py (stdio FIXTURE_PATH | http URL) CALLS SESSIONS
"""

import asyncio
import json
import sys
import time
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


async def open_session(stack: AsyncExitStack, mode: str, target: str) -> ClientSession:
    if mode == "stdio":
        streams = await stack.enter_async_context(
            stdio_client(StdioServerParameters(command=target, args=[]))
        )
    else:
        streams = await stack.enter_async_context(streamable_http_client(target))
    session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
    await session.initialize()
    await session.list_tools()
    return session


async def main() -> None:
    mode, target, calls, sessions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    opens = []
    for _ in range(sessions):
        async with AsyncExitStack() as stack:
            started = time.perf_counter()
            await open_session(stack, mode, target)
            opens.append((time.perf_counter() - started) * 1000)
    async with AsyncExitStack() as stack:
        session = await open_session(stack, mode, target)
        await session.call_tool("echo", {"text": "warm"})
        started = time.perf_counter()
        for _ in range(calls):
            await session.call_tool("echo", {"text": "ping"})
        total = (time.perf_counter() - started) * 1000
    opens.sort()
    print(json.dumps({
        "client": "Python SDK",
        "transport": mode,
        "open_list_ms": opens[len(opens) // 2],
        "per_call_ms": total / calls,
        "calls": calls,
        "sessions": sessions,
    }))


asyncio.run(main())
