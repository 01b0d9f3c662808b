//! From a provider's response to the entries to append: [`entries_of_response`].
//!
//! ```
//! use pioneer_grpc_client::replies::{entries_of_response, STOP_TOOL_USE};
//! use pioneer_grpc_client::v1::Provider;
//!
//! let body = r#"{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
//!   "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.txt"}}],
//!   "stop_reason": "tool_use", "stop_sequence": null,
//!   "usage": {"input_tokens": 12, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0,
//!             "output_tokens": 30}}"#;
//! let reply = entries_of_response(Provider::AnthropicMessages, body, "turn-1", 1).unwrap();
//! assert_eq!(reply.entries[0].entry_id, "turn-1.r1");
//! assert_eq!(reply.entries[0].tool_calls[0].arguments, r#"{"path":"a.txt"}"#);
//! assert_eq!(reply.usage.unwrap().input_tokens, 912); // Anthropic's input leaves cache reads out
//! assert_eq!(reply.stop, STOP_TOOL_USE);
//! ```
//!
//! The same function, with the same answers, is `entries_of_response` in Python,
//! `EntriesOfResponse` in Go and `entriesOfResponse` in TypeScript:
//! `tests/data/replies` holds the responses all four are tested against. What
//! cannot be mapped is a [`ReplyError`] naming its code and path; nothing is
//! dropped without a word.

use serde_json::Value;

use crate::reply_json::{
    arguments_object, arguments_text, array, as_response, as_text, checked_sum, child, count, fail,
    first_key, get, index, item, name, obj, opt_array, opt_obj, opt_text, text, Obj, Read,
};
pub use crate::reply_json::{
    canonical_json, ReplyError, BAD_ARGUMENTS, ERROR_BODY, INVALID_ARGUMENT, MISSING, NOT_JSON,
    UNSUPPORTED, WRONG_TYPE,
};
use crate::v1::{ConversationEntry, EntryRole, Provider, ProviderUsage, ToolCall};

/// The model finished its answer.
pub const STOP_END_TURN: &str = "end_turn";
/// The model made tool calls and stopped to have them run.
pub const STOP_TOOL_USE: &str = "tool_use";
/// The output token limit was reached.
pub const STOP_MAX_TOKENS: &str = "max_tokens";
/// A stop sequence was produced.
pub const STOP_STOP_SEQUENCE: &str = "stop_sequence";
/// Anthropic paused a long turn (server tools): send the reply back to continue.
pub const STOP_PAUSE_TURN: &str = "pause_turn";
/// The model refused.
pub const STOP_REFUSAL: &str = "refusal";
/// A provider's filter or guardrail stopped or replaced the output.
pub const STOP_CONTENT_FILTER: &str = "content_filter";
/// The model's context window was full.
pub const STOP_CONTEXT_WINDOW_EXCEEDED: &str = "context_window_exceeded";
/// A reason of the provider's not named above (see `provider_stop_reason`).
pub const STOP_OTHER: &str = "other";

/// What one provider response holds for the thread.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderReply {
    /// The entries to append: the assistant entry, or none when the reply holds no
    /// text and no tool call (stopped by a filter, or by max_tokens in its reasoning).
    pub entries: Vec<ConversationEntry>,
    /// The usage the provider reported, in [`ProviderUsage`]'s meaning.
    pub usage: Option<ProviderUsage>,
    /// Why the model stopped (the `STOP_*` constants): tool_use whenever it made
    /// tool calls to be run, refusal whenever it refused.
    pub stop: &'static str,
    /// The provider's own reason as it sent it (stop_reason, finish_reason, status or
    /// incomplete_details.reason, finishReason or promptFeedback.blockReason, stopReason).
    pub provider_stop_reason: String,
    /// The refusal text OpenAI returns apart from the content; the entry's content
    /// when the reply has no other text.
    pub refusal: String,
    /// Paths in the response of what the entry cannot hold, in the order read:
    /// signatures, redacted or encrypted reasoning, citations and annotations, and
    /// when there is no entry, the text and reasoning it would have held.
    pub not_kept: Vec<String>,
}

