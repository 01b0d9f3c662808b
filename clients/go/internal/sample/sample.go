// Package sample builds realistic pioneer.v1 inputs shared by the contract
// tests, the example agent loop and the load generator.
package sample

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pioneerv1 "github.com/pioneer-grpc/pioneer-grpc/clients/go/gen/pioneer/v1"
)

// FullCompileInput sets every input of a compile: policies, skills, memory,
// AGENTS.md content, thread context with artifacts, hidden tool domains, a
// narrowed permission profile, a hook-contributed dynamic section and limits.
// round varies the dynamic half only, as a real agent loop would.
func FullCompileInput(round int) *pioneerv1.PromptCompileInput {
	hook := &pioneerv1.HookSource{
		Source: &pioneerv1.HookRef{
			HookId:         "workspace.git_status",
			SubscriptionId: "sub-git-status",
			Phase:          pioneerv1.HookPhase_HOOK_PHASE_TURN_PRE_PROMPT_COMPILE,
			ContributionId: proto.String("git-status-1"),
		},
		SectionId:        proto.String("workspace.git_status"),
		ContributionKind: pioneerv1.ContributionKind_CONTRIBUTION_KIND_PROMPT_SECTION,
		Priority:         proto.Int32(500),
		SourceCount:      proto.Int32(1),
		Truncation:       pioneerv1.Truncation_TRUNCATION_NONE,
		Label:            "git status of the workspace",
	}
	return &pioneerv1.PromptCompileInput{
		Profile:                        pioneerv1.PromptProfile_PROMPT_PROFILE_FULL,
		SkillsPrompt:                   proto.String("Prefer the repository's own Makefile targets."),
		RetryInstruction:               proto.String("The last tool call failed: fix the arguments and retry once."),
		IncludeToolRecoveryPolicy:      true,
		IncludeTaskOrchestrationPolicy: true,
		ContinueGenerationHint:         round%2 == 1,
		DynamicContext:                 proto.String(fmt.Sprintf("Round %d of the example conversation.", round)),
		ExtraSystem:                    proto.String("Local time: 2026-01-15T09:30:00Z; OS: linux/amd64."),
		Limits: &pioneerv1.PromptLimits{
			MaxCharsPerFile:           proto.Int32(12000),
			MaxDynamicSections:        proto.Int32(8),
			MaxCharsPerDynamicSection: proto.Int32(4000),
		},
		Skills: &pioneerv1.SkillsInput{
			ActiveSkills: []*pioneerv1.Skill{
				{
					Slug:        "go-testing",
					DisplayName: "Go testing",
					Description: "Writing and running Go tests with go test.",
					Body:        "Run `go test ./...` from the module root; use t.Helper in helpers.",
					PathMatched: true,
				},
				{
					Slug:        "release-notes",
					DisplayName: "Release notes",
					Description: "Drafting release notes from merged changes.",
				},
			},
			IncludeReadSkillHint: true,
		},
		MemoryRecall: &pioneerv1.MemoryRecall{
			Policy: pioneerv1.MemoryPolicy_MEMORY_POLICY_FULL,
			Items: []*pioneerv1.MemoryItem{
				{Scope: "user", Category: "preference", Content: "Prefers short answers with code first."},
				{Scope: "workspace", Category: "decision", Content: "The service speaks gRPC only; no REST gateway."},
			},
			AvailableTools: []string{"memory_search", "memory_write", "memory_forget"},
			ThreadContext:  proto.String("The user is adding a Go client to the project."),
		},
		AgentsMd: &pioneerv1.AgentsMdSource{Source: &pioneerv1.AgentsMdSource_Content{
			Content: &pioneerv1.AgentsMdContent{
				Content:     "Run make test before every commit.\nKeep generated code out of reviews.",
				SourceLabel: "thread tree / clients / go",
			},
		}},
		ThreadContext: []*pioneerv1.ThreadContextSnippet{{
			SnippetId: "thread:turn-7/item-2/chunk_0",
			Text:      "We agreed to pin protoc-gen-go and protoc-gen-go-grpc.",
			Provenance: &pioneerv1.SnippetProvenance{
				Workspace: "pioneer-grpc",
				ThreadId:  "thread-earlier",
				TurnId:    "turn-7",
				Timestamp: "2026-01-14T17:02:00Z",
				Source:    pioneerv1.ThreadContextSource_THREAD_CONTEXT_SOURCE_RELATED_THREAD,
				Score:     0.82,
				Boundary:  "snippet",
			},
			Artifacts: []*pioneerv1.ArtifactRef{{
				ArtifactId:  "art-plan",
				VersionId:   proto.String("v3"),
				DisplayName: "plan.md",
				Kind:        "document",
				MimeType:    proto.String("text/markdown"),
				SizeBytes:   proto.Int64(4096),
				Role:        proto.String("assistant"),
			}},
		}},
		HiddenToolDomains: []*pioneerv1.HiddenToolDomain{
			{Domain: "task", Tools: []string{"task_start", "task_wait"}},
			{Domain: "artifact", Tools: []string{"artifact_read"}},
		},
		Permissions: &pioneerv1.PermissionProfile{
			Mode: pioneerv1.PermissionMode_PERMISSION_MODE_ASK,
			Rules: []*pioneerv1.PermissionRule{
				{Category: "file_write", Decision: pioneerv1.PermissionDecision_PERMISSION_DECISION_ALLOW},
				{Category: "shell", Decision: pioneerv1.PermissionDecision_PERMISSION_DECISION_ASK},
				{Category: "network", Decision: pioneerv1.PermissionDecision_PERMISSION_DECISION_DENY},
			},
			AllowedTools: []string{"read_file", "write_file"},
			DeniedTools:  []string{"curl"},
			AllowedPaths: []string{"clients/go"},
		},
		DynamicSections: []*pioneerv1.DynamicSection{{
			Id:         "workspace.git_status",
			Title:      proto.String("Git Status"),
			Content:    fmt.Sprintf("On branch main; %d files changed.", round+1),
			HookSource: hook,
		}},
		HookSources: []*pioneerv1.HookSource{hook},
	}
}

// ReadFileTool is a model-visible tool with an object JSON schema.
func ReadFileTool() *pioneerv1.ToolDefinition {
	params, err := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path": map[string]any{"type": "string", "description": "Path relative to the workspace."},
		},
		"required":             []any{"path"},
		"additionalProperties": false,
	})
	if err != nil {
		panic(err)
	}
	return &pioneerv1.ToolDefinition{
		Name:        "read_file",
		Description: "Read a UTF-8 text file from the workspace.",
		Parameters:  params,
	}
}

// AssistantReply is the stand-in for a model answer in round n.
func AssistantReply(round int) string {
	return fmt.Sprintf("Round %d: I read the files you named and the tests pass. Next I will update the README.", round)
}

// UserMessage is the user's message opening round n.
func UserMessage(round int) string {
	return fmt.Sprintf("Round %d: please check the Go client and tell me what is left.", round)
}
