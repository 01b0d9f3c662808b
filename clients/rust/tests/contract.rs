//! Contract tests of `pioneer.v1`: every RPC, called through the generated
//! stubs and `connect`, against a real pioneer-grpc server. The server is
//! shared (between tests and with other languages' tests), so every test uses
//! its own thread ids. See `support` for the environment variables.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use pioneer_grpc_client::health::{HealthCheckRequest, ServingStatus};
use pioneer_grpc_client::status::describe;
use pioneer_grpc_client::tonic::{Code, Request, Streaming};
use pioneer_grpc_client::v1::{self, watch_manifests_response::Kind};
use pioneer_grpc_client::Options;
use serde_json::Value as Json;
use support::*;

// ---------------------------------------------------------------- echo, auth, health

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_returns_the_payload() {
    let mut c = setup!();
    let binary: Vec<u8> = (0..=255u8).collect();
    let large = vec![0xA5u8; 1 << 20];
    for payload in [Vec::new(), b"ping".to_vec(), binary, large] {
        let reply = ok!(
            c.echo.echo(v1::EchoRequest {
                payload: payload.clone(),
                response_bytes: None,
            }),
            "Echo"
        );
        assert_eq!(reply.payload, payload, "Echo of {} bytes", payload.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_without_a_token() {
    let Some(_) = server() else { return };
    let Some(mut c) = clients_with(Options::default()).await else {
        return;
    };
    for service in ["", "pioneer.v1.EchoService", "pioneer.v1.HistoryService"] {
        let reply = ok!(
            c.health.check(HealthCheckRequest {
                service: service.into()
            }),
            "Health.Check"
        );
        assert_eq!(
            reply.status,
            ServingStatus::Serving as i32,
            "health of {service:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_token_is_unauthenticated() {
    let Some(server) = server() else { return };
    if !needs(
        !server.token.is_empty(),
        "PIONEER_TOKEN is empty: the server under test requires no token",
    ) {
        return;
    }
    let Some(mut c) = clients_with(Options::default()).await else {
        return;
    };
    fails!(
        c.echo.echo(v1::EchoRequest::default()),
        Code::Unauthenticated,
        "Echo without a token"
    );
    fails!(
        c.history.get_thread(v1::GetThreadRequest {
            thread_id: uniq("auth")
        }),
        Code::Unauthenticated,
        "GetThread without a token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_is_unauthenticated() {
    let Some(server) = server() else { return };
    if !needs(
        !server.token.is_empty(),
        "PIONEER_TOKEN is empty: the server under test requires no token",
    ) {
        return;
    }
    let options = Options {
        token: Some(format!("{}-wrong", server.token)),
        ..Options::default()
    };
    let Some(mut c) = clients_with(options).await else {
        return;
    };
    fails!(
        c.echo.echo(v1::EchoRequest::default()),
        Code::Unauthenticated,
        "Echo with a wrong token"
    );
    // The token travels per call: a correct one on the same connection works.
    let mut request = Request::new(v1::EchoRequest {
        payload: b"ok".to_vec(),
        response_bytes: None,
    });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {}", server.token).parse().unwrap(),
    );
    let reply = ok!(c.echo.echo(request), "Echo with the right token");
    assert_eq!(reply.payload, b"ok");
}

// ---------------------------------------------------------------- deadlines

/// The deadline travels to the server (`grpc-timeout`): once the answer has
/// started (the stored event arrived), it is the server that ends the call,
/// and tonic reports the server's DEADLINE_EXCEEDED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_is_enforced_by_the_server_once_the_answer_started() {
    let mut c = setup!();
    let thread = uniq("deadline-server");
    let compiled = ok!(
        c.prompt_compiler
            .compile_prompt(compile_on_turn(full_input(), &thread, "turn-1")),
        "CompilePrompt"
    );
    let mut request = Request::new(v1::WatchManifestsRequest {
        thread_id: thread.clone(),
        after_event_id: 0,
        live_only: false,
    });
    request.set_timeout(Duration::from_millis(1500));
    let started = Instant::now();
    let mut stream = ok!(c.manifest.watch_manifests(request), "WatchManifests");
    let event = next_event(&mut stream, Duration::from_secs(10)).await;
    assert_eq!(event.event_id, compiled.manifest_event_id);
    let end = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match stream.message().await {
                Ok(Some(v1::WatchManifestsResponse {
                    kind: Some(Kind::Heartbeat(_)),
                })) => continue,
                other => return other,
            }
        }
    })
    .await
    .expect("the server did not end the stream at its deadline");
    match end {
        Err(status) => assert_eq!(
            status.code(),
            Code::DeadlineExceeded,
            "{}",
            describe(&status)
        ),
        Ok(other) => panic!("want DEADLINE_EXCEEDED, got {other:?}"),
    }
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "ended after {:?}",
        started.elapsed()
    );
}

/// A deadline that passes before the server has answered is tonic's to report,
/// and tonic reports its own timer as CANCELLED "Timeout expired", not as
/// DEADLINE_EXCEEDED. To keep the server's copy of the deadline out of the race
/// the tiny deadline here is local only (`Endpoint::timeout`, never sent), on a
/// channel plugged into `Clients::from_channel`; the 8 MiB request keeps the
/// server from answering within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_passing_before_the_answer_is_cancelled_by_tonic() {
    let Some(server) = server() else { return };
    let endpoint = pioneer_grpc_client::tonic::transport::Endpoint::from_shared(format!(
        "http://{}",
        server.addr
    ))
    .expect("endpoint")
    .timeout(Duration::from_millis(1));
    let channel = endpoint.connect().await.expect("connect");
    let token = (!server.token.is_empty()).then_some(server.token.as_str());
    let call_options = pioneer_grpc_client::CallOptions::new(token, None).expect("call options");
    let mut c = pioneer_grpc_client::Clients::from_channel(channel, call_options);
    for _ in 0..3 {
        let status = fails!(
            c.echo.echo(v1::EchoRequest {
                payload: vec![7u8; 8 << 20],
                response_bytes: None,
            }),
            Code::Cancelled,
            "Echo past a 1ms deadline"
        );
        assert_eq!(status.message(), "Timeout expired");
        assert!(pioneer_grpc_client::status::is_deadline(&status));
    }
}

// ---------------------------------------------------------------- prompt compiler

fn rendered(section: &v1::PromptSection) -> String {
    format!("## {}\n{}", section.title, section.content)
}

