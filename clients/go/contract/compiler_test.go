package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
	"github.com/pioneer-grpc/pioneer-grpc/clients/go/internal/sample"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func compile(t *testing.T, req *pioneerv1.CompilePromptRequest) *pioneerv1.CompilePromptResponse {
	t.Helper()
	resp, err := shared.Compiler.CompilePrompt(ctxT(t), req)
	must(t, err, "CompilePrompt")
	return resp
}

func TestCompilePromptFullInput(t *testing.T) {
	resp := compile(t, &pioneerv1.CompilePromptRequest{Input: sample.FullCompileInput(1)})
	p := resp.GetPayload()
	m := p.GetManifest()
	if resp.GetManifestEventId() != 0 {
		t.Errorf("manifest_event_id = %d for a compile without thread/turn, want 0", resp.GetManifestEventId())
	}

	// The split: stable sections, then the boundary, then dynamic sections.
	if p.GetBoundaryMarker() == "" || p.GetStableSystemText() == "" || p.GetDynamicSystemText() == "" {
		t.Fatalf("full input must give stable text, dynamic text and a boundary marker")
	}
	if want := p.GetStableSystemText() + p.GetBoundaryMarker() + p.GetDynamicSystemText(); p.GetFullSystemText() != want {
		t.Fatalf("full_system_text != stable + boundary + dynamic")
	}
	if strings.Contains(p.GetStableSystemText(), p.GetBoundaryMarker()) || strings.Contains(p.GetDynamicSystemText(), p.GetBoundaryMarker()) {
		t.Fatal("boundary marker inside one half")
	}

	// Sections: stable first, each fingerprinted as sha256("## {title}\n{content}"),
	// listed in the manifest in the same order.
	sections := p.GetSections()
	if len(sections) == 0 {
		t.Fatal("no sections")
	}
	seenDynamic := false
	ids := make([]string, 0, len(sections))
	for i, s := range sections {
		switch s.GetStability() {
		case pioneerv1.SectionStability_SECTION_STABILITY_STABLE:
			if seenDynamic {
				t.Fatalf("stable section %q after a dynamic one", s.GetId())
			}
		case pioneerv1.SectionStability_SECTION_STABILITY_DYNAMIC:
			seenDynamic = true
		default:
			t.Fatalf("section %q has stability %s", s.GetId(), s.GetStability())
		}
		if s.GetId() == "" || s.GetTitle() == "" || strings.TrimSpace(s.GetContent()) == "" {
			t.Fatalf("section %d is incomplete: id=%q title=%q", i, s.GetId(), s.GetTitle())
		}
		if got, want := s.GetFingerprint(), sha("## "+s.GetTitle()+"\n"+s.GetContent()); got != want {
			t.Errorf("section %q fingerprint = %s, want sha256 of its rendered text %s", s.GetId(), got, want)
		}
		if !strings.Contains(p.GetFullSystemText(), "## "+s.GetTitle()+"\n"+s.GetContent()) {
			t.Errorf("section %q not rendered into full_system_text", s.GetId())
		}
		ids = append(ids, s.GetId())
	}
	if !seenDynamic {
		t.Fatal("no dynamic section for a full input")
	}
	if strings.Join(m.GetSectionIds(), ",") != strings.Join(ids, ",") {
		t.Fatalf("manifest section_ids %v != sections %v", m.GetSectionIds(), ids)
	}
	if len(m.GetSectionFingerprints()) != len(sections) {
		t.Fatalf("manifest has %d section fingerprints for %d sections", len(m.GetSectionFingerprints()), len(sections))
	}
	for i, sf := range m.GetSectionFingerprints() {
		if sf.GetSectionId() != sections[i].GetId() || sf.GetFingerprint() != sections[i].GetFingerprint() {
			t.Errorf("section fingerprint %d = %s/%s, want %s/%s", i, sf.GetSectionId(), sf.GetFingerprint(),
				sections[i].GetId(), sections[i].GetFingerprint())
		}
	}

	// Manifest fingerprints are sha256 of the texts they name.
	if m.GetFingerprintStable() != sha(p.GetStableSystemText()) {
		t.Error("fingerprint_stable is not sha256(stable_system_text)")
	}
	if m.GetFingerprintDynamic() != sha(p.GetDynamicSystemText()) {
		t.Error("fingerprint_dynamic is not sha256(dynamic_system_text)")
	}
	if m.GetFingerprintFull() != sha(p.GetFullSystemText()) {
		t.Error("fingerprint_full is not sha256(full_system_text)")
	}
	if m.GetCompilerVersion() == "" {
		t.Error("manifest without compiler_version")
	}
	if m.GetProfile() != pioneerv1.PromptProfile_PROMPT_PROFILE_FULL {
		t.Errorf("manifest profile = %s, want FULL", m.GetProfile())
	}

	// Every structured input shows up: the caller's dynamic section with its title,
	// AGENTS.md content, and the hook source recorded in the manifest.
	has := func(id string) bool {
		for _, s := range ids {
			if s == id {
				return true
			}
		}
		return false
	}
	if !has("workspace.git_status") {
		t.Errorf("caller dynamic section missing from %v", ids)
	}
	for _, want := range []string{"Git Status", "Run make test before every commit.", "memory_search", "read_skill"} {
		if !strings.Contains(p.GetDynamicSystemText(), want) {
			t.Errorf("dynamic text lacks %q", want)
		}
	}
	foundHook := false
	for _, h := range m.GetHookSources() {
		if h.GetSource().GetHookId() == "workspace.git_status" {
			foundHook = true
		}
	}
	if !foundHook {
		t.Error("manifest hook_sources lacks the caller's hook")
	}
	// Tool definitions never become prompt prose.
	if strings.Contains(p.GetFullSystemText(), "additionalProperties") {
		t.Error("a tool schema leaked into the prompt")
	}
}

