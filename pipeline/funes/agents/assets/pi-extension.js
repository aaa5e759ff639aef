// funes for pi: index each settled turn into the funes memory without ever waiting on it.
// Written by `funes add pi`; `funes remove pi` deletes it. MCP tools come from mcp.json (exposure: direct).
import { spawn } from "node:child_process";

const FUNES = __FUNES_ARGV__;

function fire(event, ctx) {
  const args = FUNES.slice(1).concat(["hook", "pi", event]);
  const file = ctx?.sessionManager?.getSessionFile?.();
  if (typeof file === "string" && file) args.push("--session-file", file);
  try {
    // detached, no pipes: pi's turn never waits for the index
    spawn(FUNES[0], args, { detached: true, stdio: "ignore" }).unref();
  } catch {
    // a missing funes must never break the agent
  }
}

export default function (pi) {
  pi.on("agent_settled", async (_event, ctx) => fire("agent_settled", ctx));
  pi.on("session_shutdown", async (event, ctx) => {
    if (!event || event.reason === undefined || event.reason === "quit") fire("session_shutdown", ctx);
  });
}
