// Switchboard from TypeScript, with the client generated from proto/ by
// protoc-gen-es and called over gRPC with Connect.
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
//     cd examples/typescript && SWITCHBOARD_TOKEN=... npm start
//
// Settings (environment): SWITCHBOARD_MCP_ADDR (127.0.0.1:50051),
// SWITCHBOARD_RUNS_ADDR (127.0.0.1:50052), SWITCHBOARD_TOKEN (required),
// EXAMPLE_MCP_URL (http://127.0.0.1:8931/mcp), EXAMPLE_SLUG (example),
// EXAMPLE_MODEL_PROVIDER (scripted), EXAMPLE_MODEL (scripted-model).

import { randomUUID } from "node:crypto";

import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import { McpService } from "./gen/switchboard/mcp/v1/mcp_pb.js";
import { PolicyEffect, PolicyService } from "./gen/switchboard/mcp/v1/policy_pb.js";
import {
  type ExecuteRunRequest,
  ExecuteRunRequestSchema,
  type ExecuteRunResponse,
  RunStatus,
  RunsService,
  ToolCallStatus,
} from "./gen/switchboard/runs/v1/runs_pb.js";

const CLIENT_TOOL = "get_local_time";
const CLIENT_TOOL_RESULT = "12:00 in Paris";
const APPROVAL_POLICY = "example-approvals";
const APPROVAL_COMMENT = "approved by the typescript example";

type Runs = Client<typeof RunsService>;
type Policies = Client<typeof PolicyService>;

function setting(name: string, fallback?: string): string {
  const value = process.env[name] ?? fallback;
  if (value === undefined) {
    throw new Error(`${name} is required`);
  }
  return value;
}

function fail(message: string): never {
  throw new Error(`example failed: ${message}`);
}

