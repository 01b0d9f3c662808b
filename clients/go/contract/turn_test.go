package contract

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
)

func prepare(t *testing.T, thread, turn string, round int, newEntries ...*pioneerv1.ConversationEntry) *pioneerv1.PrepareTurnResponse {
	t.Helper()
	resp, err := shared.Turns.PrepareTurn(ctxT(t), &pioneerv1.PrepareTurnRequest{
		ThreadId:     thread,
		TurnId:       turn,
		NewEntries:   newEntries,
		CompileInput: sample.FullCompileInput(round),
		Tools:        []*pioneerv1.ToolDefinition{sample.ReadFileTool()},
		ToolChoice:   &pioneerv1.ToolChoice{Mode: pioneerv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO},
		MaxTokens:    proto.Int32(1024),
		Provider:     pioneerv1.Provider_PROVIDER_OPENAI_CHAT_COMPLETIONS,
	})
	must(t, err, "PrepareTurn")
	return resp
}

func TestPrepareTurnRounds(t *testing.T) {
	th := createThread(t, &pioneerv1.ThreadConfig{Model: "gpt-4o-mini"}).GetThreadId()

	// Round 1: a fresh thread; the request holds only the turn's own user entry.
	u1 := entry("u-1", "turn-1", pioneerv1.EntryRole_ENTRY_ROLE_USER, sample.UserMessage(1))
	r1 := prepare(t, th, "turn-1", 1, u1)
	cr := r1.GetChatRequest()
	if cr.GetModel() != "gpt-4o-mini" {
		t.Errorf("model = %q, want the thread's model", cr.GetModel())
	}
	if n := len(cr.GetMessages()); n != 1 || cr.GetMessages()[0].GetContent() != u1.GetContent() {
		t.Fatalf("round 1 messages = %v, want only the new user entry", cr.GetMessages())
	}
	if len(cr.GetTools()) != 1 || cr.GetTools()[0].GetName() != "read_file" {
		t.Fatalf("tools = %v", cr.GetTools())
	}
	if cr.GetCompiledPrompt().GetFullSystemText() == "" {
		t.Fatal("no compiled prompt in the ChatRequest")
	}
	if !proto.Equal(cr.GetCompiledPrompt().GetManifest(), r1.GetManifest()) {
		t.Error("response manifest differs from the compiled prompt's")
	}
	if m := r1.GetManifest(); m.GetThreadId() != th || m.GetTurnId() != "turn-1" {
		t.Fatalf("manifest names %s/%s", m.GetThreadId(), m.GetTurnId())
	}
	if r1.GetManifestEventId() <= 0 {
		t.Fatal("PrepareTurn did not persist the manifest")
	}
	if r1.GetHistoryReport().GetDecision() != pioneerv1.HistoryDecision_HISTORY_DECISION_FULL {
		t.Errorf("history decision = %s", r1.GetHistoryReport().GetDecision())
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r1.GetProviderBodyJson()), &body); err != nil || r1.GetProviderPath() == "" {
		t.Fatalf("provider body/path = %q %q (%v)", r1.GetProviderBodyJson(), r1.GetProviderPath(), err)
	}

	// The model answers; the loop stores the reply and completes the turn.
	a1 := entry("a-1", "turn-1", pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, sample.AssistantReply(1))
	appendEntries(t, th, a1)
	if n := completeTurn(t, th, "turn-1"); n != 2 {
		t.Fatalf("CompleteTurn = %d, want 2", n)
	}
	got, err := shared.Manifests.GetTurnManifest(ctxT(t), &pioneerv1.GetTurnManifestRequest{ThreadId: th, TurnId: "turn-1"})
	must(t, err, "GetTurnManifest")
	if got.GetStatus() != pioneerv1.TurnStatus_TURN_STATUS_COMPLETED || got.GetEventId() != r1.GetManifestEventId() {
		t.Fatalf("turn-1: status %s event %d, want COMPLETED and %d", got.GetStatus(), got.GetEventId(), r1.GetManifestEventId())
	}

	// Round 2: history first, then the new turn's entries.
	u2 := entry("u-2", "turn-2", pioneerv1.EntryRole_ENTRY_ROLE_USER, sample.UserMessage(2))
	r2 := prepare(t, th, "turn-2", 2, u2)
	want := []string{u1.GetContent(), a1.GetContent(), u2.GetContent()}
	msgs := r2.GetChatRequest().GetMessages()
	if len(msgs) != len(want) {
		t.Fatalf("round 2 has %d messages, want %d", len(msgs), len(want))
	}
	for i, w := range want {
		if msgs[i].GetContent() != w {
			t.Fatalf("round 2 message %d = %q, want %q", i, msgs[i].GetContent(), w)
		}
	}
	if r2.GetHistoryReport().GetEntriesLoaded() != 2 {
		t.Errorf("history entries_loaded = %d, want 2 (the turn in progress is excluded)", r2.GetHistoryReport().GetEntriesLoaded())
	}
	if r2.GetManifest().GetFingerprintStable() != r1.GetManifest().GetFingerprintStable() {
		t.Error("stable fingerprint changed between rounds with the same files")
	}

	// A retried PrepareTurn (same entry ids) neither duplicates entries nor fails.
	r2b := prepare(t, th, "turn-2", 2, u2)
	if len(r2b.GetChatRequest().GetMessages()) != len(want) {
		t.Fatalf("retried PrepareTurn gave %d messages, want %d", len(r2b.GetChatRequest().GetMessages()), len(want))
	}
	g, err := shared.History.GetThread(ctxT(t), &pioneerv1.GetThreadRequest{ThreadId: th})
	must(t, err, "GetThread")
	if g.GetThread().GetEntryCount() != 3 {
		t.Fatalf("entry_count = %d after a retried round, want 3", g.GetThread().GetEntryCount())
	}
	got2, err := shared.Manifests.GetTurnManifest(ctxT(t), &pioneerv1.GetTurnManifestRequest{ThreadId: th, TurnId: "turn-2"})
	must(t, err, "GetTurnManifest")
	if got2.GetStatus() != pioneerv1.TurnStatus_TURN_STATUS_IN_PROGRESS {
		t.Errorf("turn-2 status = %s, want IN_PROGRESS", got2.GetStatus())
	}
}
