//! The consolidation agent: a tool-calling loop between the consolidation model and the
//! jailed file tools of [`codex_free_memory::jail`]. The model sees the workspace diff and the
//! folder, edits `MEMORY.md`, `memory_summary.md` and `skills/`, and stops by answering
//! without tool calls. The artifacts are then validated in code; one repair turn is
//! allowed; a second failure fails the run.
//!
//! The model is reached through [`ConsolidationModel`], a small seam over the providers
//! (messages + tool specs in, text + tool calls + usage out); every request's usage goes to
//! a [`TurnLog`] as it happens, so a failed run is still accounted for.
//!
//! Invariant: the agent has exactly the four file tools; no other tool call is executed,
//! and the loop ends after at most [`AgentOptions::max_requests`] model requests.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_memory::jail::{self, FolderJail};
use codex_free_models::TokenUsage;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Standing instructions.
    System,
    /// The task and the repair request.
    User,
    /// The model's turns (text and tool calls).
    Assistant,
    /// A tool result (answers one tool call by id).
    Tool,
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolCall {
    /// Provider-assigned id, echoed in the tool result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON object text.
    pub arguments: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Text (may be empty for an assistant turn that only calls tools).
    pub content: String,
    /// Tool calls of an assistant turn.
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`]: the call answered.
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A text message.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool offered to the model: the providers' one tool type.
pub use codex_free_models::ToolSpec;

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelReply {
    /// Text content.
    pub content: String,
    /// Tool calls requested (empty = the model is done).
    pub tool_calls: Vec<ToolCall>,
    /// Usage of this request.
    pub usage: TokenUsage,
    /// What the request carried (hash, size, redactions by rule), when it went through
    /// the outgoing gate (`None` from models that send nothing, e.g. tests' scripted ones).
    pub receipt: Option<codex_free_models::outgoing::Receipt>,
}

/// One request to the model.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools offered.
    pub tools: &'a [ToolSpec],
    /// Reasoning effort (`memories.consolidation_thinking`).
    pub reasoning_effort: &'a str,
}

/// A boxed, sendable future (the seam's return type).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The consolidation model seam.
pub trait ConsolidationModel: Send + Sync {
    /// `provider/model-id` for logs and usage rows.
    fn model_id(&self) -> String;
    /// Send one request. Errors: [`Error::Provider`] (HTTP, bad answer, unavailable model).
    fn complete<'a>(&'a self, req: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelReply>>;
    /// The model's context window in tokens, when known (from the price table or
    /// `memories.providers.*.context_window`); bounds every request of the run.
    fn context_window(&self) -> Option<u64> {
        None
    }
    /// The receipt of the last request that passed the outgoing gate and then failed at
    /// the provider (its bytes left, so the run's record must say so), taken once; `None`
    /// when the last failure was refused before sending, or for models that send nothing.
    fn take_failed_receipt(&self) -> Option<codex_free_models::outgoing::Receipt> {
        None
    }
}

/// The tool list offered to the consolidation agent: name, description and JSON schema
/// of the arguments (generated from the argument structs' docs).
pub fn jail_tools() -> Vec<ToolSpec> {
    #[expect(
        clippy::expect_used,
        reason = "serialising a plain data struct with string keys to JSON cannot fail"
    )]
    fn schema<T: schemars::JsonSchema>() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(T)).expect("schema serialises")
    }
    vec![
        ToolSpec {
            name: "list_files".into(),
            description: "List the files of the memory folder (or of one subdirectory), recursively, with sizes in bytes.".into(),
            parameters: schema::<jail::ListArgs>(),
        },
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file of the memory folder, paged by line offset.".into(),
            parameters: schema::<jail::ReadArgs>(),
        },
        ToolSpec {
            name: "write_file".into(),
            description: "Create or replace MEMORY.md, memory_summary.md or a file under skills/ with the given content.".into(),
            parameters: schema::<jail::WriteArgs>(),
        },
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace exact text in MEMORY.md, memory_summary.md or a file under skills/. old_text must occur exactly once unless replace_all is true.".into(),
            parameters: schema::<jail::EditArgs>(),
        },
    ]
}

/// Share of the context window one request's input may fill (the rest is left for the
/// tool definitions, the answer and the counting error of a foreign tokenizer).
pub const INPUT_SHARE_OF_WINDOW: f64 = 0.7;

/// Most input tokens of one request for a model with `window` tokens of context.
pub fn max_input_tokens(window: u64) -> usize {
    (window as f64 * INPUT_SHARE_OF_WINDOW) as usize
}

/// Tokens of a conversation as sent (contents and tool-call arguments).
pub fn conversation_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| {
            codex_free_core::tokens::count(&m.content)
                + m.tool_calls
                    .iter()
                    .map(|c| codex_free_core::tokens::count(&c.arguments) + 8)
                    .sum::<usize>()
                + 4
        })
        .sum()
}

/// The text an elided tool result is replaced with.
pub const ELIDED: &str = "[earlier tool output elided to keep the request within the model's context window; call the tool again if you still need it]";

/// Fit `messages` within `max` tokens by eliding the oldest tool results (never the ones
/// answering the latest assistant turn). `Err` with the figures when it still does not fit:
/// the request is then never sent (a provider would reject it and the retry would repeat it).
pub fn fit_conversation(messages: &mut [Message], max: usize) -> Result<()> {
    let last_assistant = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .unwrap_or(messages.len());
    let mut total = conversation_tokens(messages);
    for m in messages.iter_mut().take(last_assistant) {
        if total <= max {
            break;
        }
        if m.role == Role::Tool && m.content != ELIDED {
            let before = codex_free_core::tokens::count(&m.content);
            m.content = ELIDED.to_string();
            total = total + codex_free_core::tokens::count(ELIDED) - before.min(total);
        }
    }
    if total > max {
        return Err(Error::Budget(format!(
            "the consolidation request would carry about {total} tokens, over the {max} tokens the model's context window allows; nothing was sent (raise memories.providers.*.context_window only if the model really has more)"
        )));
    }
    Ok(())
}

/// The accounting of one model request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TurnRecord {
    /// 1-based request number within the run.
    pub request_no: usize,
    /// `provider/model-id`.
    pub model: String,
    /// Usage (zero when the request failed).
    pub usage: TokenUsage,
    /// Wall time of the request, milliseconds.
    pub duration_ms: u64,
    /// `"ok"` or `"error"`.
    pub outcome: &'static str,
    /// The error text when it failed.
    pub error: Option<String>,
    /// The request's receipt (what left), when it was sent.
    pub receipt: Option<codex_free_models::outgoing::Receipt>,
}

/// Receives every request's accounting as it happens.
pub trait TurnLog: Send + Sync {
    /// Record one request.
    fn record(&self, rec: &TurnRecord);
    /// Why no further request may be sent (the monthly spend cap was reached during the
    /// run), checked before every request; `None` = go on.
    fn blocked(&self) -> Option<String> {
        None
    }
}

/// A [`TurnLog`] that keeps nothing.
#[derive(Debug, Default)]
pub struct NoLog;

impl TurnLog for NoLog {
    fn record(&self, _: &TurnRecord) {}
}

/// Loop limits.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Most model requests in the whole run, repair included. Default 64: a consolidation
    /// of a few hundred inputs takes a few dozen tool calls; the cap only stops a model
    /// that never stops.
    pub max_requests: usize,
    /// Reasoning effort passed to the model.
    pub reasoning_effort: String,
    /// Cancels the run between requests and tool calls.
    pub cancel: CancellationToken,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            max_requests: 64,
            reasoning_effort: "medium".into(),
            cancel: CancellationToken::new(),
        }
    }
}

/// What a finished agent run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AgentReport {
    /// Model requests made.
    pub requests: usize,
    /// Tool calls executed (refused ones included).
    pub tool_calls: usize,
    /// Tool calls refused or failed, as `name: error text`.
    pub refused: Vec<String>,
    /// Summed usage.
    pub usage: TokenUsage,
    /// True when the repair turn was needed.
    pub repaired: bool,
    /// Lint findings (stale facts, conflicts) still present after the repair turn; they
    /// do not fail the run, they are reported.
    pub lint_remaining: Vec<String>,
    /// The model's last text.
    pub final_text: String,
}

/// Why an agent run failed, with what it had done so far.
#[derive(Debug)]
pub struct AgentFailure {
    /// The error (budget, provider, cancelled, request cap).
    pub error: Error,
    /// Work done before the failure.
    pub report: AgentReport,
}

/// Run the agent to completion: `system` + `task` messages, tool loop until the model
/// stops, validate with `validate` (empty = valid) and `advise` (lint findings), one repair
/// turn built by `repair` from both lists when either is non-empty, validate again. Only
/// `validate` problems fail the run after the repair; `advise` leftovers are recorded in
/// [`AgentReport::lint_remaining`] (a rule-based lint may be wrong; a budget is not).
///
/// Errors ([`AgentFailure::error`]): [`Error::Budget`] when the artifacts are still invalid
/// after the repair (message lists the problems); [`Error::Provider`] from the model;
/// [`Error::Cancelled`] when cancelled or when `max_requests` is reached.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    model: &dyn ConsolidationModel,
    jail: &FolderJail,
    system: &str,
    task: &str,
    opts: &AgentOptions,
    log: &dyn TurnLog,
    validate: &(dyn Fn() -> Vec<String> + Send + Sync),
    advise: &(dyn Fn() -> Vec<String> + Send + Sync),
    repair: &(dyn Fn(&[String]) -> String + Send + Sync),
) -> std::result::Result<AgentReport, AgentFailure> {
    let tools = jail_tools();
    let mut messages = vec![
        Message::text(Role::System, system),
        Message::text(Role::User, task),
    ];
    let mut report = AgentReport::default();
    if let Err(error) = tool_loop(model, jail, &tools, &mut messages, opts, log, &mut report).await
    {
        return Err(AgentFailure { error, report });
    }
    let mut problems = validate();
    let advice = advise();
    if problems.is_empty() && advice.is_empty() {
        return Ok(report);
    }
    tracing::info!(
        problems = problems.len(),
        lint = advice.len(),
        "memory artifacts invalid or linted; asking the agent for one repair"
    );
    report.repaired = true;
    problems.extend(advice);
    messages.push(Message::text(Role::User, repair(&problems)));
    if let Err(error) = tool_loop(model, jail, &tools, &mut messages, opts, log, &mut report).await
    {
        return Err(AgentFailure { error, report });
    }
    let problems = validate();
    report.lint_remaining = advise();
    if !report.lint_remaining.is_empty() {
        tracing::warn!(
            findings = report.lint_remaining.len(),
            "lint findings remain after the repair turn: {}",
            report.lint_remaining.join("; ")
        );
    }
    if problems.is_empty() {
        Ok(report)
    } else {
        Err(AgentFailure {
            error: Error::Budget(format!(
                "memory artifacts still invalid after one repair turn: {}",
                problems.join("; ")
            )),
            report,
        })
    }
}

async fn tool_loop(
    model: &dyn ConsolidationModel,
    jail: &FolderJail,
    tools: &[ToolSpec],
    messages: &mut Vec<Message>,
    opts: &AgentOptions,
    log: &dyn TurnLog,
    report: &mut AgentReport,
) -> Result<()> {
    loop {
        if opts.cancel.is_cancelled() {
            return Err(Error::Cancelled("consolidation cancelled".into()));
        }
        if report.requests >= opts.max_requests {
            return Err(Error::Cancelled(format!(
                "consolidation agent did not finish within {} model requests",
                opts.max_requests
            )));
        }
        if let Some(w) = model.context_window() {
            fit_conversation(messages, max_input_tokens(w))?;
        }
        if let Some(why) = log.blocked() {
            return Err(Error::Budget(why));
        }
        report.requests += 1;
        let started = Instant::now();
        let req = ModelRequest {
            messages,
            tools,
            reasoning_effort: &opts.reasoning_effort,
        };
        let reply = tokio::select! {
            r = model.complete(req) => r,
            _ = opts.cancel.cancelled() => Err(Error::Cancelled("consolidation cancelled".into())),
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let reply = match reply {
            Ok(r) => {
                log.record(&TurnRecord {
                    request_no: report.requests,
                    model: model.model_id(),
                    usage: r.usage,
                    duration_ms,
                    outcome: "ok",
                    error: None,
                    receipt: r.receipt.clone(),
                });
                r
            }
            Err(e) => {
                log.record(&TurnRecord {
                    request_no: report.requests,
                    model: model.model_id(),
                    usage: TokenUsage::default(),
                    duration_ms,
                    outcome: "error",
                    error: Some(e.to_string()),
                    receipt: model.take_failed_receipt(),
                });
                return Err(e);
            }
        };
        report.usage.add(&reply.usage);
        report.final_text = reply.content.clone();
        let calls = reply.tool_calls.clone();
        messages.push(Message {
            role: Role::Assistant,
            content: reply.content,
            tool_calls: reply.tool_calls,
            tool_call_id: None,
        });
        if calls.is_empty() {
            return Ok(());
        }
        for call in calls {
            report.tool_calls += 1;
            let result = jail.call(&call.name, &call.arguments);
            if result.is_error {
                tracing::debug!(tool = %call.name, error = %result.text, "consolidation tool call refused");
                report
                    .refused
                    .push(format!("{}: {}", call.name, result.text));
            }
            messages.push(Message {
                role: Role::Tool,
                content: result.text,
                tool_calls: Vec::new(),
                tool_call_id: Some(call.id),
            });
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use codex_free_memory::jail::WritePolicy;

    /// A model that replays scripted replies and records the requests it saw.
    pub(crate) struct Scripted {
        pub replies: Mutex<VecDeque<ModelReply>>,
        pub seen: Mutex<Vec<Vec<Message>>>,
        pub window: Option<u64>,
    }

    impl Scripted {
        pub(crate) fn new(replies: Vec<ModelReply>) -> Self {
            Self {
                replies: Mutex::new(replies.into()),
                seen: Mutex::new(Vec::new()),
                window: None,
            }
        }
    }

    pub(crate) fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    pub(crate) fn reply(calls: Vec<ToolCall>) -> ModelReply {
        ModelReply {
            receipt: None,
            content: String::new(),
            tool_calls: calls,
            usage: TokenUsage {
                input: 100,
                cached_input: 10,
                output: 20,
                ..Default::default()
            },
        }
    }

    impl ConsolidationModel for Scripted {
        fn model_id(&self) -> String {
            "test/scripted".into()
        }
        fn context_window(&self) -> Option<u64> {
            self.window
        }
        fn complete<'a>(&'a self, req: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelReply>> {
            self.seen.lock().unwrap().push(req.messages.to_vec());
            let r = self.replies.lock().unwrap().pop_front();
            Box::pin(async move { r.ok_or_else(|| Error::Provider("script exhausted".into())) })
        }
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<TurnRecord>>);
    impl TurnLog for Recorder {
        fn record(&self, rec: &TurnRecord) {
            self.0.lock().unwrap().push(rec.clone());
        }
    }

    #[tokio::test]
    async fn loop_executes_tools_logs_usage_and_repairs_once() {
        let d = tempfile::tempdir().unwrap();
        let jail = FolderJail::new(d.path(), WritePolicy::ConsolidationOutputs).unwrap();
        let long: String = (0..400).map(|i| format!("l{i}\n")).collect();
        let model = Scripted::new(vec![
            reply(vec![call(
                "1",
                "write_file",
                serde_json::json!({"path":"MEMORY.md","content": long}),
            )]),
            reply(vec![]),
            reply(vec![call(
                "2",
                "write_file",
                serde_json::json!({"path":"MEMORY.md","content":"short\n"}),
            )]),
            reply(vec![]),
        ]);
        let log = Recorder::default();
        let validate = || {
            let n = std::fs::read_to_string(d.path().join("MEMORY.md"))
                .unwrap()
                .lines()
                .count();
            if n > 150 {
                vec![format!("MEMORY.md: {n} lines")]
            } else {
                vec![]
            }
        };
        let repair = |p: &[String]| format!("repair: {}", p.join(","));
        let r = run(
            &model,
            &jail,
            "sys",
            "task",
            &AgentOptions::default(),
            &log,
            &validate,
            &Vec::new,
            &repair,
        )
        .await
        .unwrap();
        assert!(r.repaired);
        assert_eq!(r.requests, 4);
        assert_eq!(r.usage.input, 400);
        assert_eq!(log.0.lock().unwrap().len(), 4);
        let seen = model.seen.lock().unwrap();
        assert!(seen[2].iter().any(|m| m.role == Role::User && m.content.contains("repair: MEMORY.md: 400 lines")));
    }

    #[tokio::test]
    async fn request_cap_stops_a_model_that_never_stops() {
        let d = tempfile::tempdir().unwrap();
        let jail = FolderJail::new(d.path(), WritePolicy::ConsolidationOutputs).unwrap();
        let replies = (0..10)
            .map(|i| {
                reply(vec![call(
                    &i.to_string(),
                    "list_files",
                    serde_json::json!({}),
                )])
            })
            .collect();
        let model = Scripted::new(replies);
        let opts = AgentOptions {
            max_requests: 3,
            ..Default::default()
        };
        let f = run(
            &model,
            &jail,
            "s",
            "t",
            &opts,
            &NoLog,
            &|| vec![],
            &Vec::new,
            &|_| String::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(f.error.code(), "cancelled");
        assert_eq!(f.report.requests, 3);
    }
}