function transport(address: string, token: string) {
  const bearer: Interceptor = (next) => (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
  return createGrpcTransport({ baseUrl: `http://${address}`, interceptors: [bearer] });
}

/** The event's name as the contract spells it: `runStarted` → `run_started`. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function describe(event: ExecuteRunResponse): string {
  const e = event.event;
  switch (e.case) {
    case "textDelta":
      return `text_delta ${JSON.stringify(e.value.text)}`;
    case "toolCallStarted":
      return `tool_call_started ${e.value.toolName} ${JSON.stringify(e.value.arguments ?? {})}`;
    case "toolCallFinished":
      return `tool_call_finished ${e.value.toolName} ${ToolCallStatus[e.value.status]}: ${JSON.stringify(e.value.result.slice(0, 80))}`;
    case "toolApprovalRequired":
      return `tool_approval_required ${e.value.toolName} ${e.value.rule}`;
    case "clientToolCallsRequired":
      return `client_tool_calls_required ${e.value.toolCalls.map((c) => c.name).join(", ")}`;
    case "runStarted":
    case "runCompleted":
    case "runFailed":
      return `${snake(e.case)} run=${e.value.run?.id} status=${RunStatus[e.value.run?.status ?? 0]}`;
    default:
      return snake(e.case ?? "unknown");
  }
}

async function execute(runs: Runs, request: ExecuteRunRequest): Promise<ExecuteRunResponse[]> {
  const events: ExecuteRunResponse[] = [];
  for await (const event of runs.executeRun(request, { timeoutMs: 120_000 })) {
    console.log(`  ${describe(event)}`);
    events.push(event);
  }
  return events;
}

function endedRun(events: ExecuteRunResponse[]) {
  return events.flatMap((e) => (e.event.case === "runCompleted" ? [e.event.value.run] : []))[0];
}

/** The answer a run streamed, once it completed. */
function completedAnswer(events: ExecuteRunResponse[], what: string): string {
  if (endedRun(events)?.status !== RunStatus.COMPLETED) fail(`${what} did not complete`);
  return events.map((e) => (e.event.case === "textDelta" ? e.event.value.text : "")).join("");
}

async function runWithClientTool(runs: Runs, threadId: string): Promise<void> {
  console.log("run:");
  const first = await execute(
    runs,
    create(ExecuteRunRequestSchema, {
      threadId,
      input: { case: "userMessage", value: { text: "What time is it in Paris?" } },
      requestId: randomUUID(),
    }),
  );
  const mcpCall = first.find(
    (e) =>
      e.event.case === "toolCallFinished" &&
      e.event.value.status === ToolCallStatus.SUCCEEDED &&
      e.event.value.toolName.includes("__"),
  );
  if (!mcpCall) fail("no MCP tool call succeeded");
  const required = first.flatMap((e) => (e.event.case === "clientToolCallsRequired" ? [e.event.value] : []));
  if (required[0]?.toolCalls[0]?.name !== CLIENT_TOOL) fail(`the run did not pause for ${CLIENT_TOOL}`);
  const paused = endedRun(first);
  if (paused?.status !== RunStatus.REQUIRES_ACTION) fail("the run did not end in requires_action");

  console.log(`client tool ${CLIENT_TOOL} answers ${JSON.stringify(CLIENT_TOOL_RESULT)}; resuming:`);
  const resumed = await execute(
    runs,
    create(ExecuteRunRequestSchema, {
      threadId,
      input: {
        case: "clientToolResults",
        value: {
          runId: paused.id,
          results: required[0].toolCalls.map((call) => ({ toolCallId: call.id, content: CLIENT_TOOL_RESULT })),
        },
      },
    }),
  );
  const answer = completedAnswer(resumed, "the resumed run");
  if (!answer.includes(CLIENT_TOOL_RESULT)) fail(`the answer does not use the client tool's result: ${answer}`);
  console.log(`answer: ${answer}`);
}

/**
 * Destructive tools (`sleep` has no annotations, so it counts as one) wait
 * for an admin's approval; an admin may approve their own call.
 */
async function writeApprovalPolicy(policies: Policies): Promise<bigint> {
  const { policy } = await policies.putPolicy({
    policy: {
      name: APPROVAL_POLICY,
      rules: [
        {
          name: "destructive",
          condition: "request.kind == 'tool' && tool.destructive",
          effect: PolicyEffect.REQUIRE_APPROVAL,
          reason: "destructive tools need an admin's approval",
          approverRole: "admin",
          callerMayApprove: true,
        },
      ],
    },
  });
  console.log(`policy ${policy?.name}@${policy?.version}`);
  return policy?.version ?? fail("no policy");
}

async function deleteApprovalPolicy(policies: Policies, version: bigint): Promise<void> {
  await policies.deletePolicy({ name: APPROVAL_POLICY, expectedVersion: version });
  console.log(`policy ${APPROVAL_POLICY} deleted`);
}

async function runWithApproval(runs: Runs, threadId: string, tool: string): Promise<void> {
  console.log("run:");
  const first = await execute(
    runs,
    create(ExecuteRunRequestSchema, {
      threadId,
      input: { case: "userMessage", value: { text: "Sleep for a millisecond." } },
      requestId: randomUUID(),
    }),
  );
  const asked = first.flatMap((e) => (e.event.case === "toolApprovalRequired" ? [e.event.value] : []));
  if (asked[0]?.toolName !== tool) fail(`the run did not pause for an approval of ${tool}`);
  const paused = endedRun(first);
  if (paused?.status !== RunStatus.REQUIRES_ACTION) fail("the run did not end in requires_action");
  if (!asked[0].requesterMayApprove) {
    fail(`only another ${asked[0].approverRole} may approve ${asked[0].approvalId}`);
  }

  // `approve` set: the caller decides here, as the rule lets them; unset,
  // the run would go on with what an approver decided elsewhere
  // (ApprovalService.DecideApproval, `switchboard approvals approve`).
  console.log(`approving ${asked[0].approvalId}; resuming:`);
  const resumed = await execute(
    runs,
    create(ExecuteRunRequestSchema, {
      threadId,
      input: {
        case: "clientToolResults",
        value: {
          runId: paused.id,
          approvalDecisions: asked.map((a) => ({ toolCallId: a.toolCallId, approve: true, comment: APPROVAL_COMMENT })),
        },
      },
    }),
  );
  const ran = resumed.find(
    (e) =>
      e.event.case === "toolCallFinished" &&
      e.event.value.toolName === tool &&
      e.event.value.status === ToolCallStatus.SUCCEEDED,
  );
  if (!ran) fail(`${tool} did not run once approved`);
  console.log(`answer: ${completedAnswer(resumed, "the approved run")}`);
}

async function main(): Promise<void> {
  const token = setting("SWITCHBOARD_TOKEN");
  const mcpTransport = transport(setting("SWITCHBOARD_MCP_ADDR", "127.0.0.1:50051"), token);
  const mcp = createClient(McpService, mcpTransport);
  const policies = createClient(PolicyService, mcpTransport);
  const runs = createClient(RunsService, transport(setting("SWITCHBOARD_RUNS_ADDR", "127.0.0.1:50052"), token));
  const slug = setting("EXAMPLE_SLUG", "example");

  const { integration } = await mcp.createIntegration({
    displayName: "Example MCP server",
    slug,
    source: {
      case: "custom",
      value: {
        transport: {
          kind: {
            case: "streamableHttp",
            value: { url: setting("EXAMPLE_MCP_URL", "http://127.0.0.1:8931/mcp") },
          },
        },
      },
    },
    requestId: `example-integration-${randomUUID()}`,
  });
  console.log(`integration ${integration?.id} (${integration?.slug})`);

  const { agent } = await runs.createAgent({
    agent: {
      name: "typescript example",
      instructions: "Use the tools to answer.",
      model: {
        provider: setting("EXAMPLE_MODEL_PROVIDER", "scripted"),
        model: setting("EXAMPLE_MODEL", "scripted-model"),
      },
      mcpIntegrationIds: [integration?.id ?? fail("no integration")],
      clientTools: [
        {
          name: CLIENT_TOOL,
          description: "The local time in a city, told by the caller.",
          parametersSchema: {
            type: "object",
            properties: { city: { type: "string" } },
            required: ["city"],
          },
        },
      ],
    },
    requestId: randomUUID(),
  });
  console.log(`agent ${agent?.id}`);

  const { thread } = await runs.createThread({ agentId: agent?.id ?? fail("no agent"), title: "typescript example" });
  const threadId = thread?.id ?? fail("no thread");
  console.log(`thread ${threadId}`);

  await runWithClientTool(runs, threadId);

  const version = await writeApprovalPolicy(policies);
  try {
    await runWithApproval(runs, threadId, `${slug}__sleep`);
  } finally {
    await deleteApprovalPolicy(policies, version);
  }
  console.log("typescript example: ok");
}

main().catch((error: unknown) => {
  if (error instanceof ConnectError) {
    console.error(`example failed: ${Code[error.code]}: ${error.rawMessage}`);
  } else {
    console.error(error instanceof Error ? error.message : error);
  }
  process.exit(1);
});
