package contract

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

func createThread(t *testing.T, cfg *pioneerv1.ThreadConfig) *pioneerv1.Thread {
	t.Helper()
	if cfg == nil {
		cfg = &pioneerv1.ThreadConfig{Model: "gpt-4o-mini"}
	}
	resp, err := shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{ThreadId: uniq("go-thread"), Config: cfg})
	must(t, err, "CreateThread")
	return resp.GetThread()
}

func entry(id, turn string, role pioneerv1.EntryRole, content string) *pioneerv1.ConversationEntry {
	return &pioneerv1.ConversationEntry{EntryId: id, TurnId: turn, Role: role, Content: content}
}

func appendEntries(t *testing.T, thread string, entries ...*pioneerv1.ConversationEntry) *pioneerv1.AppendEntriesResponse {
	t.Helper()
	resp, err := shared.History.AppendEntries(ctxT(t), &pioneerv1.AppendEntriesRequest{ThreadId: thread, Entries: entries})
	must(t, err, "AppendEntries")
	return resp
}

func completeTurn(t *testing.T, thread, turn string) int32 {
	t.Helper()
	resp, err := shared.History.CompleteTurn(ctxT(t), &pioneerv1.CompleteTurnRequest{ThreadId: thread, TurnId: turn})
	must(t, err, "CompleteTurn")
	return resp.GetCompletedEntryCount()
}

func loadHistory(t *testing.T, req *pioneerv1.LoadConversationHistoryRequest) *pioneerv1.LoadConversationHistoryResponse {
	t.Helper()
	resp, err := shared.History.LoadConversationHistory(ctxT(t), req)
	must(t, err, "LoadConversationHistory")
	return resp
}

func TestThreadLifecycle(t *testing.T) {
	id := uniq("go-thread")
	created, err := shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{
		ThreadId: id,
		Config: &pioneerv1.ThreadConfig{
			MaxContextTokens:      proto.Int32(64000),
			ResponseReserveTokens: proto.Int32(8000),
			Model:                 "gpt-4o-mini",
			SummaryModel:          "gpt-4o-mini",
		},
	})
	must(t, err, "CreateThread")
	th := created.GetThread()
	if th.GetThreadId() != id || th.GetConfig().GetMaxContextTokens() != 64000 || th.GetConfig().GetModel() != "gpt-4o-mini" {
		t.Fatalf("created thread = %v", th)
	}
	if th.GetCreateTime() == nil || th.GetEntryCount() != 0 {
		t.Fatalf("new thread: create_time=%v entry_count=%d", th.GetCreateTime(), th.GetEntryCount())
	}

	got, err := shared.History.GetThread(ctxT(t), &pioneerv1.GetThreadRequest{ThreadId: id})
	must(t, err, "GetThread")
	if !proto.Equal(got.GetThread().GetConfig(), th.GetConfig()) {
		t.Fatalf("GetThread config = %v, want %v", got.GetThread().GetConfig(), th.GetConfig())
	}

	upd, err := shared.History.UpdateThread(ctxT(t), &pioneerv1.UpdateThreadRequest{
		ThreadId:   id,
		Config:     &pioneerv1.ThreadConfig{MaxContextTokens: proto.Int32(32000), Model: "ignored-by-mask"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_context_tokens"}},
	})
	must(t, err, "UpdateThread")
	c := upd.GetThread().GetConfig()
	if c.GetMaxContextTokens() != 32000 || c.GetResponseReserveTokens() != 8000 || c.GetModel() != "gpt-4o-mini" {
		t.Fatalf("UpdateThread with mask [max_context_tokens] gave %v", c)
	}

	// A server-chosen id when none is given.
	gen, err := shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{})
	must(t, err, "CreateThread(no id)")
	if gen.GetThread().GetThreadId() == "" {
		t.Fatal("CreateThread without id returned no id")
	}
	def := gen.GetThread().GetConfig()
	if def.MaxContextTokens != nil && def.GetMaxContextTokens() != 128000 {
		t.Errorf("default max_context_tokens = %d, want 128000", def.GetMaxContextTokens())
	}
}

