// Switchboard from Go, with the client generated from proto/ by protoc-gen-go
// and protoc-gen-go-grpc.
//
// Creates an integration (the bundled example MCP server), an agent with a
// client-side tool and a thread; runs the agent and prints the streamed
// events; when the run pauses for the client tool, runs it here, sends the
// result and prints the resumed run. Then an approval round: writes a policy
// that gates destructive tools behind an admin's approval, asks for the
// example server's `sleep` tool, approves the paused call on resume and
// prints the result; the policy is deleted again at the end. Exits non-zero
// when an expected event is missing.
//
// Generate the client first (`make clients`), then, with the services running
// (`make run` prints a token):
//
//	cd examples/go && SWITCHBOARD_TOKEN=... go run .
//
// Settings (environment): SWITCHBOARD_MCP_ADDR (127.0.0.1:50051),
// SWITCHBOARD_RUNS_ADDR (127.0.0.1:50052), SWITCHBOARD_TOKEN (required),
// EXAMPLE_MCP_URL (http://127.0.0.1:8931/mcp), EXAMPLE_SLUG (example),
// EXAMPLE_MODEL_PROVIDER (scripted), EXAMPLE_MODEL (scripted-model).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	mcpv1 "switchboard.dev/gen/go/switchboard/mcp/v1"
	runsv1 "switchboard.dev/gen/go/switchboard/runs/v1"
)

const (
	clientTool       = "get_local_time"
	clientToolResult = "12:00 in Paris"
	approvalPolicy   = "example-approvals"
	approvalComment  = "approved by the go example"
)

func setting(name, fallback string) string {
	if value, ok := os.LookupEnv(name); ok {
		return value
	}
	if fallback == "" {
		fmt.Fprintf(os.Stderr, "%s is required\n", name)
		os.Exit(2)
	}
	return fallback
}

// requestID is a fresh idempotency key.
func requestID() string {
	return rand.Text()
}

func dial(address string) *grpc.ClientConn {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "example failed: %s: %v\n", address, err)
		os.Exit(1)
	}
	return conn
}

func describe(event *runsv1.ExecuteRunResponse) string {
	switch e := event.Event.(type) {
	case *runsv1.ExecuteRunResponse_TextDelta:
		return fmt.Sprintf("text_delta %q", e.TextDelta.GetText())
	case *runsv1.ExecuteRunResponse_ToolCallStarted:
		return fmt.Sprintf("tool_call_started %s %v", e.ToolCallStarted.GetToolName(), e.ToolCallStarted.GetArguments().AsMap())
	case *runsv1.ExecuteRunResponse_ToolCallFinished:
		result := e.ToolCallFinished.GetResult()
		if len(result) > 80 {
			result = result[:80]
		}
		return fmt.Sprintf("tool_call_finished %s %s: %q", e.ToolCallFinished.GetToolName(), e.ToolCallFinished.GetStatus(), result)
	case *runsv1.ExecuteRunResponse_ToolApprovalRequired:
		return fmt.Sprintf("tool_approval_required %s %s", e.ToolApprovalRequired.GetToolName(), e.ToolApprovalRequired.GetRule())
	case *runsv1.ExecuteRunResponse_ClientToolCallsRequired:
		names := []string{}
		for _, call := range e.ClientToolCallsRequired.GetToolCalls() {
			names = append(names, call.GetName())
		}
		return "client_tool_calls_required " + strings.Join(names, ", ")
	case *runsv1.ExecuteRunResponse_RunStarted:
		return fmt.Sprintf("run_started run=%s status=%s", e.RunStarted.GetRun().GetId(), e.RunStarted.GetRun().GetStatus())
	case *runsv1.ExecuteRunResponse_RunCompleted:
		return fmt.Sprintf("run_completed run=%s status=%s", e.RunCompleted.GetRun().GetId(), e.RunCompleted.GetRun().GetStatus())
	case *runsv1.ExecuteRunResponse_RunFailed:
		return fmt.Sprintf("run_failed run=%s error=%s", e.RunFailed.GetRun().GetId(), e.RunFailed.GetError())
	default:
		return fmt.Sprintf("%T", e)
	}
}

