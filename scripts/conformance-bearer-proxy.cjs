// A loopback HTTP proxy that adds `Authorization: Bearer <token>` to every
// request, for the MCP conformance suite's server scenarios, which send no
// token, against Switchboard's MCP endpoint. Responses (SSE included) are
// streamed back as they come.
// Usage: node conformance-bearer-proxy.cjs <listen port> <target origin> <token>
const http = require("node:http");

const [port, target, token] = process.argv.slice(2);
http
  .createServer((req, res) => {
    const url = new URL(req.url, target);
    const headers = { ...req.headers, host: url.host, authorization: `Bearer ${token}` };
    const upstream = http.request(url, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", (error) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(error));
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  })
  .listen(Number(port), "127.0.0.1", () => console.error(`proxy listening on ${port}`));
