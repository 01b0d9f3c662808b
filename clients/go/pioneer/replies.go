package pioneer

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// What stopped the model, in one vocabulary for every provider (ProviderReply.Stop).
const (
	StopEndTurn               = "end_turn"
	StopToolUse               = "tool_use"
	StopMaxTokens             = "max_tokens"
	StopStopSequence          = "stop_sequence"
	StopPauseTurn             = "pause_turn"
	StopRefusal               = "refusal"
	StopContentFilter         = "content_filter"
	StopContextWindowExceeded = "context_window_exceeded"
	StopOther                 = "other"
)

// ProviderReply is what one provider response holds for the thread.
type ProviderReply struct {
	// The entries to append: the assistant entry, or none when the reply holds no
	// text and no tool call (stopped by a filter, or by max_tokens in its reasoning).
	Entries []*pioneerv1.ConversationEntry
	// The usage the provider reported, in ProviderUsage's meaning; nil when none.
	Usage *pioneerv1.ProviderUsage
	// Why the model stopped (the Stop* constants): tool_use whenever it made tool
	// calls to be run, refusal whenever it refused, other for a reason not named.
	Stop string
	// The provider's own reason as it sent it (stop_reason, finish_reason, status or
	// incomplete_details.reason, finishReason or promptFeedback.blockReason, stopReason).
	ProviderStopReason string
	// The refusal text OpenAI returns apart from the content; the entry's content
	// when the reply has no other text.
	Refusal string
	// Paths in the response of what the entry cannot hold, in the order read:
	// signatures, redacted or encrypted reasoning, citations and annotations, and
	// when there is no entry, the text and reasoning it would have held.
	NotKept []string
}

type piece struct{ path, value string }

type parts struct {
	texts, reasoning []piece
	calls            []*pioneerv1.ToolCall
	refusals         []string
	notKept          []string
}

func (p *parts) text(path, value string) {
	if value != "" {
		p.texts = append(p.texts, piece{path, value})
	}
}

func (p *parts) think(path, value string) {
	if value != "" {
		p.reasoning = append(p.reasoning, piece{path, value})
	}
}

func (p *parts) call(id, name, arguments string) {
	p.calls = append(p.calls, &pioneerv1.ToolCall{Id: id, Name: name, Arguments: arguments})
}

func (p *parts) dropIf(present bool, path string) {
	if present {
		p.notKept = append(p.notKept, path)
	}
}

type read struct {
	reason, stop string
	usage        *pioneerv1.ProviderUsage
}

type reader func(body map[string]any, p *parts) read

var readers = map[pioneerv1.Provider]reader{
	pioneerv1.Provider_PROVIDER_ANTHROPIC_MESSAGES:      readAnthropic,
	pioneerv1.Provider_PROVIDER_OPENAI_CHAT_COMPLETIONS: readOpenAIChat,
	pioneerv1.Provider_PROVIDER_OPENAI_RESPONSES:        readOpenAIResponses,
	pioneerv1.Provider_PROVIDER_GEMINI_GENERATE_CONTENT: readGemini,
	pioneerv1.Provider_PROVIDER_AMAZON_BEDROCK_CONVERSE: readBedrock,
}

// EntriesOfResponse turns one provider response into the entries to append, its
// usage and why the model stopped. provider is the Provider the body was rendered
// for; response the provider's JSON response body. The assistant entry's id is
// "{turnID}.r{round}": the same reply appended again is an idempotent repeat.
// What cannot be mapped is a *ReplyError naming its code and path.
//
// The same function, with the same answers, is entries_of_response in Python and
// Rust and entriesOfResponse in TypeScript (tests/data/replies holds the responses
// all four are tested against).
func EntriesOfResponse(provider pioneerv1.Provider, response []byte, turnID string, round int) (reply *ProviderReply, err error) {
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(*ReplyError)
			if !ok {
				panic(r)
			}
			reply, err = nil, re
		}
	}()
	read, ok := readers[provider]
	if !ok {
		fail(ReplyInvalidArgument, "", "provider %s is none of the five response shapes", provider)
	}
	if turnID == "" {
		fail(ReplyInvalidArgument, "", "turnID is empty: entry ids are made from it")
	}
	if round < 0 {
		fail(ReplyInvalidArgument, "", "round %d is not a whole number >= 0", round)
	}
	body := parseResponse(response)
	if e := body["error"]; e != nil {
		fail(ReplyErrorBody, "error", "%s", errorMessage(e))
	}
	var p parts
	r := read(body, &p)
	return assemble(&p, r, fmt.Sprintf("%s.r%d", turnID, round), turnID), nil
}