func execute(ctx context.Context, runs runsv1.RunsServiceClient, request *runsv1.ExecuteRunRequest) ([]*runsv1.ExecuteRunResponse, error) {
	stream, err := runs.ExecuteRun(ctx, request)
	if err != nil {
		return nil, err
	}
	var events []*runsv1.ExecuteRunResponse
	for {
		event, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return nil, err
		}
		fmt.Println("  " + describe(event))
		events = append(events, event)
	}
}

// endedRun is the run a stream's run_completed carries, nil without one.
func endedRun(events []*runsv1.ExecuteRunResponse) *runsv1.Run {
	for _, event := range events {
		if c := event.GetRunCompleted(); c != nil {
			return c.GetRun()
		}
	}
	return nil
}

// completedAnswer is the answer a run streamed, once it completed.
func completedAnswer(events []*runsv1.ExecuteRunResponse, what string) (string, error) {
	if endedRun(events).GetStatus() != runsv1.RunStatus_RUN_STATUS_COMPLETED {
		return "", fmt.Errorf("%s did not complete", what)
	}
	var answer strings.Builder
	for _, event := range events {
		answer.WriteString(event.GetTextDelta().GetText())
	}
	return answer.String(), nil
}

func runWithClientTool(ctx context.Context, runs runsv1.RunsServiceClient, threadID string) error {
	fmt.Println("run:")
	first, err := execute(ctx, runs, &runsv1.ExecuteRunRequest{
		ThreadId:  threadID,
		Input:     &runsv1.ExecuteRunRequest_UserMessage{UserMessage: &runsv1.UserMessageInput{Text: "What time is it in Paris?"}},
		RequestId: requestID(),
	})
	if err != nil {
		return err
	}
	var mcpCalled bool
	var required *runsv1.ClientToolCallsRequired
	var paused *runsv1.Run
	for _, event := range first {
		if f := event.GetToolCallFinished(); f != nil && f.GetStatus() == runsv1.ToolCallStatus_TOOL_CALL_STATUS_SUCCEEDED && strings.Contains(f.GetToolName(), "__") {
			mcpCalled = true
		}
		if r := event.GetClientToolCallsRequired(); r != nil {
			required = r
		}
		if c := event.GetRunCompleted(); c != nil {
			paused = c.GetRun()
		}
	}
	if !mcpCalled {
		return errors.New("no MCP tool call succeeded")
	}
	if required == nil || len(required.GetToolCalls()) == 0 || required.GetToolCalls()[0].GetName() != clientTool {
		return fmt.Errorf("the run did not pause for %s", clientTool)
	}
	if paused.GetStatus() != runsv1.RunStatus_RUN_STATUS_REQUIRES_ACTION {
		return errors.New("the run did not end in requires_action")
	}

	fmt.Printf("client tool %s answers %q; resuming:\n", clientTool, clientToolResult)
	var results []*runsv1.ClientToolResult
	for _, call := range required.GetToolCalls() {
		results = append(results, &runsv1.ClientToolResult{ToolCallId: call.GetId(), Content: clientToolResult})
	}
	resumed, err := execute(ctx, runs, &runsv1.ExecuteRunRequest{
		ThreadId: threadID,
		Input: &runsv1.ExecuteRunRequest_ClientToolResults{ClientToolResults: &runsv1.ClientToolResultsInput{
			RunId: paused.GetId(), Results: results,
		}},
	})
	if err != nil {
		return err
	}
	answer, err := completedAnswer(resumed, "the resumed run")
	if err != nil {
		return err
	}
	if !strings.Contains(answer, clientToolResult) {
		return fmt.Errorf("the answer does not use the client tool's result: %q", answer)
	}
	fmt.Printf("answer: %s\n", answer)
	return nil
}

