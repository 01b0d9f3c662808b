package main

import (
	"context"
	"fmt"
	"log"
	"math/rand"
	"strings"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

// The realistic thread: turns of a coding agent, each a user message, an
// assistant tool call, the tool's result (a file) and the assistant's answer.
// With the default 50 turns that is 200 entries of about 100,000 tokens
// (cl100k_base), the size PrepareTurn's goals are stated for.
const (
	entriesPerTurn  = 4
	userWords       = 130
	callWords       = 60
	toolResultWords = 800
	answerWords     = 320
)

var vocabulary = strings.Fields(
	"the build fails in src/server/app.py because load_config returns None when the file is missing; " +
		"we decided to keep the default path, add a fallback, and retry with exponential backoff. " +
		"Tests in tests/store/test_entries.py cover SQLite and PostgreSQL; the migration stays 0001. " +
		"def parse(items: list[str]) -> dict[str, int]: return {k: len(k) for k in items} # 42 ms p99")

func words(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.Intn(len(vocabulary))])
	}
	return b.String()
}

// realisticTurn is turn number n (from 1) of the realistic thread.
func realisticTurn(rng *rand.Rand, n int) (string, []*pioneerv1.ConversationEntry) {
	turn := fmt.Sprintf("seed-%03d", n)
	callID := fmt.Sprintf("call_%03d", n)
	path := fmt.Sprintf("src/module_%03d.py", n)
	return turn, []*pioneerv1.ConversationEntry{
		{EntryId: turn + "-u", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_USER, Content: words(rng, userWords)},
		{
			EntryId: turn + "-call", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT,
			Content: words(rng, callWords),
			ToolCalls: []*pioneerv1.ToolCall{{
				Id: callID, Name: "read_file", Arguments: fmt.Sprintf(`{"path":%q}`, path),
			}},
		},
		{
			EntryId: turn + "-result", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_TOOL,
			ToolCallId: callID, Name: "read_file", Content: words(rng, toolResultWords),
		},
		{EntryId: turn + "-a", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, Content: words(rng, answerWords)},
	}
}

// seedRealistic writes `turns` completed realistic turns into thread id and
// returns the history's token count as a load reports it.
func seedRealistic(ctx context.Context, c *pioneer.Client, id string, turns int) (int64, error) {
	rng := rand.New(rand.NewSource(7))
	for n := 1; n <= turns; n++ {
		turn, entries := realisticTurn(rng, n)
		if _, err := c.History.AppendEntries(ctx, &pioneerv1.AppendEntriesRequest{ThreadId: id, Entries: entries}); err != nil {
			return 0, fmt.Errorf("seed thread: %w", err)
		}
		if _, err := c.History.CompleteTurn(ctx, &pioneerv1.CompleteTurnRequest{ThreadId: id, TurnId: turn}); err != nil {
			return 0, fmt.Errorf("seed thread: %w", err)
		}
	}
	loaded, err := c.History.LoadConversationHistory(ctx, &pioneerv1.LoadConversationHistoryRequest{ThreadId: id})
	if err != nil {
		return 0, fmt.Errorf("seed thread: %w", err)
	}
	report := loaded.GetReport()
	if report.GetDecision() != pioneerv1.HistoryDecision_HISTORY_DECISION_FULL {
		log.Printf("warning: the seeded thread does not load whole (%v)", report.GetDecision())
	}
	return int64(report.GetTokensAfter()), nil
}
