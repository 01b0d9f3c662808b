package pioneer

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// EntryRole and ChatRole name the same authors with different numbers
// (ENTRY_ROLE_USER is 1, CHAT_ROLE_USER is 2): convert, never cast.
var entryToChat = map[pioneerv1.EntryRole]pioneerv1.ChatRole{
	pioneerv1.EntryRole_ENTRY_ROLE_UNSPECIFIED: pioneerv1.ChatRole_CHAT_ROLE_UNSPECIFIED,
	pioneerv1.EntryRole_ENTRY_ROLE_USER:        pioneerv1.ChatRole_CHAT_ROLE_USER,
	pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT:   pioneerv1.ChatRole_CHAT_ROLE_ASSISTANT,
	pioneerv1.EntryRole_ENTRY_ROLE_TOOL:        pioneerv1.ChatRole_CHAT_ROLE_TOOL,
	pioneerv1.EntryRole_ENTRY_ROLE_SYSTEM:      pioneerv1.ChatRole_CHAT_ROLE_SYSTEM,
}

// ChatRoleOf returns the ChatRole of an EntryRole; false for an unknown value.
func ChatRoleOf(role pioneerv1.EntryRole) (pioneerv1.ChatRole, bool) {
	chat, ok := entryToChat[role]
	return chat, ok
}

// EntryRoleOf returns the EntryRole of a ChatRole; false for an unknown value.
func EntryRoleOf(role pioneerv1.ChatRole) (pioneerv1.EntryRole, bool) {
	for entry, chat := range entryToChat {
		if chat == role {
			return entry, true
		}
	}
	return pioneerv1.EntryRole_ENTRY_ROLE_UNSPECIFIED, false
}

// JSONSchema converts a JSON schema (any value encoding/json marshals to an
// object: map[string]any with []string, nested maps and slices, structs) into the
// google.protobuf.Struct of ToolDefinition.Parameters. structpb.NewStruct alone
// rejects []string and other typed slices.
func JSONSchema(schema any) (*structpb.Struct, error) {
	text, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("pioneer: JSON schema: %w", err)
	}
	out := &structpb.Struct{}
	if err := protojson.Unmarshal(text, out); err != nil {
		return nil, fmt.Errorf("pioneer: a JSON schema must be a JSON object: %w", err)
	}
	return out, nil
}

// Tool builds a ToolDefinition from a JSON schema (see JSONSchema).
func Tool(name, description string, schema any) (*pioneerv1.ToolDefinition, error) {
	params, err := JSONSchema(schema)
	if err != nil {
		return nil, err
	}
	return &pioneerv1.ToolDefinition{Name: name, Description: description, Parameters: params}, nil
}

// TurnRef names a turn's latest manifest, for DiffManifests.
func TurnRef(threadID, turnID string) *pioneerv1.ManifestRef {
	return &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_Turn{Turn: &pioneerv1.TurnRef{ThreadId: threadID, TurnId: turnID}}}
}

// EventRef names the manifest a manifest event published, for DiffManifests.
func EventRef(eventID int64) *pioneerv1.ManifestRef {
	return &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_EventId{EventId: eventID}}
}

// InlineRef carries a manifest itself, for DiffManifests.
func InlineRef(m *pioneerv1.PromptManifest) *pioneerv1.ManifestRef {
	return &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_Manifest{Manifest: m}}
}

// Reason returns the google.rpc.ErrorInfo reason of err ("" when it carries none),
// e.g. "THREAD_NOT_FOUND", "ENTRY_CONFLICT", "TURN_COMPLETED".
func Reason(err error) string {
	info, ok := ErrorInfo(err)
	if !ok {
		return ""
	}
	return info.GetReason()
}
