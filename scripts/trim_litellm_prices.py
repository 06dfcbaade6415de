#!/usr/bin/env python3
"""Trim LiteLLM's model price list to the chat models of the providers codex-free speaks.

Source: LiteLLM (MIT, https://github.com/BerriAI/litellm), file
`model_prices_and_context_window.json` (shipped in the `litellm` wheel as
`litellm/model_prices_and_context_window_backup.json`).

Usage:
    pip download --no-deps -d /tmp/ll litellm
    unzip -o /tmp/ll/litellm-*.whl 'litellm/model_prices_and_context_window_backup.json' -d /tmp/ll
    python3 scripts/trim_litellm_prices.py /tmp/ll/litellm/model_prices_and_context_window_backup.json \
        <litellm-version> > src/providers/model_prices.json
"""
import json
import sys

PROVIDERS = {"openai", "anthropic", "deepseek", "ollama", "openrouter", "lm_studio"}
MODES = {"chat", "responses"}
FIELDS = [
    "litellm_provider",
    "mode",
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "output_cost_per_reasoning_token",
    "max_input_tokens",
    "max_output_tokens",
    "max_tokens",
    "supports_reasoning",
    "supports_response_schema",
]


def main() -> None:
    src, version = sys.argv[1], sys.argv[2]
    data = json.load(open(src))
    out = {}
    for key, entry in sorted(data.items()):
        if not isinstance(entry, dict):
            continue
        if entry.get("litellm_provider") not in PROVIDERS or entry.get("mode") not in MODES:
            continue
        if key.startswith("ft:"):
            continue
        out[key] = {f: entry[f] for f in FIELDS if f in entry and isinstance(entry[f], (int, float, str, bool))}
    doc = {
        "_source": "LiteLLM model_prices_and_context_window.json (MIT, BerriAI/litellm), litellm " + version + ", trimmed by scripts/trim_litellm_prices.py",
        "models": out,
    }
    json.dump(doc, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