func errorMessage(e any) string {
	if o, ok := e.(map[string]any); ok {
		if m, ok := o["message"].(string); ok {
			return "the provider answered an error: " + m
		}
	}
	return "the provider answered an error"
}

func hasText(s string) bool { return strings.Trim(s, " \t\n\r") != "" }

func joined(pieces []piece, sep string) string {
	values := make([]string, len(pieces))
	for i, p := range pieces {
		values[i] = p.value
	}
	return strings.Join(values, sep)
}

func paths(pieces []piece) []string {
	out := make([]string, len(pieces))
	for i, p := range pieces {
		out[i] = p.path
	}
	return out
}

func assemble(p *parts, r read, entryID, turnID string) *ProviderReply {
	content := joined(p.texts, "")
	refusal := strings.Join(p.refusals, "")
	notKept := append([]string{}, p.notKept...)
	if !hasText(content) {
		notKept = append(notKept, paths(p.texts)...)
		content = refusal
	}
	stop := r.stop
	if refusal != "" {
		stop = StopRefusal
	} else if stop == StopEndTurn && len(p.calls) > 0 {
		stop = StopToolUse
	}
	reply := &ProviderReply{
		Entries: []*pioneerv1.ConversationEntry{}, Usage: r.usage, Stop: stop,
		ProviderStopReason: r.reason, Refusal: refusal,
	}
	if hasText(content) || len(p.calls) > 0 {
		entry := &pioneerv1.ConversationEntry{
			EntryId: entryID, TurnId: turnID, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT,
			Content: content, ToolCalls: p.calls,
		}
		if len(p.reasoning) > 0 {
			entry.ReasoningContent = proto.String(joined(p.reasoning, "\n\n"))
		}
		reply.Entries = append(reply.Entries, entry)
	} else {
		notKept = append(notKept, paths(p.reasoning)...)
	}
	reply.NotKept = notKept
	return reply
}

func newUsage(path string, inputs []*int32, cacheRead, cacheWrite *int32, outputs []*int32, reasoning *int32) *pioneerv1.ProviderUsage {
	return &pioneerv1.ProviderUsage{
		InputTokens:           checkedSum(path, inputs...),
		CacheReadInputTokens:  cacheRead,
		CacheWriteInputTokens: cacheWrite,
		OutputTokens:          checkedSum(path, outputs...),
		ReasoningOutputTokens: reasoning,
	}
}

