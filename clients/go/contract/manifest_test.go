package contract

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
)

// compileOnTurn compiles with thread_id/turn_id set and returns the persisted event id.
func compileOnTurn(t *testing.T, thread, turn string, in *pioneerv1.PromptCompileInput) *pioneerv1.CompilePromptResponse {
	t.Helper()
	resp := compile(t, &pioneerv1.CompilePromptRequest{Input: in, ThreadId: thread, TurnId: turn})
	if resp.GetManifestEventId() <= 0 {
		t.Fatalf("compile on %s/%s: manifest_event_id = %d, want > 0", thread, turn, resp.GetManifestEventId())
	}
	m := resp.GetPayload().GetManifest()
	if m.GetThreadId() != thread || m.GetTurnId() != turn {
		t.Fatalf("manifest names %s/%s, want %s/%s", m.GetThreadId(), m.GetTurnId(), thread, turn)
	}
	return resp
}

func TestGetTurnManifest(t *testing.T) {
	th := createThread(t, nil).GetThreadId()
	turn := uniq("turn")
	compiled := compileOnTurn(t, th, turn, sample.FullCompileInput(1))

	resp, err := shared.Manifests.GetTurnManifest(ctxT(t), &pioneerv1.GetTurnManifestRequest{ThreadId: th, TurnId: turn})
	must(t, err, "GetTurnManifest")
	if !proto.Equal(resp.GetManifest(), compiled.GetPayload().GetManifest()) {
		t.Fatal("stored manifest differs from the compiled one")
	}
	if resp.GetEventId() != compiled.GetManifestEventId() {
		t.Fatalf("event_id = %d, want %d", resp.GetEventId(), compiled.GetManifestEventId())
	}
	if resp.GetStatus() == pioneerv1.TurnStatus_TURN_STATUS_UNSPECIFIED {
		t.Fatal("turn status unspecified")
	}

	_, err = shared.Manifests.GetTurnManifest(ctxT(t), &pioneerv1.GetTurnManifestRequest{ThreadId: th, TurnId: uniq("no-turn")})
	wantCode(t, err, codes.NotFound, "GetTurnManifest(unknown turn)")
	wantReason(t, err, "TURN_NOT_FOUND", "GetTurnManifest(unknown turn)")
}

func TestDiffManifests(t *testing.T) {
	th := createThread(t, nil).GetThreadId()
	base := compileOnTurn(t, th, "turn-a", sample.FullCompileInput(1))
	changedIn := sample.FullCompileInput(1)
	changedIn.IncludeToolRecoveryPolicy = false
	target := compileOnTurn(t, th, "turn-b", changedIn)

	byManifest := &pioneerv1.DiffManifestsRequest{
		Base:   &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_Manifest{Manifest: base.GetPayload().GetManifest()}},
		Target: &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_Manifest{Manifest: target.GetPayload().GetManifest()}},
	}
	byEvent := &pioneerv1.DiffManifestsRequest{
		Base:   &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_EventId{EventId: base.GetManifestEventId()}},
		Target: &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_EventId{EventId: target.GetManifestEventId()}},
	}
	byTurn := &pioneerv1.DiffManifestsRequest{
		Base:   &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_Turn{Turn: &pioneerv1.TurnRef{ThreadId: th, TurnId: "turn-a"}}},
		Target: &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_Turn{Turn: &pioneerv1.TurnRef{ThreadId: th, TurnId: "turn-b"}}},
	}
	for name, req := range map[string]*pioneerv1.DiffManifestsRequest{"manifest": byManifest, "event_id": byEvent, "turn": byTurn} {
		t.Run(name, func(t *testing.T) {
			d, err := shared.Manifests.DiffManifests(ctxT(t), req)
			must(t, err, "DiffManifests")
			if !d.GetStableChanged() || !d.GetFullChanged() || d.GetDynamicChanged() {
				t.Fatalf("stable/dynamic/full changed = %v/%v/%v, want true/false/true",
					d.GetStableChanged(), d.GetDynamicChanged(), d.GetFullChanged())
			}
			if d.GetCacheBreakSectionId() != "tool_recovery_policy" {
				t.Fatalf("cache_break_section_id = %q, want tool_recovery_policy", d.GetCacheBreakSectionId())
			}
			found := false
			for _, c := range d.GetChanges() {
				if c.GetSectionId() == "tool_recovery_policy" {
					found = c.GetKind() == pioneerv1.SectionChangeKind_SECTION_CHANGE_KIND_REMOVED && c.GetBaseFingerprint() != ""
				}
			}
			if !found {
				t.Fatalf("changes lack tool_recovery_policy REMOVED: %v", d.GetChanges())
			}
		})
	}

	same, err := shared.Manifests.DiffManifests(ctxT(t), &pioneerv1.DiffManifestsRequest{Base: byManifest.Base, Target: byManifest.Base})
	must(t, err, "DiffManifests(same)")
	if len(same.GetChanges()) != 0 || same.GetFullChanged() || same.GetCacheBreakSectionId() != "" {
		t.Fatalf("a manifest differs from itself: %v", same)
	}

	_, err = shared.Manifests.DiffManifests(ctxT(t), &pioneerv1.DiffManifestsRequest{Target: byManifest.Target})
	wantViolation(t, err, "base", "DiffManifests(no base)")
	_, err = shared.Manifests.DiffManifests(ctxT(t), &pioneerv1.DiffManifestsRequest{
		Base:   &pioneerv1.ManifestRef{Ref: &pioneerv1.ManifestRef_EventId{EventId: 1 << 60}},
		Target: byManifest.Target,
	})
	wantCode(t, err, codes.NotFound, "DiffManifests(unknown event)")
	wantReason(t, err, "MANIFEST_EVENT_NOT_FOUND", "DiffManifests(unknown event)")
}

