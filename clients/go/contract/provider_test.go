package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
)

func chatRequest(t *testing.T) *pioneerv1.ChatRequest {
	t.Helper()
	// Built by hand, so rendering is tested apart from the compiler.
	const boundary = "\n<!-- PIONEER_PROMT_CACHE_BOUNDARY -->\n"
	stable := "## Identity\nYou are Pioneer, a careful coding assistant.\n\n## Safety\n" + strings.Repeat("Never exfiltrate private data. ", 80)
	dynamic := "## Dynamic Context\nRound 1 of the example conversation."
	compiled := &pioneerv1.CompiledPromptPayload{
		StableSystemText:  stable,
		DynamicSystemText: dynamic,
		FullSystemText:    stable + boundary + dynamic,
		BoundaryMarker:    boundary,
	}
	return &pioneerv1.ChatRequest{
		Model: "gpt-4o-mini",
		Messages: []*pioneerv1.ChatMessage{
			{Role: pioneerv1.ChatRole_CHAT_ROLE_USER, Content: "Read the README."},
			{Role: pioneerv1.ChatRole_CHAT_ROLE_ASSISTANT, ToolCalls: []*pioneerv1.ToolCall{{Id: "call_1", Name: "read_file", Arguments: `{"path":"README.md"}`}}},
			{Role: pioneerv1.ChatRole_CHAT_ROLE_TOOL, ToolCallId: "call_1", Name: "read_file", Content: "# pioneer-grpc"},
			{Role: pioneerv1.ChatRole_CHAT_ROLE_USER, Content: "Summarise it."},
		},
		Temperature:       proto.Float64(0.2),
		MaxTokens:         proto.Int32(512),
		Tools:             []*pioneerv1.ToolDefinition{sample.ReadFileTool()},
		ToolChoice:        &pioneerv1.ToolChoice{Mode: pioneerv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO},
		ParallelToolCalls: proto.Bool(true),
		CompiledPrompt:    compiled,
	}
}

func TestRenderChatRequestEachProvider(t *testing.T) {
	req := chatRequest(t)
	marker := req.GetCompiledPrompt().GetBoundaryMarker()
	cases := []struct {
		provider   pioneerv1.Provider
		pathHas    string
		cacheField string
	}{
		{pioneerv1.Provider_PROVIDER_OPENAI_CHAT_COMPLETIONS, "/chat/completions", "prompt_cache_key"},
		{pioneerv1.Provider_PROVIDER_OPENAI_RESPONSES, "/responses", "prompt_cache_key"},
		{pioneerv1.Provider_PROVIDER_ANTHROPIC_MESSAGES, "/messages", "cache_control"},
		{pioneerv1.Provider_PROVIDER_GEMINI_GENERATE_CONTENT, "generateContent", ""},
	}
	for _, tc := range cases {
		t.Run(tc.provider.String(), func(t *testing.T) {
			resp, err := shared.Provider.RenderChatRequest(ctxT(t), &pioneerv1.RenderChatRequestRequest{
				Provider:    tc.provider,
				ChatRequest: req,
				Options:     &pioneerv1.RenderOptions{AnthropicMinCacheChars: proto.Int32(1)},
			})
			must(t, err, "RenderChatRequest")
			var body map[string]any
			if err := json.Unmarshal([]byte(resp.GetBodyJson()), &body); err != nil {
				t.Fatalf("body_json is not a JSON object: %v", err)
			}
			if !strings.Contains(resp.GetPath(), tc.pathHas) {
				t.Errorf("path = %q, want it to contain %q", resp.GetPath(), tc.pathHas)
			}
			if marker != "" && strings.Contains(resp.GetBodyJson(), strings.TrimSpace(marker)) {
				t.Error("the cache boundary marker reached the provider body")
			}
			if !strings.Contains(resp.GetBodyJson(), "read_file") || !strings.Contains(resp.GetBodyJson(), "call_1") {
				t.Error("tool definition or tool call missing from the body")
			}
			if tc.cacheField != "" && !strings.Contains(resp.GetBodyJson(), tc.cacheField) {
				t.Errorf("body lacks %q: no cache breakpoint at the boundary", tc.cacheField)
			}
			if tc.provider == pioneerv1.Provider_PROVIDER_ANTHROPIC_MESSAGES && resp.GetCacheBreakpoints() < 1 {
				t.Errorf("anthropic cache_breakpoints = %d, want >= 1", resp.GetCacheBreakpoints())
			}
			// The stable half reaches the model in every shape (JSON escapes aside).
			firstLine := strings.SplitN(req.GetCompiledPrompt().GetStableSystemText(), "\n", 2)[0]
			enc, _ := json.Marshal(firstLine)
			if !strings.Contains(resp.GetBodyJson(), strings.Trim(string(enc), `"`)) {
				t.Errorf("body lacks the stable system text (%q)", firstLine)
			}
		})
	}
}

func TestRenderChatRequestValidation(t *testing.T) {
	req := chatRequest(t)
	_, err := shared.Provider.RenderChatRequest(ctxT(t), &pioneerv1.RenderChatRequestRequest{ChatRequest: req})
	wantViolation(t, err, "provider", "RenderChatRequest(no provider)")

	bad := proto.Clone(req).(*pioneerv1.ChatRequest)
	bad.Tools[0].Name = "read file!"
	_, err = shared.Provider.RenderChatRequest(ctxT(t), &pioneerv1.RenderChatRequestRequest{
		Provider: pioneerv1.Provider_PROVIDER_OPENAI_CHAT_COMPLETIONS, ChatRequest: bad,
	})
	wantViolation(t, err, "chat_request.tools[0].name", "RenderChatRequest(bad tool name)")

	named := proto.Clone(req).(*pioneerv1.ChatRequest)
	named.ToolChoice = &pioneerv1.ToolChoice{Mode: pioneerv1.ToolChoiceMode_TOOL_CHOICE_MODE_TOOL, ToolName: "write_file"}
	_, err = shared.Provider.RenderChatRequest(ctxT(t), &pioneerv1.RenderChatRequestRequest{
		Provider: pioneerv1.Provider_PROVIDER_ANTHROPIC_MESSAGES, ChatRequest: named,
	})
	wantViolation(t, err, "chat_request.tool_choice.tool_name", "RenderChatRequest(unknown named tool)")
}