// firstKey is the first key holding a value, in sorted order (so every client names the same one).
func firstKey(block map[string]any, ignored map[string]bool) string {
	keys := []string{}
	for k, v := range block {
		if v != nil && !ignored[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sortUTF16(keys)
	return keys[0]
}

func unsupported(path, format string, args ...any) {
	fail(ReplyUnsupported, path, format+": no entry holds it", args...)
}

func stopOf(table map[string]string, reason string) string {
	if stop, ok := table[reason]; ok {
		return stop
	}
	return StopOther
}

// --- Anthropic Messages ----------------------------------------------------------

var anthropicStops = map[string]string{
	"end_turn": StopEndTurn, "tool_use": StopToolUse, "max_tokens": StopMaxTokens,
	"stop_sequence": StopStopSequence, "pause_turn": StopPauseTurn, "refusal": StopRefusal,
	"model_context_window_exceeded": StopContextWindowExceeded,
}

func anthropicBlock(block map[string]any, path string, p *parts) {
	switch kind := name(block, "type", path); kind {
	case "text":
		p.text(child(path, "text"), text(block, "text", path))
		p.dropIf(len(optArray(block, "citations", path)) > 0, child(path, "citations"))
	case "thinking":
		p.think(child(path, "thinking"), text(block, "thinking", path))
		p.dropIf(optText(block, "signature", path) != "", child(path, "signature"))
	case "redacted_thinking":
		p.notKept = append(p.notKept, path)
	case "tool_use":
		arguments := argumentsObject(block["input"], child(path, "input"))
		p.call(name(block, "id", path), name(block, "name", path), arguments)
	default:
		unsupported(child(path, "type"), "a %q block", kind)
	}
}

func readAnthropic(body map[string]any, p *parts) read {
	blocks := array(body, "content", "")
	for i := range blocks {
		anthropicBlock(item(blocks, i, "content"), index("content", i), p)
	}
	reason := optText(body, "stop_reason", "")
	var found *pioneerv1.ProviderUsage
	if u := optObj(body, "usage", ""); u != nil {
		fresh := count(u, "input_tokens", "usage")
		cacheRead := count(u, "cache_read_input_tokens", "usage")
		cacheWrite := count(u, "cache_creation_input_tokens", "usage")
		details := optObj(u, "output_tokens_details", "usage")
		thinking := count(details, "thinking_tokens", "usage.output_tokens_details")
		found = newUsage("usage", []*int32{fresh, cacheRead, cacheWrite}, cacheRead, cacheWrite,
			[]*int32{count(u, "output_tokens", "usage")}, thinking)
	}
	return read{reason, stopOf(anthropicStops, reason), found}
}

// --- OpenAI Chat Completions -----------------------------------------------------

var chatStops = map[string]string{
	"stop": StopEndTurn, "tool_calls": StopToolUse, "function_call": StopToolUse,
	"length": StopMaxTokens, "content_filter": StopContentFilter,
}

func onlyChoice(items []any, key string) map[string]any {
	if len(items) == 0 {
		fail(ReplyMissing, key, "empty")
	}
	if len(items) > 1 {
		unsupported(index(key, 1), "%d %s: one reply is one of them (ask for one)", len(items), key)
	}
	return item(items, 0, key)
}

func chatCall(call map[string]any, path string, p *parts) {
	kind := optText(call, "type", path)
	if kind == "" {
		kind = "function"
	}
	if kind != "function" {
		unsupported(child(path, "type"), "a %q tool call", kind)
	}
	function := obj(call, "function", path)
	fpath := child(path, "function")
	arguments := argumentsText(function["arguments"], child(fpath, "arguments"))
	p.call(name(call, "id", path), name(function, "name", fpath), arguments)
}

func readOpenAIChat(body map[string]any, p *parts) read {
	choice := onlyChoice(array(body, "choices", ""), "choices")
	message := obj(choice, "message", "choices[0]")
	path := "choices[0].message"
	p.text(child(path, "content"), optText(message, "content", path))
	if refusal := optText(message, "refusal", path); refusal != "" {
		p.refusals = append(p.refusals, refusal)
	}
	for _, key := range []string{"audio", "function_call"} {
		if message[key] != nil {
			unsupported(child(path, key), "a message's %s", key)
		}
	}
	p.dropIf(len(optArray(message, "annotations", path)) > 0, child(path, "annotations"))
	calls := optArray(message, "tool_calls", path)
	for j := range calls {
		chatCall(item(calls, j, child(path, "tool_calls")), index(child(path, "tool_calls"), j), p)
	}
	reason := optText(choice, "finish_reason", "choices[0]")
	var found *pioneerv1.ProviderUsage
	if u := optObj(body, "usage", ""); u != nil {
		prompt := optObj(u, "prompt_tokens_details", "usage")
		completion := optObj(u, "completion_tokens_details", "usage")
		found = newUsage("usage", []*int32{count(u, "prompt_tokens", "usage")},
			count(prompt, "cached_tokens", "usage.prompt_tokens_details"),
			count(prompt, "cache_write_tokens", "usage.prompt_tokens_details"),
			[]*int32{count(u, "completion_tokens", "usage")},
			count(completion, "reasoning_tokens", "usage.completion_tokens_details"))
	}
	return read{reason, stopOf(chatStops, reason), found}
}

// --- OpenAI Responses ------------------------------------------------------------

var incompleteStops = map[string]string{"max_output_tokens": StopMaxTokens, "content_filter": StopContentFilter}

func responsesMessage(message map[string]any, path string, p *parts) {
	content := array(message, "content", path)
	for j := range content {
		ppath := index(child(path, "content"), j)
		part := item(content, j, child(path, "content"))
		switch kind := name(part, "type", ppath); kind {
		case "output_text":
			p.text(child(ppath, "text"), text(part, "text", ppath))
			p.dropIf(len(optArray(part, "annotations", ppath)) > 0, child(ppath, "annotations"))
		case "refusal":
			p.refusals = append(p.refusals, text(part, "refusal", ppath))
		default:
			unsupported(child(ppath, "type"), "a %q content part", kind)
		}
	}
}

func responsesReasoning(reasoning map[string]any, path string, p *parts) {
	// The reasoning text itself when the model returns it, else its summary.
	for _, kinds := range [][2]string{{"content", "reasoning_text"}, {"summary", "summary_text"}} {
		key, want := kinds[0], kinds[1]
		pieces := optArray(reasoning, key, path)
		for j := range pieces {
			ppath := index(child(path, key), j)
			got := item(pieces, j, child(path, key))
			if kind := name(got, "type", ppath); kind != want {
				unsupported(child(ppath, "type"), "a %q reasoning part", kind)
			}
			p.think(child(ppath, "text"), text(got, "text", ppath))
		}
		if len(pieces) > 0 {
			break
		}
	}
	p.dropIf(optText(reasoning, "encrypted_content", path) != "", child(path, "encrypted_content"))
}

func responsesItem(output map[string]any, path string, p *parts) {
	switch kind := name(output, "type", path); kind {
	case "message":
		responsesMessage(output, path, p)
	case "function_call":
		arguments := argumentsText(output["arguments"], child(path, "arguments"))
		p.call(name(output, "call_id", path), name(output, "name", path), arguments)
	case "reasoning":
		responsesReasoning(output, path, p)
	default:
		unsupported(child(path, "type"), "a %q output item", kind)
	}
}

func readOpenAIResponses(body map[string]any, p *parts) read {
	status := optText(body, "status", "")
	switch status {
	case "failed":
		fail(ReplyErrorBody, "status", "the response failed")
	case "in_progress", "queued", "cancelled":
		unsupported("status", "a response %s, not finished", status)
	}
	outputs := array(body, "output", "")
	for i := range outputs {
		responsesItem(item(outputs, i, "output"), index("output", i), p)
	}
	reason, stop := status, StopOther
	if status == "completed" {
		stop = StopEndTurn
	}
	if status == "incomplete" {
		if r := optText(optObj(body, "incomplete_details", ""), "reason", "incomplete_details"); r != "" {
			reason = r
		}
		stop = stopOf(incompleteStops, reason)
	}
	var found *pioneerv1.ProviderUsage
	if u := optObj(body, "usage", ""); u != nil {
		given := optObj(u, "input_tokens_details", "usage")
		taken := optObj(u, "output_tokens_details", "usage")
		found = newUsage("usage", []*int32{count(u, "input_tokens", "usage")},
			count(given, "cached_tokens", "usage.input_tokens_details"),
			count(given, "cache_write_tokens", "usage.input_tokens_details"),
			[]*int32{count(u, "output_tokens", "usage")},
			count(taken, "reasoning_tokens", "usage.output_tokens_details"))
	}
	return read{reason, stop, found}
}

// --- Gemini generateContent ------------------------------------------------------

var geminiStops = map[string]string{"STOP": StopEndTurn, "MAX_TOKENS": StopMaxTokens}

func init() {
	for _, reason := range strings.Fields("SAFETY RECITATION BLOCKLIST PROHIBITED_CONTENT SPII IMAGE_SAFETY " +
		"IMAGE_PROHIBITED_CONTENT IMAGE_RECITATION MODEL_ARMOR") {
		geminiStops[reason] = StopContentFilter
	}
}

// Keys of a part that say something about its data but are none: neither kept nor refused.
var geminiPartMeta = map[string]bool{
	"thought": true, "thoughtSignature": true, "partMetadata": true, "videoMetadata": true, "mediaResolution": true,
}

func geminiPart(part map[string]any, path string, p *parts) {
	p.dropIf(optText(part, "thoughtSignature", path) != "", child(path, "thoughtSignature"))
	if call := optObj(part, "functionCall", path); call != nil {
		cpath := child(path, "functionCall")
		// Gemini may leave the id out (it pairs results by order): the n-th call of the reply is call_n.
		id := optText(call, "id", cpath)
		if id == "" {
			id = fmt.Sprintf("call_%d", len(p.calls))
		}
		arguments := "{}"
		if args := call["args"]; args != nil {
			arguments = argumentsObject(args, child(cpath, "args"))
		}
		p.call(id, name(call, "name", cpath), arguments)
		return
	}
	if v := present(part, "text", path, false); v != nil {
		value := asText(v, child(path, "text"))
		if part["thought"] == true {
			p.think(child(path, "text"), value)
		} else {
			p.text(child(path, "text"), value)
		}
		return
	}
	if other := firstKey(part, geminiPartMeta); other != "" {
		unsupported(child(path, other), "a part's %s", other)
	}
}

func geminiUsage(body map[string]any) *pioneerv1.ProviderUsage {
	u := optObj(body, "usageMetadata", "")
	if u == nil {
		return nil
	}
	const path = "usageMetadata"
	thoughts := count(u, "thoughtsTokenCount", path)
	cacheRead := count(u, "cachedContentTokenCount", path)
	if cacheRead == nil {
		cacheRead = proto.Int32(0)
	}
	return newUsage(path, []*int32{count(u, "promptTokenCount", path), count(u, "toolUsePromptTokenCount", path)},
		cacheRead, nil, []*int32{count(u, "candidatesTokenCount", path), thoughts}, thoughts)
}

func readGemini(body map[string]any, p *parts) read {
	candidates := optArray(body, "candidates", "")
	if len(candidates) == 0 {
		blocked := optText(optObj(body, "promptFeedback", ""), "blockReason", "promptFeedback")
		if blocked == "" {
			fail(ReplyMissing, "candidates", "no candidate, and no promptFeedback.blockReason")
		}
		return read{blocked, StopContentFilter, geminiUsage(body)}
	}
	candidate := onlyChoice(candidates, "candidates")
	if content := optObj(candidate, "content", "candidates[0]"); content != nil {
		const path = "candidates[0].content.parts"
		found := optArray(content, "parts", "candidates[0].content")
		for i := range found {
			geminiPart(item(found, i, path), index(path, i), p)
		}
	}
	reason := optText(candidate, "finishReason", "candidates[0]")
	return read{reason, stopOf(geminiStops, reason), geminiUsage(body)}
}

// --- Amazon Bedrock Converse -----------------------------------------------------

var bedrockStops = map[string]string{
	"end_turn": StopEndTurn, "tool_use": StopToolUse, "max_tokens": StopMaxTokens,
	"stop_sequence": StopStopSequence, "guardrail_intervened": StopContentFilter,
	"content_filtered": StopContentFilter, "model_context_window_exceeded": StopContextWindowExceeded,
}

func bedrockReasoning(block map[string]any, path string, p *parts) {
	reasoning := obj(block, "reasoningContent", path)
	rpath := child(path, "reasoningContent")
	if reasoningText := optObj(reasoning, "reasoningText", rpath); reasoningText != nil {
		tpath := child(rpath, "reasoningText")
		p.think(child(tpath, "text"), text(reasoningText, "text", tpath))
		p.dropIf(optText(reasoningText, "signature", tpath) != "", child(tpath, "signature"))
	} else if reasoning["redactedContent"] != nil {
		p.notKept = append(p.notKept, child(rpath, "redactedContent"))
	} else {
		fail(ReplyMissing, child(rpath, "reasoningText"), "absent, and no redactedContent")
	}
}

func bedrockBlock(block map[string]any, path string, p *parts) {
	switch {
	case block["text"] != nil:
		p.text(child(path, "text"), text(block, "text", path))
	case block["toolUse"] != nil:
		use := obj(block, "toolUse", path)
		upath := child(path, "toolUse")
		arguments := argumentsObject(use["input"], child(upath, "input"))
		p.call(name(use, "toolUseId", upath), name(use, "name", upath), arguments)
	case block["reasoningContent"] != nil:
		bedrockReasoning(block, path, p)
	default:
		other := firstKey(block, nil)
		if other == "" {
			fail(ReplyMissing, path, "an empty content block")
		}
		unsupported(child(path, other), "a %q block", other)
	}
}

func readBedrock(body map[string]any, p *parts) read {
	if m, ok := body["message"].(string); ok && body["output"] == nil {
		fail(ReplyErrorBody, "message", "the provider answered an error: %s", m)
	}
	output := obj(body, "output", "")
	message := obj(output, "message", "output")
	blocks := array(message, "content", "output.message")
	for i := range blocks {
		bedrockBlock(item(blocks, i, "output.message.content"), index("output.message.content", i), p)
	}
	reason := optText(body, "stopReason", "")
	var found *pioneerv1.ProviderUsage
	if u := optObj(body, "usage", ""); u != nil {
		fresh := count(u, "inputTokens", "usage")
		cacheRead := count(u, "cacheReadInputTokens", "usage")
		cacheWrite := count(u, "cacheWriteInputTokens", "usage")
		found = newUsage("usage", []*int32{fresh, cacheRead, cacheWrite}, cacheRead, cacheWrite,
			[]*int32{count(u, "outputTokens", "usage")}, nil)
	}
	return read{reason, stopOf(bedrockStops, reason), found}
}