fn joined(sections: &[&v1::PromptSection]) -> String {
    sections
        .iter()
        .map(|s| rendered(s))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn is_stable(section: &v1::PromptSection) -> bool {
    section.stability == v1::SectionStability::Stable as i32
}

/// The invariants of every compiled payload.
fn check_payload(p: &v1::CompiledPromptPayload) {
    assert!(!p.boundary_marker.is_empty(), "boundary marker");
    let stable: Vec<&v1::PromptSection> = p.sections.iter().filter(|s| is_stable(s)).collect();
    let dynamic: Vec<&v1::PromptSection> = p.sections.iter().filter(|s| !is_stable(s)).collect();
    assert!(
        dynamic
            .iter()
            .all(|s| s.stability == v1::SectionStability::Dynamic as i32),
        "every section is stable or dynamic"
    );
    let first_dynamic = p.sections.iter().position(|s| !is_stable(s));
    if let Some(first) = first_dynamic {
        assert!(
            p.sections[first..].iter().all(|s| !is_stable(s)),
            "stable sections come first"
        );
    }
    for section in &p.sections {
        assert!(
            !section.content.is_empty(),
            "empty section {} is rendered",
            section.id
        );
        assert_eq!(
            section.fingerprint,
            sha256_hex(&rendered(section)),
            "fingerprint of {}",
            section.id
        );
    }
    let ids: Vec<&str> = p.sections.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        ids.len(),
        "unique section ids"
    );
    assert_eq!(p.stable_system_text, joined(&stable));
    assert_eq!(p.dynamic_system_text, joined(&dynamic));
    let full = match (
        p.stable_system_text.is_empty(),
        p.dynamic_system_text.is_empty(),
    ) {
        (_, true) => p.stable_system_text.clone(),
        (true, false) => format!("{}{}", p.boundary_marker, p.dynamic_system_text),
        (false, false) => format!(
            "{}{}{}",
            p.stable_system_text, p.boundary_marker, p.dynamic_system_text
        ),
    };
    assert_eq!(p.full_system_text, full);

    let m = p.manifest.as_ref().expect("manifest");
    assert!(!m.compiler_version.is_empty());
    assert_eq!(m.section_ids, ids);
    assert_eq!(m.fingerprint_stable, sha256_hex(&p.stable_system_text));
    assert_eq!(m.fingerprint_dynamic, sha256_hex(&p.dynamic_system_text));
    assert_eq!(m.fingerprint_full, sha256_hex(&p.full_system_text));
    let by_section: Vec<(&str, i32, &str)> = p
        .sections
        .iter()
        .map(|s| (s.id.as_str(), s.stability, s.fingerprint.as_str()))
        .collect();
    let in_manifest: Vec<(&str, i32, &str)> = m
        .section_fingerprints
        .iter()
        .map(|s| (s.section_id.as_str(), s.stability, s.fingerprint.as_str()))
        .collect();
    assert_eq!(in_manifest, by_section, "manifest section fingerprints");
}