#[derive(Default)]
struct Parts {
    texts: Vec<(String, String)>,
    reasoning: Vec<(String, String)>,
    calls: Vec<ToolCall>,
    refusals: Vec<String>,
    not_kept: Vec<String>,
}

impl Parts {
    fn text(&mut self, path: String, value: &str) {
        if !value.is_empty() {
            self.texts.push((path, value.to_owned()));
        }
    }

    fn think(&mut self, path: String, value: &str) {
        if !value.is_empty() {
            self.reasoning.push((path, value.to_owned()));
        }
    }

    fn call(&mut self, id: &str, name: &str, arguments: String) {
        self.calls.push(ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments,
        });
    }

    fn drop_if(&mut self, present: bool, path: String) {
        if present {
            self.not_kept.push(path);
        }
    }
}

struct Stopped {
    reason: String,
    stop: &'static str,
    usage: Option<ProviderUsage>,
}

/// The entries to append for one provider response, its usage and why the model stopped.
///
/// `provider` is the [`Provider`] the body was rendered for; `response` the
/// provider's JSON response body. The assistant entry's id is `{turn_id}.r{round}`:
/// the same reply appended again is an idempotent repeat.
pub fn entries_of_response(
    provider: Provider,
    response: &str,
    turn_id: &str,
    round: u32,
) -> Result<ProviderReply, ReplyError> {
    check_call(provider, turn_id)?;
    let value: Value = match serde_json::from_str(response) {
        Ok(v) => v,
        Err(e) => return fail(NOT_JSON, "", format!("the response is not JSON: {e}")),
    };
    entries_of_response_value(provider, &value, turn_id, round)
}

/// [`entries_of_response`] for a response already parsed.
pub fn entries_of_response_value(
    provider: Provider,
    response: &Value,
    turn_id: &str,
    round: u32,
) -> Result<ProviderReply, ReplyError> {
    check_call(provider, turn_id)?;
    let body = as_response(response)?;
    if let Some(error) = get(Some(body), "error") {
        let message = error.get("message").and_then(Value::as_str).map_or_else(
            || "the provider answered an error".to_owned(),
            |m| format!("the provider answered an error: {m}"),
        );
        return fail(ERROR_BODY, "error", message);
    }
    let mut parts = Parts::default();
    let stopped = match provider {
        Provider::AnthropicMessages => anthropic(body, &mut parts)?,
        Provider::OpenaiChatCompletions => openai_chat(body, &mut parts)?,
        Provider::OpenaiResponses => openai_responses(body, &mut parts)?,
        Provider::GeminiGenerateContent => gemini(body, &mut parts)?,
        Provider::AmazonBedrockConverse => bedrock(body, &mut parts)?,
        Provider::Unspecified => unreachable!("check_call refused it"),
    };
    Ok(assemble(
        parts,
        stopped,
        format!("{turn_id}.r{round}"),
        turn_id,
    ))
}

fn check_call(provider: Provider, turn_id: &str) -> Read<()> {
    if provider == Provider::Unspecified {
        return fail(
            INVALID_ARGUMENT,
            "",
            "PROVIDER_UNSPECIFIED is none of the five response shapes",
        );
    }
    if turn_id.is_empty() {
        return fail(
            INVALID_ARGUMENT,
            "",
            "turn_id is empty: entry ids are made from it",
        );
    }
    Ok(())
}

fn has_text(s: &str) -> bool {
    !s.trim_matches([' ', '\t', '\n', '\r']).is_empty()
}

