// Package pioneer dials a pioneer-grpc server and exposes one typed client per
// service of the pioneer.v1 contract.
//
//	c, err := pioneer.Dial(ctx, "127.0.0.1:50051", pioneer.WithToken(os.Getenv("PIONEER_TOKEN")))
//	if err != nil { ... }
//	defer c.Close()
//	resp, err := c.Turns.PrepareTurn(ctx, &pioneerv1.PrepareTurnRequest{...})
//
// The connection uses keepalive pings, adds a default deadline to every unary
// call whose context has none, and can send a bearer token on every call.
// Plaintext is used for loopback addresses; any other address needs WithTLS
// (or an explicit WithInsecure for a trusted network).
package pioneer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// DefaultMaxMessageBytes is the largest message sent or received: the server's
// default (16 MiB), where gRPC's own client default is 4 MiB.
const DefaultMaxMessageBytes = 16 << 20

// DefaultCallTimeout is the deadline added to a unary call whose context has none.
const DefaultCallTimeout = 30 * time.Second

// DefaultKeepalive pings an idle connection every minute while calls are open.
// It stays above the ping interval gRPC servers accept by default during a call
// and does not ping without calls, so servers never answer with too_many_pings.
var DefaultKeepalive = keepalive.ClientParameters{
	Time:                time.Minute,
	Timeout:             20 * time.Second,
	PermitWithoutStream: false,
}

// Client holds one connection and a client for every pioneer.v1 service.
// It is safe for concurrent use; close it when done.
type Client struct {
	conn *grpc.ClientConn

	Compiler  pioneerv1.PromptCompilerServiceClient
	History   pioneerv1.HistoryServiceClient
	Manifests pioneerv1.ManifestServiceClient
	Provider  pioneerv1.ProviderServiceClient
	Turns     pioneerv1.TurnServiceClient
	Echo      pioneerv1.EchoServiceClient
	Health    healthpb.HealthClient
}

// Conn returns the underlying connection, e.g. for a reflection client.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

type options struct {
	token         string
	tlsConfig     *tls.Config
	insecure      bool
	callTimeout   time.Duration
	keepalive     keepalive.ClientParameters
	lazy          bool
	userAgent     string
	extraDialOpts []grpc.DialOption
}

// Option configures Dial.
type Option func(*options)

// WithToken sends `authorization: Bearer <token>` on every call. An empty token
// sends nothing.
func WithToken(token string) Option {
	return func(o *options) { o.token = token }
}

// WithTLS dials over TLS with cfg (nil = system roots and the address's host name).
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		o.tlsConfig = cfg
	}
}

// WithInsecure allows plaintext (and a bearer token over plaintext) to a
// non-loopback address. Loopback addresses never need it.
func WithInsecure() Option { return func(o *options) { o.insecure = true } }

// WithCallTimeout sets the deadline added to unary calls whose context has
// none (default DefaultCallTimeout). Zero or negative turns it off. Streams
// (WatchManifests) never get a default deadline: they are meant to stay open.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithKeepalive replaces DefaultKeepalive.
func WithKeepalive(p keepalive.ClientParameters) Option { return func(o *options) { o.keepalive = p } }

// WithLazyConnect makes Dial return at once without waiting for the
// connection; the first call connects.
func WithLazyConnect() Option { return func(o *options) { o.lazy = true } }

// WithUserAgent prepends s to the user agent.
func WithUserAgent(s string) Option { return func(o *options) { o.userAgent = s } }

// WithDialOptions appends raw gRPC dial options (message sizes, more interceptors ...).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.extraDialOpts = append(o.extraDialOpts, opts...) }
}

