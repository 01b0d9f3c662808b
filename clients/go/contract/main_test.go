// Package contract holds the Go contract tests of pioneer.v1: they call a real
// pioneer-grpc server through the generated stubs and the pioneer package.
//
// Environment:
//
//	PIONEER_ADDR   host:port of the server; unset = start one from the repository's .venv
//	PIONEER_TOKEN  the bearer token the server requires (empty = none)
//	PIONEER_HOME   the server's runtime home (for EnsureBootstrapFiles checks)
//	CI             "true" makes an UNIMPLEMENTED answer a failure instead of a skip
package contract

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/pioneer-grpc/pioneer-grpc/clients/go/pioneer"
)

var (
	serverAddr  string
	serverToken string
	serverHome  string
	inCI        bool
	shared      *pioneer.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	inCI = os.Getenv("CI") == "true"
	serverAddr = os.Getenv("PIONEER_ADDR")
	serverToken = os.Getenv("PIONEER_TOKEN")
	serverHome = os.Getenv("PIONEER_HOME")
	if serverAddr == "" {
		stop, err := startOwnServer()
		if err != nil {
			fmt.Fprintf(os.Stderr, "contract: PIONEER_ADDR is unset and no server could be started: %v\n"+
				"contract: set PIONEER_ADDR (and PIONEER_TOKEN, PIONEER_HOME), or run `make test-contract`\n", err)
			return 1
		}
		defer stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pioneer.Dial(ctx, serverAddr, pioneer.WithToken(serverToken), pioneer.WithUserAgent("pioneer-go-contract"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "contract: %v\n", err)
		return 1
	}
	defer c.Close()
	shared = c
	if err := waitServing(ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "contract: server at %s is not serving: %v\n", serverAddr, err)
		return 1
	}
	return m.Run()
}

func waitServing(ctx context.Context, c *pioneer.Client) error {
	for {
		resp, err := c.Health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startOwnServer runs `pioneer-grpc serve` from the repository's virtualenv on
// a free loopback port with a fresh home and token, for `go test` without a harness.
func startOwnServer() (func(), error) {
	bin := os.Getenv("PIONEER_SERVER_BIN")
	if bin == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(wd, "..", "..", "..", ".venv", "bin", "pioneer-grpc")
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("server binary: %w", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	home, err := os.MkdirTemp("", "pioneer-go-contract-")
	if err != nil {
		return nil, err
	}
	token := "go-contract-" + randomHex(8)
	logPath := filepath.Join(home, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--listen", addr, "--home", home, "--token", token, "--seed-bootstrap-files")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	serverAddr, serverToken, serverHome = addr, token, home
	fmt.Fprintf(os.Stderr, "contract: started %s on %s (home %s)\n", bin, addr, home)
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
		if f, err := os.Open(logPath); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if line := sc.Text(); strings.Contains(line, "ERROR") || strings.Contains(line, "Traceback") {
					fmt.Fprintf(os.Stderr, "contract: server log: %s\n", line)
				}
			}
			_ = f.Close()
		}
		_ = os.RemoveAll(home)
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// uniq returns an id no other test (or earlier run on a shared server) uses.
func uniq(prefix string) string { return prefix + "-" + randomHex(6) }

// ctxT is a per-test context with a generous deadline.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// skipIfUnimplemented skips (or, under CI=true, fails) when err says the RPC
// is not implemented by the server yet.
func skipIfUnimplemented(t *testing.T, err error, rpc string) {
	t.Helper()
	if status.Code(err) != codes.Unimplemented {
		return
	}
	if inCI {
		t.Fatalf("%s: server answered UNIMPLEMENTED (CI=true): %v", rpc, err)
	}
	t.Skipf("%s: not implemented by this server yet", rpc)
}

// needsEnv skips a test that needs an environment value the run lacks;
// under CI=true the harness must provide it, so it fails instead.
func needsEnv(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if inCI {
		t.Fatalf("%s (CI=true: the harness must provide it)", why)
	}
	t.Skip(why)
}

// must fails the test on err, after the UNIMPLEMENTED rule.
func must(t *testing.T, err error, rpc string) {
	t.Helper()
	if err == nil {
		return
	}
	skipIfUnimplemented(t, err, rpc)
	t.Fatalf("%s: %v", rpc, err)
}

// wantCode asserts err has code want (after the UNIMPLEMENTED rule) and returns its status.
func wantCode(t *testing.T, err error, want codes.Code, rpc string) *status.Status {
	t.Helper()
	if want != codes.Unimplemented {
		skipIfUnimplemented(t, err, rpc)
	}
	st, _ := status.FromError(err)
	if st.Code() != want {
		t.Fatalf("%s: code = %s (%q), want %s", rpc, st.Code(), st.Message(), want)
	}
	if want != codes.OK && strings.TrimSpace(st.Message()) == "" {
		t.Fatalf("%s: %s without a message", rpc, want)
	}
	return st
}

// wantReason asserts err carries google.rpc.ErrorInfo with domain pioneer.v1 and reason.
func wantReason(t *testing.T, err error, reason, rpc string) {
	t.Helper()
	info, ok := pioneer.ErrorInfo(err)
	if !ok {
		t.Fatalf("%s: no ErrorInfo detail on %v", rpc, err)
	}
	if info.GetReason() != reason || info.GetDomain() != "pioneer.v1" {
		t.Fatalf("%s: ErrorInfo = %s/%s, want pioneer.v1/%s", rpc, info.GetDomain(), info.GetReason(), reason)
	}
}

// wantViolation asserts err is INVALID_ARGUMENT with a BadRequest field violation on field.
func wantViolation(t *testing.T, err error, field, rpc string) {
	t.Helper()
	wantCode(t, err, codes.InvalidArgument, rpc)
	v, ok := pioneer.FieldViolation(err, field)
	if !ok {
		t.Fatalf("%s: no BadRequest violation on %q; got %v", rpc, field, pioneer.FieldViolations(err))
	}
	if strings.TrimSpace(v.GetDescription()) == "" {
		t.Fatalf("%s: violation on %q has no description", rpc, field)
	}
}