fn assemble(parts: Parts, stopped: Stopped, entry_id: String, turn_id: &str) -> ProviderReply {
    let mut content: String = parts.texts.iter().map(|(_, v)| v.as_str()).collect();
    let refusal: String = parts.refusals.concat();
    let mut not_kept = parts.not_kept;
    if !has_text(&content) {
        not_kept.extend(parts.texts.iter().map(|(p, _)| p.clone()));
        content = refusal.clone();
    }
    let stop = if !refusal.is_empty() {
        STOP_REFUSAL
    } else if stopped.stop == STOP_END_TURN && !parts.calls.is_empty() {
        STOP_TOOL_USE
    } else {
        stopped.stop
    };
    let mut entries = Vec::new();
    if has_text(&content) || !parts.calls.is_empty() {
        let reasoning: Vec<&str> = parts.reasoning.iter().map(|(_, v)| v.as_str()).collect();
        entries.push(ConversationEntry {
            entry_id,
            turn_id: turn_id.to_owned(),
            role: EntryRole::Assistant as i32,
            content,
            tool_calls: parts.calls,
            reasoning_content: (!reasoning.is_empty()).then(|| reasoning.join("\n\n")),
            ..ConversationEntry::default()
        });
    } else {
        not_kept.extend(parts.reasoning.into_iter().map(|(p, _)| p));
    }
    ProviderReply {
        entries,
        usage: stopped.usage,
        stop,
        provider_stop_reason: stopped.reason,
        refusal,
        not_kept,
    }
}

fn usage(
    path: &str,
    inputs: &[Option<i32>],
    cache_read: Option<i32>,
    cache_write: Option<i32>,
    outputs: &[Option<i32>],
    reasoning: Option<i32>,
) -> Read<ProviderUsage> {
    Ok(ProviderUsage {
        input_tokens: checked_sum(path, inputs)?,
        cache_read_input_tokens: cache_read,
        cache_write_input_tokens: cache_write,
        output_tokens: checked_sum(path, outputs)?,
        reasoning_output_tokens: reasoning,
    })
}

fn unsupported<T>(path: String, what: String) -> Read<T> {
    fail(UNSUPPORTED, path, format!("{what}: no entry holds it"))
}