async fn compile(
    c: &mut pioneer_grpc_client::Clients,
    input: v1::PromptCompileInput,
) -> Result<v1::CompiledPromptPayload, pioneer_grpc_client::tonic::Status> {
    let response = c
        .prompt_compiler
        .compile_prompt(v1::CompilePromptRequest {
            input: Some(input),
            ..Default::default()
        })
        .await?;
    Ok(response.into_inner().payload.expect("payload"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_prompt_renders_every_input() {
    let mut c = setup!();
    let response = ok!(
        c.prompt_compiler.compile_prompt(v1::CompilePromptRequest {
            input: Some(full_input()),
            ..Default::default()
        }),
        "CompilePrompt"
    );
    assert_eq!(
        response.manifest_event_id, 0,
        "nothing is persisted without a thread and turn"
    );
    let p = response.payload.expect("payload");
    check_payload(&p);
    let m = p.manifest.as_ref().unwrap();
    assert_eq!(m.profile, v1::PromptProfile::Full as i32);
    assert!(m.thread_id.is_empty() && m.turn_id.is_empty());
    assert!(!p.stable_system_text.is_empty() && !p.dynamic_system_text.is_empty());
    let marker = p.boundary_marker.trim();
    assert!(!p.stable_system_text.contains(marker) && !p.dynamic_system_text.contains(marker));

    for needle in [
        "Editor: src/client.rs is open at line 42.",
        "Local time 2026-01-05 10:00 UTC; OS linux.",
        "Retry the failed call once with corrected arguments.",
        "Skills note: prefer the repository's own scripts.",
        "rust-review",
        "Prefers short commit messages that say why.",
        "Format with rustfmt; never commit target/.",
        "We picked tonic 0.14 for the client.",
        "art-design-doc",
        "screenshot",
        "Two review comments are still open.",
    ] {
        assert!(
            p.dynamic_system_text.contains(needle),
            "dynamic text lacks {needle:?}"
        );
        assert!(
            !p.stable_system_text.contains(needle),
            "stable text has {needle:?}"
        );
    }
    let review = p
        .sections
        .iter()
        .find(|s| s.id == "hook.review_notes")
        .expect("the caller's dynamic section");
    assert!(!is_stable(review));
    assert_eq!(review.title, "Review notes");
    let hooks: HashSet<&str> = m
        .hook_sources
        .iter()
        .filter_map(|h| h.source.as_ref())
        .map(|h| h.hook_id.as_str())
        .collect();
    assert!(
        hooks.contains("pr-review") && hooks.contains("calendar"),
        "hook sources {hooks:?}"
    );

    let home = home();
    for file in ["SOUL.md", "IDENTITY.md"] {
        let entry = m
            .source_manifest
            .iter()
            .find(|e| e.file == file)
            .unwrap_or_else(|| panic!("{file} in the source manifest"));
        assert_eq!(entry.status, v1::SourceStatus::Loaded as i32, "{file}");
        assert!(
            p.stable_system_text.contains(file),
            "{file} is rendered in the stable half"
        );
        if let Some(home) = &home {
            assert!(
                std::path::Path::new(&entry.path).starts_with(home),
                "{file} read from {} outside {}",
                entry.path,
                home.display()
            );
        }
    }

    // Identical inputs give byte-identical output and fingerprints.
    let again = ok!(
        c.prompt_compiler.compile_prompt(v1::CompilePromptRequest {
            input: Some(full_input()),
            ..Default::default()
        }),
        "CompilePrompt again"
    );
    assert_eq!(again.payload.as_ref(), Some(&p));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_prompt_leaves_out_sections_with_nothing_to_say() {
    let mut c = setup!();
    let full = match compile(&mut c, full_input()).await {
        Ok(p) => p,
        Err(status) if skip_unimplemented(&status, "CompilePrompt") => return,
        Err(status) => panic!("CompilePrompt: {}", describe(&status)),
    };
    let ids = |p: &v1::CompiledPromptPayload| -> HashSet<String> {
        p.sections.iter().map(|s| s.id.clone()).collect()
    };
    let dropped = |without: &v1::CompiledPromptPayload| -> Vec<String> {
        let mut d: Vec<String> = ids(&full).difference(&ids(without)).cloned().collect();
        d.sort();
        d
    };

    let mut input = full_input();
    input.permissions = Some(v1::PermissionProfile {
        mode: v1::PermissionMode::FullAccess as i32,
        ..Default::default()
    });
    let full_access = compile(&mut c, input)
        .await
        .expect("CompilePrompt full access");
    check_payload(&full_access);
    let gone = dropped(&full_access);
    assert_eq!(
        gone.len(),
        1,
        "full access drops the permissions section only: {gone:?}"
    );
    assert!(ids(&full_access).is_subset(&ids(&full)));

    let mut input = full_input();
    input.agents_md = None;
    let no_agents = compile(&mut c, input)
        .await
        .expect("CompilePrompt without AGENTS.md");
    check_payload(&no_agents);
    let gone = dropped(&no_agents);
    assert_eq!(
        gone.len(),
        1,
        "no AGENTS.md drops its section only: {gone:?}"
    );
    assert!(!no_agents
        .dynamic_system_text
        .contains("Format with rustfmt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_prompt_profiles_narrow_the_sections() {
    let mut c = setup!();
    let full = match compile(&mut c, full_input()).await {
        Ok(p) => p,
        Err(status) if skip_unimplemented(&status, "CompilePrompt") => return,
        Err(status) => panic!("CompilePrompt: {}", describe(&status)),
    };
    let full_ids: HashSet<&str> = full.sections.iter().map(|s| s.id.as_str()).collect();

    let minimal = compile(
        &mut c,
        v1::PromptCompileInput {
            profile: v1::PromptProfile::Minimal as i32,
            ..full_input()
        },
    )
    .await
    .expect("CompilePrompt minimal");
    check_payload(&minimal);
    assert!(minimal.sections.len() < full.sections.len());
    assert!(minimal
        .sections
        .iter()
        .all(|s| full_ids.contains(s.id.as_str())));
    assert_eq!(
        minimal.manifest.as_ref().unwrap().profile,
        v1::PromptProfile::Minimal as i32
    );

    let none = compile(
        &mut c,
        v1::PromptCompileInput {
            profile: v1::PromptProfile::None as i32,
            ..full_input()
        },
    )
    .await
    .expect("CompilePrompt none");
    check_payload(&none);
    assert_eq!(
        none.sections.len(),
        1,
        "the none profile keeps only identity"
    );
    assert!(is_stable(&none.sections[0]));
    assert_eq!(none.sections[0].id, full.sections[0].id);
    assert!(none.dynamic_system_text.is_empty());
    assert_eq!(none.full_system_text, none.stable_system_text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_prompt_takes_a_persona_or_leaves_it_out() {
    let mut c = setup!();
    let persona = "You are Scout, a browser agent that files expense reports.";
    let own = match compile(
        &mut c,
        v1::PromptCompileInput {
            profile: v1::PromptProfile::None as i32,
            persona: Some(persona.into()),
            ..full_input()
        },
    )
    .await
    {
        Ok(p) => p,
        Err(status) if skip_unimplemented(&status, "CompilePrompt") => return,
        Err(status) => panic!("CompilePrompt: {}", describe(&status)),
    };
    assert_eq!(own.full_system_text, format!("## Identity\n{persona}"));
    let omitted = compile(
        &mut c,
        v1::PromptCompileInput {
            profile: v1::PromptProfile::Minimal as i32,
            omit_persona: true,
            ..full_input()
        },
    )
    .await
    .expect("CompilePrompt without a persona");
    assert!(omitted.sections.iter().all(|s| s.id != "identity_base"));
    assert!(omitted.stable_system_text.starts_with("## Safety\n"));
    let status = fails!(
        c.prompt_compiler.compile_prompt(v1::CompilePromptRequest {
            input: Some(v1::PromptCompileInput {
                persona: Some(persona.into()),
                omit_persona: true,
                ..full_input()
            }),
            ..Default::default()
        }),
        Code::InvalidArgument,
        "CompilePrompt with persona and omit_persona"
    );
    assert_violation(&status, "input.omit_persona");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_prompt_rejects_a_dynamic_section_id_with_whitespace() {
    let mut c = setup!();
    let mut input = full_input();
    input.dynamic_sections[0].id = "review notes".into();
    let status = fails!(
        c.prompt_compiler.compile_prompt(v1::CompilePromptRequest {
            input: Some(input),
            ..Default::default()
        }),
        Code::InvalidArgument,
        "CompilePrompt with a whitespace section id"
    );
    assert_violation(&status, "input.dynamic_sections[0].id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_prompt_rejects_negative_limits() {
    let mut c = setup!();
    let mut input = full_input();
    input.limits = Some(v1::PromptLimits {
        max_chars_total: Some(-1),
        ..Default::default()
    });
    let status = fails!(
        c.prompt_compiler.compile_prompt(v1::CompilePromptRequest {
            input: Some(input),
            ..Default::default()
        }),
        Code::InvalidArgument,
        "CompilePrompt with a negative limit"
    );
    assert_violation(&status, "input.limits.max_chars_total");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_bootstrap_files_reports_the_seeded_files() {
    let mut c = setup!();
    let home = home();
    for round in 0..2 {
        let reply = ok!(
            c.prompt_compiler
                .ensure_bootstrap_files(v1::EnsureBootstrapFilesRequest::default()),
            "EnsureBootstrapFiles"
        );
        let names: HashSet<&str> = reply.files.iter().map(|f| f.name.as_str()).collect();
        assert!(
            names.contains("SOUL.md") && names.contains("IDENTITY.md"),
            "files {names:?}"
        );
        assert!(!names.contains("USER.md"), "USER.md is never created");
        for file in &reply.files {
            // The server seeds the files at start (--seed-bootstrap-files): nothing is created now.
            assert!(!file.created, "round {round}: {} created again", file.name);
            if let Some(home) = &home {
                let path = std::path::Path::new(&file.path);
                assert!(
                    path.starts_with(home),
                    "{} outside {}",
                    file.path,
                    home.display()
                );
                assert!(path.is_file(), "{} exists", file.path);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_bootstrap_files_never_overwrites_and_stays_inside_the_home() {
    let mut c = setup!();
    let Some(home) = home() else { return };
    let folder = home.join(uniq("bootstrap"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("SOUL.md"), "").unwrap();
    let reply = ok!(
        c.prompt_compiler
            .ensure_bootstrap_files(v1::EnsureBootstrapFilesRequest {
                workspace_root: folder.display().to_string(),
            }),
        "EnsureBootstrapFiles in a folder"
    );
    let created = |name: &str| {
        reply
            .files
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} reported"))
            .created
    };
    assert!(!created("SOUL.md"), "an existing (empty) SOUL.md is kept");
    assert!(created("IDENTITY.md"), "a missing IDENTITY.md is created");
    assert_eq!(std::fs::read_to_string(folder.join("SOUL.md")).unwrap(), "");
    assert!(!std::fs::read_to_string(folder.join("IDENTITY.md"))
        .unwrap()
        .is_empty());

    fails!(
        c.prompt_compiler
            .ensure_bootstrap_files(v1::EnsureBootstrapFilesRequest {
                workspace_root: "../..".into(),
            }),
        Code::PermissionDenied,
        "EnsureBootstrapFiles outside the home"
    );
    let _ = std::fs::remove_dir_all(&folder);
}

// ---------------------------------------------------------------- history

fn config(max: i32, reserve: i32) -> v1::ThreadConfig {
    v1::ThreadConfig {
        max_context_tokens: Some(max),
        response_reserve_tokens: Some(reserve),
        model: "gpt-4o-mini".into(),
        summary_model: String::new(),
        ..Default::default()
    }
}

async fn create_thread(
    c: &mut pioneer_grpc_client::Clients,
    thread_id: &str,
    config: v1::ThreadConfig,
) -> Result<v1::Thread, pioneer_grpc_client::tonic::Status> {
    let reply = c
        .history
        .create_thread(v1::CreateThreadRequest {
            thread_id: thread_id.into(),
            config: Some(config),
        })
        .await?;
    Ok(reply.into_inner().thread.expect("thread"))
}

/// Creates a thread or returns from the test on UNIMPLEMENTED.
macro_rules! thread {
    ($c:expr, $id:expr, $config:expr) => {
        match create_thread(&mut $c, $id, $config).await {
            Ok(thread) => thread,
            Err(status) if skip_unimplemented(&status, "CreateThread") => return,
            Err(status) => panic!("CreateThread: {}", describe(&status)),
        }
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_create_get_update() {
    let mut c = setup!();
    let id = uniq("thread");
    let created = thread!(c, &id, config(50_000, 5_000));
    assert_eq!(created.thread_id, id);
    assert_eq!(created.config, Some(config(50_000, 5_000)));
    assert_eq!(created.entry_count, 0);
    assert!(created.create_time.is_some());

    let got = ok!(
        c.history.get_thread(v1::GetThreadRequest {
            thread_id: id.clone()
        }),
        "GetThread"
    );
    assert_eq!(got.thread.as_ref(), Some(&created));

    // Only the masked path changes.
    let updated = ok!(
        c.history.update_thread(v1::UpdateThreadRequest {
            thread_id: id.clone(),
            config: Some(v1::ThreadConfig {
                max_context_tokens: Some(60_000),
                response_reserve_tokens: Some(1),
                model: "other-model".into(),
                summary_model: String::new(),
                ..Default::default()
            }),
            update_mask: Some(prost_types::FieldMask {
                paths: vec!["max_context_tokens".into()],
            }),
        }),
        "UpdateThread"
    )
    .thread
    .expect("thread");
    assert_eq!(updated.config, Some(config(60_000, 5_000)));
    let got = ok!(
        c.history.get_thread(v1::GetThreadRequest {
            thread_id: id.clone()
        }),
        "GetThread"
    );
    assert_eq!(got.thread.unwrap().config, Some(config(60_000, 5_000)));

    // An empty id gets a server-generated one.
    let generated = thread!(c, "", config(50_000, 5_000));
    assert!(!generated.thread_id.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_thread_unknown_is_not_found() {
    let mut c = setup!();
    let status = fails!(
        c.history.get_thread(v1::GetThreadRequest {
            thread_id: uniq("missing")
        }),
        Code::NotFound,
        "GetThread unknown"
    );
    assert_eq!(
        pioneer_grpc_client::status::reason(&status).as_deref(),
        Some("THREAD_NOT_FOUND")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_thread_retried_answers_the_stored_thread() {
    let mut c = setup!();
    let id = uniq("retry");
    let create = |model: &str| v1::CreateThreadRequest {
        thread_id: id.clone(),
        config: Some(v1::ThreadConfig {
            model: model.into(),
            ..Default::default()
        }),
    };
    let first = ok!(c.history.create_thread(create("gpt-x")), "CreateThread");
    let again = ok!(
        c.history.create_thread(create("gpt-x")),
        "CreateThread retried"
    );
    assert_eq!(
        first.thread.unwrap().create_time,
        again.thread.unwrap().create_time
    );
    let status = fails!(
        c.history.create_thread(create("other")),
        Code::AlreadyExists,
        "CreateThread with another config"
    );
    assert_eq!(
        pioneer_grpc_client::status::reason(&status).as_deref(),
        Some("THREAD_CONFLICT")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_thread_rejects_a_reserve_not_below_the_context() {
    let mut c = setup!();
    for (max, reserve) in [(10_000, 10_000), (10_000, 20_000)] {
        let id = uniq("reserve");
        let status = fails!(
            c.history.create_thread(v1::CreateThreadRequest {
                thread_id: id.clone(),
                config: Some(config(max, reserve)),
            }),
            Code::InvalidArgument,
            "CreateThread with reserve >= max"
        );
        assert!(
            pioneer_grpc_client::status::field_violations(&status)
                .iter()
                .any(|v| v.field.starts_with("config.")),
            "violations name the config field: {}",
            describe(&status)
        );
        // Nothing was stored.
        fails!(
            c.history.get_thread(v1::GetThreadRequest { thread_id: id }),
            Code::NotFound,
            "GetThread after a rejected create"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_entries_is_idempotent_by_entry_id() {
    let mut c = setup!();
    let id = uniq("append");
    thread!(c, &id, config(100_000, 10_000));
    let entries = vec![
        user_entry("e1", "turn-1", "What does the cache boundary do?"),
        assistant_entry(
            "e2",
            "turn-1",
            "It splits the prompt into a stable and a dynamic half.",
        ),
    ];
    let append = |entries: Vec<v1::ConversationEntry>| v1::AppendEntriesRequest {
        thread_id: id.clone(),
        entries,
        counts_only: false,
    };
    let first = ok!(
        c.history.append_entries(append(entries.clone())),
        "AppendEntries"
    );
    assert_eq!((first.created_count, first.existing_count), (2, 0));
    assert_eq!(first.entries.len(), 2);
    assert!(first.entries[0].sequence < first.entries[1].sequence);
    for (stored, sent) in first.entries.iter().zip(&entries) {
        assert_eq!(stored.entry_id, sent.entry_id);
        assert_eq!(stored.content, sent.content);
        assert!(stored.token_count > 0, "tokens counted at append");
        // gpt-4o-mini counts in o200k_base (the server's model registry).
        assert_eq!(stored.tokenizer, "o200k_base");
        assert!(!stored.completed);
    }

    let repeat = ok!(
        c.history.append_entries(append(entries.clone())),
        "AppendEntries repeat"
    );
    assert_eq!((repeat.created_count, repeat.existing_count), (0, 2));
    assert_eq!(
        repeat.entries, first.entries,
        "a repeat returns the stored entries unchanged"
    );

    let mut changed = entries[1].clone();
    changed.content = "A different answer.".into();
    let status = fails!(
        c.history.append_entries(append(vec![changed])),
        Code::AlreadyExists,
        "AppendEntries repeat with different content"
    );
    assert_eq!(
        pioneer_grpc_client::status::reason(&status).as_deref(),
        Some("ENTRY_CONFLICT")
    );

    let mixed = ok!(
        c.history.append_entries(append(vec![
            entries[0].clone(),
            user_entry("e3", "turn-2", "And the manifest?"),
        ])),
        "AppendEntries mixed"
    );
    assert_eq!((mixed.created_count, mixed.existing_count), (1, 1));
    let thread = ok!(
        c.history.get_thread(v1::GetThreadRequest {
            thread_id: id.clone()
        }),
        "GetThread"
    );
    assert_eq!(
        thread.thread.unwrap().entry_count,
        3,
        "the rejected append stored nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_turn_then_load_budgeted_history() {
    let mut c = setup!();
    let id = uniq("history");
    thread!(c, &id, config(100_000, 10_000));
    ok!(
        c.history.append_entries(v1::AppendEntriesRequest {
            thread_id: id.clone(),
            entries: vec![
                user_entry("u1", "turn-1", "Name three HTTP/2 frame types."),
                assistant_entry("a1", "turn-1", "DATA, HEADERS and SETTINGS."),
                user_entry("u2", "turn-2", "And which one carries trailers?"),
            ],
            counts_only: false,
        }),
        "AppendEntries"
    );
    let done = ok!(
        c.history.complete_turn(v1::CompleteTurnRequest {
            thread_id: id.clone(),
            turn_id: "turn-1".into(),
            ..Default::default()
        }),
        "CompleteTurn"
    );
    assert_eq!(done.completed_entry_count, 2);

    let load = |exclude: &str, dry_run: bool| v1::LoadConversationHistoryRequest {
        thread_id: id.clone(),
        exclude_turn_id: exclude.into(),
        dry_run,
    };
    for (exclude, dry_run) in [("turn-2", false), ("", false), ("turn-2", true)] {
        let history = ok!(
            c.history.load_conversation_history(load(exclude, dry_run)),
            "LoadConversationHistory"
        );
        let got: Vec<(i32, &str)> = history
            .messages
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (v1::ChatRole::User as i32, "Name three HTTP/2 frame types."),
                (
                    v1::ChatRole::Assistant as i32,
                    "DATA, HEADERS and SETTINGS."
                ),
            ],
            "only completed turns load (exclude {exclude:?}, dry run {dry_run})"
        );
        let report = history.report.expect("report");
        assert_eq!(report.decision, v1::HistoryDecision::Full as i32);
        assert_eq!(report.budget_tokens, 90_000);
        assert_eq!(report.threshold_tokens, 72_000);
        assert_eq!(report.summary_target_tokens, 9_000);
        assert_eq!(
            (
                report.entries_loaded,
                report.entries_kept,
                report.entries_dropped
            ),
            (2, 2, 0)
        );
        assert_eq!(report.summary_use, v1::SummaryUse::None as i32);
        assert!(report.tokens_before > 0);
        assert_eq!(report.tokens_before, report.tokens_after);
        assert_eq!(report.tokenizer, "o200k_base");
        assert!(report.token_counts_exact && report.model_known);
    }

    ok!(
        c.history.complete_turn(v1::CompleteTurnRequest {
            thread_id: id.clone(),
            turn_id: "turn-2".into(),
            ..Default::default()
        }),
        "CompleteTurn turn-2"
    );
    let history = ok!(
        c.history.load_conversation_history(load("", false)),
        "LoadConversationHistory"
    );
    assert_eq!(history.messages.len(), 3);
    assert_eq!(
        history.messages[2].content,
        "And which one carries trailers?"
    );

    fails!(
        c.history
            .load_conversation_history(v1::LoadConversationHistoryRequest {
                thread_id: uniq("missing"),
                ..Default::default()
            }),
        Code::NotFound,
        "LoadConversationHistory unknown thread"
    );
}

/// Over 80% of the budget a summary replaces the older entries (the newest turns under the
/// low-water mark stay beside it); it is stored, and the next load reuses it instead of
/// calling the summary model again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_over_the_threshold_is_summarized_once() {
    let mut c = setup!();
    let id = uniq("summarize");
    // Budget 1,000 tokens: threshold 800, summary target 100.
    thread!(c, &id, config(2_000, 1_000));
    const TURNS: i32 = 16;
    let mut last_entry = String::new();
    for turn in 1..=TURNS {
        let turn_id = format!("turn-{turn}");
        let user = format!(
            "Question {turn}: which module owns the retry policy for provider calls, \
             and where is its backoff configured in the deployment files?"
        );
        let answer = format!(
            "Answer {turn}: the retry policy lives in providers/retry.rs; its backoff is \
             configured in deploy/values.yaml under provider.retry.backoff_ms."
        );
        last_entry = format!("a{turn}");
        ok!(
            c.history.append_entries(v1::AppendEntriesRequest {
                thread_id: id.clone(),
                entries: vec![
                    user_entry(&format!("u{turn}"), &turn_id, &user),
                    assistant_entry(&last_entry, &turn_id, &answer),
                ],
                counts_only: false,
            }),
            "AppendEntries"
        );
        ok!(
            c.history.complete_turn(v1::CompleteTurnRequest {
                thread_id: id.clone(),
                turn_id,
                ..Default::default()
            }),
            "CompleteTurn"
        );
    }
    let load = |dry_run: bool| v1::LoadConversationHistoryRequest {
        thread_id: id.clone(),
        exclude_turn_id: String::new(),
        dry_run,
    };
    let summary = |c: &mut pioneer_grpc_client::Clients| {
        let mut history = c.history.clone();
        let id = id.clone();
        async move {
            history
                .get_thread_summary(v1::GetThreadSummaryRequest { thread_id: id })
                .await
                .map(|r| r.into_inner().summary)
        }
    };

    // A dry run reports without summarizing or storing anything.
    let dry = ok!(
        c.history.load_conversation_history(load(true)),
        "LoadConversationHistory dry run"
    );
    let dry_report = dry.report.expect("report");
    assert!(
        dry_report.tokens_before >= dry_report.threshold_tokens,
        "{dry_report:?}"
    );
    assert_ne!(dry_report.summary_use, v1::SummaryUse::Created as i32);
    assert_eq!(summary(&mut c).await.expect("GetThreadSummary"), None);

    let first = ok!(
        c.history.load_conversation_history(load(false)),
        "LoadConversationHistory"
    );
    let report = first.report.expect("report");
    assert_eq!(
        report.decision,
        v1::HistoryDecision::Summarized as i32,
        "{report:?}"
    );
    assert_eq!(report.summary_use, v1::SummaryUse::Created as i32);
    assert_eq!(
        (
            report.budget_tokens,
            report.threshold_tokens,
            report.summary_target_tokens
        ),
        (1_000, 800, 100)
    );
    assert_eq!(report.entries_loaded, 2 * TURNS);
    assert!(report.tokens_after < report.tokens_before);
    // The summary stands for the older turns; the newest whole turns that fit under the
    // low-water mark (30% of the budget) stay beside it, so the body keeps their bytes.
    assert_eq!(report.low_water_tokens, 300, "{report:?}");
    let covered: i32 = report
        .summary_covers_through_entry_id
        .strip_prefix('a')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("covers through an answer: {report:?}"));
    assert!(
        (1..TURNS).contains(&covered),
        "the summary covers some turns, not the newest: {report:?}"
    );
    let kept = (TURNS - covered) as usize;
    assert_eq!(
        first.messages.len(),
        1 + 2 * kept,
        "the summary, then the turns after the ones it covers"
    );
    assert_eq!(first.messages[0].role, v1::ChatRole::System as i32);
    assert!(
        first.messages[0]
            .content
            .starts_with("Summary of earlier conversation:"),
        "{:?}",
        first.messages[0].content
    );
    assert!(
        first.messages[1]
            .content
            .starts_with(&format!("Question {}:", covered + 1)),
        "{:?}",
        first.messages[1].content
    );
    assert_eq!(
        first.messages.last().map(|m| m.content.as_str()),
        Some(
            format!(
                "Answer {TURNS}: the retry policy lives in providers/retry.rs; its backoff is \
                 configured in deploy/values.yaml under provider.retry.backoff_ms."
            )
            .as_str()
        )
    );

    let stored = summary(&mut c)
        .await
        .expect("GetThreadSummary")
        .expect("a stored summary");
    assert_eq!(stored.thread_id, id);
    assert_eq!(
        stored.covers_through_entry_id,
        report.summary_covers_through_entry_id
    );
    assert_ne!(stored.covers_through_entry_id, last_entry);
    assert!(!stored.text.is_empty() && stored.token_count > 0);
    assert!(first.messages[0].content.contains(&stored.text));
    assert_eq!(stored.summarizer, report.summarizer);

    let second = ok!(
        c.history.load_conversation_history(load(false)),
        "LoadConversationHistory again"
    );
    let report = second.report.expect("report");
    assert_eq!(
        report.summary_use,
        v1::SummaryUse::Reused as i32,
        "{report:?}"
    );
    assert_eq!(second.messages, first.messages);
    assert_eq!(
        summary(&mut c).await.expect("GetThreadSummary"),
        Some(stored)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_summary_is_unset_on_a_fresh_thread() {
    let mut c = setup!();
    let id = uniq("summary");
    thread!(c, &id, config(100_000, 10_000));
    let reply = ok!(
        c.history
            .get_thread_summary(v1::GetThreadSummaryRequest { thread_id: id }),
        "GetThreadSummary"
    );
    assert!(
        reply.summary.is_none(),
        "no summary yet: {:?}",
        reply.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_uses_cl100k_base() {
    let mut c = setup!();
    let reply = ok!(
        c.history.count_tokens(v1::CountTokensRequest {
            texts: vec!["hello world".into(), String::new()],
            messages: vec![v1::ChatMessage {
                role: v1::ChatRole::User as i32,
                content: "hello world".into(),
                ..Default::default()
            }],
            // No model: cl100k_base, as before models were known.
            model: String::new(),
        }),
        "CountTokens"
    );
    assert_eq!(reply.tokenizer, "cl100k_base");
    assert_eq!(
        reply.token_counts.len(),
        3,
        "one count per text, then per message"
    );
    assert_eq!(&reply.token_counts[..2], &[2, 0]);
    assert!(reply.token_counts[2] > 2, "a message adds its overhead");
    assert_eq!(reply.total_tokens, reply.token_counts.iter().sum::<i32>());
}

// ---------------------------------------------------------------- providers

/// Every string inside a JSON document.
fn json_strings(value: &Json, out: &mut Vec<String>) {
    match value {
        Json::String(s) => out.push(s.clone()),
        Json::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        Json::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k.clone());
            json_strings(v, out)
        }),
        _ => {}
    }
}

fn chat_request(model: &str, compiled: v1::CompiledPromptPayload) -> v1::ChatRequest {
    v1::ChatRequest {
        model: model.into(),
        messages: vec![v1::ChatMessage {
            role: v1::ChatRole::User as i32,
            content: "What is the weather in Oslo?".into(),
            ..Default::default()
        }],
        temperature: Some(0.2),
        max_tokens: Some(256),
        tools: vec![weather_tool()],
        tool_choice: Some(v1::ToolChoice {
            mode: v1::ToolChoiceMode::Auto as i32,
            tool_name: String::new(),
        }),
        parallel_tool_calls: Some(false),
        reasoning: None,
        compiled_prompt: Some(compiled),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_chat_request_for_each_provider() {
    let mut c = setup!();
    let compiled = match compile(&mut c, full_input()).await {
        Ok(p) => p,
        Err(status) if skip_unimplemented(&status, "CompilePrompt") => return,
        Err(status) => panic!("CompilePrompt: {}", describe(&status)),
    };
    let marker = compiled.boundary_marker.trim().to_owned();
    let stable_line = compiled
        .stable_system_text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    use v1::Provider::*;
    for (provider, model) in [
        (OpenaiChatCompletions, "gpt-4o-mini"),
        (OpenaiResponses, "gpt-4o-mini"),
        (AnthropicMessages, "claude-sonnet-4-5"),
        (GeminiGenerateContent, "gemini-2.5-flash"),
        (
            AmazonBedrockConverse,
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        ),
    ] {
        let reply = ok!(
            c.provider
                .render_chat_request(v1::RenderChatRequestRequest {
                    provider: provider as i32,
                    chat_request: Some(chat_request(model, compiled.clone())),
                    options: Some(v1::RenderOptions {
                        anthropic_min_cache_chars: Some(1),
                        cache_key_prefix: Some("rs-contract".into()),
                        ..Default::default()
                    }),
                }),
            "RenderChatRequest"
        );
        let body: Json = serde_json::from_str(&reply.body_json).unwrap_or_else(|e| {
            panic!("{provider:?}: body is not JSON ({e}): {}", reply.body_json)
        });
        assert!(body.is_object(), "{provider:?}: body is a JSON object");
        assert!(
            reply.path.starts_with('/'),
            "{provider:?}: path {:?}",
            reply.path
        );
        assert!(
            !reply.body_json.contains(&marker),
            "{provider:?}: the boundary marker reaches the model"
        );
        let mut strings = Vec::new();
        json_strings(&body, &mut strings);
        let has = |needle: &str| strings.iter().any(|s| s.contains(needle));
        assert!(
            has("What is the weather in Oslo?"),
            "{provider:?}: user message"
        );
        assert!(has("get_weather"), "{provider:?}: tool definition");
        assert!(has(&stable_line), "{provider:?}: stable system text");
        assert!(
            has("Editor: src/client.rs is open at line 42."),
            "{provider:?}: dynamic system text"
        );
        match provider {
            OpenaiChatCompletions => {
                assert_eq!(reply.path, "/v1/chat/completions");
                assert_eq!(body["model"], model);
                let key = body["prompt_cache_key"].as_str().unwrap_or_default();
                assert!(key.starts_with("rs-contract"), "prompt_cache_key {key:?}");
                assert_eq!(reply.cache_breakpoints, 0);
            }
            OpenaiResponses => {
                assert!(reply.path.ends_with("/responses"), "path {}", reply.path);
                assert_eq!(body["model"], model);
            }
            AnthropicMessages => {
                assert!(reply.path.ends_with("/messages"), "path {}", reply.path);
                assert_eq!(body["model"], model);
                assert_eq!(body["max_tokens"], 256);
                assert!(
                    reply.cache_breakpoints >= 1,
                    "a cache breakpoint at the boundary"
                );
                assert!(reply.body_json.contains("cache_control"));
            }
            GeminiGenerateContent => {
                assert!(reply.path.contains(model), "path {}", reply.path);
                assert!(
                    reply.path.ends_with(":generateContent"),
                    "path {}",
                    reply.path
                );
            }
            AmazonBedrockConverse => {
                // The model travels in the path, URL-encoded, never in the body.
                assert!(
                    reply
                        .path
                        .starts_with("/model/us.anthropic.claude-3-7-sonnet"),
                    "path {}",
                    reply.path
                );
                assert!(reply.path.ends_with("/converse"), "path {}", reply.path);
                assert!(body.get("model").is_none(), "no model in a Converse body");
                assert!(
                    reply.body_json.contains("cachePoint"),
                    "a cache point at the boundary"
                );
            }
            Unspecified => unreachable!(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_chat_request_rejects_a_tool_choice_naming_no_tool() {
    let mut c = setup!();
    let mut chat = chat_request("gpt-4o-mini", v1::CompiledPromptPayload::default());
    chat.compiled_prompt = None;
    chat.tool_choice = Some(v1::ToolChoice {
        mode: v1::ToolChoiceMode::Tool as i32,
        tool_name: "no_such_tool".into(),
    });
    let status = fails!(
        c.provider
            .render_chat_request(v1::RenderChatRequestRequest {
                provider: v1::Provider::OpenaiChatCompletions as i32,
                chat_request: Some(chat),
                options: None,
            }),
        Code::InvalidArgument,
        "RenderChatRequest with an unknown tool choice"
    );
    assert_violation(&status, "chat_request.tool_choice.tool_name");
}

// ---------------------------------------------------------------- turns

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepare_turn_builds_each_provider_round() {
    let mut c = setup!();
    let id = uniq("turn");
    thread!(c, &id, config(100_000, 10_000));
    let prepare = |turn: &str, entries: Vec<v1::ConversationEntry>| v1::PrepareTurnRequest {
        thread_id: id.clone(),
        turn_id: turn.into(),
        new_entries: entries,
        compile_input: Some(full_input()),
        tools: vec![weather_tool()],
        tool_choice: Some(v1::ToolChoice {
            mode: v1::ToolChoiceMode::Auto as i32,
            tool_name: String::new(),
        }),
        max_tokens: Some(512),
        provider: v1::Provider::OpenaiChatCompletions as i32,
        ..Default::default()
    };

    let first = ok!(
        c.turn.prepare_turn(prepare(
            "turn-1",
            vec![user_entry("u1", "turn-1", "Plan the release.")]
        )),
        "PrepareTurn"
    );
    let chat = first.chat_request.as_ref().expect("chat request");
    assert_eq!(chat.model, "gpt-4o-mini", "the thread's model");
    let contents: Vec<&str> = chat.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, vec!["Plan the release."]);
    assert_eq!(chat.messages[0].role, v1::ChatRole::User as i32);
    assert_eq!(chat.tools, vec![weather_tool()]);
    assert_eq!(chat.max_tokens, Some(512));
    let manifest = first.manifest.as_ref().expect("manifest");
    assert_eq!(
        (manifest.thread_id.as_str(), manifest.turn_id.as_str()),
        (id.as_str(), "turn-1")
    );
    assert!(
        first.manifest_event_id > 0,
        "the manifest is persisted and published"
    );
    let compiled = chat.compiled_prompt.as_ref().expect("compiled prompt");
    check_payload(compiled);
    assert_eq!(
        compiled.manifest.as_ref().map(|m| &m.fingerprint_full),
        Some(&manifest.fingerprint_full)
    );
    let report = first.history_report.as_ref().expect("history report");
    assert_eq!(report.decision, v1::HistoryDecision::Full as i32);
    assert_eq!(report.budget_tokens, 90_000);
    assert_eq!(first.provider_path, "/v1/chat/completions");
    let body: Json =
        serde_json::from_str(&first.provider_body_json).expect("provider body is JSON");
    assert_eq!(body["model"], "gpt-4o-mini");

    ok!(
        c.history.append_entries(v1::AppendEntriesRequest {
            thread_id: id.clone(),
            entries: vec![assistant_entry("a1", "turn-1", "Tag, build, publish.")],
            counts_only: false,
        }),
        "AppendEntries"
    );
    ok!(
        c.history.complete_turn(v1::CompleteTurnRequest {
            thread_id: id.clone(),
            turn_id: "turn-1".into(),
            ..Default::default()
        }),
        "CompleteTurn"
    );

    let second_request = prepare(
        "turn-2",
        vec![user_entry("u2", "turn-2", "Who signs the tag?")],
    );
    let second = ok!(
        c.turn.prepare_turn(second_request.clone()),
        "PrepareTurn round 2"
    );
    let contents: Vec<&str> = second
        .chat_request
        .as_ref()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        contents,
        vec![
            "Plan the release.",
            "Tag, build, publish.",
            "Who signs the tag?"
        ]
    );
    assert_eq!(second.history_report.as_ref().unwrap().entries_loaded, 2);
    assert!(second.manifest_event_id > first.manifest_event_id);

    // Preparing the same round again (a retry) does not duplicate its entries.
    let again = ok!(c.turn.prepare_turn(second_request), "PrepareTurn retry");
    assert_eq!(
        again.chat_request.as_ref().unwrap().messages,
        second.chat_request.as_ref().unwrap().messages
    );
    let thread = ok!(
        c.history.get_thread(v1::GetThreadRequest {
            thread_id: id.clone()
        }),
        "GetThread"
    );
    assert_eq!(thread.thread.unwrap().entry_count, 3);
}

// ---------------------------------------------------------------- manifests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_turn_manifest_returns_the_persisted_manifest() {
    let mut c = setup!();
    let thread = uniq("manifest");
    let compiled = ok!(
        c.prompt_compiler
            .compile_prompt(compile_on_turn(full_input(), &thread, "turn-1")),
        "CompilePrompt on a turn"
    );
    assert!(compiled.manifest_event_id > 0);
    let payload = compiled.payload.expect("payload");
    let sent = payload.manifest.expect("manifest");
    assert_eq!(
        (sent.thread_id.as_str(), sent.turn_id.as_str()),
        (thread.as_str(), "turn-1")
    );

    let got = ok!(
        c.manifest.get_turn_manifest(v1::GetTurnManifestRequest {
            thread_id: thread.clone(),
            turn_id: "turn-1".into(),
        }),
        "GetTurnManifest"
    );
    assert_eq!(got.manifest.as_ref(), Some(&sent));
    assert_eq!(got.event_id, compiled.manifest_event_id);
    assert_eq!(got.status, v1::TurnStatus::InProgress as i32);

    fails!(
        c.manifest.get_turn_manifest(v1::GetTurnManifestRequest {
            thread_id: thread,
            turn_id: "turn-unknown".into(),
        }),
        Code::NotFound,
        "GetTurnManifest unknown turn"
    );
}

fn manifest_ref_turn(thread: &str, turn: &str) -> v1::ManifestRef {
    v1::ManifestRef {
        r#ref: Some(v1::manifest_ref::Ref::Turn(v1::TurnRef {
            thread_id: thread.into(),
            turn_id: turn.into(),
        })),
    }
}

fn manifest_ref_event(event_id: i64) -> v1::ManifestRef {
    v1::ManifestRef {
        r#ref: Some(v1::manifest_ref::Ref::EventId(event_id)),
    }
}

fn manifest_ref_inline(manifest: v1::PromptManifest) -> v1::ManifestRef {
    v1::ManifestRef {
        r#ref: Some(v1::manifest_ref::Ref::Manifest(manifest)),
    }
}

/// The first stable section (in base order) whose fingerprint differs or that
/// target lacks, or the first one target adds: what broke the prefix cache.
fn first_stable_break(base: &v1::PromptManifest, target: &v1::PromptManifest) -> String {
    let stable = |m: &v1::PromptManifest| -> Vec<(String, String)> {
        m.section_fingerprints
            .iter()
            .filter(|s| s.stability == v1::SectionStability::Stable as i32)
            .map(|s| (s.section_id.clone(), s.fingerprint.clone()))
            .collect()
    };
    let (b, t) = (stable(base), stable(target));
    for i in 0..b.len().max(t.len()) {
        match (b.get(i), t.get(i)) {
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) if t.iter().any(|s| s.0 == x.0) => {
                return if x.0 == y.0 { x.0.clone() } else { y.0.clone() }
            }
            (Some(x), _) => return x.0.clone(),
            (None, Some(y)) => return y.0.clone(),
            (None, None) => break,
        }
    }
    String::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_manifests_names_the_section_that_broke_the_cache() {
    let mut c = setup!();
    let thread = uniq("diff");
    let mut results = Vec::new();
    let no_recovery = v1::PromptCompileInput {
        include_tool_recovery_policy: false,
        ..full_input()
    };
    let new_context = v1::PromptCompileInput {
        dynamic_context: Some("Editor: src/status.rs is open at line 7.".into()),
        ..full_input()
    };
    for (turn, input) in [
        ("turn-a", full_input()),
        ("turn-b", no_recovery),
        ("turn-c", new_context),
    ] {
        let r = ok!(
            c.prompt_compiler
                .compile_prompt(compile_on_turn(input, &thread, turn)),
            "CompilePrompt on a turn"
        );
        results.push(r);
    }
    let manifest = |i: usize| {
        results[i]
            .payload
            .as_ref()
            .unwrap()
            .manifest
            .clone()
            .unwrap()
    };
    let (a, b, cm) = (manifest(0), manifest(1), manifest(2));

    // A stable change, by turn and by event id.
    let diff = ok!(
        c.manifest.diff_manifests(v1::DiffManifestsRequest {
            base: Some(manifest_ref_turn(&thread, "turn-a")),
            target: Some(manifest_ref_event(results[1].manifest_event_id)),
        }),
        "DiffManifests stable change"
    );
    assert!(diff.stable_changed && diff.full_changed);
    let expected = first_stable_break(&a, &b);
    assert!(!expected.is_empty());
    assert_eq!(diff.cache_break_section_id, expected);
    let removed: Vec<&str> = diff
        .changes
        .iter()
        .filter(|ch| ch.kind == v1::SectionChangeKind::Removed as i32)
        .map(|ch| ch.section_id.as_str())
        .collect();
    let b_ids: HashSet<&str> = b.section_ids.iter().map(String::as_str).collect();
    let expected_removed: Vec<&str> = a
        .section_ids
        .iter()
        .map(String::as_str)
        .filter(|id| !b_ids.contains(id))
        .collect();
    assert_eq!(removed, expected_removed);

    // A dynamic-only change keeps the cache; base given inline.
    let diff = ok!(
        c.manifest.diff_manifests(v1::DiffManifestsRequest {
            base: Some(manifest_ref_inline(a.clone())),
            target: Some(manifest_ref_turn(&thread, "turn-c")),
        }),
        "DiffManifests dynamic change"
    );
    assert!(!diff.stable_changed && diff.dynamic_changed && diff.full_changed);
    assert_eq!(diff.cache_break_section_id, "");
    let changed: Vec<(&str, i32, i32)> = diff
        .changes
        .iter()
        .map(|ch| (ch.section_id.as_str(), ch.kind, ch.stability))
        .collect();
    let differing: Vec<&str> = a
        .section_fingerprints
        .iter()
        .zip(&cm.section_fingerprints)
        .filter(|(x, y)| x.fingerprint != y.fingerprint)
        .map(|(x, _)| x.section_id.as_str())
        .collect();
    assert_eq!(differing.len(), 1);
    assert_eq!(
        changed,
        vec![(
            differing[0],
            v1::SectionChangeKind::Changed as i32,
            v1::SectionStability::Dynamic as i32
        )]
    );

    // Identical manifests.
    let diff = ok!(
        c.manifest.diff_manifests(v1::DiffManifestsRequest {
            base: Some(manifest_ref_inline(a.clone())),
            target: Some(manifest_ref_event(results[0].manifest_event_id)),
        }),
        "DiffManifests identical"
    );
    assert!(
        diff.changes.is_empty()
            && !diff.stable_changed
            && !diff.dynamic_changed
            && !diff.full_changed
    );
    assert_eq!(diff.cache_break_section_id, "");

    fails!(
        c.manifest.diff_manifests(v1::DiffManifestsRequest {
            base: Some(manifest_ref_turn(&thread, "turn-unknown")),
            target: Some(manifest_ref_inline(a)),
        }),
        Code::NotFound,
        "DiffManifests unknown turn"
    );
}

/// The next manifest event on `stream` (heartbeats skipped), within `within`.
async fn next_event(
    stream: &mut Streaming<v1::WatchManifestsResponse>,
    within: Duration,
) -> v1::ManifestEvent {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.message()).await {
            Err(_) => panic!("no manifest event within {within:?}"),
            Ok(Err(status)) => panic!("WatchManifests failed: {}", describe(&status)),
            Ok(Ok(None)) => panic!("WatchManifests ended"),
            Ok(Ok(Some(message))) => match message.kind {
                Some(Kind::Event(event)) => return event,
                Some(Kind::Heartbeat(_)) | None => continue,
            },
        }
    }
}

/// Opens a watch in the background: the server may hold the response headers
/// back until it has something to send.
fn open_watch(
    c: &pioneer_grpc_client::Clients,
    request: v1::WatchManifestsRequest,
) -> tokio::task::JoinHandle<
    Result<Streaming<v1::WatchManifestsResponse>, pioneer_grpc_client::tonic::Status>,
> {
    let mut manifest = c.manifest.clone();
    tokio::spawn(async move {
        manifest
            .watch_manifests(request)
            .await
            .map(|r| r.into_inner())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_manifests_streams_live_and_resumes_without_loss() {
    let c = setup!();
    let thread = uniq("watch");
    let other = uniq("watch-other");
    let within = Duration::from_secs(15);
    let opening = open_watch(
        &c,
        v1::WatchManifestsRequest {
            thread_id: thread.clone(),
            after_event_id: 0,
            live_only: false,
        },
    );

    let compile_turn = |turn: String, on: String| {
        let mut compiler = c.prompt_compiler.clone();
        async move {
            compiler
                .compile_prompt(compile_on_turn(full_input(), &on, &turn))
                .await
                .map(|r| r.into_inner())
        }
    };

    let first = match compile_turn("turn-1".into(), thread.clone()).await {
        Ok(r) => r,
        Err(status) if skip_unimplemented(&status, "CompilePrompt") => return,
        Err(status) => panic!("CompilePrompt: {}", describe(&status)),
    };
    let mut stream = match opening.await.expect("watch task") {
        Ok(stream) => stream,
        Err(status) if skip_unimplemented(&status, "WatchManifests") => return,
        Err(status) => panic!("WatchManifests: {}", describe(&status)),
    };
    let mut seen = vec![next_event(&mut stream, within).await];
    assert_eq!(seen[0].event_id, first.manifest_event_id);
    let mut sent = vec![first];
    // Events 2 and 3 are compiled while the stream is open: they arrive live.
    for turn in ["turn-2", "turn-3"] {
        let r = compile_turn(turn.into(), thread.clone())
            .await
            .expect("CompilePrompt");
        seen.push(next_event(&mut stream, within).await);
        sent.push(r);
    }
    drop(stream);

    // Missed while disconnected (plus an event of another thread in between).
    sent.push(
        compile_turn("turn-4".into(), thread.clone())
            .await
            .expect("CompilePrompt"),
    );
    compile_turn("turn-1".into(), other)
        .await
        .expect("CompilePrompt other thread");
    sent.push(
        compile_turn("turn-5".into(), thread.clone())
            .await
            .expect("CompilePrompt"),
    );

    let last_id = seen.last().unwrap().event_id;
    let mut resumed = open_watch(
        &c,
        v1::WatchManifestsRequest {
            thread_id: thread.clone(),
            after_event_id: last_id,
            live_only: false,
        },
    )
    .await
    .expect("watch task")
    .expect("WatchManifests resume");
    seen.push(next_event(&mut resumed, within).await);
    seen.push(next_event(&mut resumed, within).await);

    for (i, (event, compiled)) in seen.iter().zip(&sent).enumerate() {
        let turn = format!("turn-{}", i + 1);
        assert_eq!(event.event_id, compiled.manifest_event_id, "event {turn}");
        assert_eq!(
            (event.thread_id.as_str(), event.turn_id.as_str()),
            (thread.as_str(), turn.as_str())
        );
        let manifest = event.manifest.as_ref().expect("manifest");
        let compiled_manifest = compiled
            .payload
            .as_ref()
            .unwrap()
            .manifest
            .as_ref()
            .unwrap();
        assert_eq!(
            manifest, compiled_manifest,
            "event {turn} carries the compiled manifest"
        );
        assert!(event.create_time.is_some());
    }
    assert!(
        seen.windows(2).all(|w| w[0].event_id < w[1].event_id),
        "ids increase"
    );

    // Exactly the two missed events: nothing else follows.
    let quiet =
        tokio::time::timeout(Duration::from_millis(800), next_event(&mut resumed, within)).await;
    assert!(
        quiet.is_err(),
        "unexpected extra event {:?}",
        quiet.ok().map(|e| e.event_id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_up_to_the_server_limit_pass() {
    // 8 MiB: above tonic's 4 MiB decoding default, within the server's 16 MiB.
    let mut c = setup!();
    let payload = vec![7u8; 8 * 1024 * 1024];
    let echoed = ok!(
        c.echo.echo(v1::EchoRequest {
            payload: payload.clone(),
            ..Default::default()
        }),
        "Echo 8 MiB"
    );
    assert_eq!(echoed.payload.len(), payload.len());
}
