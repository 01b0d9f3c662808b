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
// P50VsEcho is against the headline's echo of the same bytes.
type echoInLoop struct {
	First  step `json:"first"`
	Inside step `json:"inside"`
}

// echoesInLoop runs floorTurns turns of l (after one unmeasured, so the first echo follows a
// CompleteTurn), each with the two echoes in front of its PrepareTurns, and times the echoes.
func echoesInLoop(l *agentLoop, rep *loopReport) (*echoInLoop, error) {
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
	defer func() { l.beforePrepare = nil }()
	var first, inside sizes
	for i := 0; i <= floorTurns; i++ {
		measuring = i > 0
		if _, err := l.turn(context.Background(), &first, &inside); err != nil {
			return nil, fmt.Errorf("turn with echoes in the loop: %w", err)
		}
	}
	out := &echoInLoop{First: stepOf(times[0]), Inside: stepOf(times[1])}
	out.First.P50VsEcho = ratio(out.First.P50Ms, rep.First.EchoP50Ms)
	out.Inside.P50VsEcho = ratio(out.Inside.P50Ms, rep.Inside.EchoP50Ms)
	return out, nil
}
