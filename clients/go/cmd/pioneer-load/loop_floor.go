package main

import (
	"context"
	"fmt"
	"time"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// floorTurns is how many turns a lone loop makes last with an echo in front of each PrepareTurn.
const floorTurns = 20

// echoInLoop is what an echo costs where the loop's PrepareTurns go: the first PrepareTurn's
// bytes echoed right after a CompleteTurn, the inside one's right after the first PrepareTurn.
// The headline's echoes run back to back, each after others like it; these run after the
// calls the PrepareTurns follow, so each is the least a call costs in that place. Each step's
// echo fields are the same echoes sent back to back right after (as the headline's are).
type echoInLoop struct {
	First  step `json:"first"`
	Inside step `json:"inside"`
	// The thread these turns were made on.
	Thread string `json:"thread"`
}

// echoesInLoop runs floorTurns turns of a loop like `loop` (after one unmeasured, so the first
// echo follows a CompleteTurn), each with the two echoes in front of its PrepareTurns, and times
// the echoes. The turns go to a new thread seeded as `loop`'s was, so the loop's own thread (the
// loads and trim_messages read it) grows by none of them.
func echoesInLoop(loop *agentLoop, cfg config, rep *loopReport) (*echoInLoop, error) {
	l := *loop
	l.turns = 0
	cfg.thread = ""
	var err error
	if l.thread, err = ensureThread(context.Background(), l.c, cfg, &setup{}); err != nil {
		return nil, err
	}
	echoes := [2]*pioneerv1.EchoRequest{
		echoOf(rep.First.RequestBytes, rep.First.ResponseBytes),
		echoOf(rep.Inside.RequestBytes, rep.Inside.ResponseBytes),
	}
	var times [2][]time.Duration
	measuring := false
	l.beforePrepare = func(k int) {
		d := l.echo(echoes[k])
		if measuring {
			times[k] = append(times[k], d)
		}
	}
	var first, inside sizes
	for i := 0; i <= floorTurns; i++ {
		measuring = i > 0
		if _, err := l.turn(context.Background(), &first, &inside); err != nil {
			return nil, fmt.Errorf("turn with echoes in the loop: %w", err)
		}
	}
	// The same echoes back to back, as the headline's are, right after: each place's echo is
	// compared with these, a second apart, not with the headline's, measured earlier in the run.
	var steady [2][]time.Duration
	for i := 0; i < echoLead+floorTurns; i++ {
		for k, req := range echoes {
			if d := l.echo(req); i >= echoLead {
				steady[k] = append(steady[k], d)
			}
		}
	}
	out := &echoInLoop{First: stepOf(times[0]), Inside: stepOf(times[1]), Thread: l.thread}
	withEcho(&out.First, steady[0])
	withEcho(&out.Inside, steady[1])
	return out, nil
}
