#!/usr/bin/env python3
"""Trim LiteLLM's model price list to the chat models of the providers codex-free speaks.

Source: LiteLLM (MIT, https://github.com/BerriAI/litellm), file
`model_prices_and_context_window.json` (shipped in the `litellm` wheel as
`litellm/model_prices_and_context_window_backup.json`).

Usage:
    pip download --no-deps -d /tmp/ll litellm
    unzip -o /tmp/ll/litellm-*.whl 'litellm/model_prices_and_context_window_backup.json' -d /tmp/ll
    python3 scripts/trim_litellm_prices.py /tmp/ll/litellm/model_prices_and_context_window_backup.json \
        <litellm-version> <date-taken YYYY-MM-DD> > crates/models/src/model_prices.json

Kept per model: the flat rates, the 1-hour cache-write rate
(`cache_creation_input_token_cost_above_1hr`) and the long-context tiers
(`<rate>_above_<N>k_tokens`: every token of a request whose input exceeds N thousand
tokens is billed at the tier's rates, as LiteLLM and the providers bill them).
"""
import json
import re
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
    "cache_creation_input_token_cost_above_1hr",
    "output_cost_per_reasoning_token",
    "max_input_tokens",
    "max_output_tokens",
    "max_tokens",
    "supports_reasoning",
    "supports_response_schema",
]
# Long-context tiers of the kept rates (batch, flex and priority variants are not kept:
# agents' transcripts do not say which service tier a request used).
TIER = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost"
    r"|cache_creation_input_token_cost|cache_creation_input_token_cost_above_1hr)_above_\d+k_tokens$"
)


def main() -> None:
    src, version, taken = sys.argv[1], sys.argv[2], sys.argv[3]
    data = json.load(open(src))
    out = {}
    for key, entry in sorted(data.items()):
        if not isinstance(entry, dict):
            continue
        if entry.get("litellm_provider") not in PROVIDERS or entry.get("mode") not in MODES:
            continue
        if key.startswith("ft:"):
            continue
        out[key] = {
            f: v
            for f, v in entry.items()
            if (f in FIELDS or TIER.match(f)) and isinstance(v, (int, float, str, bool))
        }
    doc = {
        "_source": "LiteLLM model_prices_and_context_window.json (MIT, BerriAI/litellm), litellm " + version + ", trimmed by scripts/trim_litellm_prices.py",
        "_taken": taken,
        "models": out,
    }
    json.dump(doc, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
