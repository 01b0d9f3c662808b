package pioneer

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

func TestRolesConvertByNameNotNumber(t *testing.T) {
	for entry, chat := range map[pioneerv1.EntryRole]pioneerv1.ChatRole{
		pioneerv1.EntryRole_ENTRY_ROLE_USER:      pioneerv1.ChatRole_CHAT_ROLE_USER,
		pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT: pioneerv1.ChatRole_CHAT_ROLE_ASSISTANT,
		pioneerv1.EntryRole_ENTRY_ROLE_TOOL:      pioneerv1.ChatRole_CHAT_ROLE_TOOL,
		pioneerv1.EntryRole_ENTRY_ROLE_SYSTEM:    pioneerv1.ChatRole_CHAT_ROLE_SYSTEM,
	} {
		if got, ok := ChatRoleOf(entry); !ok || got != chat {
			t.Errorf("ChatRoleOf(%s) = %s, %v; want %s", entry, got, ok, chat)
		}
		if got, ok := EntryRoleOf(chat); !ok || got != entry {
			t.Errorf("EntryRoleOf(%s) = %s, %v; want %s", chat, got, ok, entry)
		}
	}
	if int32(pioneerv1.EntryRole_ENTRY_ROLE_USER) == int32(pioneerv1.ChatRole_CHAT_ROLE_USER) {
		t.Fatal("the enums number USER alike: the helpers would be pointless")
	}
	if _, ok := ChatRoleOf(pioneerv1.EntryRole(99)); ok {
		t.Error("ChatRoleOf(99) should be unknown")
	}
}

func TestJSONSchemaTakesStringSlicesAndNestedValues(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []string{"paths"},
		"properties": map[string]any{
			"paths": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"depth": map[string]any{"type": "integer", "minimum": 0},
			"mode":  map[string]any{"enum": []string{"fast", "full"}},
		},
	}
	got, err := JSONSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := protojson.Marshal(got)
	want := `{"properties":{"depth":{"minimum":0,"type":"integer"},"mode":{"enum":["fast","full"]},"paths":{"items":{"type":"string"},"type":"array"}},"required":["paths"],"type":"object"}`
	if compact(string(text)) != want {
		t.Errorf("JSONSchema = %s\nwant %s", text, want)
	}
	if _, err := JSONSchema([]string{"not an object"}); err == nil {
		t.Error("a JSON list is not a schema object")
	}
	tool, err := Tool("find", "Find files", schema)
	if err != nil || tool.GetParameters().GetFields()["type"].GetStringValue() != "object" {
		t.Errorf("Tool = %v, %v", tool, err)
	}
}

func compact(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r != ' ' && r != '\n' {
			out = append(out, r)
		}
	}
	return string(out)
}

func TestManifestRefs(t *testing.T) {
	if ref := TurnRef("t", "u"); ref.GetTurn().GetThreadId() != "t" || ref.GetTurn().GetTurnId() != "u" {
		t.Errorf("TurnRef = %v", ref)
	}
	if ref := EventRef(7); ref.GetEventId() != 7 {
		t.Errorf("EventRef = %v", ref)
	}
	m := &pioneerv1.PromptManifest{}
	if ref := InlineRef(m); ref.GetManifest() != m {
		t.Errorf("InlineRef = %v", ref)
	}
}
