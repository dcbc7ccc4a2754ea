"""Calls Switchboard through a Python client generated from proto/ with grpcio-tools.

Generates the stubs into a temporary directory, then for each service checks
health, that an authenticated RPC passes the auth layer with a token, and that
it is refused with UNAUTHENTICATED without one.

usage: client_smoke.py --proto-dir DIR --mcp HOST:PORT --runs HOST:PORT --token JWT
"""

import argparse
import importlib
import os
import sys
import tempfile

import grpc
import grpc_tools
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_tools import protoc


def protos(proto_dir: str) -> list[str]:
    """Every contract file, so that a new one is never left out."""
    root = os.path.join(proto_dir, "switchboard")
    return sorted(
        os.path.relpath(os.path.join(folder, name), proto_dir)
        for folder, _, names in os.walk(root)
        for name in names
        if name.endswith(".proto")
    )


def generate(proto_dir: str, out_dir: str) -> None:
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{proto_dir}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *protos(proto_dir),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed to generate the Python client")
    sys.path.insert(0, out_dir)


def check_health(channel: grpc.Channel, service: str) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    for name in ("", service):
        reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            raise SystemExit(f"{service}: health of '{name}' is {reply.status}")


def check_auth(call, request, token: str, label: str) -> None:
    try:
        call(request, timeout=5)
        raise SystemExit(f"{label}: a call without a token was accepted")
    except grpc.RpcError as error:
        if error.code() != grpc.StatusCode.UNAUTHENTICATED:
            raise SystemExit(f"{label}: expected UNAUTHENTICATED, got {error.code()}")
    try:
        call(request, timeout=5, metadata=[("authorization", f"Bearer {token}")])
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.UNAUTHENTICATED:
            raise SystemExit(f"{label}: a valid token was refused: {error.details()}")
    print(f"{label}: ok")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--proto-dir", required=True)
    parser.add_argument("--mcp", required=True)
    parser.add_argument("--runs", required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as out_dir:
        generate(args.proto_dir, out_dir)
        mcp_pb2 = importlib.import_module("switchboard.mcp.v1.mcp_pb2")
        mcp_grpc = importlib.import_module("switchboard.mcp.v1.mcp_pb2_grpc")
        runs_pb2 = importlib.import_module("switchboard.runs.v1.runs_pb2")
        runs_grpc = importlib.import_module("switchboard.runs.v1.runs_pb2_grpc")

        with grpc.insecure_channel(args.mcp) as channel:
            check_health(channel, "switchboard.mcp.v1.McpService")
            stub = mcp_grpc.McpServiceStub(channel)
            check_auth(stub.ListIntegrations, mcp_pb2.ListIntegrationsRequest(page_size=10),
                       args.token, "mcp-service ListIntegrations")
        with grpc.insecure_channel(args.runs) as channel:
            check_health(channel, "switchboard.runs.v1.RunsService")
            stub = runs_grpc.RunsServiceStub(channel)
            check_auth(stub.ListAgents, runs_pb2.ListAgentsRequest(page_size=10),
                       args.token, "runs-service ListAgents")
    print("python client: ok")


if __name__ == "__main__":
    main()