func TestGetThreadNotFound(t *testing.T) {
	_, err := shared.History.GetThread(ctxT(t), &pioneerv1.GetThreadRequest{ThreadId: uniq("missing")})
	wantCode(t, err, codes.NotFound, "GetThread(unknown)")
	wantReason(t, err, "THREAD_NOT_FOUND", "GetThread(unknown)")
}

func TestCreateThreadRetriedAnswersTheStoredThread(t *testing.T) {
	id := uniq("retry")
	cfg := &pioneerv1.ThreadConfig{Model: "gpt-x"}
	first, err := shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{ThreadId: id, Config: cfg})
	must(t, err, "CreateThread")
	again, err := shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{ThreadId: id, Config: cfg})
	must(t, err, "CreateThread(retried)")
	if !proto.Equal(first.GetThread().GetCreateTime(), again.GetThread().GetCreateTime()) {
		t.Fatalf("retried create answered another thread: %v vs %v", first.GetThread(), again.GetThread())
	}
	_, err = shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{
		ThreadId: id, Config: &pioneerv1.ThreadConfig{Model: "other"},
	})
	wantCode(t, err, codes.AlreadyExists, "CreateThread(other config)")
	wantReason(t, err, "THREAD_CONFLICT", "CreateThread(other config)")
}

func TestCreateThreadReserveNotBelowMax(t *testing.T) {
	for _, reserve := range []int32{4000, 5000} {
		_, err := shared.History.CreateThread(ctxT(t), &pioneerv1.CreateThreadRequest{
			ThreadId: uniq("go-bad-config"),
			Config:   &pioneerv1.ThreadConfig{MaxContextTokens: proto.Int32(4000), ResponseReserveTokens: proto.Int32(reserve)},
		})
		wantCode(t, err, codes.InvalidArgument, fmt.Sprintf("CreateThread(reserve %d >= max 4000)", reserve))
		if len(pioneer.FieldViolations(err)) == 0 {
			t.Errorf("reserve %d: INVALID_ARGUMENT without BadRequest field violations", reserve)
		}
	}
}

func TestUpdateThreadRejectsBadBudgetAndKeepsConfig(t *testing.T) {
	th := createThread(t, &pioneerv1.ThreadConfig{MaxContextTokens: proto.Int32(10000), ResponseReserveTokens: proto.Int32(2000)})
	_, err := shared.History.UpdateThread(ctxT(t), &pioneerv1.UpdateThreadRequest{
		ThreadId:   th.GetThreadId(),
		Config:     &pioneerv1.ThreadConfig{ResponseReserveTokens: proto.Int32(10000)},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"response_reserve_tokens"}},
	})
	wantCode(t, err, codes.InvalidArgument, "UpdateThread(reserve == max)")
	got, err := shared.History.GetThread(ctxT(t), &pioneerv1.GetThreadRequest{ThreadId: th.GetThreadId()})
	must(t, err, "GetThread")
	if got.GetThread().GetConfig().GetResponseReserveTokens() != 2000 {
		t.Fatal("a rejected update changed the stored config")
	}
}

