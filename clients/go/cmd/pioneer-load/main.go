// Command pioneer-load drives one pioneer-grpc RPC from many goroutines and
// prints one JSON line with throughput and latency:
//
//	{"rpc":"compile","concurrency":8,"requests":4210,"seconds":10.0,"rps":421.0,
//	 "p50_ms":17.9,"p99_ms":41.2,"errors":0,"request_bytes":2321,"response_bytes":9120}
//
// Comparing a real RPC with an echo moving the same bytes (-payload-bytes set to
// the real RPC's request_bytes, -response-bytes to its response_bytes) separates
// the server's work from transport cost.
//
// -seed-entries 200 seeds the realistic thread (turns of a user message, a tool
// call, its result and an answer: about 100,000 tokens); -new-turn makes every
// prepare-turn call a new turn, as an agent loop's rounds are.
//
// -rpc loop runs -concurrency agent loops, each on its own connection and its
// own realistic thread, turn after turn, and reports each step against a
// same-bytes echo from the same run (loop.go).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

type config struct {
	addr          string
	token         string
	rpc           string
	concurrency   int
	connections   int
	duration      time.Duration
	requests      int64
	warmup        time.Duration
	payloadBytes  int
	thread        string
	input         string
	seedTurns     int
	seedEntries   int
	responseBytes int
	newTurn       bool
	threads       int
	provider      string
	bodyOnly      bool
	screenshot    bool
	appendAnswer  bool
	timeout       time.Duration
}

