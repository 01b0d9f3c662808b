package contract

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

func TestEcho(t *testing.T) {
	payload := bytes.Repeat([]byte{0, 1, 2, 0xff}, 4096)
	resp, err := shared.Echo.Echo(ctxT(t), &pioneerv1.EchoRequest{Payload: payload})
	must(t, err, "Echo")
	if !bytes.Equal(resp.GetPayload(), payload) {
		t.Fatalf("Echo returned %d bytes, want the %d sent", len(resp.GetPayload()), len(payload))
	}
	resp, err = shared.Echo.Echo(ctxT(t), &pioneerv1.EchoRequest{})
	must(t, err, "Echo")
	if len(resp.GetPayload()) != 0 {
		t.Fatalf("empty Echo returned %d bytes", len(resp.GetPayload()))
	}
}

// dialWithToken opens a second connection that sends token (or none when empty).
func dialWithToken(t *testing.T, token string) *pioneer.Client {
	t.Helper()
	c, err := pioneer.Dial(ctxT(t), serverAddr, pioneer.WithToken(token))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func requireToken(t *testing.T) {
	t.Helper()
	needsEnv(t, serverToken != "", "PIONEER_TOKEN is empty: the server under test does not require a token")
}

func TestAuthMissingToken(t *testing.T) {
	requireToken(t)
	c := dialWithToken(t, "")
	_, err := c.Echo.Echo(ctxT(t), &pioneerv1.EchoRequest{Payload: []byte("x")})
	wantCode(t, err, codes.Unauthenticated, "Echo without token")
	_, err = c.History.GetThread(ctxT(t), &pioneerv1.GetThreadRequest{ThreadId: uniq("no-token")})
	wantCode(t, err, codes.Unauthenticated, "GetThread without token")
}

func TestAuthWrongToken(t *testing.T) {
	requireToken(t)
	c := dialWithToken(t, serverToken+"-wrong")
	_, err := c.Echo.Echo(ctxT(t), &pioneerv1.EchoRequest{Payload: []byte("x")})
	wantCode(t, err, codes.Unauthenticated, "Echo with wrong token")
	_, err = c.Compiler.CompilePrompt(ctxT(t), &pioneerv1.CompilePromptRequest{Input: &pioneerv1.PromptCompileInput{}})
	wantCode(t, err, codes.Unauthenticated, "CompilePrompt with wrong token")
}

func TestHealthWithoutToken(t *testing.T) {
	c := dialWithToken(t, "")
	resp, err := c.Health.Check(ctxT(t), &healthpb.HealthCheckRequest{})
	must(t, err, "Health.Check")
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %s, want SERVING", resp.GetStatus())
	}
	resp, err = c.Health.Check(ctxT(t), &healthpb.HealthCheckRequest{Service: "pioneer.v1.HistoryService"})
	must(t, err, "Health.Check(HistoryService)")
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("HistoryService health = %s, want SERVING", resp.GetStatus())
	}
}

func TestDeadlineExceeded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done() // the deadline has passed before the call is made
	_, err := shared.Echo.Echo(ctx, &pioneerv1.EchoRequest{Payload: []byte("late")})
	wantCode(t, err, codes.DeadlineExceeded, "Echo with 1ns deadline")

	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	_, err = shared.Compiler.CompilePrompt(ctx2, &pioneerv1.CompilePromptRequest{Input: &pioneerv1.PromptCompileInput{}})
	wantCode(t, err, codes.DeadlineExceeded, "CompilePrompt with 1ns deadline")
}

// An 8 MiB message is above gRPC's 4 MiB client default and within the
// server's 16 MiB: Dial raises the limits to the server's.
func TestDialReceivesMessagesUpToTheServerLimit(t *testing.T) {
	payload := make([]byte, 8<<20)
	resp, err := shared.Echo.Echo(ctxT(t), &pioneerv1.EchoRequest{Payload: payload})
	must(t, err, "Echo(8 MiB)")
	if len(resp.GetPayload()) != len(payload) {
		t.Fatalf("echoed %d bytes, want %d", len(resp.GetPayload()), len(payload))
	}
}
