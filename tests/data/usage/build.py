#!/usr/bin/env python3
"""Builds tests/data/usage/ from the real-CLI fixture transcripts (/work/shared/fixtures or
FIXTURES=...): the originals, plus the traps of usage counting added as extra files:
  codex/.../30/rollout-...-dup.jsonl   every token_count row written twice, one `info: null`
  codex/.../29/rollout-...-resumed.jsonl  a resumed session: the webapp session replayed
                                          (same id, same lines) and one new turn on gpt-5
  claude/.../<session>/subagents/agent-side.jsonl  a side-chain: two new requests and a
                                          replayed copy of a main-session message
  claude/.../<new session>.jsonl        a resumed Claude session replaying an old one
Run: python3 tests/data/usage/build.py"""
import json, os, shutil, sys
SRC = os.environ.get("FIXTURES", "/work/shared/fixtures/sessions")
OUT = os.path.dirname(os.path.abspath(__file__))
for agent in ("codex", "claude", "pi"):
    shutil.rmtree(os.path.join(OUT, agent), ignore_errors=True)
    shutil.copytree(os.path.join(SRC, agent), os.path.join(OUT, agent),
                    ignore=shutil.ignore_patterns("*.example"))

def lines(p):
    return [json.loads(l) for l in open(p) if l.strip()]

def write(p, recs):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")

cx = os.path.join(OUT, "codex/sessions/2026/11/29")
# 1. duplicated token_count rows, on another day, another session id.
src = lines(os.path.join(cx, "rollout-2026-11-29T12-52-10-01a2275c-eb1b-70f2-b7d6-f53c198a2181.jsonl"))
dup = []
for r in src:
    r = json.loads(json.dumps(r).replace("01a2275c-eb1b-70f2-b7d6-f53c198a2181", "01a2275c-dddd-70f2-b7d6-f53c198a2181")
                   .replace("2026-11-29T12:", "2026-11-30T08:"))
    dup.append(r)
    if r["type"] == "event_msg" and r["payload"].get("type") == "token_count":
        dup.append(r)  # the same event again (tokscale #297)
        dup.append({"timestamp": r["timestamp"], "type": "event_msg", "payload": {"type": "token_count", "info": None}})
write(os.path.join(OUT, "codex/sessions/2026/11/30/rollout-2026-11-30T08-52-10-01a2275c-dddd-70f2-b7d6-f53c198a2181-dup.jsonl"), dup)

# 2. a resumed session: the webapp rollout replayed as-is into a new file, then a new turn.
web = lines(os.path.join(cx, "rollout-2026-11-29T12-52-11-01a2275c-efdc-77a0-96ee-02aaa639a804.jsonl"))
last_total = [r for r in web if r["type"] == "event_msg" and r["payload"].get("type") == "token_count"][-1]["payload"]["info"]["total_token_usage"]
turn = {"input_tokens": 12000, "cached_input_tokens": 8000, "cache_write_input_tokens": 0, "output_tokens": 300, "reasoning_output_tokens": 120, "total_tokens": 12300}
total = {k: last_total[k] + turn[k] for k in turn}
# Resumed with the openai provider (the replayed mock turns are recognised as copies).
resumed = [dict(web[0], payload=dict(web[0]["payload"], model_provider="openai"))] + web[1:] + [
    {"timestamp": "2026-11-29T13:30:00.000Z", "type": "turn_context", "payload": {"cwd": "/home/dev/work/webapp", "model": "gpt-5"}},
    {"timestamp": "2026-11-29T13:30:05.000Z", "type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": turn}}},
]
write(os.path.join(cx, "rollout-2026-11-29T13-30-00-01a2275c-efdc-77a0-96ee-02aaa639a804-resumed.jsonl"), resumed)

# 3. a Claude side-chain next to the calc session, with a replayed main-session message.
cl = os.path.join(OUT, "claude/projects/-home-dev-work-claude-calc")
main = lines(os.path.join(cl, "f9db467b-2415-47d2-a8ce-50562b552233.jsonl"))
replayed = [r for r in main if r.get("type") == "assistant"][0]
side = []
for n, (inp, read, write_, out) in enumerate([(5, 2000, 300, 40), (7, 2300, 0, 90)]):
    side.append({"type": "assistant", "isSidechain": True, "agentId": "side", "sessionId": replayed["sessionId"],
                 "cwd": replayed["cwd"], "timestamp": f"2026-11-29T12:58:0{n}.000Z", "requestId": f"req_side_{n}",
                 "uuid": f"side-{n}", "message": {"id": f"msg_side_{n}", "type": "message", "role": "assistant",
                 "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "sub-agent step"}],
                 "usage": {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write_, "output_tokens": out}}})
side.append(dict(replayed, isSidechain=True))
write(os.path.join(cl, "f9db467b-2415-47d2-a8ce-50562b552233/subagents/agent-side.jsonl"), side)

# 4. a resumed Claude session: a new file replaying the hello session's lines, new session id.
hello = os.path.join(OUT, "claude/projects/-home-dev-work-claude-hello")
old = lines(os.path.join(hello, "7917781e-79ed-44a6-af39-d7f79b9d1541.jsonl"))
write(os.path.join(hello, "aaaa781e-79ed-44a6-af39-d7f79b9d1541.jsonl"),
      [dict(r, sessionId="aaaa781e-79ed-44a6-af39-d7f79b9d1541") for r in old])
print("built", OUT)
