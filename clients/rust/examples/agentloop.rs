//! A minimal agent loop on pioneer-grpc.
//!
//! Each turn is three calls: PrepareTurn with the user's message (stored, the
//! budgeted history loaded, the system prompt compiled, the ChatRequest back),
//! PrepareTurn with the model's tool call and its result (text and a screenshot,
//! a PNG made here), and CompleteTurn with the final answer. A stand-in answers
//! for the model with Anthropic Messages responses; a real loop POSTs each
//! round's provider body to the provider. `replies::entries_of_response` turns
//! each response into the entry to store, the provider's usage and why the model
//! stopped.
//!
//! ```sh
//! PIONEER_ADDR=127.0.0.1:50051 PIONEER_TOKEN=secret cargo run --example agentloop
//! ```
//! `PIONEER_ROUNDS` sets the number of rounds (default 3).

use std::error::Error;

use pioneer_grpc_client::replies::{entries_of_response_value, STOP_TOOL_USE};
use pioneer_grpc_client::tonic::Status;
use pioneer_grpc_client::{connect, status, v1, Options};
use serde_json::{json, Value};

/// Each PrepareTurn also renders the body for this provider (`provider_body_json`).
const PROVIDER: v1::Provider = v1::Provider::AnthropicMessages;

const QUESTIONS: [&str; 4] = [
    "Which files does the release touch?",
    "Draft the changelog entry.",
    "Who has to approve it?",
    "Anything left before tagging?",
];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Turns a failed call into an error naming the RPC and every bad field.
fn rpc(name: &'static str) -> impl Fn(Status) -> Box<dyn Error> {
    move |s| format!("{name}: {}", status::describe(&s)).into()
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}