// Dial connects to a pioneer-grpc server at addr ("host:port", or any gRPC
// target such as "unix:///path"). Unless WithLazyConnect is given, it waits
// until the connection is ready, bounded by ctx (or, when ctx has no deadline,
// by the call timeout), so a wrong address fails here instead of on first use.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	o := options{callTimeout: DefaultCallTimeout, keepalive: DefaultKeepalive, userAgent: "pioneer-go"}
	for _, opt := range opts {
		opt(&o)
	}
	if addr == "" {
		return nil, errors.New("pioneer: empty address")
	}
	loopback := IsLoopback(addr)
	if o.tlsConfig == nil && !loopback && !o.insecure {
		return nil, fmt.Errorf("pioneer: %s is not a loopback address: use WithTLS, or WithInsecure on a trusted network", addr)
	}

	dialOpts := []grpc.DialOption{
		grpc.WithKeepaliveParams(o.keepalive),
		grpc.WithUserAgent(o.userAgent),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(DefaultMaxMessageBytes),
			grpc.MaxCallSendMsgSize(DefaultMaxMessageBytes),
		),
	}
	if o.tlsConfig != nil {
		dialOpts = append(dialOpts, grpc.WithTransportCredentials(credentials.NewTLS(o.tlsConfig)))
	} else {
		dialOpts = append(dialOpts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if o.token != "" {
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(BearerToken{
			Token:      o.token,
			RequireTLS: o.tlsConfig != nil || (!loopback && !o.insecure),
		}))
	}
	if o.callTimeout > 0 {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(DefaultDeadlineInterceptor(o.callTimeout)))
	}
	dialOpts = append(dialOpts, o.extraDialOpts...)

	conn, err := grpc.NewClient(addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("pioneer: dial %s: %w", addr, err)
	}
	if !o.lazy {
		if err := waitReady(ctx, conn, o.callTimeout); err != nil {
			_ = conn.Close()
			scheme := "plaintext"
			if o.tlsConfig != nil {
				scheme = "TLS"
			}
			return nil, fmt.Errorf("pioneer: cannot reach a pioneer-grpc server at %s (%s): "+
				"is it running (make run), and is the address right? %w", addr, scheme, err)
		}
	}
	return newClient(conn), nil
}

// NewClient wraps an existing connection (tests, custom dialing).
func NewClient(conn *grpc.ClientConn) *Client { return newClient(conn) }

func newClient(conn *grpc.ClientConn) *Client {
	return &Client{
		conn:      conn,
		Compiler:  pioneerv1.NewPromptCompilerServiceClient(conn),
		History:   pioneerv1.NewHistoryServiceClient(conn),
		Manifests: pioneerv1.NewManifestServiceClient(conn),
		Provider:  pioneerv1.NewProviderServiceClient(conn),
		Turns:     pioneerv1.NewTurnServiceClient(conn),
		Echo:      pioneerv1.NewEchoServiceClient(conn),
		Health:    healthpb.NewHealthClient(conn),
	}
}

func waitReady(ctx context.Context, conn *grpc.ClientConn, fallback time.Duration) error {
	if _, ok := ctx.Deadline(); !ok && fallback > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fallback)
		defer cancel()
	}
	conn.Connect()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.Shutdown:
			return errors.New("connection shut down")
		}
		if !conn.WaitForStateChange(ctx, s) {
			return fmt.Errorf("not ready (last state %s): %w", s, ctx.Err())
		}
	}
}

// DefaultDeadlineInterceptor adds timeout to a unary call whose context has no deadline.
func DefaultDeadlineInterceptor(timeout time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// BearerToken is per-RPC credentials sending `authorization: Bearer <Token>`.
type BearerToken struct {
	Token string
	// RequireTLS refuses to send the token over plaintext.
	RequireTLS bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b BearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.Token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (b BearerToken) RequireTransportSecurity() bool { return b.RequireTLS }

// IsLoopback reports whether a gRPC target names this machine: a loopback IP,
// "localhost", or a unix socket.
func IsLoopback(target string) bool {
	t := target
	if strings.HasPrefix(t, "unix:") || strings.HasPrefix(t, "unix-abstract:") {
		return true
	}
	for _, scheme := range []string{"dns:///", "passthrough:///", "ipv4:", "ipv6:"} {
		t = strings.TrimPrefix(t, scheme)
	}
	host := t
	if h, _, err := net.SplitHostPort(t); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