func TestAppendEntriesIdempotent(t *testing.T) {
	th := createThread(t, nil).GetThreadId()
	turn := uniq("turn")
	e1 := entry(uniq("e"), turn, pioneerv1.EntryRole_ENTRY_ROLE_USER, "hello world")
	e2 := entry(uniq("e"), turn, pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, "Hello! How can I help?")

	first := appendEntries(t, th, e1, e2)
	if first.GetCreatedCount() != 2 || first.GetExistingCount() != 0 || len(first.GetEntries()) != 2 {
		t.Fatalf("first append: created=%d existing=%d entries=%d", first.GetCreatedCount(), first.GetExistingCount(), len(first.GetEntries()))
	}
	s1, s2 := first.GetEntries()[0], first.GetEntries()[1]
	if s1.GetEntryId() != e1.GetEntryId() || s2.GetEntryId() != e2.GetEntryId() {
		t.Fatal("stored entries not in request order")
	}
	if !(s1.GetSequence() < s2.GetSequence()) {
		t.Fatalf("sequences %d, %d not increasing", s1.GetSequence(), s2.GetSequence())
	}
	for _, s := range first.GetEntries() {
		if s.GetTokenCount() <= 0 || s.GetTokenizer() == "" || s.GetCompleted() || s.GetCreateTime() == nil {
			t.Fatalf("entry %s output fields: tokens=%d tokenizer=%q completed=%v", s.GetEntryId(), s.GetTokenCount(), s.GetTokenizer(), s.GetCompleted())
		}
	}

	// Tokens are counted at append with the tokenizer CountTokens uses for the thread's model.
	ct, err := shared.History.CountTokens(ctxT(t), &pioneerv1.CountTokensRequest{Texts: []string{e1.GetContent()}, Model: "gpt-4o-mini"})
	must(t, err, "CountTokens")
	if ct.GetTokenCounts()[0] != s1.GetTokenCount() || ct.GetTokenizer() != s1.GetTokenizer() {
		t.Errorf("append counted %d (%s), CountTokens %d (%s)", s1.GetTokenCount(), s1.GetTokenizer(), ct.GetTokenCounts()[0], ct.GetTokenizer())
	}

	// An identical repeat is a no-op.
	again := appendEntries(t, th, e1, e2)
	if again.GetCreatedCount() != 0 || again.GetExistingCount() != 2 {
		t.Fatalf("identical repeat: created=%d existing=%d, want 0 and 2", again.GetCreatedCount(), again.GetExistingCount())
	}
	if again.GetEntries()[0].GetSequence() != s1.GetSequence() {
		t.Fatal("identical repeat changed the stored sequence")
	}

	// A repeat with different content is refused, and loses nothing stored.
	changed := proto.Clone(e1).(*pioneerv1.ConversationEntry)
	changed.Content = "hello there"
	e3 := entry(uniq("e"), turn, pioneerv1.EntryRole_ENTRY_ROLE_USER, "a new entry in the same batch")
	_, err = shared.History.AppendEntries(ctxT(t), &pioneerv1.AppendEntriesRequest{ThreadId: th, Entries: []*pioneerv1.ConversationEntry{e3, changed}})
	wantCode(t, err, codes.AlreadyExists, "AppendEntries(same id, different content)")
	wantReason(t, err, "ENTRY_CONFLICT", "AppendEntries(same id, different content)")
	if info, _ := pioneer.ErrorInfo(err); info.GetMetadata()["differing_fields"] != "content" {
		t.Fatalf("ENTRY_CONFLICT metadata = %v, want differing_fields=content", info.GetMetadata())
	}
	got, err := shared.History.GetThread(ctxT(t), &pioneerv1.GetThreadRequest{ThreadId: th})
	must(t, err, "GetThread")
	if got.GetThread().GetEntryCount() != 2 {
		t.Fatalf("entry_count = %d after a refused batch, want 2 (the batch is all or nothing)", got.GetThread().GetEntryCount())
	}
	if n := completeTurn(t, th, turn); n != 2 {
		t.Fatalf("CompleteTurn completed %d entries, want 2", n)
	}
	h := loadHistory(t, &pioneerv1.LoadConversationHistoryRequest{ThreadId: th})
	if len(h.GetMessages()) != 2 || h.GetMessages()[0].GetContent() != "hello world" {
		t.Fatalf("history after refused repeat = %v", h.GetMessages())
	}
}

