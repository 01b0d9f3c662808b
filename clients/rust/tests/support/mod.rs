//! Shared setup of the contract tests: which server to call, connections,
//! unique ids, the UNIMPLEMENTED rule and a few request builders.
//!
//! Environment:
//! * `PIONEER_ADDR`  host:port of the server. Unset: start `pioneer-grpc serve` from the
//!   repository's `.venv` (or `$PIONEER_SERVER_BIN`) on a free loopback port with a fresh
//!   home and token; it stops when the test binary exits.
//! * `PIONEER_TOKEN` the bearer token the server requires (empty = none).
//! * `PIONEER_HOME`  the server's runtime home (bootstrap file checks).
//! * `CI`            `true`: an UNIMPLEMENTED answer, or no server at all, fails instead of skipping.

#![allow(dead_code)]

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pioneer_grpc_client::health::{HealthCheckRequest, ServingStatus};
use pioneer_grpc_client::tonic::Status;
use pioneer_grpc_client::{connect, v1, Clients, Options};
use sha2::{Digest, Sha256};

/// The server under test.
pub struct Server {
    pub addr: String,
    /// Empty when the server runs without a token.
    pub token: String,
    pub home: Option<PathBuf>,
}

static SERVER: OnceLock<Option<Server>> = OnceLock::new();
/// Our own server's supervising shell: kept open for the life of the process.
/// Its stdin closes when the test binary exits, which stops the server.
static OWN_SERVER: Mutex<Option<Child>> = Mutex::new(None);

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The server to test, or `None` (tests then return early) when there is none
/// outside CI.
pub fn server() -> Option<&'static Server> {
    SERVER
        .get_or_init(|| {
            if let Some(addr) = non_empty_env("PIONEER_ADDR") {
                return Some(Server {
                    addr,
                    token: std::env::var("PIONEER_TOKEN").unwrap_or_default(),
                    home: non_empty_env("PIONEER_HOME").map(PathBuf::from),
                });
            }
            match start_own_server() {
                Ok(server) => Some(server),
                Err(why) if in_ci() => panic!("PIONEER_ADDR is unset and no server could be started: {why}"),
                Err(why) => {
                    eprintln!("contract: SKIP all: PIONEER_ADDR is unset and no server could be started ({why})");
                    None
                }
            }
        })
        .as_ref()
}

