// Switchboard from Go, with the client generated from proto/ by protoc-gen-go
// and protoc-gen-go-grpc.
//
// Creates an integration (the bundled example MCP server), an agent with a
// client-side tool and a thread; runs the agent and prints the streamed
// events; when the run pauses for the client tool, runs it here, sends the
// result and prints the resumed run. Exits non-zero when an expected event is
// missing.
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
	"google.golang.org/protobuf/types/known/structpb"

	mcpv1 "switchboard.dev/gen/go/switchboard/mcp/v1"
	runsv1 "switchboard.dev/gen/go/switchboard/runs/v1"
)

const (
	clientTool       = "get_local_time"
	clientToolResult = "12:00 in Paris"
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

func run(ctx context.Context) error {
	mcpConn := dial(setting("SWITCHBOARD_MCP_ADDR", "127.0.0.1:50051"))
	defer mcpConn.Close()
	runsConn := dial(setting("SWITCHBOARD_RUNS_ADDR", "127.0.0.1:50052"))
	defer runsConn.Close()
	mcp := mcpv1.NewMcpServiceClient(mcpConn)
	runs := runsv1.NewRunsServiceClient(runsConn)

	created, err := mcp.CreateIntegration(ctx, &mcpv1.CreateIntegrationRequest{
		DisplayName: "Example MCP server",
		Slug:        setting("EXAMPLE_SLUG", "example"),
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
	var answer strings.Builder
	var done *runsv1.Run
	for _, event := range resumed {
		answer.WriteString(event.GetTextDelta().GetText())
		if c := event.GetRunCompleted(); c != nil {
			done = c.GetRun()
		}
	}
	if done.GetStatus() != runsv1.RunStatus_RUN_STATUS_COMPLETED {
		return errors.New("the resumed run did not complete")
	}
	if !strings.Contains(answer.String(), clientToolResult) {
		return fmt.Errorf("the answer does not use the client tool's result: %q", answer.String())
	}
	fmt.Printf("answer: %s\n", answer.String())
	return nil
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