func TestAppendEntriesValidation(t *testing.T) {
	_, err := shared.History.AppendEntries(ctxT(t), &pioneerv1.AppendEntriesRequest{
		ThreadId: uniq("missing"),
		Entries:  []*pioneerv1.ConversationEntry{entry(uniq("e"), "t", pioneerv1.EntryRole_ENTRY_ROLE_USER, "x")},
	})
	wantCode(t, err, codes.NotFound, "AppendEntries(unknown thread)")
	wantReason(t, err, "THREAD_NOT_FOUND", "AppendEntries(unknown thread)")

	th := createThread(t, nil).GetThreadId()
	_, err = shared.History.AppendEntries(ctxT(t), &pioneerv1.AppendEntriesRequest{
		ThreadId: th,
		Entries:  []*pioneerv1.ConversationEntry{entry("", "t", pioneerv1.EntryRole_ENTRY_ROLE_USER, "x")},
	})
	wantViolation(t, err, "entries[0].entry_id", "AppendEntries(empty entry_id)")
	_, err = shared.History.AppendEntries(ctxT(t), &pioneerv1.AppendEntriesRequest{
		ThreadId: th,
		Entries:  []*pioneerv1.ConversationEntry{entry(uniq("e"), "t", pioneerv1.EntryRole_ENTRY_ROLE_UNSPECIFIED, "x")},
	})
	wantViolation(t, err, "entries[0].role", "AppendEntries(unspecified role)")
}

func TestCompleteTurnAndLoadHistory(t *testing.T) {
	th := createThread(t, nil).GetThreadId()
	t1, t2, t3 := uniq("turn"), uniq("turn"), uniq("turn")
	call := &pioneerv1.ToolCall{Id: "call_1", Name: "read_file", Arguments: `{"path":"README.md"}`}
	appendEntries(t, th,
		&pioneerv1.ConversationEntry{
			EntryId: uniq("e"), TurnId: t1, Role: pioneerv1.EntryRole_ENTRY_ROLE_USER, Content: "Read the README please.",
			ArtifactRefs: []*pioneerv1.ArtifactRef{{ArtifactId: "art-1", DisplayName: "shot.png", Kind: "image", MimeType: proto.String("image/png")}},
		},
		&pioneerv1.ConversationEntry{EntryId: uniq("e"), TurnId: t1, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, ToolCalls: []*pioneerv1.ToolCall{call}},
		&pioneerv1.ConversationEntry{EntryId: uniq("e"), TurnId: t1, Role: pioneerv1.EntryRole_ENTRY_ROLE_TOOL, ToolCallId: "call_1", Name: "read_file", Content: "# pioneer-grpc"},
		entry(uniq("e"), t1, pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, "The README is a title only."),
	)
	if n := completeTurn(t, th, t1); n != 4 {
		t.Fatalf("CompleteTurn(t1) = %d, want 4", n)
	}
	appendEntries(t, th, entry(uniq("e"), t2, pioneerv1.EntryRole_ENTRY_ROLE_USER, "Second turn, completed."))
	completeTurn(t, th, t2)
	appendEntries(t, th, entry(uniq("e"), t3, pioneerv1.EntryRole_ENTRY_ROLE_USER, "Third turn, in progress."))

	h := loadHistory(t, &pioneerv1.LoadConversationHistoryRequest{ThreadId: th, ExcludeTurnId: t3})
	msgs := h.GetMessages()
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.GetRole().String()
	}
	want := []pioneerv1.ChatRole{
		pioneerv1.ChatRole_CHAT_ROLE_USER, pioneerv1.ChatRole_CHAT_ROLE_ASSISTANT, pioneerv1.ChatRole_CHAT_ROLE_TOOL,
		pioneerv1.ChatRole_CHAT_ROLE_ASSISTANT, pioneerv1.ChatRole_CHAT_ROLE_USER,
	}
	if len(msgs) != len(want) {
		t.Fatalf("history roles = %v, want %d messages (completed turns only)", roles, len(want))
	}
	for i, r := range want {
		if msgs[i].GetRole() != r {
			t.Fatalf("history roles = %v", roles)
		}
	}
	if tc := msgs[1].GetToolCalls(); len(tc) != 1 || tc[0].GetId() != "call_1" || tc[0].GetArguments() != call.GetArguments() {
		t.Fatalf("assistant tool call = %v", tc)
	}
	if msgs[2].GetToolCallId() != "call_1" {
		t.Fatalf("tool message answers %q, want call_1", msgs[2].GetToolCallId())
	}
	// Artifact refs are metadata on their message, never bytes.
	if len(msgs[0].GetArtifactRefs()) == 0 && !strings.Contains(msgs[0].GetContent(), "artifactId=art-1") {
		t.Fatalf("user message lost its artifact ref: %v", msgs[0])
	}
	r := h.GetReport()
	if r.GetDecision() != pioneerv1.HistoryDecision_HISTORY_DECISION_FULL {
		t.Fatalf("decision = %s, want FULL", r.GetDecision())
	}
	if r.GetBudgetTokens() != 112000 || r.GetThresholdTokens() != 89600 || r.GetSummaryTargetTokens() != 11200 {
		t.Fatalf("budget/threshold/target = %d/%d/%d, want 112000/89600/11200", r.GetBudgetTokens(), r.GetThresholdTokens(), r.GetSummaryTargetTokens())
	}
	if r.GetEntriesLoaded() != 5 || r.GetEntriesKept() != 5 || r.GetEntriesDropped() != 0 {
		t.Fatalf("entries loaded/kept/dropped = %d/%d/%d, want 5/5/0", r.GetEntriesLoaded(), r.GetEntriesKept(), r.GetEntriesDropped())
	}
	if r.GetTokensBefore() <= 0 || r.GetTokensAfter() != r.GetTokensBefore() || r.GetTokenizer() == "" {
		t.Fatalf("tokens before/after = %d/%d tokenizer %q", r.GetTokensBefore(), r.GetTokensAfter(), r.GetTokenizer())
	}

	// Without exclude_turn_id the uncompleted turn is still not loaded.
	h2 := loadHistory(t, &pioneerv1.LoadConversationHistoryRequest{ThreadId: th})
	if len(h2.GetMessages()) != 5 {
		t.Fatalf("an uncompleted turn was loaded: %d messages", len(h2.GetMessages()))
	}
}

