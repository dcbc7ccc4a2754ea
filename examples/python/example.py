"""Switchboard from Python, with the client generated from proto/ by grpcio-tools.

Creates an integration (the bundled example MCP server), an agent with a
client-side tool and a thread; runs the agent and prints the streamed events;
when the run pauses for the client tool, runs it here, sends the result and
prints the resumed run. Then an approval round: writes a policy that gates
destructive tools behind an admin's approval, asks for the example server's
`sleep` tool, approves the paused call on resume and prints the result; the
policy is deleted again at the end. Exits non-zero when an expected event is
missing.

Generate the client first (`make clients`), then, with the services running
(`make run` prints a token):

    SWITCHBOARD_TOKEN=... .tools/venv/bin/python examples/python/example.py

Settings (environment): SWITCHBOARD_MCP_ADDR (127.0.0.1:50051),
SWITCHBOARD_RUNS_ADDR (127.0.0.1:50052), SWITCHBOARD_TOKEN (required),
EXAMPLE_MCP_URL (http://127.0.0.1:8931/mcp), EXAMPLE_SLUG (example),
EXAMPLE_MODEL_PROVIDER (scripted), EXAMPLE_MODEL (scripted-model).
"""

import os
import sys
import uuid

import grpc
from google.protobuf import json_format, struct_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

from switchboard.mcp.v1 import mcp_pb2, mcp_pb2_grpc, policy_pb2, policy_pb2_grpc  # noqa: E402
from switchboard.runs.v1 import runs_pb2, runs_pb2_grpc  # noqa: E402

CLIENT_TOOL = "get_local_time"
CLIENT_TOOL_RESULT = "12:00 in Paris"
APPROVAL_POLICY = "example-approvals"
APPROVAL_COMMENT = "approved by the python example"


