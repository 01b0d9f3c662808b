package main

import (
	"context"
	"os"
	"testing"
	"time"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

// The loop against a live server (PIONEER_ADDR, as the contract tests have it): every turn it
// says it made is in its thread (the measured ones in blocks, each block after the first led by
// one turn, then the loads after completed turns), and the turns that echo in the loop's places
// are in a thread of their own.
func TestLoopMakesEveryTurnItReports(t *testing.T) {
	addr := os.Getenv("PIONEER_ADDR")
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PIONEER_ADDR is unset: run `make test-contract`, which starts a server")
		}
		t.Skip("PIONEER_ADDR is unset: no server to run the loop against")
	}
	const measured, seedTurns = 5, 2
	cfg := config{
		addr: addr, token: os.Getenv("PIONEER_TOKEN"), rpc: "loop", concurrency: 1, requests: measured,
		seedEntries: seedTurns * entriesPerTurn, provider: "openai-chat", timeout: 30 * time.Second,
		duration: 10 * time.Second,
	}
	rep, err := runLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != measured || rep.Errors != 0 || rep.First.Calls != measured || rep.Inside.Calls != measured {
		t.Fatalf("turns %d (errors %d, first %d, inside %d), want %d measured", rep.Turns, rep.Errors,
			rep.First.Calls, rep.Inside.Calls, measured)
	}
	if rep.First.EchoP50Ms <= 0 || rep.Inside.EchoP50Ms <= 0 || rep.EchoRPS <= 0 || rep.TurnVsTwoEchoes <= 0 {
		t.Fatalf("echoes not measured: %+v %+v rps %v", rep.First, rep.Inside, rep.EchoRPS)
	}
	in := rep.EchoInLoop
	if in == nil || in.First.Calls != floorTurns || in.Inside.Calls != floorTurns || in.First.P50VsEcho <= 0 ||
		in.First.EchoP50Ms <= 0 || in.Inside.EchoP50Ms <= 0 {
		t.Fatalf("echoes in the loop's places: %+v", in)
	}
	if rep.Load.Calls != loadSamples {
		t.Fatalf("loads after completed turns: %d, want %d", rep.Load.Calls, loadSamples)
	}

	c, err := pioneer.Dial(context.Background(), addr, pioneer.WithToken(cfg.token))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leads := len(blockTurns(measured)) - 1
	for thread, want := range map[string]int{
		rep.Threads[0]: seedTurns + warmupTurns + measured + leads + loadSamples,
		in.Thread:      seedTurns + floorTurns + 1,
	} {
		if got := userMessages(t, c, thread); got != want {
			t.Fatalf("thread %s holds %d turns, want %d", thread, got, want)
		}
	}
}

func userMessages(t *testing.T, c *pioneer.Client, thread string) int {
	t.Helper()
	loaded, err := c.History.LoadConversationHistory(context.Background(),
		&pioneerv1.LoadConversationHistoryRequest{ThreadId: thread})
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, m := range loaded.GetMessages() {
		if m.GetRole() == pioneerv1.ChatRole_CHAT_ROLE_USER {
			users++
		}
	}
	return users
}