fn stop_of(table: &[(&str, &'static str)], reason: &str) -> &'static str {
    table
        .iter()
        .find(|(r, _)| *r == reason)
        .map_or(STOP_OTHER, |(_, s)| s)
}

// --- Anthropic Messages ---------------------------------------------------------

const ANTHROPIC_STOPS: &[(&str, &str)] = &[
    ("end_turn", STOP_END_TURN),
    ("tool_use", STOP_TOOL_USE),
    ("max_tokens", STOP_MAX_TOKENS),
    ("stop_sequence", STOP_STOP_SEQUENCE),
    ("pause_turn", STOP_PAUSE_TURN),
    ("refusal", STOP_REFUSAL),
    (
        "model_context_window_exceeded",
        STOP_CONTEXT_WINDOW_EXCEEDED,
    ),
];

fn anthropic_block(block: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    match name(block, "type", path)? {
        "text" => {
            parts.text(child(path, "text"), text(block, "text", path)?);
            let cited = !opt_array(Some(block), "citations", path)?.is_empty();
            parts.drop_if(cited, child(path, "citations"));
        }
        "thinking" => {
            parts.think(child(path, "thinking"), text(block, "thinking", path)?);
            let signed = opt_text(Some(block), "signature", path)?.is_some_and(|s| !s.is_empty());
            parts.drop_if(signed, child(path, "signature"));
        }
        "redacted_thinking" => parts.not_kept.push(path.to_owned()),
        "tool_use" => {
            let arguments = arguments_object(get(Some(block), "input"), child(path, "input"))?;
            parts.call(
                name(block, "id", path)?,
                name(block, "name", path)?,
                arguments,
            );
        }
        other => return unsupported(child(path, "type"), format!("a {other:?} block")),
    }
    Ok(())
}

fn anthropic(body: &Obj, parts: &mut Parts) -> Read<Stopped> {
    let blocks = array(body, "content", "")?;
    for i in 0..blocks.len() {
        anthropic_block(item(blocks, i, "content")?, &index("content", i), parts)?;
    }
    let reason = opt_text(Some(body), "stop_reason", "")?
        .unwrap_or_default()
        .to_owned();
    let found = match opt_obj(Some(body), "usage", "")? {
        None => None,
        Some(u) => {
            let fresh = count(Some(u), "input_tokens", "usage")?;
            let read = count(Some(u), "cache_read_input_tokens", "usage")?;
            let write = count(Some(u), "cache_creation_input_tokens", "usage")?;
            let details = opt_obj(Some(u), "output_tokens_details", "usage")?;
            let thinking = count(details, "thinking_tokens", "usage.output_tokens_details")?;
            let output = count(Some(u), "output_tokens", "usage")?;
            Some(usage(
                "usage",
                &[fresh, read, write],
                read,
                write,
                &[output],
                thinking,
            )?)
        }
    };
    Ok(Stopped {
        stop: stop_of(ANTHROPIC_STOPS, &reason),
        reason,
        usage: found,
    })
}

// --- OpenAI Chat Completions ----------------------------------------------------

const CHAT_STOPS: &[(&str, &str)] = &[
    ("stop", STOP_END_TURN),
    ("tool_calls", STOP_TOOL_USE),
    ("function_call", STOP_TOOL_USE),
    ("length", STOP_MAX_TOKENS),
    ("content_filter", STOP_CONTENT_FILTER),
];

fn only_choice<'a>(items: &'a [Value], key: &str) -> Read<&'a Obj> {
    if items.is_empty() {
        return fail(MISSING, key, "empty");
    }
    if items.len() > 1 {
        let what = format!(
            "{} {key}: one reply is one of them (ask for one)",
            items.len()
        );
        return unsupported(index(key, 1), what);
    }
    item(items, 0, key)
}

fn chat_call(call: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    let kind = opt_text(Some(call), "type", path)?
        .filter(|k| !k.is_empty())
        .unwrap_or("function");
    if kind != "function" {
        return unsupported(child(path, "type"), format!("a {kind:?} tool call"));
    }
    let function = obj(call, "function", path)?;
    let fpath = child(path, "function");
    let arguments = arguments_text(get(Some(function), "arguments"), child(&fpath, "arguments"))?;
    parts.call(
        name(call, "id", path)?,
        name(function, "name", &fpath)?,
        arguments,
    );
    Ok(())
}

fn openai_chat(body: &Obj, parts: &mut Parts) -> Read<Stopped> {
    let choice = only_choice(array(body, "choices", "")?, "choices")?;
    let message = obj(choice, "message", "choices[0]")?;
    let path = "choices[0].message";
    let content = opt_text(Some(message), "content", path)?.unwrap_or_default();
    parts.text(child(path, "content"), content);
    if let Some(refusal) = opt_text(Some(message), "refusal", path)?.filter(|r| !r.is_empty()) {
        parts.refusals.push(refusal.to_owned());
    }
    for key in ["audio", "function_call"] {
        if get(Some(message), key).is_some() {
            return unsupported(child(path, key), format!("a message's {key}"));
        }
    }
    let annotated = !opt_array(Some(message), "annotations", path)?.is_empty();
    parts.drop_if(annotated, child(path, "annotations"));
    let calls = opt_array(Some(message), "tool_calls", path)?;
    let calls_path = child(path, "tool_calls");
    for j in 0..calls.len() {
        chat_call(item(calls, j, &calls_path)?, &index(&calls_path, j), parts)?;
    }
    let reason = opt_text(Some(choice), "finish_reason", "choices[0]")?
        .unwrap_or_default()
        .to_owned();
    let found = match opt_obj(Some(body), "usage", "")? {
        None => None,
        Some(u) => {
            let prompt = opt_obj(Some(u), "prompt_tokens_details", "usage")?;
            let completion = opt_obj(Some(u), "completion_tokens_details", "usage")?;
            Some(usage(
                "usage",
                &[count(Some(u), "prompt_tokens", "usage")?],
                count(prompt, "cached_tokens", "usage.prompt_tokens_details")?,
                count(prompt, "cache_write_tokens", "usage.prompt_tokens_details")?,
                &[count(Some(u), "completion_tokens", "usage")?],
                count(
                    completion,
                    "reasoning_tokens",
                    "usage.completion_tokens_details",
                )?,
            )?)
        }
    };
    Ok(Stopped {
        stop: stop_of(CHAT_STOPS, &reason),
        reason,
        usage: found,
    })
}

// --- OpenAI Responses -----------------------------------------------------------

const INCOMPLETE_STOPS: &[(&str, &str)] = &[
    ("max_output_tokens", STOP_MAX_TOKENS),
    ("content_filter", STOP_CONTENT_FILTER),
];

fn responses_message(message: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    let content_path = child(path, "content");
    let content = array(message, "content", path)?;
    for j in 0..content.len() {
        let ppath = index(&content_path, j);
        let part = item(content, j, &content_path)?;
        match name(part, "type", &ppath)? {
            "output_text" => {
                parts.text(child(&ppath, "text"), text(part, "text", &ppath)?);
                let annotated = !opt_array(Some(part), "annotations", &ppath)?.is_empty();
                parts.drop_if(annotated, child(&ppath, "annotations"));
            }
            "refusal" => parts
                .refusals
                .push(text(part, "refusal", &ppath)?.to_owned()),
            other => {
                return unsupported(child(&ppath, "type"), format!("a {other:?} content part"))
            }
        }
    }
    Ok(())
}

fn responses_reasoning(reasoning: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    // The reasoning text itself when the model returns it, else its summary.
    for (key, want) in [("content", "reasoning_text"), ("summary", "summary_text")] {
        let key_path = child(path, key);
        let pieces = opt_array(Some(reasoning), key, path)?;
        for j in 0..pieces.len() {
            let ppath = index(&key_path, j);
            let piece = item(pieces, j, &key_path)?;
            let kind = name(piece, "type", &ppath)?;
            if kind != want {
                return unsupported(child(&ppath, "type"), format!("a {kind:?} reasoning part"));
            }
            parts.think(child(&ppath, "text"), text(piece, "text", &ppath)?);
        }
        if !pieces.is_empty() {
            break;
        }
    }
    let encrypted =
        opt_text(Some(reasoning), "encrypted_content", path)?.is_some_and(|s| !s.is_empty());
    parts.drop_if(encrypted, child(path, "encrypted_content"));
    Ok(())
}

fn responses_item(output: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    match name(output, "type", path)? {
        "message" => responses_message(output, path, parts),
        "function_call" => {
            let arguments =
                arguments_text(get(Some(output), "arguments"), child(path, "arguments"))?;
            parts.call(
                name(output, "call_id", path)?,
                name(output, "name", path)?,
                arguments,
            );
            Ok(())
        }
        "reasoning" => responses_reasoning(output, path, parts),
        other => unsupported(child(path, "type"), format!("a {other:?} output item")),
    }
}

fn openai_responses(body: &Obj, parts: &mut Parts) -> Read<Stopped> {
    let status = opt_text(Some(body), "status", "")?.unwrap_or_default();
    match status {
        "failed" => return fail(ERROR_BODY, "status", "the response failed"),
        "in_progress" | "queued" | "cancelled" => {
            return unsupported(
                "status".to_owned(),
                format!("a response {status}, not finished"),
            )
        }
        _ => {}
    }
    let outputs = array(body, "output", "")?;
    for i in 0..outputs.len() {
        responses_item(item(outputs, i, "output")?, &index("output", i), parts)?;
    }
    let mut reason = status.to_owned();
    let mut stop = if status == "completed" {
        STOP_END_TURN
    } else {
        STOP_OTHER
    };
    if status == "incomplete" {
        let details = opt_obj(Some(body), "incomplete_details", "")?;
        if let Some(r) =
            opt_text(details, "reason", "incomplete_details")?.filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        }
        stop = stop_of(INCOMPLETE_STOPS, &reason);
    }
    let found = match opt_obj(Some(body), "usage", "")? {
        None => None,
        Some(u) => {
            let given = opt_obj(Some(u), "input_tokens_details", "usage")?;
            let taken = opt_obj(Some(u), "output_tokens_details", "usage")?;
            Some(usage(
                "usage",
                &[count(Some(u), "input_tokens", "usage")?],
                count(given, "cached_tokens", "usage.input_tokens_details")?,
                count(given, "cache_write_tokens", "usage.input_tokens_details")?,
                &[count(Some(u), "output_tokens", "usage")?],
                count(taken, "reasoning_tokens", "usage.output_tokens_details")?,
            )?)
        }
    };
    Ok(Stopped {
        reason,
        stop,
        usage: found,
    })
}

