package main

// -rpc loop: N agent loops, each on its own connection and its own thread
// seeded with the realistic thread. A turn is what an agent loop does:
//
//	PrepareTurn (the user's message, a new turn)            "first"
//	PrepareTurn (same turn: the assistant's tool call and the tool's result)  "inside"
//	CompleteTurn carrying the final answer, as cmd/agentloop does; with -append-answer,
//	AppendEntries (the final answer) then CompleteTurn
//
// then the next turn: 3 unmeasured, then -requests measured turns per loop (or
// as many as -duration allows; a thread over 200 turns is no longer the thread
// the figures are for), in blocks each followed by its echoes (loop_blocks.go):
// the same loops send echoes moving the block's mean PrepareTurn request and
// response bytes (first, inside, first, inside ...) as many times, so every
// figure has its same-bytes echo from the same seconds of the same run.
// Then loop 0 alone times LoadConversationHistory right after a completed turn
// (the turn's append and completion unmeasured), then an echo of its bytes. Last, a
// lone loop makes 21 turns on a thread of its own, seeded as the loop's was, with echoes
// in front of its PrepareTurns (loop_floor.go).

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

// loadSamples is how many loads after a completed turn the last phase times.
const loadSamples = 30

// warmupTurns are each loop's unmeasured turns (the thread grows by them too).
const warmupTurns = 3

// step is one kind of call of the loop: its latencies and mean sizes, and the same-bytes echo's.
type step struct {
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	Calls         int     `json:"calls"`
	RequestBytes  int     `json:"request_bytes,omitempty"`
	ResponseBytes int     `json:"response_bytes,omitempty"`
	EchoP50Ms     float64 `json:"echo_p50_ms,omitempty"`
	EchoP99Ms     float64 `json:"echo_p99_ms,omitempty"`
	P50VsEcho     float64 `json:"p50_vs_echo,omitempty"`
}

type loopReport struct {
	RPC     string  `json:"rpc"`
	Loops   int     `json:"loops"`
	Turns   int     `json:"turns"`
	Seconds float64 `json:"seconds"`
	Errors  int64   `json:"errors"`
	First   step    `json:"first_prepare"`
	Inside  step    `json:"inside_prepare"`
	// Only with -append-answer: else CompleteTurn carries the answer (Done).
	Answer *step `json:"append_answer,omitempty"`
	Done   step  `json:"complete_turn"`
	Turn   step  `json:"whole_turn"`
	// The whole turn's p50 against one first-sized plus one inside-sized echo's p50.
	TurnVsTwoEchoes float64 `json:"turn_vs_two_echoes"`
	PrepareRPS      float64 `json:"prepare_rps"`
	EchoRPS         float64 `json:"echo_rps"`
	// PrepareTurns per second in the loops against same-bytes echoes per second at as many in flight.
	ThroughputVsEcho float64 `json:"throughput_vs_echo"`
	Load             step    `json:"load_after_complete"`
	// One loop only (loop_floor.go): echoes sent where the loop's PrepareTurns go.
	EchoInLoop   *echoInLoop `json:"echo_in_loop,omitempty"`
	Threads      []string    `json:"threads"`
	ThreadTokens int64       `json:"thread_tokens"`
}

// sizes sums request and response bytes of a kind of call.
type sizes struct {
	mu             sync.Mutex
	calls          int
	request, reply int
}

func (s *sizes) add(request, reply int) {
	s.mu.Lock()
	s.calls++
	s.request += request
	s.reply += reply
	s.mu.Unlock()
}

// merge adds o's calls and bytes to s.
func (s *sizes) merge(o *sizes) {
	o.mu.Lock()
	calls, request, reply := o.calls, o.request, o.reply
	o.mu.Unlock()
	s.mu.Lock()
	s.calls += calls
	s.request += request
	s.reply += reply
	s.mu.Unlock()
}

func (s *sizes) mean() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == 0 {
		return 0, 0
	}
	return s.request / s.calls, s.reply / s.calls
}