// writeApprovalPolicy makes destructive tools (`sleep` has no annotations, so
// it counts as one) wait for an admin's approval; an admin may approve their
// own call. It returns the policy's version.
func writeApprovalPolicy(ctx context.Context, policies mcpv1.PolicyServiceClient) (int64, error) {
	written, err := policies.PutPolicy(ctx, &mcpv1.PutPolicyRequest{Policy: &mcpv1.Policy{
		Name: approvalPolicy,
		Rules: []*mcpv1.PolicyRule{{
			Name:             "destructive",
			Condition:        "request.kind == 'tool' && tool.destructive",
			Effect:           mcpv1.PolicyEffect_POLICY_EFFECT_REQUIRE_APPROVAL,
			Reason:           "destructive tools need an admin's approval",
			ApproverRole:     "admin",
			CallerMayApprove: true,
		}},
	}})
	if err != nil {
		return 0, err
	}
	fmt.Printf("policy %s@%d\n", written.GetPolicy().GetName(), written.GetPolicy().GetVersion())
	return written.GetPolicy().GetVersion(), nil
}

func deleteApprovalPolicy(ctx context.Context, policies mcpv1.PolicyServiceClient, version int64) error {
	if _, err := policies.DeletePolicy(ctx, &mcpv1.DeletePolicyRequest{Name: approvalPolicy, ExpectedVersion: version}); err != nil {
		return err
	}
	fmt.Printf("policy %s deleted\n", approvalPolicy)
	return nil
}

func runWithApproval(ctx context.Context, runs runsv1.RunsServiceClient, threadID, tool string) error {
	fmt.Println("run:")
	first, err := execute(ctx, runs, &runsv1.ExecuteRunRequest{
		ThreadId:  threadID,
		Input:     &runsv1.ExecuteRunRequest_UserMessage{UserMessage: &runsv1.UserMessageInput{Text: "Sleep for a millisecond."}},
		RequestId: requestID(),
	})
	if err != nil {
		return err
	}
	var asked []*runsv1.ToolApprovalRequired
	for _, event := range first {
		if a := event.GetToolApprovalRequired(); a != nil {
			asked = append(asked, a)
		}
	}
	if len(asked) == 0 || asked[0].GetToolName() != tool {
		return fmt.Errorf("the run did not pause for an approval of %s", tool)
	}
	paused := endedRun(first)
	if paused.GetStatus() != runsv1.RunStatus_RUN_STATUS_REQUIRES_ACTION {
		return errors.New("the run did not end in requires_action")
	}
	if !asked[0].GetRequesterMayApprove() {
		return fmt.Errorf("only another %s may approve %s", asked[0].GetApproverRole(), asked[0].GetApprovalId())
	}

	// Approve set: the caller decides here, as the rule lets them; unset, the
	// run would go on with what an approver decided elsewhere
	// (ApprovalService.DecideApproval, `switchboard approvals approve`).
	fmt.Printf("approving %s; resuming:\n", asked[0].GetApprovalId())
	var decisions []*runsv1.ToolApprovalDecision
	for _, a := range asked {
		decisions = append(decisions, &runsv1.ToolApprovalDecision{ToolCallId: a.GetToolCallId(), Approve: proto.Bool(true), Comment: approvalComment})
	}
	resumed, err := execute(ctx, runs, &runsv1.ExecuteRunRequest{
		ThreadId: threadID,
		Input: &runsv1.ExecuteRunRequest_ClientToolResults{ClientToolResults: &runsv1.ClientToolResultsInput{
			RunId: paused.GetId(), ApprovalDecisions: decisions,
		}},
	})
	if err != nil {
		return err
	}
	var ran bool
	for _, event := range resumed {
		if f := event.GetToolCallFinished(); f != nil && f.GetToolName() == tool && f.GetStatus() == runsv1.ToolCallStatus_TOOL_CALL_STATUS_SUCCEEDED {
			ran = true
		}
	}
	if !ran {
		return fmt.Errorf("%s did not run once approved", tool)
	}
	answer, err := completedAnswer(resumed, "the approved run")
	if err != nil {
		return err
	}
	fmt.Printf("answer: %s\n", answer)
	return nil
}