func TestLoadHistoryUnknownThread(t *testing.T) {
	_, err := shared.History.LoadConversationHistory(ctxT(t), &pioneerv1.LoadConversationHistoryRequest{ThreadId: uniq("missing")})
	wantCode(t, err, codes.NotFound, "LoadConversationHistory(unknown)")
}

func TestGetThreadSummaryFresh(t *testing.T) {
	th := createThread(t, nil).GetThreadId()
	resp, err := shared.History.GetThreadSummary(ctxT(t), &pioneerv1.GetThreadSummaryRequest{ThreadId: th})
	must(t, err, "GetThreadSummary")
	if resp.GetSummary() != nil {
		t.Fatalf("fresh thread has a summary: %v", resp.GetSummary())
	}
}

// Past 80% of the budget the history is compressed (or, if that fails, cut),
// and the result fits the budget. A dry run stores nothing.
func TestLoadHistoryOverThreshold(t *testing.T) {
	th := createThread(t, &pioneerv1.ThreadConfig{
		MaxContextTokens: proto.Int32(1500), ResponseReserveTokens: proto.Int32(500), Model: "gpt-4o-mini",
	}).GetThreadId()
	sentence := "The deployment pipeline builds the Go client, runs the contract tests, and publishes the module. "
	for i := 0; i < 12; i++ {
		turn := fmt.Sprintf("turn-%02d", i)
		appendEntries(t, th,
			entry(fmt.Sprintf("u-%02d", i), turn, pioneerv1.EntryRole_ENTRY_ROLE_USER, fmt.Sprintf("Question %d: %s", i, strings.Repeat(sentence, 2))),
			entry(fmt.Sprintf("a-%02d", i), turn, pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, fmt.Sprintf("Answer %d: %s", i, strings.Repeat(sentence, 2))),
		)
		completeTurn(t, th, turn)
	}

	dry := loadHistory(t, &pioneerv1.LoadConversationHistoryRequest{ThreadId: th, DryRun: true})
	if dry.GetReport().GetTokensBefore() < dry.GetReport().GetThresholdTokens() {
		t.Fatalf("fixture too small: %d tokens under threshold %d", dry.GetReport().GetTokensBefore(), dry.GetReport().GetThresholdTokens())
	}
	sum, err := shared.History.GetThreadSummary(ctxT(t), &pioneerv1.GetThreadSummaryRequest{ThreadId: th})
	must(t, err, "GetThreadSummary")
	if sum.GetSummary() != nil {
		t.Fatal("a dry run stored a summary")
	}

	h := loadHistory(t, &pioneerv1.LoadConversationHistoryRequest{ThreadId: th})
	r := h.GetReport()
	t.Logf("over threshold: %s, %d -> %d tokens, summary %s", r.GetDecision(), r.GetTokensBefore(), r.GetTokensAfter(), r.GetSummaryUse())
	if r.GetBudgetTokens() != 1000 {
		t.Fatalf("budget = %d, want 1000", r.GetBudgetTokens())
	}
	if r.GetTokensAfter() > r.GetBudgetTokens() {
		t.Fatalf("tokens_after %d exceeds budget %d", r.GetTokensAfter(), r.GetBudgetTokens())
	}
	switch r.GetDecision() {
	case pioneerv1.HistoryDecision_HISTORY_DECISION_SUMMARIZED:
		first := h.GetMessages()[0]
		if first.GetRole() != pioneerv1.ChatRole_CHAT_ROLE_SYSTEM || !strings.HasPrefix(first.GetContent(), "Summary of earlier conversation:") {
			t.Fatalf("summarized history starts with %s %q", first.GetRole(), first.GetContent())
		}
		sum, err := shared.History.GetThreadSummary(ctxT(t), &pioneerv1.GetThreadSummaryRequest{ThreadId: th})
		must(t, err, "GetThreadSummary")
		if sum.GetSummary().GetText() == "" || sum.GetSummary().GetCoversThroughEntryId() == "" {
			t.Fatalf("stored summary = %v", sum.GetSummary())
		}
		// The next load reuses it instead of calling the summary model again.
		again := loadHistory(t, &pioneerv1.LoadConversationHistoryRequest{ThreadId: th})
		if again.GetReport().GetSummaryUse() != pioneerv1.SummaryUse_SUMMARY_USE_REUSED {
			t.Errorf("second load summary_use = %s, want REUSED", again.GetReport().GetSummaryUse())
		}
	case pioneerv1.HistoryDecision_HISTORY_DECISION_TRUNCATED:
		if r.GetEntriesDropped() == 0 || len(r.GetDiagnostics()) == 0 {
			t.Fatalf("truncated without dropped entries or a diagnostic: %v", r)
		}
	default:
		t.Fatalf("decision = %s over the threshold", r.GetDecision())
	}
}