func TestCompilePromptDeterministic(t *testing.T) {
	a := compile(t, &pioneerv1.CompilePromptRequest{Input: sample.FullCompileInput(2)}).GetPayload()
	b := compile(t, &pioneerv1.CompilePromptRequest{Input: sample.FullCompileInput(2)}).GetPayload()
	if a.GetFullSystemText() != b.GetFullSystemText() || a.GetManifest().GetFingerprintFull() != b.GetManifest().GetFingerprintFull() {
		t.Fatal("identical inputs gave different output")
	}
	// A later round changes only the dynamic half: the provider cache prefix survives.
	c := compile(t, &pioneerv1.CompilePromptRequest{Input: sample.FullCompileInput(3)}).GetPayload()
	if a.GetManifest().GetFingerprintStable() != c.GetManifest().GetFingerprintStable() {
		t.Error("a dynamic-only change altered the stable fingerprint")
	}
	if a.GetManifest().GetFingerprintDynamic() == c.GetManifest().GetFingerprintDynamic() {
		t.Error("a dynamic change left the dynamic fingerprint unchanged")
	}
}

func TestCompilePromptProfiles(t *testing.T) {
	in := sample.FullCompileInput(1)
	in.Profile = pioneerv1.PromptProfile_PROMPT_PROFILE_NONE
	p := compile(t, &pioneerv1.CompilePromptRequest{Input: in}).GetPayload()
	if n := len(p.GetSections()); n != 1 {
		t.Fatalf("profile NONE rendered %d sections (%v), want only identity", n, p.GetManifest().GetSectionIds())
	}
	if p.GetDynamicSystemText() != "" || p.GetFullSystemText() != p.GetStableSystemText() {
		t.Error("profile NONE: full text must be the stable text alone")
	}
}

func TestCompilePromptPersona(t *testing.T) {
	const persona = "You are Scout, a browser agent that files expense reports."
	in := sample.FullCompileInput(1)
	in.Profile = pioneerv1.PromptProfile_PROMPT_PROFILE_NONE
	in.Persona = proto.String(persona)
	own := compile(t, &pioneerv1.CompilePromptRequest{Input: in}).GetPayload()
	if want := "## Identity\n" + persona; own.GetFullSystemText() != want {
		t.Errorf("persona: full text = %q, want %q", own.GetFullSystemText(), want)
	}
	in = sample.FullCompileInput(1)
	in.Profile = pioneerv1.PromptProfile_PROMPT_PROFILE_MINIMAL
	in.OmitPersona = true
	omitted := compile(t, &pioneerv1.CompilePromptRequest{Input: in}).GetPayload()
	if !strings.HasPrefix(omitted.GetStableSystemText(), "## Safety\n") {
		t.Errorf("omit_persona: stable text starts %q, want the Safety section first", omitted.GetStableSystemText()[:40])
	}
	in.Persona = proto.String(persona)
	_, err := shared.Compiler.CompilePrompt(ctxT(t), &pioneerv1.CompilePromptRequest{Input: in})
	wantViolation(t, err, "input.omit_persona", "CompilePrompt(persona and omit_persona)")
}

func TestCompilePromptInvalidDynamicSectionID(t *testing.T) {
	in := sample.FullCompileInput(1)
	in.DynamicSections[0].Id = "git status"
	_, err := shared.Compiler.CompilePrompt(ctxT(t), &pioneerv1.CompilePromptRequest{Input: in})
	wantViolation(t, err, "input.dynamic_sections[0].id", "CompilePrompt(id with whitespace)")
}