func run(ctx context.Context) error {
	mcpConn := dial(setting("SWITCHBOARD_MCP_ADDR", "127.0.0.1:50051"))
	defer mcpConn.Close()
	runsConn := dial(setting("SWITCHBOARD_RUNS_ADDR", "127.0.0.1:50052"))
	defer runsConn.Close()
	mcp := mcpv1.NewMcpServiceClient(mcpConn)
	policies := mcpv1.NewPolicyServiceClient(mcpConn)
	runs := runsv1.NewRunsServiceClient(runsConn)
	slug := setting("EXAMPLE_SLUG", "example")

	created, err := mcp.CreateIntegration(ctx, &mcpv1.CreateIntegrationRequest{
		DisplayName: "Example MCP server",
		Slug:        slug,
		Source: &mcpv1.CreateIntegrationRequest_Custom{Custom: &mcpv1.CustomIntegrationSpec{
			Transport: &mcpv1.Transport{Kind: &mcpv1.Transport_StreamableHttp{
				StreamableHttp: &mcpv1.StreamableHttpTransport{Url: setting("EXAMPLE_MCP_URL", "http://127.0.0.1:8931/mcp")},
			}},
		}},
		RequestId: "example-integration-" + requestID(),
	})
	if err != nil {
		return err
	}
	integration := created.GetIntegration()
	fmt.Printf("integration %s (%s)\n", integration.GetId(), integration.GetSlug())

	schema, err := structpb.NewStruct(map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []any{"city"},
	})
	if err != nil {
		return err
	}
	agent, err := runs.CreateAgent(ctx, &runsv1.CreateAgentRequest{
		Agent: &runsv1.Agent{
			Name:              "go example",
			Instructions:      "Use the tools to answer.",
			Model:             &runsv1.ModelRef{Provider: setting("EXAMPLE_MODEL_PROVIDER", "scripted"), Model: setting("EXAMPLE_MODEL", "scripted-model")},
			McpIntegrationIds: []string{integration.GetId()},
			ClientTools: []*runsv1.ClientTool{{
				Name:             clientTool,
				Description:      "The local time in a city, told by the caller.",
				ParametersSchema: schema,
			}},
		},
		RequestId: requestID(),
	})
	if err != nil {
		return err
	}
	fmt.Printf("agent %s\n", agent.GetAgent().GetId())

	thread, err := runs.CreateThread(ctx, &runsv1.CreateThreadRequest{AgentId: agent.GetAgent().GetId(), Title: "go example"})
	if err != nil {
		return err
	}
	threadID := thread.GetThread().GetId()
	fmt.Printf("thread %s\n", threadID)

	if err := runWithClientTool(ctx, runs, threadID); err != nil {
		return err
	}

	version, err := writeApprovalPolicy(ctx, policies)
	if err != nil {
		return err
	}
	err = runWithApproval(ctx, runs, threadID, slug+"__sleep")
	// The policy goes again whatever the round did, so that the organization
	// is left as it was.
	return errors.Join(err, deleteApprovalPolicy(ctx, policies, version))
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+setting("SWITCHBOARD_TOKEN", ""))
	if err := run(ctx); err != nil {
		if s, ok := status.FromError(err); ok {
			fmt.Fprintf(os.Stderr, "example failed: %s: %s\n", s.Code(), s.Message())
		} else {
			fmt.Fprintf(os.Stderr, "example failed: %v\n", err)
		}
		os.Exit(1)
	}
	fmt.Println("go example: ok")
}