fn start_own_server() -> Result<Server, String> {
    let bin = match non_empty_env("PIONEER_SERVER_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/pioneer-grpc"),
    };
    if !bin.is_file() {
        return Err(format!("{} not found", bin.display()));
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let home = std::env::temp_dir().join(format!("pioneer-rust-contract-{}", unique_suffix()));
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    let token = format!("rust-contract-{}", unique_suffix());
    let log = home.with_extension("log");
    // The shell runs the server and stops it (then removes the home) once its
    // stdin reaches EOF, i.e. when this process exits however it exits.
    let script = r#"server="$1"; listen="$2"; home="$3"; token="$4"; log="$5"
"$server" serve --listen "$listen" --home "$home" --token "$token" --seed-bootstrap-files >"$log" 2>&1 &
pid=$!
cat >/dev/null
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rm -rf "$home" "$log""#;
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("pioneer-rust-contract")
        .arg(&bin)
        .arg(&addr)
        .arg(&home)
        .arg(&token)
        .arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    *OWN_SERVER.lock().unwrap() = Some(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(&addr).is_err() {
        if Instant::now() > deadline {
            let mut text = String::new();
            let _ = std::fs::File::open(&log).and_then(|mut f| f.read_to_string(&mut text));
            return Err(format!(
                "server did not listen on {addr} within 60s; log:\n{text}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "contract: started {} on {addr} (home {})",
        bin.display(),
        home.display()
    );
    Ok(Server {
        addr,
        token,
        home: Some(home),
    })
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}-{:x}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// An id no other test, run or language uses on a shared server.
pub fn uniq(prefix: &str) -> String {
    format!("rs-{prefix}-{}", unique_suffix())
}

/// Options with the server's token.
pub fn options() -> Options {
    let server = server().expect("server() checked by the caller");
    Options {
        token: (!server.token.is_empty()).then(|| server.token.clone()),
        ..Options::default()
    }
}

/// Clients connected with `options`, once the server reports SERVING.
pub async fn clients_with(options: Options) -> Option<Clients> {
    let server = server()?;
    let mut clients = connect(&server.addr, options)
        .await
        .unwrap_or_else(|e| panic!("connect {}: {e}", server.addr));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = clients
            .health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await;
        match answer {
            Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return Some(clients),
            _ if Instant::now() > deadline => {
                panic!("server {} is not SERVING: {answer:?}", server.addr)
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Clients with the server's token.
pub async fn clients() -> Option<Clients> {
    server()?;
    clients_with(options()).await
}

/// False (skip the test, with a note) when the run lacks something the test
/// needs; under CI=true the harness must provide it, so that is a failure.
pub fn needs(ok: bool, why: &str) -> bool {
    if ok {
        return true;
    }
    if in_ci() {
        panic!("{why} (CI=true: the harness must provide it)");
    }
    eprintln!("contract: SKIP: {why}");
    false
}

/// The server's runtime home as a local directory, canonical; `None` (or a
/// failure under CI) when PIONEER_HOME does not name one.
pub fn home() -> Option<PathBuf> {
    let home = server()?.home.as_ref().filter(|h| h.is_dir());
    if !needs(
        home.is_some(),
        "PIONEER_HOME does not name the server's runtime home on this machine",
    ) {
        return None;
    }
    let home = home.unwrap();
    Some(home.canonicalize().unwrap_or_else(|_| home.clone()))
}

/// The UNIMPLEMENTED rule: true (skip the test) when the server does not
/// implement the RPC yet, unless CI=true, where that is a failure.
pub fn skip_unimplemented(status: &Status, rpc: &str) -> bool {
    if status.code() != pioneer_grpc_client::tonic::Code::Unimplemented {
        return false;
    }
    if in_ci() {
        panic!(
            "{rpc}: the server answered UNIMPLEMENTED (CI=true): {}",
            status.message()
        );
    }
    eprintln!("contract: SKIP: {rpc} is not implemented by this server yet");
    true
}

/// `Clients` for the test, or return from it when there is no server.
macro_rules! setup {
    () => {
        match support::clients().await {
            Some(clients) => clients,
            None => return,
        }
    };
}

/// Awaits a call and returns the response message; returns from the test on
/// UNIMPLEMENTED (outside CI), panics on any other error.
macro_rules! ok {
    ($call:expr, $rpc:expr) => {
        match $call.await {
            Ok(response) => response.into_inner(),
            Err(status) => {
                if support::skip_unimplemented(&status, $rpc) {
                    return;
                }
                panic!(
                    "{}: {}",
                    $rpc,
                    pioneer_grpc_client::status::describe(&status)
                );
            }
        }
    };
}

/// Awaits a call that must fail with `$code` and a message; returns the status.
macro_rules! fails {
    ($call:expr, $code:expr, $rpc:expr) => {
        match $call.await {
            Ok(_) => panic!("{}: succeeded, want {:?}", $rpc, $code),
            Err(status) => {
                if $code != pioneer_grpc_client::tonic::Code::Unimplemented
                    && support::skip_unimplemented(&status, $rpc)
                {
                    return;
                }
                assert_eq!(
                    status.code(),
                    $code,
                    "{}: {}",
                    $rpc,
                    pioneer_grpc_client::status::describe(&status)
                );
                assert!(
                    !status.message().trim().is_empty(),
                    "{}: {:?} without a message",
                    $rpc,
                    $code
                );
                status
            }
        }
    };
}

/// Asserts `status` carries a BadRequest violation on exactly `field`, with a description.
pub fn assert_violation(status: &Status, field: &str) {
    let violation =
        pioneer_grpc_client::status::field_violation(status, field).unwrap_or_else(|| {
            panic!(
                "no BadRequest violation on {field:?}; got {:?}",
                pioneer_grpc_client::status::field_violations(status)
            )
        });
    assert!(
        !violation.description.trim().is_empty(),
        "violation on {field:?} has no description"
    );
}

pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn user_entry(entry_id: &str, turn_id: &str, content: &str) -> v1::ConversationEntry {
    v1::ConversationEntry {
        entry_id: entry_id.into(),
        turn_id: turn_id.into(),
        role: v1::EntryRole::User as i32,
        content: content.into(),
        ..Default::default()
    }
}

pub fn assistant_entry(entry_id: &str, turn_id: &str, content: &str) -> v1::ConversationEntry {
    v1::ConversationEntry {
        role: v1::EntryRole::Assistant as i32,
        ..user_entry(entry_id, turn_id, content)
    }
}

/// A JSON-schema object as a protobuf Struct.
pub fn object_schema(properties: &[(&str, &str)], required: &[&str]) -> prost_types::Struct {
    use prost_types::value::Kind;
    use prost_types::{ListValue, Struct, Value};
    let text = |s: &str| Value {
        kind: Some(Kind::StringValue(s.to_owned())),
    };
    let props = properties
        .iter()
        .map(|(name, ty)| {
            let mut field = Struct::default();
            field.fields.insert("type".into(), text(ty));
            (
                (*name).to_owned(),
                Value {
                    kind: Some(Kind::StructValue(field)),
                },
            )
        })
        .collect();
    let mut schema = Struct::default();
    schema.fields.insert("type".into(), text("object"));
    schema.fields.insert(
        "properties".into(),
        Value {
            kind: Some(Kind::StructValue(Struct { fields: props })),
        },
    );
    schema.fields.insert(
        "required".into(),
        Value {
            kind: Some(Kind::ListValue(ListValue {
                values: required.iter().map(|r| text(r)).collect(),
            })),
        },
    );
    schema
}

pub fn weather_tool() -> v1::ToolDefinition {
    v1::ToolDefinition {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: Some(object_schema(&[("city", "string")], &["city"])),
    }
}

/// A PromptCompileInput with every input of the contract set.
pub fn full_input() -> v1::PromptCompileInput {
    use v1::*;
    let review_hook = HookSource {
        source: Some(HookRef {
            hook_id: "pr-review".into(),
            subscription_id: "sub-review-1".into(),
            phase: HookPhase::TurnPrePromptCompile as i32,
            contribution_id: Some("contrib-1".into()),
            contribution_hash: Some("abc123".into()),
        }),
        section_id: Some("hook.review_notes".into()),
        contribution_kind: ContributionKind::PromptSection as i32,
        priority: Some(500),
        source_count: Some(1),
        truncation: Truncation::None as i32,
        label: "pull request review hook".into(),
    };
    let context_hook = HookSource {
        source: Some(HookRef {
            hook_id: "calendar".into(),
            subscription_id: "sub-calendar-1".into(),
            phase: HookPhase::TurnPrePromptContext as i32,
            contribution_id: None,
            contribution_hash: None,
        }),
        section_id: None,
        contribution_kind: ContributionKind::PromptContext as i32,
        priority: Some(100),
        source_count: Some(2),
        truncation: Truncation::None as i32,
        label: "calendar context".into(),
    };
    PromptCompileInput {
        workspace_root: String::new(),
        profile: PromptProfile::Full as i32,
        skills_prompt: Some("Skills note: prefer the repository's own scripts.".into()),
        retry_instruction: Some("Retry the failed call once with corrected arguments.".into()),
        include_tool_recovery_policy: true,
        include_task_orchestration_policy: true,
        continue_generation_hint: true,
        dynamic_context: Some("Editor: src/client.rs is open at line 42.".into()),
        extra_system: Some("Local time 2026-01-05 10:00 UTC; OS linux.".into()),
        limits: Some(PromptLimits {
            max_chars_per_file: Some(10_000),
            max_dynamic_sections: Some(8),
            ..Default::default()
        }),
        skills: Some(SkillsInput {
            active_skills: vec![Skill {
                slug: "rust-review".into(),
                display_name: "Rust review".into(),
                description: "Reviewing Rust changes".into(),
                body: "Run clippy with -D warnings before reading the diff.".into(),
                path_matched: true,
            }],
            include_read_skill_hint: true,
        }),
        memory_recall: Some(MemoryRecall {
            policy: MemoryPolicy::Full as i32,
            items: vec![MemoryItem {
                scope: "user".into(),
                category: "preference".into(),
                content: "Prefers short commit messages that say why.".into(),
            }],
            available_tools: vec!["memory_search".into(), "memory_write".into()],
            thread_context: Some("Thread is about the Rust client.".into()),
            task_context: None,
        }),
        agents_md: Some(AgentsMdSource {
            source: Some(agents_md_source::Source::Content(AgentsMdContent {
                content: "Format with rustfmt; never commit target/.".into(),
                source_label: "thread tree / pioneer-grpc / clients".into(),
            })),
        }),
        thread_context: vec![ThreadContextSnippet {
            snippet_id: "thread:turn-7/item-2/chunk_0".into(),
            text: "We picked tonic 0.14 for the client.".into(),
            provenance: Some(SnippetProvenance {
                workspace: "pioneer".into(),
                thread_id: "thread-earlier".into(),
                turn_id: "turn-7".into(),
                task_id: String::new(),
                timestamp: "2026-01-04T09:30:00Z".into(),
                source: ThreadContextSource::RelatedThread as i32,
                score: 0.87,
                boundary: "snippet".into(),
            }),
            artifacts: vec![ArtifactRef {
                artifact_id: "art-design-doc".into(),
                version_id: Some("v3".into()),
                display_name: "design.md".into(),
                kind: "document".into(),
                mime_type: Some("text/markdown".into()),
                size_bytes: Some(2048),
                sha256: None,
                role: Some("user".into()),
                width_px: None,
                height_px: None,
                page_count: None,
                detail: 0,
            }],
        }],
        hidden_tool_domains: vec![HiddenToolDomain {
            domain: "computer_use".into(),
            tools: vec!["screenshot".into(), "click".into()],
        }],
        permissions: Some(PermissionProfile {
            mode: PermissionMode::Ask as i32,
            rules: vec![PermissionRule {
                category: "shell".into(),
                decision: PermissionDecision::Ask as i32,
            }],
            allowed_tools: vec!["read_file".into()],
            denied_tools: vec!["delete_repo".into()],
            allowed_paths: vec!["/work/main".into()],
        }),
        dynamic_sections: vec![DynamicSection {
            id: "hook.review_notes".into(),
            title: Some("Review notes".into()),
            content: "Two review comments are still open.".into(),
            max_chars: None,
            truncated: false,
            hook_source: Some(review_hook),
        }],
        hook_sources: vec![context_hook],
        persona: None,
        omit_persona: false,
        identity_files: None,
    }
}

/// A request that compiles `input` and records the manifest on the turn.
pub fn compile_on_turn(
    input: v1::PromptCompileInput,
    thread_id: &str,
    turn_id: &str,
) -> v1::CompilePromptRequest {
    v1::CompilePromptRequest {
        input: Some(input),
        thread_id: thread_id.into(),
        turn_id: turn_id.into(),
    }
}