// agentLoop is one loop: its connection, its thread, the turns it made.
type agentLoop struct {
	c       *pioneer.Client
	thread  string
	prefix  string
	turns   int
	compile *pioneerv1.PromptCompileInput
	// The body each PrepareTurn renders too, as an agent loop asks for it (-provider);
	// with bodyOnly (-provider-body-only) the body alone, without the ChatRequest.
	provider pioneerv1.Provider
	bodyOnly bool
	// With -screenshot, each tool result carries this PNG (a computer-use agent's loop).
	screenshot []byte
	// With -append-answer, the final answer is its own AppendEntries before CompleteTurn.
	appendAnswer bool
	// When set, called right before each PrepareTurn of a turn (0: the first, 1: inside).
	beforePrepare func(step int)
}

// turnTimes are one turn's step latencies.
type turnTimes struct{ first, inside, answer, done time.Duration }

func (l *agentLoop) turn(ctx context.Context, first, inside *sizes) (turnTimes, error) {
	var t turnTimes
	l.turns++
	turn := fmt.Sprintf("%s-%05d", l.prefix, l.turns)
	callID := "call_" + turn
	req := &pioneerv1.PrepareTurnRequest{
		ThreadId: l.thread,
		TurnId:   turn,
		NewEntries: []*pioneerv1.ConversationEntry{{
			EntryId: turn + "-u", Role: pioneerv1.EntryRole_ENTRY_ROLE_USER, Content: sample.UserMessage(l.turns),
		}},
		CompileInput:     l.compile,
		Tools:            []*pioneerv1.ToolDefinition{sample.ReadFileTool()},
		Provider:         l.provider,
		ProviderBodyOnly: l.bodyOnly,
	}
	if l.beforePrepare != nil {
		l.beforePrepare(0)
	}
	t0 := time.Now()
	resp, err := l.c.Turns.PrepareTurn(ctx, req)
	if err != nil {
		return t, fmt.Errorf("first PrepareTurn: %w", err)
	}
	t.first = time.Since(t0)
	first.add(proto.Size(req), proto.Size(resp))

	req.NewEntries = []*pioneerv1.ConversationEntry{
		{
			EntryId: turn + "-call", Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT,
			Content: "Reading the module first.",
			ToolCalls: []*pioneerv1.ToolCall{{
				Id: callID, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/module_%05d.py"}`, l.turns),
			}},
		},
		{
			EntryId: turn + "-result", Role: pioneerv1.EntryRole_ENTRY_ROLE_TOOL, ToolCallId: callID,
			Name: "read_file", Content: sample.AssistantReply(l.turns),
		},
	}
	if l.screenshot != nil {
		req.NewEntries[1].ContentParts = []*pioneerv1.ContentPart{{Part: &pioneerv1.ContentPart_Image{
			Image: &pioneerv1.MediaPart{MimeType: "image/png", Source: &pioneerv1.MediaPart_Data{Data: l.screenshot}},
		}}}
	}
	if l.beforePrepare != nil {
		l.beforePrepare(1)
	}
	t0 = time.Now()
	resp, err = l.c.Turns.PrepareTurn(ctx, req)
	if err != nil {
		return t, fmt.Errorf("PrepareTurn inside the turn: %w", err)
	}
	t.inside = time.Since(t0)
	inside.add(proto.Size(req), proto.Size(resp))

	answer := &pioneerv1.ConversationEntry{
		EntryId: turn + "-a", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT,
		Content: sample.AssistantReply(l.turns + 1),
	}
	t.answer, t.done, err = l.finish(ctx, turn, []*pioneerv1.ConversationEntry{answer})
	return t, err
}

// finish stores `entries` and completes the turn as the loop's turns end: one CompleteTurn
// carrying them (as cmd/agentloop does), or with -append-answer an AppendEntries of them
// first. It returns each call's latency (the AppendEntries' 0 when there is none).
func (l *agentLoop) finish(ctx context.Context, turn string, entries []*pioneerv1.ConversationEntry) (time.Duration, time.Duration, error) {
	var appended time.Duration
	complete := &pioneerv1.CompleteTurnRequest{ThreadId: l.thread, TurnId: turn, Entries: entries}
	if l.appendAnswer {
		t0 := time.Now()
		if _, err := l.c.History.AppendEntries(ctx, &pioneerv1.AppendEntriesRequest{
			ThreadId: l.thread, CountsOnly: true, Entries: entries,
		}); err != nil {
			return 0, 0, fmt.Errorf("AppendEntries: %w", err)
		}
		appended = time.Since(t0)
		complete.Entries = nil
	}
	t0 := time.Now()
	if _, err := l.c.History.CompleteTurn(ctx, complete); err != nil {
		return appended, 0, fmt.Errorf("CompleteTurn: %w", err)
	}
	return appended, time.Since(t0), nil
}