func TestCompilePromptBuiltinDynamicSectionID(t *testing.T) {
	in := sample.FullCompileInput(1)
	in.DynamicSections = append(in.DynamicSections, &pioneerv1.DynamicSection{Id: "extra_system", Content: "clash"})
	_, err := shared.Compiler.CompilePrompt(ctxT(t), &pioneerv1.CompilePromptRequest{Input: in})
	wantViolation(t, err, "input.dynamic_sections[1].id", "CompilePrompt(built-in id)")
}

func TestCompilePromptNegativeLimit(t *testing.T) {
	in := sample.FullCompileInput(1)
	in.Limits.MaxCharsTotal = proto.Int32(-1)
	_, err := shared.Compiler.CompilePrompt(ctxT(t), &pioneerv1.CompilePromptRequest{Input: in})
	wantViolation(t, err, "input.limits.max_chars_total", "CompilePrompt(negative limit)")
}

func TestEnsureBootstrapFiles(t *testing.T) {
	resp, err := shared.Compiler.EnsureBootstrapFiles(ctxT(t), &pioneerv1.EnsureBootstrapFilesRequest{})
	must(t, err, "EnsureBootstrapFiles")
	got := map[string]*pioneerv1.BootstrapFile{}
	for _, f := range resp.GetFiles() {
		got[f.GetName()] = f
	}
	for _, name := range []string{"SOUL.md", "IDENTITY.md"} {
		f, ok := got[name]
		if !ok {
			t.Fatalf("%s not reported: %v", name, resp.GetFiles())
		}
		// The server seeds both at start (--seed-bootstrap-files), so this call finds them.
		if f.GetCreated() {
			t.Errorf("%s reported created although the server seeded it at start", name)
		}
		if serverHome != "" {
			want := filepath.Join(serverHome, name)
			if filepath.Clean(f.GetPath()) != want {
				t.Errorf("%s path = %q, want %q", name, f.GetPath(), want)
			}
			if _, err := os.Stat(want); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if _, ok := got["USER.md"]; ok && got["USER.md"].GetCreated() {
		t.Error("USER.md must never be created")
	}
}

func TestEnsureBootstrapFilesNeverOverwrites(t *testing.T) {
	needsEnv(t, serverHome != "", "PIONEER_HOME is unset: cannot prepare a workspace inside the server's home")
	dir, err := os.MkdirTemp(serverHome, "ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// An existing empty SOUL.md stays empty; IDENTITY.md is created.
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := shared.Compiler.EnsureBootstrapFiles(ctxT(t), &pioneerv1.EnsureBootstrapFilesRequest{WorkspaceRoot: dir})
	must(t, err, "EnsureBootstrapFiles(workspace)")
	created := map[string]bool{}
	for _, f := range resp.GetFiles() {
		created[f.GetName()] = f.GetCreated()
	}
	if created["SOUL.md"] || !created["IDENTITY.md"] {
		t.Fatalf("created = %v, want SOUL.md kept and IDENTITY.md created", created)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "SOUL.md")); len(b) != 0 {
		t.Fatal("an existing empty SOUL.md was overwritten")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "IDENTITY.md")); len(b) == 0 {
		t.Fatal("IDENTITY.md was created empty")
	}
	// The compile reads the workspace's files: the empty SOUL.md still renders.
	in := sample.FullCompileInput(1)
	in.WorkspaceRoot = dir
	p := compile(t, &pioneerv1.CompilePromptRequest{Input: in}).GetPayload()
	var soul *pioneerv1.SourceManifestEntry
	for _, e := range p.GetManifest().GetSourceManifest() {
		if e.GetFile() == "SOUL.md" {
			soul = e
		}
	}
	if soul == nil || soul.GetStatus() != pioneerv1.SourceStatus_SOURCE_STATUS_LOADED {
		t.Fatalf("SOUL.md source entry = %v, want LOADED", soul)
	}
}

func TestEnsureBootstrapFilesOutsideHome(t *testing.T) {
	outside, err := os.MkdirTemp("", "pioneer-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(outside) })
	_, err = shared.Compiler.EnsureBootstrapFiles(ctxT(t), &pioneerv1.EnsureBootstrapFilesRequest{WorkspaceRoot: outside})
	skipIfUnimplemented(t, err, "EnsureBootstrapFiles(outside home)")
	if c := status.Code(err); c != codes.PermissionDenied && c != codes.InvalidArgument {
		t.Fatalf("workspace_root outside the runtime home: code = %s (%v), want PERMISSION_DENIED or INVALID_ARGUMENT", c, err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Fatalf("files written outside the runtime home: %v", entries)
	}
}
