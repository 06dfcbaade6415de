//! Building one extraction request: the input text (V1's rendered rollout or V2's
//! evidence) and the request around it.

use super::{
    MAX_OUTPUT_TOKENS, Phase1Ctx, SYSTEM_PROMPT, SYSTEM_PROMPT_V2, blocking, input_budget,
    output_schema,
};
use codex_free_core::Result;
use codex_free_core::config::MemoryVersion;
use codex_free_models::{CompletionRequest, JsonSchemaSpec, Message};
use codex_free_store::ThreadRow;

/// The text a request carries for `t`: V1's rendered rollout, or V2's evidence chosen by
/// tier within the same input budget (rows redacted before they are cut).
pub(super) async fn prepare_input(
    ctx: &Phase1Ctx,
    t: &ThreadRow,
    window: Option<u64>,
    tool_budget: usize,
) -> Result<(String, codex_free_redact::Tally)> {
    let (input, thread, red, version) = (
        ctx.input.clone(),
        t.clone(),
        ctx.redactor.clone(),
        ctx.version,
    );
    blocking(move || match version {
        MemoryVersion::V1 => input.render_counted(&thread, window, tool_budget),
        // V2's evidence is redacted row by row here and again, counted, by the gate.
        MemoryVersion::V2 => {
            let items = input.items(&thread)?;
            let rows = crate::v2::evidence::rows(&items, &|t| red.redact(t));
            Ok((
                crate::v2::evidence::select(&rows, input_budget(window)),
                codex_free_redact::Tally::new(),
            ))
        }
    })
    .await
}

/// The request for `t`: V1's one message with the rendered rollout, or V2's evidence in
/// chunks ([`crate::v2::evidence::chunks`]).
pub(super) fn build_request(ctx: &Phase1Ctx, t: &ThreadRow, rendered: &str) -> CompletionRequest {
    let updated = crate::run_log::iso(t.updated_at);
    let session = format!(
        "Session {id} ({source}), last active {updated}{cwd}",
        id = t.id,
        source = t.source,
        cwd = t
            .cwd
            .as_deref()
            .map(|c| format!(", working directory {c}"))
            .unwrap_or_default()
    );
    let (system, messages, schema_name, schema) = match ctx.version {
        MemoryVersion::V1 => (
            SYSTEM_PROMPT,
            vec![Message::User(format!(
                "{session}.\n\n<session>\n{rendered}\n</session>\n\nReturn the JSON object now."
            ))],
            "stage1_memory",
            output_schema(),
        ),
        MemoryVersion::V2 => {
            let chunks = crate::v2::evidence::chunks(rendered);
            let mut messages = vec![Message::User(format!(
                "{session}. Its evidence follows in {} message(s).",
                chunks.len()
            ))];
            messages.extend(chunks.into_iter().map(|c| Message::User(c.to_string())));
            messages.push(Message::User("Return the JSON object now.".into()));
            (
                SYSTEM_PROMPT_V2,
                messages,
                "stage1_summary_v2",
                crate::v2::output::output_schema(),
            )
        }
    };
    let max_out = ctx
        .model
        .max_output_tokens
        .map(|m| m.min(MAX_OUTPUT_TOKENS))
        .unwrap_or(MAX_OUTPUT_TOKENS);
    CompletionRequest {
        system: system.into(),
        messages,
        response_schema: Some(JsonSchemaSpec {
            name: schema_name.into(),
            schema,
        }),
        tools: Vec::new(),
        reasoning_effort: ctx
            .model
            .reasoning
            .then(|| ctx.config.extract_thinking.clone()),
        max_output_tokens: Some(max_out as u32),
    }
}
