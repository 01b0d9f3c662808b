//! A minimal agent loop on pioneer-grpc.
//!
//! Each round: PrepareTurn (store the user's message, load the budgeted history,
//! compile the system prompt, get the ChatRequest and the OpenAI body), a
//! stand-in for the model call, AppendEntries with the reply, CompleteTurn.
//!
//! ```sh
//! PIONEER_ADDR=127.0.0.1:50051 PIONEER_TOKEN=secret cargo run --example agentloop
//! ```
//! `PIONEER_ROUNDS` sets the number of rounds (default 3).

use std::error::Error;

use pioneer_grpc_client::tonic::Status;
use pioneer_grpc_client::{connect, status, v1, Options};

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

fn entry(turn_id: &str, role: v1::EntryRole, content: String) -> v1::ConversationEntry {
    let suffix = if role == v1::EntryRole::User {
        "user"
    } else {
        "assistant"
    };
    v1::ConversationEntry {
        entry_id: format!("{turn_id}-{suffix}"),
        turn_id: turn_id.into(),
        role: role as i32,
        content,
        ..Default::default()
    }
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
                model: "gpt-4o-mini".into(),
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
        let prepared = clients
            .turn
            .prepare_turn(v1::PrepareTurnRequest {
                thread_id: thread_id.clone(),
                turn_id: turn_id.clone(),
                new_entries: vec![entry(&turn_id, v1::EntryRole::User, question.into())],
                compile_input: Some(compile_input(round)),
                tools: vec![read_file_tool()],
                tool_choice: Some(v1::ToolChoice {
                    mode: v1::ToolChoiceMode::Auto as i32,
                    tool_name: String::new(),
                }),
                provider: v1::Provider::OpenaiChatCompletions as i32,
                ..Default::default()
            })
            .await
            .map_err(rpc("PrepareTurn"))?
            .into_inner();

        // A real loop would POST prepared.provider_body_json to the provider
        // here; this one answers with canned text.
        let sent = prepared.chat_request.unwrap_or_default().messages.len();
        let reply = format!("Round {round}: here is a stand-in answer to {question:?}");

        clients
            .history
            .append_entries(v1::AppendEntriesRequest {
                thread_id: thread_id.clone(),
                entries: vec![entry(&turn_id, v1::EntryRole::Assistant, reply)],
                counts_only: false,
            })
            .await
            .map_err(rpc("AppendEntries"))?;
        clients
            .history
            .complete_turn(v1::CompleteTurnRequest {
                thread_id: thread_id.clone(),
                turn_id: turn_id.clone(),
            })
            .await
            .map_err(rpc("CompleteTurn"))?;

        let report = prepared.history_report.unwrap_or_default();
        let decision = v1::HistoryDecision::try_from(report.decision)
            .map(|d| d.as_str_name())
            .unwrap_or("UNKNOWN");
        let manifest = prepared.manifest.unwrap_or_default();
        println!(
            "round {round}: {decision}, {} of {} entries kept, {} tokens of a {} budget; {sent} messages sent ({} body bytes to {})",
            report.entries_kept,
            report.entries_loaded,
            report.tokens_after,
            report.budget_tokens,
            prepared.provider_body_json.len(),
            prepared.provider_path,
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
        previous_stable = manifest.fingerprint_stable;
    }
    Ok(())
}
