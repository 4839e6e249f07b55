// An MCP client built on an official TypeScript SDK, run by
// cmd/switchboard/interop_test.go against a real gateway through
// `switchboard mcp-bridge`.
//
//   node sdk-client.mjs SDK BINARY SOCKET TEXT HIDDEN
//
// SDK is one of
//
//   v1      @modelcontextprotocol/sdk (1.x): the initialize handshake; the
//           server sends list_changed to the session unasked
//   modern  @modelcontextprotocol/client (2.x) pinned to protocol 2026-07-28:
//           server/discover, no handshake; list_changed only on a
//           subscriptions/listen stream that asked for toolsListChanged
//
// HIDDEN is a JSON {"name", "arguments"}: a call of a tool that the grants
// change hides, made by name afterwards.
//
// It prints one JSON object per line on stdout, each with a "step":
//
//   init     the connection: server info, negotiated protocol, capabilities
//   list     tools/list: the tool names
//   send     tools/call send {chat_jid: web:lobby, text: TEXT}
//   owner    tools/call send to web:elsewhere (a chat of another group)
//   ready    notifications/tools/list_changed is being waited for (modern:
//            the listen stream is acknowledged); the test now changes the
//            group's grants with the CLI
//   changed  the notification arrived (ms after ready) and tools/list again
//   hidden   the HIDDEN call
//   done     the subscription (modern) and the transport closed; with the
//            protocol errors the SDK reported on the way (client.onerror:
//            say, a response to a request it no longer waits for)
//   error    something failed (then exit status 1)
//
// The test decides what is right; this script only reports.

const [sdk, bin, socket, text, hiddenJSON] = process.argv.slice(2);
if (!["v1", "modern"].includes(sdk) || !bin || !socket || !text || !hiddenJSON) {
  console.error("usage: node sdk-client.mjs v1|modern BINARY SOCKET TEXT HIDDEN_CALL_JSON");
  process.exit(2);
}
const hidden = JSON.parse(hiddenJSON);

// How long to wait for list_changed after "ready"; the test's own bound is
// shorter, this only keeps a lost notification from hanging the script.
const CHANGE_TIMEOUT_MS = 20000;

const emit = (step, data = {}) => process.stdout.write(JSON.stringify({ step, ...data }) + "\n");

// callResult keeps what the test asserts on from a CallToolResult.
const callResult = (r) => ({
  isError: r.isError === true,
  text: (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
});

const info = { name: "switchboard-interop-" + sdk, version: "1.0.0" };
const params = { command: bin, args: ["mcp-bridge", "--socket", socket], stderr: "inherit" };

async function main() {
  let client, transport, subscription;
  let negotiated = () => "";
  let changes = 0;
  let onChange = () => {};
  const handler = async () => {
    changes++;
    onChange();
  };

  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { ToolListChangedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    transport = new StdioClientTransport(params);
    let version = "";
    transport.setProtocolVersion = (v) => {
      version = v;
    };
    negotiated = () => version;
    client = new Client(info, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, handler);
  } else {
    const { Client } = await import("@modelcontextprotocol/client");
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    transport = new StdioClientTransport(params);
    client = new Client(info, { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    negotiated = () => client.getNegotiatedProtocolVersion() ?? "";
    client.setNotificationHandler("notifications/tools/list_changed", handler);
  }

  const errors = [];
  client.onerror = (err) => errors.push(String(err?.message ?? err));

  await client.connect(transport);
  emit("init", {
    server: client.getServerVersion(),
    protocolVersion: negotiated(),
    capabilities: client.getServerCapabilities(),
  });

  const names = async () => (await client.listTools()).tools.map((t) => t.name);
  emit("list", { tools: await names() });

  emit("send", callResult(await client.callTool({ name: "send", arguments: { chat_jid: "web:lobby", text } })));
  emit("owner", callResult(await client.callTool({ name: "send", arguments: { chat_jid: "web:elsewhere", text } })));

  if (sdk === "modern") {
    // Resolves once the server acknowledged the subscription.
    subscription = await client.listen({ toolsListChanged: true });
  }
  const changed = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no notifications/tools/list_changed within ${CHANGE_TIMEOUT_MS} ms`)), CHANGE_TIMEOUT_MS);
    onChange = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  const ready = Date.now();
  emit("ready", { notificationsBefore: changes });
  await changed;
  emit("changed", { afterMs: Date.now() - ready, tools: await names() });

  emit("hidden", callResult(await client.callTool(hidden)));

  if (subscription) {
    // Closing sends notifications/cancelled for the listen request: the
    // server must end the stream without answering it.
    await subscription.close();
  }
  // The bridge exits only after the gateway answered everything, so
  // whatever the server still sends arrives before close() returns.
  await client.close();
  emit("done", { notifications: changes, errors });
}

main().catch((err) => {
  emit("error", { message: String(err?.stack ?? err) });
  process.exit(1);
});