// loadAfterComplete stores and completes one short turn (unmeasured) as the loop's
// turns end (one CompleteTurn carrying it; AppendEntries first with -append-answer),
// then times LoadConversationHistory; it returns the load's latency and sizes.
func (l *agentLoop) loadAfterComplete(ctx context.Context) (time.Duration, int, int, error) {
	l.turns++
	turn := fmt.Sprintf("%s-%05d", l.prefix, l.turns)
	entries := []*pioneerv1.ConversationEntry{
		{EntryId: turn + "-u", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_USER, Content: sample.UserMessage(l.turns)},
		{EntryId: turn + "-a", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, Content: sample.AssistantReply(l.turns)},
	}
	if _, _, err := l.finish(ctx, turn, entries); err != nil {
		return 0, 0, 0, err
	}
	req := &pioneerv1.LoadConversationHistoryRequest{ThreadId: l.thread}
	t0 := time.Now()
	resp, err := l.c.History.LoadConversationHistory(ctx, req)
	return time.Since(t0), proto.Size(req), proto.Size(resp), err
}

// echoOf is an echo request whose request and response have `request` and `reply` bytes encoded.
func echoOf(request, reply int) *pioneerv1.EchoRequest {
	fit := func(want int, size func(n int) int) int {
		n := want
		for n > 0 && size(n) > want {
			n--
		}
		return n
	}
	resp := fit(reply, func(n int) int { return proto.Size(&pioneerv1.EchoResponse{Payload: make([]byte, n)}) })
	payload := fit(request, func(n int) int {
		return proto.Size(&pioneerv1.EchoRequest{Payload: make([]byte, n), ResponseBytes: proto.Int32(int32(resp))})
	})
	req := &pioneerv1.EchoRequest{Payload: make([]byte, payload), ResponseBytes: proto.Int32(int32(resp))}
	_, _ = rand.Read(req.Payload)
	return req
}

