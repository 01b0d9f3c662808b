package contract

import (
	"context"
	"errors"
	"io"
	"sort"
	"testing"

	"google.golang.org/grpc/codes"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
)

// listServices asks server reflection for its services (v1, or v1alpha on older servers).
func listServices(t *testing.T) []string {
	t.Helper()
	names, err := listServicesV1(ctxT(t))
	if err == nil {
		return names
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("reflection v1: %v", err)
	}
	names, err = listServicesV1alpha(ctxT(t))
	must(t, err, "ServerReflectionInfo")
	return names
}

// A Send that fails with io.EOF only says the stream has ended: why (UNIMPLEMENTED on an
// older server, or any other status) is what the next Recv returns.
func sendFailed(err error) bool { return err != nil && !errors.Is(err, io.EOF) }

// endedEarly names a stream the server ended with an OK status before answering.
func endedEarly(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("the server ended the stream without an answer")
	}
	return err
}

func listServicesV1(ctx context.Context) ([]string, error) {
	stream, err := reflectionv1.NewServerReflectionClient(shared.Conn()).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	err = stream.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: "*"},
	})
	if sendFailed(err) {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, endedEarly(err)
	}
	_ = stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}

func listServicesV1alpha(ctx context.Context) ([]string, error) {
	stream, err := reflectionv1alpha.NewServerReflectionClient(shared.Conn()).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	err = stream.Send(&reflectionv1alpha.ServerReflectionRequest{
		MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{ListServices: "*"},
	})
	if sendFailed(err) {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, endedEarly(err)
	}
	_ = stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}

func TestReflectionListsEveryService(t *testing.T) {
	names := listServices(t)
	sort.Strings(names)
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, want := range []string{
		"pioneer.v1.EchoService",
		"pioneer.v1.HistoryService",
		"pioneer.v1.ManifestService",
		"pioneer.v1.PromptCompilerService",
		"pioneer.v1.ProviderService",
		"pioneer.v1.TurnService",
		"grpc.health.v1.Health",
	} {
		if !have[want] {
			t.Errorf("reflection does not list %s (got %v)", want, names)
		}
	}
}