def setting(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise SystemExit(f"{name} is required")
    return value


def fail(message: str) -> None:
    raise SystemExit(f"example failed: {message}")


def create_integration(mcp, auth, slug: str, url: str) -> str:
    request = mcp_pb2.CreateIntegrationRequest(
        display_name="Example MCP server",
        slug=slug,
        custom=mcp_pb2.CustomIntegrationSpec(
            transport=mcp_pb2.Transport(
                streamable_http=mcp_pb2.StreamableHttpTransport(url=url)
            )
        ),
        request_id=f"example-integration-{uuid.uuid4()}",
    )
    integration = mcp.CreateIntegration(request, metadata=auth, timeout=30).integration
    print(f"integration {integration.id} ({integration.slug})")
    return integration.id


def create_agent(runs, auth, integration_id: str) -> str:
    schema = struct_pb2.Struct()
    schema.update(
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    )
    agent = runs_pb2.Agent(
        name="python example",
        instructions="Use the tools to answer.",
        model=runs_pb2.ModelRef(
            provider=setting("EXAMPLE_MODEL_PROVIDER", "scripted"),
            model=setting("EXAMPLE_MODEL", "scripted-model"),
        ),
        mcp_integration_ids=[integration_id],
        client_tools=[
            runs_pb2.ClientTool(
                name=CLIENT_TOOL,
                description="The local time in a city, told by the caller.",
                parameters_schema=schema,
            )
        ],
    )
    request = runs_pb2.CreateAgentRequest(agent=agent, request_id=str(uuid.uuid4()))
    agent = runs.CreateAgent(request, metadata=auth, timeout=30).agent
    print(f"agent {agent.id}")
    return agent.id


def print_event(event) -> None:
    kind = event.WhichOneof("event")
    if kind == "text_delta":
        print(f"  text_delta {event.text_delta.text!r}")
    elif kind == "tool_call_started":
        call = event.tool_call_started
        arguments = json_format.MessageToDict(call.arguments)
        print(f"  tool_call_started {call.tool_name} {arguments}")
    elif kind == "tool_call_finished":
        call = event.tool_call_finished
        status = runs_pb2.ToolCallStatus.Name(call.status)
        print(f"  tool_call_finished {call.tool_name} {status}: {call.result[:80]!r}")
    elif kind == "tool_approval_required":
        asked = event.tool_approval_required
        print(f"  tool_approval_required {asked.tool_name} {asked.rule}")
    elif kind == "client_tool_calls_required":
        names = ", ".join(c.name for c in event.client_tool_calls_required.tool_calls)
        print(f"  client_tool_calls_required {names}")
    elif kind in ("run_started", "run_completed", "run_failed"):
        run = getattr(event, kind).run
        print(f"  {kind} run={run.id} status={runs_pb2.RunStatus.Name(run.status)}")
    else:
        print(f"  {kind}")


def execute(runs, auth, request) -> list:
    events = []
    for event in runs.ExecuteRun(request, metadata=auth, timeout=120):
        print_event(event)
        events.append(event)
    return events


def of_kind(events, kind: str) -> list:
    return [getattr(e, kind) for e in events if e.WhichOneof("event") == kind]


def completed_answer(events, what: str) -> str:
    """The answer a run streamed, once it completed."""
    done = of_kind(events, "run_completed")
    if not done or done[0].run.status != runs_pb2.RUN_STATUS_COMPLETED:
        fail(f"{what} did not complete")
    return "".join(d.text for d in of_kind(events, "text_delta"))


def run_with_client_tool(runs, auth, thread_id: str) -> None:
    print("run:")
    first = execute(
        runs,
        auth,
        runs_pb2.ExecuteRunRequest(
            thread_id=thread_id,
            user_message=runs_pb2.UserMessageInput(text="What time is it in Paris?"),
            request_id=str(uuid.uuid4()),
        ),
    )
    mcp_calls = [
        f
        for f in of_kind(first, "tool_call_finished")
        if f.status == runs_pb2.TOOL_CALL_STATUS_SUCCEEDED and "__" in f.tool_name
    ]
    if not mcp_calls:
        fail("no MCP tool call succeeded")
    required = of_kind(first, "client_tool_calls_required")
    if not required or required[0].tool_calls[0].name != CLIENT_TOOL:
        fail(f"the run did not pause for {CLIENT_TOOL}")
    paused = of_kind(first, "run_completed")
    if not paused or paused[0].run.status != runs_pb2.RUN_STATUS_REQUIRES_ACTION:
        fail("the run did not end in requires_action")

    print(f"client tool {CLIENT_TOOL} answers {CLIENT_TOOL_RESULT!r}; resuming:")
    results = [
        runs_pb2.ClientToolResult(tool_call_id=call.id, content=CLIENT_TOOL_RESULT)
        for call in required[0].tool_calls
    ]
    resumed = execute(
        runs,
        auth,
        runs_pb2.ExecuteRunRequest(
            thread_id=thread_id,
            client_tool_results=runs_pb2.ClientToolResultsInput(
                run_id=paused[0].run.id, results=results
            ),
        ),
    )
    answer = completed_answer(resumed, "the resumed run")
    if CLIENT_TOOL_RESULT not in answer:
        fail(f"the answer does not use the client tool's result: {answer!r}")
    print(f"answer: {answer}")


def write_approval_policy(policies, auth) -> int:
    """Destructive tools (`sleep` has no annotations, so it counts as one)
    wait for an admin's approval; an admin may approve their own call."""
    rule = policy_pb2.PolicyRule(
        name="destructive",
        condition="request.kind == 'tool' && tool.destructive",
        effect=policy_pb2.POLICY_EFFECT_REQUIRE_APPROVAL,
        reason="destructive tools need an admin's approval",
        approver_role="admin",
        caller_may_approve=True,
    )
    request = policy_pb2.PutPolicyRequest(
        policy=policy_pb2.Policy(name=APPROVAL_POLICY, rules=[rule])
    )
    policy = policies.PutPolicy(request, metadata=auth, timeout=30).policy
    print(f"policy {policy.name}@{policy.version}")
    return policy.version


def delete_approval_policy(policies, auth, version: int) -> None:
    request = policy_pb2.DeletePolicyRequest(name=APPROVAL_POLICY, expected_version=version)
    policies.DeletePolicy(request, metadata=auth, timeout=30)
    print(f"policy {APPROVAL_POLICY} deleted")


def run_with_approval(runs, auth, thread_id: str, tool: str) -> None:
    print("run:")
    first = execute(
        runs,
        auth,
        runs_pb2.ExecuteRunRequest(
            thread_id=thread_id,
            user_message=runs_pb2.UserMessageInput(text="Sleep for a millisecond."),
            request_id=str(uuid.uuid4()),
        ),
    )
    asked = of_kind(first, "tool_approval_required")
    if not asked or asked[0].tool_name != tool:
        fail(f"the run did not pause for an approval of {tool}")
    paused = of_kind(first, "run_completed")
    if not paused or paused[0].run.status != runs_pb2.RUN_STATUS_REQUIRES_ACTION:
        fail("the run did not end in requires_action")
    if not asked[0].requester_may_approve:
        fail(f"only another {asked[0].approver_role} may approve {asked[0].approval_id}")

    # `approve` set: the caller decides here, as the rule lets them; unset,
    # the run would go on with what an approver decided elsewhere
    # (ApprovalService.DecideApproval, `switchboard approvals approve`).
    print(f"approving {asked[0].approval_id}; resuming:")
    decisions = [
        runs_pb2.ToolApprovalDecision(
            tool_call_id=a.tool_call_id, approve=True, comment=APPROVAL_COMMENT
        )
        for a in asked
    ]
    resumed = execute(
        runs,
        auth,
        runs_pb2.ExecuteRunRequest(
            thread_id=thread_id,
            client_tool_results=runs_pb2.ClientToolResultsInput(
                run_id=paused[0].run.id, approval_decisions=decisions
            ),
        ),
    )
    ran = [
        f
        for f in of_kind(resumed, "tool_call_finished")
        if f.tool_name == tool and f.status == runs_pb2.TOOL_CALL_STATUS_SUCCEEDED
    ]
    if not ran:
        fail(f"{tool} did not run once approved")
    print(f"answer: {completed_answer(resumed, 'the approved run')}")


def main() -> None:
    auth = [("authorization", f"Bearer {setting('SWITCHBOARD_TOKEN')}")]
    slug = setting("EXAMPLE_SLUG", "example")
    with (
        grpc.insecure_channel(setting("SWITCHBOARD_MCP_ADDR", "127.0.0.1:50051")) as mcp_channel,
        grpc.insecure_channel(setting("SWITCHBOARD_RUNS_ADDR", "127.0.0.1:50052")) as runs_channel,
    ):
        mcp = mcp_pb2_grpc.McpServiceStub(mcp_channel)
        policies = policy_pb2_grpc.PolicyServiceStub(mcp_channel)
        runs = runs_pb2_grpc.RunsServiceStub(runs_channel)
        integration_id = create_integration(
            mcp, auth, slug, setting("EXAMPLE_MCP_URL", "http://127.0.0.1:8931/mcp")
        )
        agent_id = create_agent(runs, auth, integration_id)
        thread = runs.CreateThread(
            runs_pb2.CreateThreadRequest(agent_id=agent_id, title="python example"),
            metadata=auth,
            timeout=30,
        ).thread
        print(f"thread {thread.id}")

        run_with_client_tool(runs, auth, thread.id)

        version = write_approval_policy(policies, auth)
        try:
            run_with_approval(runs, auth, thread.id, f"{slug}__sleep")
        finally:
            delete_approval_policy(policies, auth, version)
    print("python example: ok")


if __name__ == "__main__":
    try:
        main()
    except grpc.RpcError as error:
        raise SystemExit(f"example failed: {error.code().name}: {error.details()}")