func runLoop(cfg config) (*loopReport, error) {
	setupCtx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if cfg.seedEntries == 0 {
		cfg.seedEntries = 200
	}
	compile, err := compileInput(cfg)
	if err != nil {
		return nil, err
	}
	provider, err := providerOf(cfg)
	if err != nil {
		return nil, err
	}
	var shot []byte // encoded once, shared by the loops (never written to)
	if cfg.screenshot {
		shot = screenshotPNG()
	}
	loops := make([]*agentLoop, cfg.concurrency)
	st := make([]setup, cfg.concurrency)
	errs := make([]error, cfg.concurrency)
	var wg sync.WaitGroup
	for i := range loops {
		c, err := pioneer.Dial(setupCtx, cfg.addr, pioneer.WithToken(cfg.token),
			pioneer.WithCallTimeout(cfg.timeout), pioneer.WithUserAgent("pioneer-load"))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		loops[i] = &agentLoop{
			c: c, prefix: "loop-" + randomHex(4), compile: compile.GetInput(), provider: provider,
			bodyOnly: cfg.bodyOnly, screenshot: shot, appendAnswer: cfg.appendAnswer,
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			loops[i].thread, errs[i] = ensureThread(setupCtx, loops[i].c, cfg, &st[i])
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	// Warm-up turns are not measured (and their sizes not kept).
	var wf, wi sizes
	eachLoop(loops, func(l *agentLoop) error {
		for i := 0; i < warmupTurns; i++ {
			if _, err := l.turn(context.Background(), &wf, &wi); err != nil {
				return err
			}
		}
		return nil
	})
	log.Print("measuring")
	ms := measure(loops, cfg)
	if ms.firstErr != nil {
		log.Printf("%d errors; first: %v", ms.failures, ms.firstErr)
	}
	if len(ms.times) == 0 {
		return nil, fmt.Errorf("no turn completed: %v", ms.firstErr)
	}
	times := ms.times
	rep := &loopReport{RPC: "loop", Loops: len(loops), Turns: len(times), Seconds: round3(ms.elapsed), Errors: ms.failures}
	pick := func(f func(turnTimes) time.Duration) []time.Duration {
		out := make([]time.Duration, len(times))
		for i, t := range times {
			out[i] = f(t)
		}
		return out
	}
	rep.First = stepOf(pick(func(t turnTimes) time.Duration { return t.first }))
	rep.Inside = stepOf(pick(func(t turnTimes) time.Duration { return t.inside }))
	if cfg.appendAnswer {
		answer := stepOf(pick(func(t turnTimes) time.Duration { return t.answer }))
		rep.Answer = &answer
	}
	rep.Done = stepOf(pick(func(t turnTimes) time.Duration { return t.done }))
	rep.Turn = stepOf(pick(func(t turnTimes) time.Duration { return t.first + t.inside + t.answer + t.done }))
	rep.PrepareRPS = round3(float64(2*len(times)) / ms.elapsed)
	rep.First.RequestBytes, rep.First.ResponseBytes = ms.first.mean()
	rep.Inside.RequestBytes, rep.Inside.ResponseBytes = ms.inside.mean()
	rep.EchoRPS = round3(float64(len(ms.echoes[0])+len(ms.echoes[1])) / ms.echoElapsed)
	rep.ThroughputVsEcho = ratio(rep.PrepareRPS, rep.EchoRPS)
	withEcho(&rep.First, ms.echoes[0])
	withEcho(&rep.Inside, ms.echoes[1])
	rep.TurnVsTwoEchoes = ratio(rep.Turn.P50Ms, rep.First.EchoP50Ms+rep.Inside.EchoP50Ms)

	// Loop 0 alone: a load right after a completed turn, against its bytes echoed.
	var loads []time.Duration
	var loadSizes sizes
	for i := 0; i < loadSamples; i++ {
		d, request, reply, err := loops[0].loadAfterComplete(context.Background())
		if err != nil {
			return nil, fmt.Errorf("load after a completed turn: %w", err)
		}
		loads = append(loads, d)
		loadSizes.add(request, reply)
	}
	rep.Load = stepOf(loads)
	rep.Load.RequestBytes, rep.Load.ResponseBytes = loadSizes.mean()
	echo := echoOf(rep.Load.RequestBytes, rep.Load.ResponseBytes)
	var loadEchoes []time.Duration
	for i := 0; i < loadSamples; i++ {
		t0 := time.Now()
		if _, err := loops[0].c.Echo.Echo(context.Background(), echo); err != nil {
			return nil, err
		}
		loadEchoes = append(loadEchoes, time.Since(t0))
	}
	withEcho(&rep.Load, loadEchoes)
	if len(loops) == 1 {
		if rep.EchoInLoop, err = echoesInLoop(loops[0], cfg, rep); err != nil {
			return nil, err
		}
	}
	for i, l := range loops {
		rep.Threads = append(rep.Threads, l.thread)
		rep.ThreadTokens = max(rep.ThreadTokens, st[i].threadTokens)
	}
	return rep, nil
}

// eachLoop runs f for every loop at once and waits; the first error ends the run.
func eachLoop(loops []*agentLoop, f func(*agentLoop) error) {
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func(l *agentLoop) {
			defer wg.Done()
			if err := f(l); err != nil {
				log.Fatalf("loop on thread %s: %v", l.thread, err)
			}
		}(l)
	}
	wg.Wait()
}

func stepOf(ds []time.Duration) step {
	return step{P50Ms: round3(percentile(ds, 50)), P99Ms: round3(percentile(ds, 99)), Calls: len(ds)}
}

func withEcho(s *step, echoes []time.Duration) {
	s.EchoP50Ms = round3(percentile(echoes, 50))
	s.EchoP99Ms = round3(percentile(echoes, 99))
	s.P50VsEcho = ratio(s.P50Ms, s.EchoP50Ms)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round3(a / b)
}

// screenshotPNG is a 1280 x 800 PNG of a window's shape: a title bar, lines of text, a margin.
func screenshotPNG() []byte {
	img := image.NewGray(image.Rect(0, 0, 1280, 800))
	for y := 0; y < 800; y++ {
		for x := 0; x < 1280; x++ {
			v := uint8(250)
			switch {
			case y < 40:
				v = 60
			case x < 48:
				v = 220
			case (y/20)%2 == 0 && x%7 != 0 && x < 200+(y*37)%900:
				v = uint8(20 + (x*y)%40)
			}
			img.SetGray(x, y, color.Gray{Y: v})
		}
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		panic(err)
	}
	return out.Bytes()
}
