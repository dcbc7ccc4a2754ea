"""The stage table: shares of mcp-service's CPU samples by stage, from a dwarf call-graph profile
recorded while a run of bench-pipeline/run.sh loads it at 16 callers:
    perf record -F 499 --call-graph dwarf,32768 -p "$(pgrep -n mcp-service)" -o perf.data -- sleep 8
    perf report -i perf.data --stdio --children --sort symbol -g none --percent-limit 0.3 > children.txt
    python3 scripts/bench-pipeline/stages.py children.txt
Each stage is the largest inclusive share among the frames it names; frames are chosen so stages do
not nest in one another, but async frames count only the work of their own polls."""
import re, sys
STAGES = [
    ("HTTP/2 + gRPC server framing (h2 codec)", [r"h2::proto::connection::Connection<T,P,B>::poll$"]),
    ("HTTP/1 server (hyper dispatch, writes)", [r"hyper::proto::h1::dispatch::Dispatcher<D,Bs,I,T>::poll_write$"]),
    ("authentication gate (bearer check + inner)", [r"AuthLayer as switchboard_server::gate::Gate>::call"]),
    ("endpoint admission (token, path, session owner + inner)", [r"mcp_server::access::admit::"]),
    ("endpoint path lookup (find_by_slug)", [r"IntegrationRepository>::find_by_slug"]),
    ("endpoint MCP session worker (rmcp server)", [r"LocalSessionWorker as rmcp::transport::worker::Worker>::run"]),
    ("organization limits gate (+ inner)", [r"OrgLimitLayer as switchboard_server::gate::Gate>::call"]),
    ("policy decision", [r"domain::policy::.*(decide|evaluate|allows)", r"PolicyGate|policy::engine"]),
    ("the call use case (AuditedCalls::execute_tool, + upstream wait)", [r"AuditedCalls::execute_tool::"]),
    ("audit writer task (SQLite append)", [r"audit_writer::write::"]),
    ("upstream MCP client (rmcp worker + reqwest/hyper)", [r"StreamableHttpClientWorker<C> as rmcp::transport::worker::Worker>::run::"]),
    ("upstream answer decoding (JSON-RPC into rmcp types)", [r"ShapeCheckedMessage<T,_>>::deserialize"]),
    ("tracing: span create", [r"Layered<L,S> as tracing_core::subscriber::Subscriber>::new_span$"]),
    ("tracing: span enter", [r"Layered<L,S> as tracing_core::subscriber::Subscriber>::enter$"]),
    ("tracing: span exit", [r"Layered<L,S> as tracing_core::subscriber::Subscriber>::exit$"]),
    ("tracing: span close", [r"Layered<L,S> as tracing_core::subscriber::Subscriber>::try_close$"]),
    ("W3C trace context inject", [r"switchboard_telemetry::propagation::inject_span"]),
    ("metrics (histograms, counters)", [r"opentelemetry_sdk::metrics::internal::histogram::Histogram<T> as .*Measure<T>>::call$"]),
    ("SQLite statements (all, inside the above)", [r"sqlite3_step$"]),
    ("SQLite worker hand-off (flume send + wake)", [r"flume::async::SendFut<T> as core::future::future::Future>::poll$"]),
    ("kernel: futex (thread wake/park)", [r"\[k\] __x64_sys_futex$"]),
    ("kernel: context switch", [r"\[k\] finish_task_switch"]),
    ("kernel: TCP send (writev)", [r"__GI___writev$"]),
    ("allocator (mimalloc malloc+free, self)", []),
    ("memmove/memcpy (self)", []),
]
line = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+(.*?)\s*$")
rows = []
for l in open(sys.argv[1]):
    m = line.match(l)
    if m: rows.append((float(m.group(1)), float(m.group(2)), m.group(3)))
def best(pats):
    v = 0.0
    for total, _, sym in rows:
        if any(re.search(p, sym) for p in pats): v = max(v, total)
    return v
selfsum = lambda pat: sum(s for _, s, sym in rows if re.search(pat, sym))
out = {}
for name, pats in STAGES:
    if name.startswith("allocator"): out[name] = selfsum(r"\] (_?mi_|mi_)")
    elif name.startswith("memmove"): out[name] = selfsum(r"__mem(move|cpy)")
    else: out[name] = best(pats)
for k, v in out.items(): print(f"{v:6.2f}%  {k}")
