package contract

import (
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
	stream, err := reflectionv1.NewServerReflectionClient(shared.Conn()).ServerReflectionInfo(ctxT(t))
	if err == nil {
		err = stream.Send(&reflectionv1.ServerReflectionRequest{
			MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: "*"},
		})
	}
	if err == nil {
		resp, rerr := stream.Recv()
		if rerr == nil {
			var names []string
			for _, s := range resp.GetListServicesResponse().GetService() {
				names = append(names, s.GetName())
			}
			_ = stream.CloseSend()
			return names
		}
		err = rerr
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("reflection v1: %v", err)
	}
	old, err := reflectionv1alpha.NewServerReflectionClient(shared.Conn()).ServerReflectionInfo(ctxT(t))
	if err == nil {
		err = old.Send(&reflectionv1alpha.ServerReflectionRequest{
			MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{ListServices: "*"},
		})
	}
	resp, rerr := old.Recv()
	if err == nil {
		err = rerr
	}
	must(t, err, "ServerReflectionInfo")
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	_ = old.CloseSend()
	return names
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