type received struct {
	event *pioneerv1.ManifestEvent
	err   error
}

// watch opens WatchManifests and delivers its events (heartbeats dropped) on a channel.
func watch(t *testing.T, ctx context.Context, req *pioneerv1.WatchManifestsRequest) <-chan received {
	t.Helper()
	stream, err := shared.Manifests.WatchManifests(ctx, req)
	must(t, err, "WatchManifests")
	out := make(chan received, 64)
	go func() {
		defer close(out)
		for {
			msg, err := stream.Recv()
			if err != nil {
				out <- received{err: err}
				return
			}
			if ev := msg.GetEvent(); ev != nil {
				out <- received{event: ev}
			}
		}
	}()
	return out
}

func next(t *testing.T, ch <-chan received, what string) *pioneerv1.ManifestEvent {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatalf("%s: stream closed", what)
		}
		if r.err != nil {
			skipIfUnimplemented(t, r.err, "WatchManifests")
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.event
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no event within 20s", what)
	}
	return nil
}

func TestWatchManifestsResume(t *testing.T) {
	th := createThread(t, nil).GetThreadId()

	liveCtx, disconnect := context.WithCancel(ctxT(t))
	live := watch(t, liveCtx, &pioneerv1.WatchManifestsRequest{ThreadId: th})

	var ids []int64
	for i := 1; i <= 3; i++ {
		ids = append(ids, compileOnTurn(t, th, fmt.Sprintf("turn-%d", i), sample.FullCompileInput(i)).GetManifestEventId())
	}
	var last int64
	for i := 0; i < 3; i++ {
		ev := next(t, live, fmt.Sprintf("live event %d", i+1))
		if ev.GetEventId() != ids[i] || ev.GetThreadId() != th || ev.GetTurnId() != fmt.Sprintf("turn-%d", i+1) {
			t.Fatalf("live event %d = id %d %s/%s, want id %d %s/turn-%d", i+1, ev.GetEventId(), ev.GetThreadId(), ev.GetTurnId(), ids[i], th, i+1)
		}
		if ev.GetManifest().GetFingerprintFull() == "" || ev.GetCreateTime() == nil {
			t.Fatalf("live event %d lacks its manifest or time", i+1)
		}
		last = ev.GetEventId()
	}
	disconnect()

	var missed []int64
	for i := 4; i <= 5; i++ {
		missed = append(missed, compileOnTurn(t, th, fmt.Sprintf("turn-%d", i), sample.FullCompileInput(i)).GetManifestEventId())
	}

	resumeCtx, stop := context.WithCancel(ctxT(t))
	defer stop()
	resumed := watch(t, resumeCtx, &pioneerv1.WatchManifestsRequest{ThreadId: th, AfterEventId: last})
	for i, want := range missed {
		ev := next(t, resumed, fmt.Sprintf("resumed event %d", i+1))
		if ev.GetEventId() != want || ev.GetTurnId() != fmt.Sprintf("turn-%d", i+4) {
			t.Fatalf("resumed event %d = id %d turn %s, want id %d turn-%d", i+1, ev.GetEventId(), ev.GetTurnId(), want, i+4)
		}
	}
	// Exactly the two missed events: nothing else follows.
	select {
	case r := <-resumed:
		if r.event != nil {
			t.Fatalf("unexpected extra event %d after resume", r.event.GetEventId())
		}
		if r.err != nil {
			t.Fatalf("stream ended after resume: %v", r.err)
		}
	case <-time.After(750 * time.Millisecond):
	}
}

func TestWatchManifestsBacklogFiltersThread(t *testing.T) {
	mine := createThread(t, nil).GetThreadId()
	other := createThread(t, nil).GetThreadId()
	a := compileOnTurn(t, mine, "turn-1", sample.FullCompileInput(1)).GetManifestEventId()
	compileOnTurn(t, other, "turn-1", sample.FullCompileInput(1))
	b := compileOnTurn(t, mine, "turn-2", sample.FullCompileInput(2)).GetManifestEventId()

	ctx, stop := context.WithCancel(ctxT(t))
	defer stop()
	ch := watch(t, ctx, &pioneerv1.WatchManifestsRequest{ThreadId: mine})
	for _, want := range []int64{a, b} {
		if ev := next(t, ch, "backlog event"); ev.GetEventId() != want || ev.GetThreadId() != mine {
			t.Fatalf("backlog event = %d on %s, want %d on %s", ev.GetEventId(), ev.GetThreadId(), want, mine)
		}
	}
}
