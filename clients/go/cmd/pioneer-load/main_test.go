package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(ds, 50); got != 50 {
		t.Errorf("p50 = %v, want 50", got)
	}
	if got := percentile(ds, 99); got != 99 {
		t.Errorf("p99 = %v, want 99", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("percentile reordered its input")
	}
}

func TestDriveExactRequestsAndErrors(t *testing.T) {
	var n atomic.Int64
	fn := func(context.Context) (int, time.Duration, error) {
		if n.Add(1)%10 == 0 {
			return 0, 0, errors.New("every tenth call fails")
		}
		return 1, 0, nil
	}
	lat, errs, first := drive(context.Background(), fn, 7, 100)
	if int64(len(lat))+errs != 100 || errs != 10 || first == nil {
		t.Fatalf("ok=%d errors=%d first=%v, want 90/10", len(lat), errs, first)
	}
}

func TestDriveStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	lat, _, _ := drive(ctx, func(context.Context) (int, time.Duration, error) {
		time.Sleep(time.Millisecond)
		return 0, 0, nil
	}, 4, 0)
	if time.Since(start) > 2*time.Second || len(lat) == 0 {
		t.Fatalf("drive ran %v with %d calls", time.Since(start), len(lat))
	}
}

func TestDriveRecordsTheMeasuredPart(t *testing.T) {
	fn := func(context.Context) (int, time.Duration, error) {
		time.Sleep(5 * time.Millisecond)
		return 1, time.Microsecond, nil
	}
	lat, _, _ := drive(context.Background(), fn, 1, 3)
	for _, d := range lat {
		if d != time.Microsecond {
			t.Fatalf("latency %v, want the call's own measured part", d)
		}
	}
}

func TestPoolTakesItsConnectionsInTurn(t *testing.T) {
	a, b, c := &pioneer.Client{}, &pioneer.Client{}, &pioneer.Client{}
	p := &pool{clients: []*pioneer.Client{a, b, c}}
	var got []*pioneer.Client
	for i := 0; i < 7; i++ {
		got = append(got, p.pick())
	}
	want := []*pioneer.Client{a, b, c, a, b, c, a}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("call %d took connection %p, want %p", i, got[i], want[i])
		}
	}
}

func TestEachCallerKnowsItsIndex(t *testing.T) {
	var seen [5]atomic.Int64
	var started atomic.Int64
	everyone := make(chan struct{})
	_, _, _ = drive(context.Background(), func(ctx context.Context) (int, time.Duration, error) {
		// Each caller's first call waits until every caller has made its first: no caller can
		// take all the calls before the others start.
		if seen[caller(ctx)].Add(1) == 1 && started.Add(1) == int64(len(seen)) {
			close(everyone)
		}
		select {
		case <-everyone:
		case <-time.After(30 * time.Second): // bounds a broken drive; the check below then fails
		}
		return 0, 0, nil
	}, 5, 100)
	for i := range seen {
		if seen[i].Load() == 0 {
			t.Fatalf("caller %d made no call", i)
		}
	}
	if caller(context.Background()) != 0 {
		t.Fatal("a call outside drive is caller 0")
	}
}

func TestEchoOfMatchesBothSizes(t *testing.T) {
	for _, c := range [][2]int{{18460, 550815}, {19, 246464}, {200, 3}} {
		req := echoOf(c[0], c[1])
		resp := &pioneerv1.EchoResponse{Payload: make([]byte, req.GetResponseBytes())}
		if got := proto.Size(req); got > c[0] || got < c[0]-2 {
			t.Errorf("request %d bytes, want %d", got, c[0])
		}
		if got := proto.Size(resp); got > c[1] || got < c[1]-2 {
			t.Errorf("response %d bytes, want %d", got, c[1])
		}
	}
}

func TestScreenshotIsAScreenSizedPNG(t *testing.T) {
	shot := screenshotPNG()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Fatalf("size %v, want 1280 x 800", b)
	}
	// Text-like rows, not a flat image that compresses to nothing.
	if len(shot) < 8*1024 {
		t.Fatalf("%d bytes: too little of a window's detail", len(shot))
	}
	t.Logf("%d bytes", len(shot))
}

func TestBlockTurnsSplitsTheMeasuredTurns(t *testing.T) {
	cases := map[int64][]int64{
		40: {10, 10, 10, 10},
		12: {3, 3, 3, 3},
		10: {3, 3, 2, 2},
		2:  {1, 1},
		0:  nil,
	}
	for requests, want := range cases {
		got := blockTurns(requests)
		if len(got) != len(want) {
			t.Fatalf("blockTurns(%d) = %v, want %v", requests, got, want)
		}
		var sum int64
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("blockTurns(%d) = %v, want %v", requests, got, want)
			}
			sum += got[i]
		}
		if sum != requests {
			t.Fatalf("blockTurns(%d) sums to %d", requests, sum)
		}
	}
}