func TestCountTokens(t *testing.T) {
	resp, err := shared.History.CountTokens(ctxT(t), &pioneerv1.CountTokensRequest{
		Texts:    []string{"hello world", ""},
		Messages: []*pioneerv1.ChatMessage{{Role: pioneerv1.ChatRole_CHAT_ROLE_USER, Content: "hello world"}},
	})
	must(t, err, "CountTokens")
	counts := resp.GetTokenCounts()
	if len(counts) != 3 {
		t.Fatalf("token_counts = %v, want one per text then one per message", counts)
	}
	if counts[0] != 2 || counts[1] != 0 {
		t.Errorf("cl100k_base counts of %q and \"\" = %d, %d; want 2, 0", "hello world", counts[0], counts[1])
	}
	if counts[2] <= counts[0] {
		t.Errorf("a message (%d) must cost more than its bare text (%d): per-message overhead", counts[2], counts[0])
	}
	if resp.GetTotalTokens() != counts[0]+counts[1]+counts[2] {
		t.Errorf("total_tokens = %d, want the sum %d", resp.GetTotalTokens(), counts[0]+counts[1]+counts[2])
	}
	if resp.GetTokenizer() != "cl100k_base" {
		t.Errorf("tokenizer = %q", resp.GetTokenizer())
	}
}
