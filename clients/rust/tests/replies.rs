//! `replies::entries_of_response` against the vectors every client is tested
//! against: tests/data/replies at the repository root (tests/client/test_replies.py
//! says what they hold and proves their shapes with the providers' SDKs).

use std::fs;
use std::path::PathBuf;

use pioneer_grpc_client::prost::Message;
use pioneer_grpc_client::replies::{
    canonical_json, entries_of_response, INVALID_ARGUMENT, NOT_JSON,
};
use pioneer_grpc_client::v1::{ConversationEntry, EntryRole, Provider, ProviderUsage, ToolCall};
use serde_json::{Map, Value};

fn vectors() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/replies");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no reply vectors under {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (
                name,
                serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap(),
            )
        })
        .collect()
}

/// The fields of a message's protobuf JSON, refusing any this test does not read.
fn fields<'a>(value: &'a Value, known: &[&str]) -> &'a Map<String, Value> {
    let map = value.as_object().expect("an object");
    for key in map.keys() {
        assert!(known.contains(&key.as_str()), "unexpected field {key}");
    }
    map
}

fn string(map: &Map<String, Value>, key: &str) -> String {
    map.get(key)
        .map_or(String::new(), |v| v.as_str().unwrap().to_owned())
}

fn int(map: &Map<String, Value>, key: &str) -> Option<i32> {
    map.get(key).map(|v| v.as_i64().unwrap() as i32)
}

/// A ConversationEntry from its protobuf JSON (the fields an assistant entry of a reply has).
fn entry(value: &Value) -> ConversationEntry {
    let map = fields(
        value,
        &[
            "entryId",
            "turnId",
            "role",
            "content",
            "toolCalls",
            "reasoningContent",
        ],
    );
    let role = EntryRole::from_str_name(map["role"].as_str().unwrap()).unwrap();
    let tool_calls = map.get("toolCalls").map_or(Vec::new(), |calls| {
        calls
            .as_array()
            .unwrap()
            .iter()
            .map(|call| {
                let call = fields(call, &["id", "name", "arguments"]);
                ToolCall {
                    id: string(call, "id"),
                    name: string(call, "name"),
                    arguments: string(call, "arguments"),
                }
            })
            .collect()
    });
    ConversationEntry {
        entry_id: string(map, "entryId"),
        turn_id: string(map, "turnId"),
        role: role as i32,
        content: string(map, "content"),
        tool_calls,
        reasoning_content: map
            .get("reasoningContent")
            .map(|v| v.as_str().unwrap().to_owned()),
        ..ConversationEntry::default()
    }
}

fn usage(value: &Value) -> ProviderUsage {
    let map = fields(
        value,
        &[
            "inputTokens",
            "cacheReadInputTokens",
            "cacheWriteInputTokens",
            "outputTokens",
            "reasoningOutputTokens",
        ],
    );
    ProviderUsage {
        input_tokens: int(map, "inputTokens").unwrap_or(0),
        cache_read_input_tokens: int(map, "cacheReadInputTokens"),
        cache_write_input_tokens: int(map, "cacheWriteInputTokens"),
        output_tokens: int(map, "outputTokens").unwrap_or(0),
        reasoning_output_tokens: int(map, "reasoningOutputTokens"),
    }
}

#[test]
fn entries_of_response_answers_every_vector() {
    for (name, vector) in vectors() {
        check_reply(&name, &vector);
    }
}

/// The vectors' responses changed many ways, and what the Python client made of each
/// (scripts/reply_mutations.py): every client must answer the same.
#[test]
fn entries_of_response_answers_as_python_does_to_every_mutation() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/replies/mutations.jsonl");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 100, "only {} mutations", lines.len());
    for line in lines {
        let vector: Value = serde_json::from_str(line).unwrap();
        check_reply(vector["name"].as_str().unwrap(), &vector);
    }
}

fn check_reply(name: &str, vector: &Value) {
    let provider = Provider::from_str_name(vector["provider"].as_str().unwrap()).unwrap();
    let response = serde_json::to_string(&vector["response"]).unwrap();
    let turn_id = vector["turn_id"].as_str().unwrap();
    let round = u32::try_from(vector["round"].as_u64().unwrap()).unwrap();
    let got = entries_of_response(provider, &response, turn_id, round);
    if let Some(error) = vector.get("error") {
        let err = got.expect_err(name);
        assert_eq!(
            (err.code, err.path.as_str()),
            (
                error["code"].as_str().unwrap(),
                error["path"].as_str().unwrap()
            ),
            "{name}: {err}"
        );
        return;
    }
    let reply = got.unwrap_or_else(|e| panic!("{name}: {e}"));
    let expect = &vector["expect"];
    let entries: Vec<ConversationEntry> = expect["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(entry)
        .collect();
    assert_eq!(reply.entries, entries, "{name}: entries");
    let bytes =
        |es: &[ConversationEntry]| es.iter().map(Message::encode_to_vec).collect::<Vec<_>>();
    assert_eq!(
        bytes(&reply.entries),
        bytes(&entries),
        "{name}: entry bytes"
    );
    let wanted = (!expect["usage"].is_null()).then(|| usage(&expect["usage"]));
    assert_eq!(reply.usage, wanted, "{name}: usage");
    assert_eq!(
        reply.usage.map(|u| u.encode_to_vec()),
        wanted.map(|u| u.encode_to_vec()),
        "{name}: usage bytes"
    );
    assert_eq!(reply.stop, expect["stop"].as_str().unwrap(), "{name}: stop");
    assert_eq!(
        reply.provider_stop_reason,
        expect["provider_stop_reason"].as_str().unwrap(),
        "{name}"
    );
    assert_eq!(
        reply.refusal,
        expect["refusal"].as_str().unwrap(),
        "{name}: refusal"
    );
    let not_kept: Vec<&str> = expect["not_kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(reply.not_kept, not_kept, "{name}: not kept");
}

#[test]
fn the_callers_mistakes_and_text_that_is_no_json_object() {
    for (provider, turn) in [
        (Provider::Unspecified, "t"),
        (Provider::AnthropicMessages, ""),
    ] {
        let err = entries_of_response(provider, "{}", turn, 1).unwrap_err();
        assert_eq!(err.code, INVALID_ARGUMENT);
    }
    for text in ["", "not json", "[1, 2]", r#"{"a": NaN}"#, "null"] {
        let err = entries_of_response(Provider::OpenaiResponses, text, "t", 1).unwrap_err();
        assert_eq!((err.code, err.path.as_str()), (NOT_JSON, ""), "{text:?}");
    }
}

#[test]
fn canonical_json_writes_as_javascript_does() {
    let cases = [
        ("1.0", "1"),
        ("-0.0", "0"),
        ("0.1", "0.1"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("1.5e-7", "1.5e-7"),
        ("0.000001", "0.000001"),
        ("123456789012345678901234", "1.2345678901234569e+23"),
        ("5e-324", "5e-324"),
        (
            r#"{"b": 1, "a": [true, null, "x\n\u0001é\u2028"]}"#,
            "{\"a\":[true,null,\"x\\n\\u0001é\u{2028}\"],\"b\":1}",
        ),
        (
            r#"{"\ue000": 1, "\ud83d\ude00": 2, "Z": 3}"#,
            "{\"Z\":3,\"\u{1f600}\":2,\"\u{e000}\":1}",
        ),
    ];
    for (input, written) in cases {
        let value: Value = serde_json::from_str(input).unwrap();
        assert_eq!(canonical_json(&value).unwrap(), written, "{input}");
    }
}
