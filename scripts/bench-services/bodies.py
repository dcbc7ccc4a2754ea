"""Request bodies of the services benchmark (run.sh), gRPC-framed protobuf written by hand,
and its medians.

  bodies.py create OUT GRPC_TARGET API_BASE   create_grpc.bin, create_openapi.bin (the document
                                              in OUT/document.json), get.bin (GetItem)
  bodies.py execute OUT                       execute_grpc.bin, execute_openapi.bin, from the
                                              CreateIntegration answers created_*.bin
  bodies.py medians OUT                       the median per path and callers, from
                                              results.jsonl, and ExecuteTool's status codes
"""
import json
import statistics
import struct
import sys
from pathlib import Path

ITEM = 9007199254740993


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    """A length-delimited field (string, bytes or message)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def framed(message):
    return b"\x00" + struct.pack(">I", len(message)) + message


def read_varint(data, at):
    n = shift = 0
    while True:
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, at


def first_string(data):
    """Field 1 of field 1: CreateIntegrationResponse.integration.id."""
    body = data[5:]
    _, at = read_varint(body, 0)
    length, at = read_varint(body, at)
    integration = body[at:at + length]
    _, at = read_varint(integration, 0)
    length, at = read_varint(integration, at)
    return integration[at:at + length].decode()


def create(slug, transport_field, transport):
    """CreateIntegrationRequest{display_name, slug, custom{transport{...}}}."""
    custom = field(1, field(transport_field, transport))
    return framed(field(1, slug) + field(2, slug) + field(3, custom))


def execute(created, tool, arguments):
    integration_id = first_string(created.read_bytes())
    request = field(1, integration_id) + field(2, tool) + field(5, json.dumps(arguments))
    return framed(request)


def main():
    command, out = sys.argv[1], Path(sys.argv[2])
    if command == "create":
        grpc = field(1, sys.argv[3])  # GrpcTransport.target
        (out / "create_grpc.bin").write_bytes(create("inventory", 4, grpc))
        document = (out / "document.json").read_text()
        api = field(1, sys.argv[4]) + field(2, document)  # OpenApiTransport{base_url, document}
        (out / "create_openapi.bin").write_bytes(create("pets", 3, api))
        (out / "get.bin").write_bytes(framed(varint(1 << 3) + varint(ITEM)))
    elif command == "execute":
        (out / "execute_grpc.bin").write_bytes(
            execute(out / "created_grpc.bin", "Inventory_GetItem", {"id": str(ITEM)}))
        (out / "execute_openapi.bin").write_bytes(
            execute(out / "created_openapi.bin", "getPet", {"id": 7}))
    else:
        medians(out / "results.jsonl", out / "statuses.txt")


PATHS = ("direct_grpc", "grpc_integration", "direct_http", "openapi_integration")


def medians(results, statuses):
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    bad = sum(r["bad"] for r in rows)
    for path in PATHS:
        for callers in (1, 16):
            runs = [r for r in rows if r["path"] == path and r["callers"] == callers]
            if not runs:
                continue
            calls = sum(r["calls"] for r in runs)
            rps = statistics.median(r["rps"] for r in runs)
            p50 = statistics.median(r["p50_ms"] for r in runs)
            cpu = statistics.median(r["sb_cpu_ticks"] * 10_000 / max(r["calls"], 1) for r in runs)
            rss = max(r["sb_rss_kb"] for r in runs) // 1024
            line = f"{path:19} {callers:2} callers: {rps:9.0f} calls/s  p50 {p50:.3f} ms  ({calls} calls)"
            if path.endswith("integration"):
                line += f"  mcp-service {cpu:.0f} µs CPU/call, RSS {rss} MB"
            print(line)
    codes = statuses.read_text()
    print("answers other than 2xx (h2load, wrk):", bad)
    print("ExecuteTool answers by gRPC status (from mcp-service's metrics):")
    print(codes.strip() or "(none recorded)")


main()
