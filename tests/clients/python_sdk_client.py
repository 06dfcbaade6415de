"""An independent MCP client (the official Python SDK, `pip install mcp`) used by the
integration tests. It connects over stdio or streamable HTTP, lists the tools, and, when a
file is named, reads it through `read_file` by following the continuation lines until the
whole file has been seen. Prints one JSON object on stdout.

With `multi`, it starts the server in multi-project mode and, sending no `_meta` at all
(as this SDK does), lists the projects, tries FILE unbound, binds PROJECT, reads FILE, and
lists resources and prompts.

usage: python_sdk_client.py stdio BIN PROJECT [FILE]
       python_sdk_client.py http URL TOKEN [FILE]
       python_sdk_client.py multi BIN ACCESS_ROOT PROJECT FILE
"""
import asyncio
import json
import re
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

CONT = re.compile(r"\(showing lines (\d+)-(\d+) of (\d+) — call again with offset=(\d+) for the rest\)$")


async def exercise(session, file):
    init = await session.initialize()
    tools = await session.list_tools()
    out = {
        "server": init.server_info.name,
        "instructions": init.instructions or "",
        "tools": sorted(t.name for t in tools.tools),
    }
    if file:
        offset, pages, text = 0, 0, ""
        while True:
            r = await session.call_tool("read_file", {"path": file, "offset": offset})
            body = "".join(c.text for c in r.content if c.type == "text")
            pages += 1
            lines = body.split("\n")
            m = CONT.search(lines[-1]) if lines else None
            if r.is_error:
                out["error"] = body
                break
            if not m:
                text += body
                break
            # a line page ends with whole lines, so the footer follows the content's own "\n"
            text += body[: body.rfind("\n") + 1]
            offset = int(m.group(4))
        out["pages"] = pages
        out["content"] = text
    return out


def text_of(r):
    return "".join(c.text for c in r.content if c.type == "text")


async def multi(session, project, file):
    await session.initialize()
    out = {}
    r = await session.call_tool("list_projects", {})
    out["list_projects"] = {"error": bool(r.is_error), "text": text_of(r)}
    r = await session.call_tool("read_file", {"path": file})
    out["unbound_read"] = {"error": bool(r.is_error), "text": text_of(r)}
    r = await session.call_tool("set_project_root", {"path": project})
    out["bind"] = {"error": bool(r.is_error), "text": text_of(r)}
    r = await session.call_tool("read_file", {"path": file})
    out["read"] = {"error": bool(r.is_error), "text": text_of(r)}
    out["resources"] = sorted(str(x.uri) for x in (await session.list_resources()).resources)
    out["prompts"] = sorted(p.name for p in (await session.list_prompts()).prompts)
    return out


async def main():
    mode = sys.argv[1]
    file = None
    if mode == "multi":
        _, _, binary, root, project, file = sys.argv
        params = StdioServerParameters(command=binary, args=["serve", "--stdio", "--access-root", root])
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                out = await multi(s, project, file)
    elif mode == "stdio":
        _, _, binary, project, *rest = sys.argv
        file = rest[0] if rest else None
        params = StdioServerParameters(command=binary, args=["serve", "--stdio", "--project", project])
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                out = await exercise(s, file)
    else:
        _, _, url, token, *rest = sys.argv
        file = rest[0] if rest else None
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                r, w = streams[0], streams[1]
                async with ClientSession(r, w) as s:
                    out = await exercise(s, file)
    print(json.dumps(out))


asyncio.run(main())
