package pioneer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// The vectors every client is tested against: tests/data/replies at the repository root
// (tests/client/test_replies.py says what they hold and proves their shapes with the SDKs).
const vectorDir = "../../../tests/data/replies"

type replyVector struct {
	Name     string          `json:"name"`
	Provider string          `json:"provider"`
	TurnID   string          `json:"turn_id"`
	Round    int             `json:"round"`
	Response json.RawMessage `json:"response"`
	Expect   *struct {
		Entries            []json.RawMessage `json:"entries"`
		Usage              json.RawMessage   `json:"usage"`
		Stop               string            `json:"stop"`
		ProviderStopReason string            `json:"provider_stop_reason"`
		Refusal            string            `json:"refusal"`
		NotKept            []string          `json:"not_kept"`
	} `json:"expect"`
	Error *struct {
		Code string `json:"code"`
		Path string `json:"path"`
	} `json:"error"`
}

func replyVectors(t *testing.T) map[string]replyVector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reply vectors under %s (%v)", vectorDir, err)
	}
	out := map[string]replyVector{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var v replyVector
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out[strings.TrimSuffix(filepath.Base(file), ".json")] = v
	}
	return out
}

func deterministic(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEntriesOfResponseAnswersEveryVector(t *testing.T) {
	for name, v := range replyVectors(t) {
		t.Run(name, func(t *testing.T) { checkReply(t, v) })
	}
}

// The vectors' responses changed many ways, and what the Python client made of each
// (scripts/reply_mutations.py): every client must answer the same.
func TestEntriesOfResponseAnswersAsPythonDoesToEveryMutation(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(vectorDir, "mutations.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) < 100 {
		t.Fatalf("only %d mutations", len(lines))
	}
	for _, line := range lines {
		var v replyVector
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		t.Run(v.Name, func(t *testing.T) { checkReply(t, v) })
	}
}

func checkReply(t *testing.T, v replyVector) {
	t.Helper()
	provider := pioneerv1.Provider(pioneerv1.Provider_value[v.Provider])
	reply, err := EntriesOfResponse(provider, v.Response, v.TurnID, v.Round)
	if v.Error != nil {
		var re *ReplyError
		if !errors.As(err, &re) || re.Code != v.Error.Code || re.Path != v.Error.Path {
			t.Fatalf("got %v, %#v; want error %s at %q", reply, err, v.Error.Code, v.Error.Path)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	want := v.Expect
	if len(reply.Entries) != len(want.Entries) {
		t.Fatalf("%d entries, want %d: %v", len(reply.Entries), len(want.Entries), reply.Entries)
	}
	for i, raw := range want.Entries {
		expected := &pioneerv1.ConversationEntry{}
		if err := protojson.Unmarshal(raw, expected); err != nil {
			t.Fatal(err)
		}
		if string(deterministic(t, reply.Entries[i])) != string(deterministic(t, expected)) {
			t.Errorf("entry %d:\n got %v\nwant %v", i, reply.Entries[i], expected)
		}
	}
	if string(want.Usage) == "null" {
		if reply.Usage != nil {
			t.Errorf("usage %v, want none", reply.Usage)
		}
	} else {
		expected := &pioneerv1.ProviderUsage{}
		if err := protojson.Unmarshal(want.Usage, expected); err != nil {
			t.Fatal(err)
		}
		if reply.Usage == nil || string(deterministic(t, reply.Usage)) != string(deterministic(t, expected)) {
			t.Errorf("usage\n got %v\nwant %v", reply.Usage, expected)
		}
	}
	got := []string{reply.Stop, reply.ProviderStopReason, reply.Refusal}
	if wanted := []string{want.Stop, want.ProviderStopReason, want.Refusal}; !reflect.DeepEqual(got, wanted) {
		t.Errorf("stop, provider stop reason, refusal = %q, want %q", got, wanted)
	}
	if !reflect.DeepEqual(reply.NotKept, append([]string{}, want.NotKept...)) {
		t.Errorf("not kept %q, want %q", reply.NotKept, want.NotKept)
	}
}

func TestEntriesOfResponseRefusesTheCallersMistakes(t *testing.T) {
	cases := []struct {
		provider pioneerv1.Provider
		turn     string
		round    int
	}{{0, "t", 1}, {99, "t", 1}, {3, "", 1}, {3, "t", -1}}
	for _, c := range cases {
		_, err := EntriesOfResponse(c.provider, []byte("{}"), c.turn, c.round)
		var re *ReplyError
		if !errors.As(err, &re) || re.Code != ReplyInvalidArgument {
			t.Errorf("%v: got %v, want invalid_argument", c, err)
		}
	}
	for _, text := range []string{"", "not json", "[1, 2]", `{"a": NaN}`, "null"} {
		_, err := EntriesOfResponse(pioneerv1.Provider_PROVIDER_OPENAI_RESPONSES, []byte(text), "t", 1)
		var re *ReplyError
		if !errors.As(err, &re) || re.Code != ReplyNotJSON || re.Path != "" {
			t.Errorf("%q: got %v, want not_json", text, err)
		}
	}
}

func TestCanonicalJSONWritesAsJavaScriptDoes(t *testing.T) {
	cases := map[string]string{
		`1.0`: `1`, `-0.0`: `0`, `0.1`: `0.1`, `1e21`: `1e+21`, `1e20`: `100000000000000000000`,
		`1.5e-7`: `1.5e-7`, `0.000001`: `0.000001`, `123456789012345678901234`: `1.2345678901234569e+23`,
		`5e-324`: `5e-324`,
		`{"b": 1, "a": [true, null, "x\n\u0001é\u2028"]}`: "{\"a\":[true,null,\"x\\n\\u0001é\u2028\"],\"b\":1}",
		`{"\ue000": 1, "\ud83d\ude00": 2, "Z": 3}`:        "{\"Z\":3,\"\U0001f600\":2,\"\ue000\":1}",
	}
	keys := make([]string, 0, len(cases))
	for k := range cases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, in := range keys {
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		got, err := CanonicalJSON(v)
		if err != nil || got != cases[in] {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", in, got, err, cases[in])
		}
	}
}
