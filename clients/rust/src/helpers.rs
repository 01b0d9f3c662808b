//! Builders for the shapes an agent loop sends over and over: role conversion,
//! a JSON schema as `google.protobuf.Struct`, tool definitions, manifest refs.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};

use crate::v1::{
    manifest_ref, ChatRole, EntryRole, ManifestRef, PromptManifest, ToolDefinition, TurnRef,
};

/// The [`ChatRole`] of an [`EntryRole`]. The two enums number their roles
/// differently (`ENTRY_ROLE_USER` is 1, `CHAT_ROLE_USER` is 2): convert, never cast.
pub fn chat_role(role: EntryRole) -> ChatRole {
    match role {
        EntryRole::Unspecified => ChatRole::Unspecified,
        EntryRole::User => ChatRole::User,
        EntryRole::Assistant => ChatRole::Assistant,
        EntryRole::Tool => ChatRole::Tool,
        EntryRole::System => ChatRole::System,
    }
}

/// The [`EntryRole`] of a [`ChatRole`].
pub fn entry_role(role: ChatRole) -> EntryRole {
    match role {
        ChatRole::Unspecified => EntryRole::Unspecified,
        ChatRole::User => EntryRole::User,
        ChatRole::Assistant => EntryRole::Assistant,
        ChatRole::Tool => EntryRole::Tool,
        ChatRole::System => EntryRole::System,
    }
}

/// A JSON value as a `google.protobuf.Value` (numbers become doubles, as in protobuf JSON).
pub fn json_value(value: &serde_json::Value) -> Value {
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(json_value).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(Struct {
            fields: map
                .iter()
                .map(|(k, v)| (k.clone(), json_value(v)))
                .collect(),
        }),
    };
    Value { kind: Some(kind) }
}

/// A JSON schema (a JSON object) as the `google.protobuf.Struct` of
/// [`ToolDefinition::parameters`]; `None` when `schema` is not an object.
pub fn json_struct(schema: &serde_json::Value) -> Option<Struct> {
    match json_value(schema).kind {
        Some(Kind::StructValue(s)) => Some(s),
        _ => None,
    }
}

/// A [`ToolDefinition`] from its JSON schema; `None` when `schema` is not an object.
pub fn tool(name: &str, description: &str, schema: &serde_json::Value) -> Option<ToolDefinition> {
    Some(ToolDefinition {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: Some(json_struct(schema)?),
    })
}

/// A [`ManifestRef`] naming a turn's latest manifest, for `DiffManifests`.
pub fn turn_ref(thread_id: &str, turn_id: &str) -> ManifestRef {
    ManifestRef {
        r#ref: Some(manifest_ref::Ref::Turn(TurnRef {
            thread_id: thread_id.to_owned(),
            turn_id: turn_id.to_owned(),
        })),
    }
}

/// A [`ManifestRef`] naming the manifest a manifest event published.
pub fn event_ref(event_id: i64) -> ManifestRef {
    ManifestRef {
        r#ref: Some(manifest_ref::Ref::EventId(event_id)),
    }
}

/// A [`ManifestRef`] carrying the manifest itself.
pub fn inline_ref(manifest: PromptManifest) -> ManifestRef {
    ManifestRef {
        r#ref: Some(manifest_ref::Ref::Manifest(manifest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roles_convert_by_name_not_number() {
        for (entry, chat) in [
            (EntryRole::User, ChatRole::User),
            (EntryRole::Assistant, ChatRole::Assistant),
            (EntryRole::Tool, ChatRole::Tool),
            (EntryRole::System, ChatRole::System),
        ] {
            assert_eq!(chat_role(entry), chat);
            assert_eq!(entry_role(chat), entry);
        }
        assert_ne!(EntryRole::User as i32, ChatRole::User as i32);
    }

    #[test]
    fn a_schema_becomes_a_struct_with_lists_and_nested_objects() {
        let schema = json!({
            "type": "object",
            "required": ["paths"],
            "properties": {"paths": {"type": "array", "items": {"type": "string"}}, "depth": {"minimum": 0}}
        });
        let s = json_struct(&schema).expect("an object");
        assert_eq!(
            s.fields["type"].kind,
            Some(Kind::StringValue("object".into()))
        );
        let Some(Kind::ListValue(required)) = &s.fields["required"].kind else {
            panic!("required is a list")
        };
        assert_eq!(
            required.values[0].kind,
            Some(Kind::StringValue("paths".into()))
        );
        let Some(Kind::StructValue(props)) = &s.fields["properties"].kind else {
            panic!("properties is an object")
        };
        let Some(Kind::StructValue(depth)) = &props.fields["depth"].kind else {
            panic!("depth is an object")
        };
        assert_eq!(depth.fields["minimum"].kind, Some(Kind::NumberValue(0.0)));
        assert!(json_struct(&json!(["not", "an", "object"])).is_none());
        assert_eq!(tool("find", "Find", &schema).unwrap().parameters, Some(s));
    }

    #[test]
    fn manifest_refs() {
        let Some(manifest_ref::Ref::Turn(turn)) = turn_ref("t", "u").r#ref else {
            panic!("a turn ref")
        };
        assert_eq!((turn.thread_id.as_str(), turn.turn_id.as_str()), ("t", "u"));
        assert_eq!(event_ref(7).r#ref, Some(manifest_ref::Ref::EventId(7)));
        assert!(matches!(
            inline_ref(PromptManifest::default()).r#ref,
            Some(manifest_ref::Ref::Manifest(_))
        ));
    }
}