// --- Gemini generateContent -----------------------------------------------------

const GEMINI_STOPS: &[(&str, &str)] = &[
    ("STOP", STOP_END_TURN),
    ("MAX_TOKENS", STOP_MAX_TOKENS),
    ("SAFETY", STOP_CONTENT_FILTER),
    ("RECITATION", STOP_CONTENT_FILTER),
    ("BLOCKLIST", STOP_CONTENT_FILTER),
    ("PROHIBITED_CONTENT", STOP_CONTENT_FILTER),
    ("SPII", STOP_CONTENT_FILTER),
    ("IMAGE_SAFETY", STOP_CONTENT_FILTER),
    ("IMAGE_PROHIBITED_CONTENT", STOP_CONTENT_FILTER),
    ("IMAGE_RECITATION", STOP_CONTENT_FILTER),
    ("MODEL_ARMOR", STOP_CONTENT_FILTER),
];

/// Keys of a part that say something about its data but are none: neither kept nor refused.
const GEMINI_PART_META: &[&str] = &[
    "thought",
    "thoughtSignature",
    "partMetadata",
    "videoMetadata",
    "mediaResolution",
];

fn gemini_part(part: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    let signed = opt_text(Some(part), "thoughtSignature", path)?.is_some_and(|s| !s.is_empty());
    parts.drop_if(signed, child(path, "thoughtSignature"));
    if let Some(call) = opt_obj(Some(part), "functionCall", path)? {
        let cpath = child(path, "functionCall");
        // Gemini may leave the id out (it pairs results by order): the n-th call of the reply is call_n.
        let id = match opt_text(Some(call), "id", &cpath)?.filter(|i| !i.is_empty()) {
            Some(id) => id.to_owned(),
            None => format!("call_{}", parts.calls.len()),
        };
        let arguments = match get(Some(call), "args") {
            None => "{}".to_owned(),
            Some(args) => arguments_object(Some(args), child(&cpath, "args"))?,
        };
        parts.call(&id, name(call, "name", &cpath)?, arguments);
        return Ok(());
    }
    if let Some(value) = get(Some(part), "text") {
        let value = as_text(value, child(path, "text"))?;
        if part.get("thought") == Some(&Value::Bool(true)) {
            parts.think(child(path, "text"), value);
        } else {
            parts.text(child(path, "text"), value);
        }
        return Ok(());
    }
    match first_key(part, GEMINI_PART_META) {
        Some(other) => unsupported(child(path, other), format!("a part's {other}")),
        None => Ok(()),
    }
}