fn compile_input(round: u32) -> v1::PromptCompileInput {
    v1::PromptCompileInput {
        profile: v1::PromptProfile::Full as i32,
        include_tool_recovery_policy: true,
        dynamic_context: Some(format!("Agent loop round {round}.")),
        extra_system: Some("OS: linux".into()),
        permissions: Some(v1::PermissionProfile {
            mode: v1::PermissionMode::Ask as i32,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn read_file_tool() -> v1::ToolDefinition {
    use pioneer_grpc_client::prost_types::{value::Kind, Struct, Value};
    let string = |s: &str| Value {
        kind: Some(Kind::StringValue(s.into())),
    };
    let mut path = Struct::default();
    path.fields.insert("type".into(), string("string"));
    let mut properties = Struct::default();
    properties.fields.insert(
        "path".into(),
        Value {
            kind: Some(Kind::StructValue(path)),
        },
    );
    let mut schema = Struct::default();
    schema.fields.insert("type".into(), string("object"));
    schema.fields.insert(
        "properties".into(),
        Value {
            kind: Some(Kind::StructValue(properties)),
        },
    );
    v1::ToolDefinition {
        name: "read_file".into(),
        description: "Read a file of the workspace".into(),
        parameters: Some(schema),
    }
}

fn screenshot_tool() -> v1::ToolDefinition {
    use pioneer_grpc_client::prost_types::{value::Kind, Struct, Value};
    let mut schema = Struct::default();
    schema.fields.insert(
        "type".into(),
        Value {
            kind: Some(Kind::StringValue("object".into())),
        },
    );
    v1::ToolDefinition {
        name: "screenshot".into(),
        description: "A screenshot of the workspace window".into(),
        parameters: Some(schema),
    }
}

fn entry(entry_id: String, role: v1::EntryRole, content: String) -> v1::ConversationEntry {
    v1::ConversationEntry {
        entry_id,
        role: role as i32,
        content,
        ..Default::default()
    }
}

/// Answers for the model as Anthropic's Messages API would to the body PrepareTurn
/// rendered: a call of the screenshot tool until its result is in the conversation,
/// then the answer. Models number their calls: the same id again every turn is fine.
fn stand_in(prepared: &v1::PrepareTurnResponse, answer: &str) -> Value {
    let messages = prepared
        .chat_request
        .as_ref()
        .map_or(&[][..], |r| &r.messages[..]);
    let answered = messages
        .last()
        .is_some_and(|m| m.role == v1::ChatRole::Tool as i32);
    let (content, stop) = if answered {
        (json!([{"type": "text", "text": answer}]), "end_turn")
    } else {
        let call = json!({"type": "tool_use", "id": "toolu_screenshot_0", "name": "screenshot", "input": {}});
        (
            json!([{"type": "text", "text": "Let me look at the window."}, call]),
            "tool_use",
        )
    };
    // A stand-in's count: about four characters a token, the prompt's start read from the cache.
    let input = prepared.provider_body_json.len() / 4;
    json!({
        "id": "msg_stand_in", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": input / 10, "cache_read_input_tokens": input - input / 10,
                  "cache_creation_input_tokens": 0, "output_tokens": 24},
    })
}

/// Stands in for what a screenshot tool returns: a white grayscale PNG of the size
/// (zlib with stored blocks, so no compression library is needed).
fn screenshot_png(width: u32, height: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], body: &[u8]) {
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut raw = Vec::new();
    for _ in 0..height {
        raw.push(0); // filter: none
        raw.extend(std::iter::repeat_n(0xffu8, width as usize));
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit grayscale
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &zlib);
    chunk(&mut png, b"IEND", &[]);
    png
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let addr = env("PIONEER_ADDR").unwrap_or_else(|| "127.0.0.1:50051".into());
    let rounds: u32 = env("PIONEER_ROUNDS")
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let options = Options {
        token: env("PIONEER_TOKEN"),
        ..Options::default()
    };
    let mut clients = connect(&addr, options).await?;

    let thread = clients
        .history
        .create_thread(v1::CreateThreadRequest {
            thread_id: String::new(),
            config: Some(v1::ThreadConfig {
                max_context_tokens: Some(32_000),
                response_reserve_tokens: Some(4_000),
                model: "claude-sonnet-4-5".into(),
                summary_model: String::new(),
                ..Default::default()
            }),
        })
        .await
        .map_err(rpc("CreateThread"))?
        .into_inner()
        .thread
        .ok_or("CreateThread returned no thread")?;
    let thread_id = thread.thread_id;
    println!("thread {thread_id} on {addr}");

    let mut previous_stable = String::new();
    for round in 1..=rounds {
        let turn_id = format!("turn-{round}");
        let question = QUESTIONS[(round as usize - 1) % QUESTIONS.len()];
        // Every round sends the tools again: the server keeps none between rounds. `usage` is what
        // the provider reported for the turn's previous round (None on its first): stored with
        // that round beside what the server expected its cache to serve (ListRoundUsage).
        let request = |new_entries: Vec<v1::ConversationEntry>,
                       usage: Option<v1::ProviderUsage>| {
            v1::PrepareTurnRequest {
                thread_id: thread_id.clone(),
                turn_id: turn_id.clone(),
                new_entries,
                compile_input: Some(compile_input(round)),
                tools: vec![read_file_tool(), screenshot_tool()],
                tool_choice: Some(v1::ToolChoice {
                    mode: v1::ToolChoiceMode::Auto as i32,
                    tool_name: String::new(),
                }),
                provider: PROVIDER as i32,
                previous_round_usage: usage,
                ..Default::default()
            }
        };
        // 1. The user's message: stored, history loaded, prompt compiled, body rendered.
        let prepared = clients
            .turn
            .prepare_turn(request(
                vec![entry(
                    format!("{turn_id}.user"),
                    v1::EntryRole::User,
                    question.into(),
                )],
                None,
            ))
            .await
            .map_err(rpc("PrepareTurn"))?
            .into_inner();

        // 2. The model (a stand-in) calls the screenshot tool. Its response becomes the
        //    entry to store ("<turn>.r1": a retried round stores nothing twice); the call
        //    and its result go in one request.
        let answer = format!("Round {round}: here is a stand-in answer to {question:?}");
        let called =
            entries_of_response_value(PROVIDER, &stand_in(&prepared, &answer), &turn_id, 1)?;
        if called.stop != STOP_TOOL_USE {
            return Err(format!(
                "the model stopped ({}), no tool call",
                called.provider_stop_reason
            )
            .into());
        }
        let call = called.entries[0].tool_calls[0].clone();
        let mut result = entry(
            format!("{turn_id}.r1.{}", call.id),
            v1::EntryRole::Tool,
            "the workspace window, 64 x 48".into(),
        );
        result.tool_call_id = call.id.clone();
        result.name = call.name.clone();
        result.content_parts = vec![v1::ContentPart {
            part: Some(v1::content_part::Part::Image(v1::MediaPart {
                mime_type: "image/png".into(),
                source: Some(v1::media_part::Source::Data(screenshot_png(64, 48))),
                ..Default::default()
            })),
        }];
        let mut new_entries = called.entries;
        new_entries.push(result);
        let prepared = clients
            .turn
            .prepare_turn(request(new_entries, called.usage))
            .await
            .map_err(rpc("PrepareTurn"))?
            .into_inner();
        let sent = prepared
            .chat_request
            .clone()
            .unwrap_or_default()
            .messages
            .len();

        // 3. The final answer, stored and the turn completed in one call (safe to retry).
        let answered =
            entries_of_response_value(PROVIDER, &stand_in(&prepared, &answer), &turn_id, 2)?;
        if answered.entries.is_empty() {
            let why = answered.provider_stop_reason;
            return Err(format!("the model stopped ({why}) with nothing to store").into());
        }
        let done = clients
            .history
            .complete_turn(v1::CompleteTurnRequest {
                thread_id: thread_id.clone(),
                turn_id: turn_id.clone(),
                entries: answered.entries,
                // The answer's round's usage, stored with it.
                previous_round_usage: answered.usage,
            })
            .await
            .map_err(rpc("CompleteTurn"))?
            .into_inner();
        if done.completed_entry_count != 4 {
            return Err(format!(
                "turn {turn_id} has {} entries, not 4",
                done.completed_entry_count
            )
            .into());
        }
        let report = prepared.history_report.unwrap_or_default();
        let decision = v1::HistoryDecision::try_from(report.decision)
            .map(|d| d.as_str_name())
            .unwrap_or("UNKNOWN");
        let manifest = prepared.manifest.unwrap_or_default();
        println!(
            "round {round}: {decision}, {} of {} entries kept, {} tokens of a {} budget; {sent} messages sent",
            report.entries_kept,
            report.entries_loaded,
            report.tokens_after,
            report.budget_tokens,
        );
        println!(
            "  manifest event {}: stable {} dynamic {} full {}{}",
            prepared.manifest_event_id,
            short(&manifest.fingerprint_stable),
            short(&manifest.fingerprint_dynamic),
            short(&manifest.fingerprint_full),
            if previous_stable == manifest.fingerprint_stable {
                " (stable prefix unchanged: provider cache reusable)"
            } else {
                ""
            },
        );
        // The provider's usage in one meaning for every provider: input counts cache reads too.
        let usage = answered.usage.unwrap_or_default();
        println!(
            "  usage: the answer read {} of {} input tokens from the cache",
            usage.cache_read_input_tokens.unwrap_or(0),
            usage.input_tokens,
        );
        previous_stable = manifest.fingerprint_stable;
    }
    Ok(())
}
