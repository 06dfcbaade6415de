#!/usr/bin/env python3
"""Server CPU per `read_file` call: codex-free vs the Node filesystem MCP server.

Runs N (default 1,000) sequential 10 KB `read_file` calls over stdio with a minimal
JSON-RPC client (newline-delimited messages, one request in flight) against our release
binary (`codex-free serve --stdio --project DIR`, fresh state home) and against
`@modelcontextprotocol/server-filesystem` (its `read_text_file` tool), and prints the
server process's CPU time per call (user + system from /proc/<pid>/stat, all threads,
measured over the timed calls only: start-up and 20 warm-up calls are left out), wall
time per call, and each server's `tools/list` size in bytes.

Usage: scripts/bench-vs-node.py [--calls N] [--rounds R] [--bin target/release/codex-free]
                                [--node-server PATH/to/mcp-server-filesystem/dist/index.js]
Linux only (/proc). Not part of CI: timings on shared runners are noise.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

TICK = os.sysconf("SC_CLK_TCK")
# Our tools/list in bytes before its schemas were trimmed for the wire (the reference the
# current figure is printed beside).
TOOLS_LIST_BEFORE = 20130


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    # fields 14 and 15 (utime, stime) are at index 11 and 12 after the command name
    return (int(parts[11]) + int(parts[12])) / TICK


class Client:
    def __init__(self, argv, env, cwd):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed stdout during {method}")
            m = json.loads(line)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"], len(line)
            if "method" in m and "id" in m:  # a server request (roots/list): answer empty
                reply = {"jsonrpc": "2.0", "id": m["id"], "result": {"roots": []}}
                self.p.stdin.write((json.dumps(reply) + "\n").encode())
                self.p.stdin.flush()

    def notify(self, method):
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def run(name, argv, env, cwd, tool, path, calls):
    c = Client(argv, env, cwd)
    c.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "bench", "version": "1"}})
    c.notify("notifications/initialized")
    listed, list_bytes = c.request("tools/list", {})
    tools_json = len(json.dumps(listed, separators=(",", ":")))
    args = {"name": tool, "arguments": {"path": path}}
    for _ in range(20):
        r, _ = c.request("tools/call", args)
    text = r["content"][0]["text"]
    if r.get("isError") or len(text) < 10_000:
        raise RuntimeError(f"{name}: unexpected answer {text[:200]!r}")
    cpu0, t0 = cpu_seconds(c.p.pid), time.perf_counter()
    for _ in range(calls):
        c.request("tools/call", args)
    cpu1, t1 = cpu_seconds(c.p.pid), time.perf_counter()
    c.close()
    return {"name": name, "cpu_ms": (cpu1 - cpu0) * 1000 / calls,
            "wall_ms": (t1 - t0) * 1000 / calls, "tools_list": tools_json,
            "tools": len(listed["tools"])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "codex-free"))
    ap.add_argument("--node", default="node")
    ap.add_argument("--node-server", default="/opt/codex-free-npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        project, state, home = (os.path.join(d, x) for x in ("project", "state", "home"))
        for x in (project, state, home):
            os.makedirs(x)
        line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz\n"
        body = (line * (10_240 // len(line) + 1))[:10_240]
        f = os.path.join(project, "ten-kb.txt")
        with open(f, "w") as fh:
            fh.write(body)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(HOME=home, CODEX_FREE_HOME=state)
        rounds = {"ours": [], "node": []}
        # Rounds alternate the two servers so that a busy moment of the machine falls on
        # both; each figure is the median of its rounds.
        for _ in range(a.rounds):
            rounds["ours"].append(run("codex-free", [os.path.abspath(a.bin), "serve", "--stdio", "--project", project],
                                      env, project, "read_file", "ten-kb.txt", a.calls))
            rounds["node"].append(run("server-filesystem (Node)", [a.node, a.node_server, project],
                                      env, project, "read_text_file", f, a.calls))
    def median(rs):
        out = dict(rs[0])
        for k in ("cpu_ms", "wall_ms"):
            out[k] = statistics.median(r[k] for r in rs)
        out["cpu_rounds"] = [round(r["cpu_ms"], 3) for r in rs]
        return out
    ours, node = median(rounds["ours"]), median(rounds["node"])
    print(f"{a.calls} sequential read_file calls of a 10,240-byte file over stdio, median of {a.rounds} alternating rounds")
    print(f"{'server':28} {'CPU ms/call':>12} {'wall ms/call':>13} {'tools/list bytes':>17} {'tools':>6}  CPU per round")
    for r in (ours, node):
        print(f"{r['name']:28} {r['cpu_ms']:12.3f} {r['wall_ms']:13.3f} {r['tools_list']:17} {r['tools']:6}  {r['cpu_rounds']}")
    print(f"{'codex-free before trimming':28} {'':>12} {'':>13} {TOOLS_LIST_BEFORE:17} {24:6}"
          "  (schemas as derived, measured at commit 950c005)")
    ratio = ours["cpu_ms"] / node["cpu_ms"] if node["cpu_ms"] else float("inf")
    print(f"ours / Node CPU: {ratio:.2f} (target <= 0.33)")


if __name__ == "__main__":
    sys.exit(main())
