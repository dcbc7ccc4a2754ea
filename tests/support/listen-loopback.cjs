// Preloaded into Node-based MCP servers started by the tests: a server that
// listens on a bare port (every interface) listens on 127.0.0.1 instead, so
// tests never expose a port beyond this machine.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const bare = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (bare && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