fn gemini_usage(body: &Obj) -> Read<Option<ProviderUsage>> {
    let Some(u) = opt_obj(Some(body), "usageMetadata", "")? else {
        return Ok(None);
    };
    let path = "usageMetadata";
    let thoughts = count(Some(u), "thoughtsTokenCount", path)?;
    let prompt = count(Some(u), "promptTokenCount", path)?;
    let tools = count(Some(u), "toolUsePromptTokenCount", path)?;
    let cached = count(Some(u), "cachedContentTokenCount", path)?.or(Some(0));
    let candidates = count(Some(u), "candidatesTokenCount", path)?;
    Ok(Some(usage(
        path,
        &[prompt, tools],
        cached,
        None,
        &[candidates, thoughts],
        thoughts,
    )?))
}

fn gemini(body: &Obj, parts: &mut Parts) -> Read<Stopped> {
    let candidates = opt_array(Some(body), "candidates", "")?;
    if candidates.is_empty() {
        let feedback = opt_obj(Some(body), "promptFeedback", "")?;
        let blocked = opt_text(feedback, "blockReason", "promptFeedback")?.unwrap_or_default();
        if blocked.is_empty() {
            return fail(
                MISSING,
                "candidates",
                "no candidate, and no promptFeedback.blockReason",
            );
        }
        return Ok(Stopped {
            reason: blocked.to_owned(),
            stop: STOP_CONTENT_FILTER,
            usage: gemini_usage(body)?,
        });
    }
    let candidate = only_choice(candidates, "candidates")?;
    if let Some(content) = opt_obj(Some(candidate), "content", "candidates[0]")? {
        let path = "candidates[0].content.parts";
        let found = opt_array(Some(content), "parts", "candidates[0].content")?;
        for i in 0..found.len() {
            gemini_part(item(found, i, path)?, &index(path, i), parts)?;
        }
    }
    let reason = opt_text(Some(candidate), "finishReason", "candidates[0]")?
        .unwrap_or_default()
        .to_owned();
    Ok(Stopped {
        stop: stop_of(GEMINI_STOPS, &reason),
        reason,
        usage: gemini_usage(body)?,
    })
}

