// Command agentloop is a minimal agent loop against pioneer-grpc. Each turn is
// three calls: PrepareTurn with the user's message, PrepareTurn with the model's
// tool call and its result (text and a screenshot, a PNG made here), and
// CompleteTurn with the final answer. A stand-in answers for the model with
// OpenAI Chat Completions responses; pioneer.EntriesOfResponse turns each into the
// entry to store, the provider's usage and why the model stopped. It imports only
// the module's public packages, so a copy builds in a module of your own.
//
//	go run ./cmd/agentloop -addr 127.0.0.1:50051 -token "$PIONEER_TOKEN" -rounds 3
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"log"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

func main() {
	addr := flag.String("addr", envOr("PIONEER_ADDR", "127.0.0.1:50051"), "server address host:port")
	token := flag.String("token", os.Getenv("PIONEER_TOKEN"), "bearer token (default $PIONEER_TOKEN)")
	rounds := flag.Int("rounds", 3, "turns to run")
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

	// Sent on every round: the server keeps no tools between rounds.
	tools := []*pioneerv1.ToolDefinition{readFileTool(), screenshotTool()}
	// Each PrepareTurn also renders the body for this provider (provider_body_json).
	const provider = pioneerv1.Provider_PROVIDER_OPENAI_CHAT_COMPLETIONS
	for round := 1; round <= rounds; round++ {
		turn := fmt.Sprintf("turn-%d-%s", round, randomHex(3))
		// usage: what the provider reported for the turn's previous round (nil on its first), stored
		// with that round beside what the server expected its cache to serve (ListRoundUsage).
		prepare := func(usage *pioneerv1.ProviderUsage, entries ...*pioneerv1.ConversationEntry) (*pioneerv1.PrepareTurnResponse, error) {
			prep, err := c.Turns.PrepareTurn(ctx, &pioneerv1.PrepareTurnRequest{
				ThreadId:           threadID,
				TurnId:             turn,
				NewEntries:         entries,
				CompileInput:       compileInput(round),
				Tools:              tools,
				ToolChoice:         &pioneerv1.ToolChoice{Mode: pioneerv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO},
				Provider:           provider,
				PreviousRoundUsage: usage,
			})
			if vs := pioneer.FieldViolations(err); len(vs) > 0 {
				for _, v := range vs {
					log.Printf("  bad field %s: %s", v.GetField(), v.GetDescription())
				}
			}
			return prep, err
		}

		// 1. The user's message: stored, history loaded, prompt compiled, ChatRequest and body back.
		prep, err := prepare(nil, &pioneerv1.ConversationEntry{
			EntryId: turn + ".user",
			Role:    pioneerv1.EntryRole_ENTRY_ROLE_USER,
			Content: fmt.Sprintf("Round %d: please check the Go client and tell me what is left.", round),
		})
		if err != nil {
			return fmt.Errorf("round %d: prepare turn: %w", round, err)
		}

		// 2. The model (a stand-in here) calls the screenshot tool. Its response becomes the
		//    entry to store ("<turn>.r1": a retried round stores nothing twice). Models
		//    number their calls: call_0 again in every turn is fine. The call and its result
		//    go in one request; a call sent without its result is refused and stored nowhere.
		answer := fmt.Sprintf("Round %d: the tests pass; next I will update the README.", round)
		called, err := pioneer.EntriesOfResponse(provider, standIn(prep, answer), turn, 1)
		if err != nil {
			return fmt.Errorf("round %d: the model's reply: %w", round, err)
		}
		if called.Stop != pioneer.StopToolUse {
			return fmt.Errorf("round %d: the model stopped (%s), no tool call", round, called.ProviderStopReason)
		}
		call := called.Entries[0].GetToolCalls()[0]
		shot, err := screenshotPNG(64, 48)
		if err != nil {
			return err
		}
		prep, err = prepare(called.Usage, append(called.Entries, &pioneerv1.ConversationEntry{
			EntryId:    fmt.Sprintf("%s.r1.%s", turn, call.GetId()),
			Role:       pioneerv1.EntryRole_ENTRY_ROLE_TOOL,
			ToolCallId: call.GetId(),
			Name:       call.GetName(),
			Content:    "the workspace window, 64 x 48",
			ContentParts: []*pioneerv1.ContentPart{{Part: &pioneerv1.ContentPart_Image{
				Image: &pioneerv1.MediaPart{MimeType: "image/png", Source: &pioneerv1.MediaPart_Data{Data: shot}},
			}}},
		})...)
		if err != nil {
			return fmt.Errorf("round %d: prepare the tool round: %w", round, err)
		}

		// 3. The final answer is stored and the turn completed in one call (safe to retry).
		answered, err := pioneer.EntriesOfResponse(provider, standIn(prep, answer), turn, 2)
		if err != nil {
			return fmt.Errorf("round %d: the model's answer: %w", round, err)
		}
		if len(answered.Entries) == 0 {
			return fmt.Errorf("round %d: the model stopped (%s) with nothing to store", round, answered.ProviderStopReason)
		}
		done, err := c.History.CompleteTurn(ctx, &pioneerv1.CompleteTurnRequest{
			ThreadId: threadID,
			TurnId:   turn,
			Entries:  answered.Entries,
			// The answer's round's usage, stored with it.
			PreviousRoundUsage: answered.Usage,
		})
		if err != nil {
			return fmt.Errorf("round %d: complete turn: %w", round, err)
		}
		if done.GetCompletedEntryCount() != 4 {
			return fmt.Errorf("round %d: the turn has %d entries, want 4", round, done.GetCompletedEntryCount())
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
		fmt.Printf("  reply     %q\n", answered.Entries[0].GetContent())
		// The provider's usage in one meaning for every provider: input counts cache reads too.
		u := answered.Usage
		fmt.Printf("  usage     %d input tokens (%d from the cache), %d output\n",
			u.GetInputTokens(), u.GetCacheReadInputTokens(), u.GetOutputTokens())
	}
	return nil
}

// compileInput is what the loop asks the prompt compiler for: the full profile, the tool recovery
// policy, and a dynamic half that changes every round (the stable half, and the provider's prompt
// cache with it, stays the same).
func compileInput(round int) *pioneerv1.PromptCompileInput {
	return &pioneerv1.PromptCompileInput{
		Profile:                   pioneerv1.PromptProfile_PROMPT_PROFILE_FULL,
		IncludeToolRecoveryPolicy: true,
		DynamicContext:            proto.String(fmt.Sprintf("Round %d of the example conversation.", round)),
		DynamicSections: []*pioneerv1.DynamicSection{{
			Id:      "workspace.git_status",
			Title:   proto.String("Git Status"),
			Content: fmt.Sprintf("On branch main; %d files changed.", round),
		}},
	}
}

// standIn answers for the model as OpenAI Chat Completions would to the body
// PrepareTurn rendered (a real loop POSTs prep.GetProviderBodyJson() to
// prep.GetProviderPath() and reads the response): a call of the screenshot tool
// until its result is in the conversation, then the answer.
func standIn(prep *pioneerv1.PrepareTurnResponse, answer string) []byte {
	messages := prep.GetChatRequest().GetMessages()
	message := map[string]any{"role": "assistant", "content": answer, "refusal": nil}
	finish := "stop"
	if len(messages) == 0 || messages[len(messages)-1].GetRole() != pioneerv1.ChatRole_CHAT_ROLE_TOOL {
		message["content"] = nil
		message["tool_calls"] = []any{map[string]any{
			"id": "call_0", "type": "function",
			"function": map[string]any{"name": "screenshot", "arguments": "{}"},
		}}
		finish = "tool_calls"
	}
	prompt := len(prep.GetProviderBodyJson()) / 4 // a stand-in's count: about four characters a token
	body, err := json.Marshal(map[string]any{
		"id": "chatcmpl-" + randomHex(8), "object": "chat.completion", "created": time.Now().Unix(),
		"model":   "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0},
		},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// readFileTool is a tool with an object JSON schema of its arguments.
func readFileTool() *pioneerv1.ToolDefinition {
	params, err := structpb.NewStruct(map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []any{"path"},
	})
	if err != nil {
		panic(err)
	}
	return &pioneerv1.ToolDefinition{Name: "read_file", Description: "A UTF-8 file of the workspace.", Parameters: params}
}

// screenshotTool is a tool whose result carries an image.
func screenshotTool() *pioneerv1.ToolDefinition {
	params, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{}})
	if err != nil {
		panic(err)
	}
	return &pioneerv1.ToolDefinition{
		Name:        "screenshot",
		Description: "A screenshot of the workspace window.",
		Parameters:  params,
	}
}

// screenshotPNG stands in for what a screenshot tool returns: a white image of the size.
func screenshotPNG(width, height int) ([]byte, error) {
	img := image.NewGray(image.Rect(0, 0, width, height))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return buf.Bytes(), nil
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
