package main

import (
	"context"
	"log"
	"sync"
	"time"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// The measured turns come in measuredBlocks blocks, each followed by its echoes. On a
// machine whose speed drifts over seconds (other tenants, frequency), an echo phase run
// after every turn would be compared with turns measured seconds earlier; in blocks each
// echo is a second or less from the turns it is compared with.
const measuredBlocks = 4

// echoLead is how many echo pairs each loop sends, unmeasured, before a block's echoes: right
// after a block of turns an echo takes up to twice its steady time (the server's and the
// client's caches, buffers and allocator hold the turns' data), settling within about six pairs.
const echoLead = 8

// measured is what the blocks measured: every measured turn, each PrepareTurn kind's
// sizes, and the echoes of first-sized and inside-sized bytes.
type measured struct {
	times         []turnTimes
	first, inside sizes
	echoes        [2][]time.Duration
	// Seconds spent in measured turns, and in echoes, over all blocks.
	elapsed, echoElapsed float64
	failures             int64
	firstErr             error
}

// blockTurns splits `requests` turns per loop into measuredBlocks blocks (the first ones
// one longer when it does not divide); a block of none is left out.
func blockTurns(requests int64) []int64 {
	var out []int64
	for b := int64(0); b < measuredBlocks; b++ {
		n := requests / measuredBlocks
		if b < requests%measuredBlocks {
			n++
		}
		if n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// measure runs the blocks: all loops' turns of a block at once, then the same loops'
// echoes of that block's mean sizes (after echoLead unmeasured pairs), as many pairs as each
// loop made turns. From the second
// block on, each loop first makes one unmeasured turn, so every measured first PrepareTurn
// follows a CompleteTurn as in the loop, not an echo. With -duration instead of
// -requests, each block's turns and its echoes are measured for a quarter of it each.
func measure(loops []*agentLoop, cfg config) *measured {
	m := &measured{}
	blocks := blockTurns(cfg.requests)
	if cfg.requests <= 0 {
		blocks = make([]int64, measuredBlocks)
	}
	var mu sync.Mutex
	failed := make([]bool, len(loops))
	fail := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed[i] = true
		m.failures++
		if m.firstErr == nil {
			m.firstErr = err
		}
	}
	more := func(ctx context.Context, n int64, done int) bool {
		if n > 0 {
			return done < int(n)
		}
		return ctx.Err() == nil
	}
	for b, n := range blocks {
		if b > 0 {
			var lf, li sizes // the lead turns' sizes are not kept
			eachIndexed(loops, func(i int, l *agentLoop) {
				if failed[i] {
					return
				}
				if _, err := l.turn(context.Background(), &lf, &li); err != nil {
					fail(i, err)
				}
			})
		}
		var first, inside sizes
		made := make([]int, len(loops))
		ctx, cancel := context.WithTimeout(context.Background(), cfg.duration/measuredBlocks)
		start := time.Now()
		eachIndexed(loops, func(i int, l *agentLoop) {
			var local []turnTimes
			for !failed[i] && more(ctx, n, len(local)) {
				t, err := l.turn(context.Background(), &first, &inside)
				if err != nil {
					fail(i, err) // the loop's turn is left half done: a real loop would retry it
					break
				}
				local = append(local, t)
			}
			made[i] = len(local)
			mu.Lock()
			m.times = append(m.times, local...)
			mu.Unlock()
		})
		m.elapsed += time.Since(start).Seconds()
		cancel()
		m.first.merge(&first)
		m.inside.merge(&inside)

		fr, fw := first.mean()
		ir, iw := inside.mean()
		if first.calls == 0 {
			continue
		}
		echoes := [2]*pioneerv1.EchoRequest{echoOf(fr, fw), echoOf(ir, iw)}
		eachIndexed(loops, func(i int, l *agentLoop) {
			for lead := 0; lead < echoLead; lead++ {
				for _, req := range echoes {
					l.echo(req)
				}
			}
		})
		ctx, cancel = context.WithTimeout(context.Background(), cfg.duration/measuredBlocks)
		start = time.Now()
		eachIndexed(loops, func(i int, l *agentLoop) {
			var local [2][]time.Duration
			for sent := 0; ; sent++ {
				if n > 0 && sent >= made[i] || n <= 0 && (made[i] == 0 || ctx.Err() != nil) {
					break
				}
				for k, req := range echoes {
					local[k] = append(local[k], l.echo(req))
				}
			}
			mu.Lock()
			m.echoes[0] = append(m.echoes[0], local[0]...)
			m.echoes[1] = append(m.echoes[1], local[1]...)
			mu.Unlock()
		})
		m.echoElapsed += time.Since(start).Seconds()
		cancel()
	}
	return m
}

// echo sends req and returns its latency; an echo that fails ends the run (the server is broken).
func (l *agentLoop) echo(req *pioneerv1.EchoRequest) time.Duration {
	t0 := time.Now()
	if _, err := l.c.Echo.Echo(context.Background(), req); err != nil {
		log.Fatalf("loop on thread %s: echo: %v", l.thread, err)
	}
	return time.Since(t0)
}

// eachIndexed runs f for every loop at once, with its index, and waits.
func eachIndexed(loops []*agentLoop, f func(int, *agentLoop)) {
	var wg sync.WaitGroup
	for i, l := range loops {
		wg.Add(1)
		go func(i int, l *agentLoop) {
			defer wg.Done()
			f(i, l)
		}(i, l)
	}
	wg.Wait()
}