// --- Amazon Bedrock Converse ----------------------------------------------------

const BEDROCK_STOPS: &[(&str, &str)] = &[
    ("end_turn", STOP_END_TURN),
    ("tool_use", STOP_TOOL_USE),
    ("max_tokens", STOP_MAX_TOKENS),
    ("stop_sequence", STOP_STOP_SEQUENCE),
    ("guardrail_intervened", STOP_CONTENT_FILTER),
    ("content_filtered", STOP_CONTENT_FILTER),
    (
        "model_context_window_exceeded",
        STOP_CONTEXT_WINDOW_EXCEEDED,
    ),
];

fn bedrock_reasoning(block: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    let reasoning = obj(block, "reasoningContent", path)?;
    let rpath = child(path, "reasoningContent");
    if let Some(reasoning_text) = opt_obj(Some(reasoning), "reasoningText", &rpath)? {
        let tpath = child(&rpath, "reasoningText");
        parts.think(child(&tpath, "text"), text(reasoning_text, "text", &tpath)?);
        let signed =
            opt_text(Some(reasoning_text), "signature", &tpath)?.is_some_and(|s| !s.is_empty());
        parts.drop_if(signed, child(&tpath, "signature"));
    } else if get(Some(reasoning), "redactedContent").is_some() {
        parts.not_kept.push(child(&rpath, "redactedContent"));
    } else {
        return fail(
            MISSING,
            child(&rpath, "reasoningText"),
            "absent, and no redactedContent",
        );
    }
    Ok(())
}

fn bedrock_block(block: &Obj, path: &str, parts: &mut Parts) -> Read<()> {
    if get(Some(block), "text").is_some() {
        parts.text(child(path, "text"), text(block, "text", path)?);
    } else if get(Some(block), "toolUse").is_some() {
        let tool_use = obj(block, "toolUse", path)?;
        let upath = child(path, "toolUse");
        let arguments = arguments_object(get(Some(tool_use), "input"), child(&upath, "input"))?;
        parts.call(
            name(tool_use, "toolUseId", &upath)?,
            name(tool_use, "name", &upath)?,
            arguments,
        );
    } else if get(Some(block), "reasoningContent").is_some() {
        bedrock_reasoning(block, path, parts)?;
    } else {
        return match first_key(block, &[]) {
            Some(other) => unsupported(child(path, other), format!("a {other:?} block")),
            None => fail(MISSING, path, "an empty content block"),
        };
    }
    Ok(())
}

fn bedrock(body: &Obj, parts: &mut Parts) -> Read<Stopped> {
    if let (None, Some(Value::String(m))) = (get(Some(body), "output"), body.get("message")) {
        return fail(
            ERROR_BODY,
            "message",
            format!("the provider answered an error: {m}"),
        );
    }
    let output = obj(body, "output", "")?;
    let message = obj(output, "message", "output")?;
    let blocks = array(message, "content", "output.message")?;
    for i in 0..blocks.len() {
        let path = index("output.message.content", i);
        bedrock_block(item(blocks, i, "output.message.content")?, &path, parts)?;
    }
    let reason = opt_text(Some(body), "stopReason", "")?
        .unwrap_or_default()
        .to_owned();
    let found = match opt_obj(Some(body), "usage", "")? {
        None => None,
        Some(u) => {
            let fresh = count(Some(u), "inputTokens", "usage")?;
            let read = count(Some(u), "cacheReadInputTokens", "usage")?;
            let write = count(Some(u), "cacheWriteInputTokens", "usage")?;
            let output = count(Some(u), "outputTokens", "usage")?;
            Some(usage(
                "usage",
                &[fresh, read, write],
                read,
                write,
                &[output],
                None,
            )?)
        }
    };
    Ok(Stopped {
        stop: stop_of(BEDROCK_STOPS, &reason),
        reason,
        usage: found,
    })
}
