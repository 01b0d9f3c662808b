package pioneer

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// recordingEcho is an in-process EchoService that remembers what the last call carried.
type recordingEcho struct {
	pioneerv1.UnimplementedEchoServiceServer
	mu          sync.Mutex
	auth        []string
	hasDeadline bool
	remaining   time.Duration
	fail        error
}

func (s *recordingEcho) Echo(ctx context.Context, req *pioneerv1.EchoRequest) (*pioneerv1.EchoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	dl, ok := ctx.Deadline()
	s.mu.Lock()
	s.auth = md.Get("authorization")
	s.hasDeadline = ok
	if ok {
		s.remaining = time.Until(dl)
	}
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return &pioneerv1.EchoResponse{Payload: req.GetPayload()}, nil
}

func (s *recordingEcho) last() (auth []string, hasDeadline bool, remaining time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth, s.hasDeadline, s.remaining
}

func startEcho(t *testing.T, srv *recordingEcho, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	pioneerv1.RegisterEchoServiceServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, opts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestTokenAndDefaultDeadline(t *testing.T) {
	srv := &recordingEcho{}
	c := dial(t, startEcho(t, srv), WithToken("s3cret"), WithCallTimeout(7*time.Second))

	resp, err := c.Echo.Echo(context.Background(), &pioneerv1.EchoRequest{Payload: []byte("hi")})
	if err != nil {
		t.Fatalf("Echo: %v", err)
	}
	if string(resp.GetPayload()) != "hi" {
		t.Fatalf("payload = %q", resp.GetPayload())
	}
	auth, hasDeadline, remaining := srv.last()
	if len(auth) != 1 || auth[0] != "Bearer s3cret" {
		t.Fatalf("authorization = %q, want [Bearer s3cret]", auth)
	}
	if !hasDeadline || remaining <= 0 || remaining > 7*time.Second {
		t.Fatalf("default deadline not applied: has=%v remaining=%v", hasDeadline, remaining)
	}
}

func TestCallerDeadlineWins(t *testing.T) {
	srv := &recordingEcho{}
	c := dial(t, startEcho(t, srv), WithCallTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := c.Echo.Echo(ctx, &pioneerv1.EchoRequest{}); err != nil {
		t.Fatal(err)
	}
	_, hasDeadline, remaining := srv.last()
	if !hasDeadline || remaining < 50*time.Minute {
		t.Fatalf("caller deadline replaced: has=%v remaining=%v", hasDeadline, remaining)
	}
}

func TestNoDefaultDeadlineWhenDisabled(t *testing.T) {
	srv := &recordingEcho{}
	c := dial(t, startEcho(t, srv), WithCallTimeout(0))
	if _, err := c.Echo.Echo(context.Background(), &pioneerv1.EchoRequest{}); err != nil {
		t.Fatal(err)
	}
	auth, hasDeadline, _ := srv.last()
	if hasDeadline {
		t.Fatal("deadline added although WithCallTimeout(0)")
	}
	if len(auth) != 0 {
		t.Fatalf("authorization sent without a token: %q", auth)
	}
}

func TestPlaintextNeedsLoopbackOrInsecure(t *testing.T) {
	ctx := context.Background()
	if _, err := Dial(ctx, "pioneer.example.com:443", WithLazyConnect()); err == nil {
		t.Fatal("plaintext dial to a remote host succeeded")
	}
	c, err := Dial(ctx, "pioneer.example.com:443", WithLazyConnect(), WithInsecure(), WithToken("x"))
	if err != nil {
		t.Fatalf("WithInsecure: %v", err)
	}
	_ = c.Close()
}

func TestDialFailsFastOnClosedPort(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Dial(ctx, addr); err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Dial ignored its context: took %v", time.Since(start))
	}
}

func TestIsLoopback(t *testing.T) {
	for target, want := range map[string]bool{
		"127.0.0.1:50051":           true,
		"localhost:1":               true,
		"[::1]:50051":               true,
		"dns:///localhost:50051":    true,
		"unix:///tmp/pioneer.sock":  true,
		"10.0.0.1:50051":            false,
		"pioneer.example.com:443":   false,
		"dns:///pioneer.internal:1": false,
	} {
		if got := IsLoopback(target); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", target, got, want)
		}
	}
}

func TestFieldViolationsDecoded(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "input.dynamic_sections[0].id: contains whitespace").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "input.dynamic_sections[0].id", Description: "contains whitespace"},
			{Field: "input.limits.max_chars_total", Description: "must not be negative"},
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := &recordingEcho{fail: st.Err()}
	c := dial(t, startEcho(t, srv))
	_, callErr := c.Echo.Echo(context.Background(), &pioneerv1.EchoRequest{})
	wrapped := fmt.Errorf("compile: %w", callErr)

	if Code(wrapped) != codes.InvalidArgument {
		t.Fatalf("code = %v", Code(wrapped))
	}
	vs := FieldViolations(wrapped)
	if len(vs) != 2 || vs[1].GetField() != "input.limits.max_chars_total" {
		t.Fatalf("violations = %v", vs)
	}
	v, ok := FieldViolation(wrapped, "input.dynamic_sections[0].id")
	if !ok || v.GetDescription() != "contains whitespace" {
		t.Fatalf("FieldViolation = %v, %v", v, ok)
	}
	if _, ok := FieldViolation(wrapped, "input.profile"); ok {
		t.Fatal("found a violation that was not sent")
	}
	if FieldViolations(nil) != nil || FieldViolations(errors.New("plain")) != nil {
		t.Fatal("violations from a non-status error")
	}
}

func TestTLSWithToken(t *testing.T) {
	serverCert, pool := selfSigned(t)
	srv := &recordingEcho{}
	addr := startEcho(t, srv, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert},
		MinVersion:   tls.VersionTLS12,
	})))
	c := dial(t, addr, WithTLS(&tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}),
		WithToken("tls-token"))
	if _, err := c.Echo.Echo(context.Background(), &pioneerv1.EchoRequest{Payload: []byte("x")}); err != nil {
		t.Fatalf("Echo over TLS: %v", err)
	}
	if auth, _, _ := srv.last(); len(auth) != 1 || auth[0] != "Bearer tls-token" {
		t.Fatalf("authorization = %q", auth)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