type report struct {
	RPC           string  `json:"rpc"`
	Concurrency   int     `json:"concurrency"`
	Requests      int64   `json:"requests"`
	Seconds       float64 `json:"seconds"`
	RPS           float64 `json:"rps"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	Errors        int64   `json:"errors"`
	RequestBytes  int     `json:"request_bytes"`
	ResponseBytes int     `json:"response_bytes"`
	ThreadTokens  int64   `json:"thread_tokens,omitempty"`
}

// call performs one RPC and returns the response size, and how long the
// measured part took when the call does unmeasured work first (0: time it all).
type call func(ctx context.Context) (int, time.Duration, error)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", envOr("PIONEER_ADDR", "127.0.0.1:50051"), "server address host:port")
	flag.StringVar(&cfg.token, "token", os.Getenv("PIONEER_TOKEN"), "bearer token (default $PIONEER_TOKEN)")
	flag.StringVar(&cfg.rpc, "rpc", "echo", "echo | compile | load-history | load-after-append | prepare-turn | loop")
	flag.IntVar(&cfg.concurrency, "concurrency", 8, "concurrent callers (sharing -connections); loop: agent loops, a connection each")
	flag.IntVar(&cfg.connections, "connections", 1, "connections the callers' calls take in turn")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "measure for this long (ignored with -requests)")
	flag.Int64Var(&cfg.requests, "requests", 0, "measure exactly this many calls instead of a duration (loop: turns per loop)")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured calls before measuring")
	flag.IntVar(&cfg.payloadBytes, "payload-bytes", 1024, "echo payload size")
	flag.IntVar(&cfg.responseBytes, "response-bytes", -1, "echo response size (default: the payload echoed)")
	flag.StringVar(&cfg.thread, "thread", "", "thread for load-history / prepare-turn (default: create and seed one)")
	flag.StringVar(&cfg.input, "input", "", "CompilePromptRequest as protojson, for compile (default: a full built-in input)")
	flag.IntVar(&cfg.seedTurns, "seed-turns", 20, "completed short turns written into a created thread")
	flag.IntVar(&cfg.seedEntries, "seed-entries", 0,
		"seed the realistic thread instead: this many entries (a multiple of 4) with tool call pairs")
	flag.BoolVar(&cfg.newTurn, "new-turn", false, "prepare-turn: every call a new turn (default: one turn repeated)")
	flag.IntVar(&cfg.threads, "threads", 1,
		"prepare-turn -new-turn: this many created threads, caller i preparing the rounds of thread i mod N (agent loops)")
	flag.StringVar(&cfg.provider, "provider", "", "prepare-turn and loop: also render this body (openai-chat | anthropic | gemini | openai-responses)")
	flag.BoolVar(&cfg.bodyOnly, "provider-body-only", false, "prepare-turn and loop: ask for the provider body only (no ChatRequest)")
	flag.BoolVar(&cfg.screenshot, "screenshot", false, "loop: each tool result carries a 1280 x 800 PNG screenshot")
	flag.BoolVar(&cfg.appendAnswer, "append-answer", false,
		"loop: store the final answer with AppendEntries, then CompleteTurn (default: CompleteTurn carries it, as the example loops do)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "deadline of each call")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("pioneer-load: ")

	if cfg.concurrency < 1 || cfg.connections < 1 {
		log.Fatal("-concurrency and -connections must be at least 1")
	}
	var rep any
	var err error
	if cfg.rpc == "loop" {
		rep, err = runLoop(cfg)
	} else {
		rep, err = run(cfg)
	}
	if err != nil {
		log.Fatal(err)
	}
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
}

func run(cfg config) (*report, error) {
	setupCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := &pool{}
	for len(p.clients) < cfg.connections {
		c, err := pioneer.Dial(setupCtx, cfg.addr, pioneer.WithToken(cfg.token),
			pioneer.WithCallTimeout(cfg.timeout), pioneer.WithUserAgent("pioneer-load"))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		p.clients = append(p.clients, c)
	}

	st := &setup{}
	fn, reqBytes, err := build(setupCtx, p, cfg, st)
	if err != nil {
		return nil, err
	}
	// One call up front: a misconfigured run fails loudly instead of reporting errors.
	respBytes, _, err := fn(setupCtx)
	if err != nil {
		return nil, fmt.Errorf("first %s call: %w", cfg.rpc, err)
	}

	if cfg.warmup > 0 {
		wctx, wcancel := context.WithTimeout(context.Background(), cfg.warmup)
		drive(wctx, fn, cfg.concurrency, 0)
		wcancel()
	}

	ctx := context.Background()
	if cfg.requests <= 0 {
		var mcancel context.CancelFunc
		ctx, mcancel = context.WithTimeout(ctx, cfg.duration)
		defer mcancel()
	}
	// Marks the measured window for a watcher (make bench accounts CPU within it).
	log.Print("measuring")
	start := time.Now()
	lat, errs, firstErr := drive(ctx, fn, cfg.concurrency, cfg.requests)
	elapsed := time.Since(start).Seconds()
	log.Print("measured")
	if firstErr != nil {
		log.Printf("%d errors; first: %v", errs, firstErr)
	}
	n := int64(len(lat)) + errs
	return &report{
		RPC:           cfg.rpc,
		Concurrency:   cfg.concurrency,
		Requests:      n,
		Seconds:       round3(elapsed),
		RPS:           round3(float64(n) / elapsed),
		P50Ms:         round3(percentile(lat, 50)),
		P99Ms:         round3(percentile(lat, 99)),
		Errors:        errs,
		RequestBytes:  reqBytes,
		ResponseBytes: respBytes,
		ThreadTokens:  st.threadTokens,
	}, nil
}

// drive runs fn from concurrency goroutines until ctx ends or limit calls
// (when limit > 0) were made; it returns the latencies of successful calls.
func drive(ctx context.Context, fn call, concurrency int, limit int64) ([]time.Duration, int64, error) {
	var (
		issued   atomic.Int64
		errCount atomic.Int64
		firstErr atomic.Value
		mu       sync.Mutex
		all      []time.Duration
		wg       sync.WaitGroup
	)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(caller context.Context) {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			for ctx.Err() == nil {
				if limit > 0 && issued.Add(1) > limit {
					break
				}
				t0 := time.Now()
				_, measured, err := fn(caller)
				d := time.Since(t0)
				if measured > 0 {
					d = measured
				}
				if err != nil {
					errCount.Add(1)
					firstErr.CompareAndSwap(nil, errBox{err})
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}(context.WithValue(context.Background(), callerKey{}, w))
	}
	wg.Wait()
	var first error
	if b, ok := firstErr.Load().(errBox); ok {
		first = b.err
	}
	return all, errCount.Load(), first
}

type errBox struct{ err error }

// callerKey holds, in a call's context, which of drive's callers makes it.
type callerKey struct{}

// caller is the index of the caller making the call (0 outside drive).
func caller(ctx context.Context) int {
	w, _ := ctx.Value(callerKey{}).(int)
	return w
}

// pool spreads calls over its connections in turn. Servers of several worker
// processes share one port, and the kernel gives each connection to one worker:
// one connection would load one worker only.
type pool struct {
	clients []*pioneer.Client
	turn    atomic.Uint64
}

func (p *pool) pick() *pioneer.Client {
	return p.clients[(p.turn.Add(1)-1)%uint64(len(p.clients))]
}

// setup is what building a call learned that the report shows.
type setup struct {
	threadTokens int64
}

var providers = map[string]pioneerv1.Provider{
	"openai-chat":      pioneerv1.Provider_PROVIDER_OPENAI_CHAT_COMPLETIONS,
	"openai-responses": pioneerv1.Provider_PROVIDER_OPENAI_RESPONSES,
	"anthropic":        pioneerv1.Provider_PROVIDER_ANTHROPIC_MESSAGES,
	"gemini":           pioneerv1.Provider_PROVIDER_GEMINI_GENERATE_CONTENT,
}

// providerOf is the -provider flag's value (unspecified when empty: no body is rendered).
func providerOf(cfg config) (pioneerv1.Provider, error) {
	if cfg.provider == "" {
		return pioneerv1.Provider_PROVIDER_UNSPECIFIED, nil
	}
	provider, ok := providers[cfg.provider]
	if !ok {
		return provider, fmt.Errorf("unknown -provider %q", cfg.provider)
	}
	return provider, nil
}

func compileInput(cfg config) (*pioneerv1.CompilePromptRequest, error) {
	req := &pioneerv1.CompilePromptRequest{Input: sample.FullCompileInput(1)}
	if cfg.input == "" {
		return req, nil
	}
	data, err := os.ReadFile(cfg.input)
	if err != nil {
		return nil, err
	}
	req = &pioneerv1.CompilePromptRequest{}
	if err := protojson.Unmarshal(data, req); err != nil {
		return nil, fmt.Errorf("%s: not a CompilePromptRequest in protojson: %w", cfg.input, err)
	}
	return req, nil
}

func build(ctx context.Context, p *pool, cfg config, st *setup) (call, int, error) {
	c := p.clients[0] // for the set-up; measured calls take p.pick()
	switch cfg.rpc {
	case "echo":
		payload := make([]byte, cfg.payloadBytes)
		_, _ = rand.Read(payload)
		req := &pioneerv1.EchoRequest{Payload: payload}
		if cfg.responseBytes >= 0 {
			req.ResponseBytes = proto.Int32(int32(cfg.responseBytes))
		}
		return func(ctx context.Context) (int, time.Duration, error) {
			resp, err := p.pick().Echo.Echo(ctx, req)
			return proto.Size(resp), 0, err
		}, proto.Size(req), nil

	case "compile":
		req, err := compileInput(cfg)
		if err != nil {
			return nil, 0, err
		}
		return func(ctx context.Context) (int, time.Duration, error) {
			resp, err := p.pick().Compiler.CompilePrompt(ctx, req)
			return proto.Size(resp), 0, err
		}, proto.Size(req), nil

	case "load-history":
		thread, err := ensureThread(ctx, c, cfg, st)
		if err != nil {
			return nil, 0, err
		}
		req := &pioneerv1.LoadConversationHistoryRequest{ThreadId: thread}
		return func(ctx context.Context) (int, time.Duration, error) {
			resp, err := p.pick().History.LoadConversationHistory(ctx, req)
			return proto.Size(resp), 0, err
		}, proto.Size(req), nil

	case "load-after-append":
		return buildLoadAfterAppend(ctx, p, cfg, st)

	case "prepare-turn":
		return buildPrepareTurn(ctx, p, cfg, st)
	}
	return nil, 0, fmt.Errorf("unknown -rpc %q (echo | compile | load-history | prepare-turn)", cfg.rpc)
}

func buildPrepareTurn(ctx context.Context, p *pool, cfg config, st *setup) (call, int, error) {
	c := p.clients[0]
	thread, err := ensureThread(ctx, c, cfg, st)
	if err != nil {
		return nil, 0, err
	}
	compile, err := compileInput(cfg)
	if err != nil {
		return nil, 0, err
	}
	provider, err := providerOf(cfg)
	if err != nil {
		return nil, 0, err
	}
	// Without -new-turn every call prepares the same in-progress turn: the entry
	// append is idempotent, so the thread does not grow while measuring. With it,
	// each call is a new turn (never completed, so the history stays the same size).
	threads, err := moreThreads(ctx, c, cfg, st, thread)
	if err != nil {
		return nil, 0, err
	}
	prefix := "load-" + randomHex(4)
	var counter atomic.Int64
	template := &pioneerv1.PrepareTurnRequest{
		ThreadId: thread,
		TurnId:   prefix + "-00000000",
		NewEntries: []*pioneerv1.ConversationEntry{{
			EntryId: prefix + "-00000000-user", Role: pioneerv1.EntryRole_ENTRY_ROLE_USER,
			Content: sample.UserMessage(cfg.seedTurns + 1),
		}},
		CompileInput:     compile.GetInput(),
		Tools:            []*pioneerv1.ToolDefinition{sample.ReadFileTool()},
		Provider:         provider,
		ProviderBodyOnly: cfg.bodyOnly,
	}
	return func(ctx context.Context) (int, time.Duration, error) {
		req := template
		if cfg.newTurn {
			n := counter.Add(1)
			turn := fmt.Sprintf("%s-%08d", prefix, n)
			req = proto.Clone(template).(*pioneerv1.PrepareTurnRequest)
			// Each caller is one agent loop: its rounds go to its own thread, one at a time.
			req.ThreadId = threads[caller(ctx)%len(threads)]
			req.TurnId = turn
			req.NewEntries[0].EntryId = turn + "-user"
		}
		resp, err := p.pick().Turns.PrepareTurn(ctx, req)
		return proto.Size(resp), 0, err
	}, proto.Size(template), nil
}

// buildLoadAfterAppend: what an agent loop does when a round starts: append the
// user's message to a new turn (unmeasured), then load the history leaving that
// turn out (measured).
func buildLoadAfterAppend(ctx context.Context, p *pool, cfg config, st *setup) (call, int, error) {
	c := p.clients[0]
	thread, err := ensureThread(ctx, c, cfg, st)
	if err != nil {
		return nil, 0, err
	}
	prefix := "load-" + randomHex(4)
	var counter atomic.Int64
	template := &pioneerv1.LoadConversationHistoryRequest{ThreadId: thread, ExcludeTurnId: prefix + "-00000000"}
	return func(ctx context.Context) (int, time.Duration, error) {
		turn := fmt.Sprintf("%s-%08d", prefix, counter.Add(1))
		c := p.pick()
		if _, err := c.History.AppendEntries(ctx, &pioneerv1.AppendEntriesRequest{
			ThreadId:   thread,
			CountsOnly: true,
			Entries: []*pioneerv1.ConversationEntry{{
				EntryId: turn + "-user", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_USER,
				Content: sample.UserMessage(cfg.seedTurns + 1),
			}},
		}); err != nil {
			return 0, 0, err
		}
		req := &pioneerv1.LoadConversationHistoryRequest{ThreadId: thread, ExcludeTurnId: turn}
		t0 := time.Now()
		resp, err := c.History.LoadConversationHistory(ctx, req)
		return proto.Size(resp), time.Since(t0), err
	}, proto.Size(template), nil
}

// moreThreads returns `first` and, for -threads N, N-1 more threads created and
// seeded as `first` was: caller i prepares the rounds of thread i mod N, so N
// callers are N agent loops, each preparing its own thread's rounds one at a
// time, rather than N rounds racing on one thread.
func moreThreads(ctx context.Context, c *pioneer.Client, cfg config, st *setup, first string) ([]string, error) {
	threads := []string{first}
	if cfg.threads <= 1 {
		return threads, nil
	}
	if cfg.thread != "" || !cfg.newTurn {
		return nil, fmt.Errorf("-threads needs -new-turn and no -thread")
	}
	for len(threads) < cfg.threads {
		id, err := ensureThread(ctx, c, cfg, st)
		if err != nil {
			return nil, err
		}
		threads = append(threads, id)
	}
	return threads, nil
}

// ensureThread returns -thread, or creates and seeds a thread: seedEntries
// realistic entries when set, else seedTurns short turns.
func ensureThread(ctx context.Context, c *pioneer.Client, cfg config, st *setup) (string, error) {
	if cfg.thread != "" {
		return cfg.thread, nil
	}
	if cfg.seedEntries%entriesPerTurn != 0 || cfg.seedEntries < 0 {
		return "", fmt.Errorf("-seed-entries must be a multiple of %d", entriesPerTurn)
	}
	config := &pioneerv1.ThreadConfig{Model: "gpt-4o-mini"}
	if cfg.seedEntries > 0 {
		// Room for the whole realistic thread under the compression threshold.
		config.MaxContextTokens = proto.Int32(400_000)
		config.ResponseReserveTokens = proto.Int32(16_000)
	}
	resp, err := c.History.CreateThread(ctx, &pioneerv1.CreateThreadRequest{
		ThreadId: "load-" + randomHex(6),
		Config:   config,
	})
	if err != nil {
		return "", fmt.Errorf("create thread: %w", err)
	}
	id := resp.GetThread().GetThreadId()
	if cfg.seedEntries > 0 {
		tokens, err := seedRealistic(ctx, c, id, cfg.seedEntries/entriesPerTurn)
		if err != nil {
			return "", err
		}
		st.threadTokens = tokens
		log.Printf("created thread %s with %d entries (%d tokens)", id, cfg.seedEntries, tokens)
		return id, nil
	}
	for i := 1; i <= cfg.seedTurns; i++ {
		turn := fmt.Sprintf("seed-%03d", i)
		if _, err := c.History.AppendEntries(ctx, &pioneerv1.AppendEntriesRequest{
			ThreadId: id,
			Entries: []*pioneerv1.ConversationEntry{
				{EntryId: turn + "-u", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_USER, Content: sample.UserMessage(i)},
				{EntryId: turn + "-a", TurnId: turn, Role: pioneerv1.EntryRole_ENTRY_ROLE_ASSISTANT, Content: sample.AssistantReply(i)},
			},
		}); err != nil {
			return "", fmt.Errorf("seed thread: %w", err)
		}
		if _, err := c.History.CompleteTurn(ctx, &pioneerv1.CompleteTurnRequest{ThreadId: id, TurnId: turn}); err != nil {
			return "", fmt.Errorf("seed thread: %w", err)
		}
	}
	log.Printf("created thread %s with %d completed turns", id, cfg.seedTurns)
	return id, nil
}

// percentile is the nearest-rank percentile of ds in milliseconds (0 when empty).
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return float64(sorted[rank-1]) / float64(time.Millisecond)
}

func round3(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1000) / 1000
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
