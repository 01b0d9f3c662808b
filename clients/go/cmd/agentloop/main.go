// Command agentloop is a minimal agent loop against pioneer-grpc: each round
// prepares the provider request (history + compiled prompt + tools), answers
// with a stand-in model reply, stores it and completes the turn.
//
//	go run ./cmd/agentloop -addr 127.0.0.1:50051 -token "$PIONEER_TOKEN" -rounds 3
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

func main() {
	addr := flag.String("addr", envOr("PIONEER_ADDR", "127.0.0.1:50051"), "server address host:port")
	token := flag.String("token", os.Getenv("PIONEER_TOKEN"), "bearer token (default $PIONEER_TOKEN)")
	rounds := flag.Int("rounds", 3, "provider rounds to run")
	thread := flag.String("thread", "", "existing thread id (default: create a new thread)")
	model := flag.String("model", "gpt-4o-mini", "model of a new thread")
	flag.Parse()
	log.SetFlags(0)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *addr, *token, *thread, *model, *rounds); err != nil {
		log.Fatalf("agentloop: %v", err)
	}
}

func run(ctx context.Context, addr, token, threadID, model string, rounds int) error {
	c, err := pioneer.Dial(ctx, addr, pioneer.WithToken(token))
	if err != nil {
		return err
	}
	defer c.Close()

	if threadID == "" {
		resp, err := c.History.CreateThread(ctx, &pioneerv1.CreateThreadRequest{
			ThreadId: "agentloop-" + randomHex(4),
			Config:   &pioneerv1.ThreadConfig{Model: model},
		})
		if err != nil {
			return fmt.Errorf("create thread: %w", err)
		}
		threadID = resp.GetThread().GetThreadId()
	}
	fmt.Printf("thread %s\n", threadID)

	for round := 1; round <= rounds; round++ {
		turn := fmt.Sprintf("turn-%d-%s", round, randomHex(3))

		// 1. Prepare the round: store the user's entry, load budgeted history,
		//    compile the system prompt, get the ChatRequest back.
		prep, err := c.Turns.PrepareTurn(ctx, &pioneerv1.PrepareTurnRequest{
			ThreadId: threadID,
			TurnId:   turn,
			NewEntries: []*pioneerv1.ConversationEntry{{
				EntryId: turn + "-user",
				TurnId:  turn,
				Role:    pioneerv1.EntryRole_ENTRY_ROLE_USER,
				Content: sample.UserMessage(round),
			}},
			CompileInput: sample.FullCompileInput(round),
			Tools:        []*pioneerv1.ToolDefinition{sample.ReadFileTool()},
			ToolChoice:   &pioneerv1.ToolChoice{Mode: pioneerv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO},
		})
		if err != nil {
			if vs := pioneer.FieldViolations(err); len(vs) > 0 {
				for _, v := range vs {
					log.Printf("  bad field %s: %s", v.GetField(), v.GetDescription())
				}
			}
			return fmt.Errorf("round %d: prepare turn: %w", round, err)
		}

		// 2. Call the model with prep.ChatRequest. This example answers itself.
		reply := sample.AssistantReply(round)

		// 3. Store the answer and close the turn so later rounds load it.
		if _, err := c.History.AppendEntries(ctx, &pioneerv1.AppendEntriesRequest{
			ThreadId: threadID,
			Entries: []*pioneerv1.ConversationEntry{{
				EntryId: turn + "-assistant",
				TurnId:  turn,
				Role:    pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT,
				Content: reply,
			}},
		}); err != nil {
			return fmt.Errorf("round %d: append reply: %w", round, err)
		}
		if _, err := c.History.CompleteTurn(ctx, &pioneerv1.CompleteTurnRequest{ThreadId: threadID, TurnId: turn}); err != nil {
			return fmt.Errorf("round %d: complete turn: %w", round, err)
		}

		r := prep.GetHistoryReport()
		m := prep.GetManifest()
		fmt.Printf("round %d  %s\n", round, turn)
		fmt.Printf("  history   %s: %d messages, %d/%d tokens (kept %d of %d entries, summary %s)\n",
			strings.TrimPrefix(r.GetDecision().String(), "HISTORY_DECISION_"),
			len(prep.GetChatRequest().GetMessages()), r.GetTokensAfter(), r.GetBudgetTokens(),
			r.GetEntriesKept(), r.GetEntriesLoaded(),
			strings.TrimPrefix(r.GetSummaryUse().String(), "SUMMARY_USE_"))
		fmt.Printf("  manifest  stable %s  dynamic %s  full %s  (%d sections, event %d)\n",
			short(m.GetFingerprintStable()), short(m.GetFingerprintDynamic()), short(m.GetFingerprintFull()),
			len(m.GetSectionIds()), prep.GetManifestEventId())
		fmt.Printf("  reply     %q\n", reply)
	}
	return nil
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
