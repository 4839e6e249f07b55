// Package ipc is the agents' channel to the gateway, both ends of it. The
// server end serves each group's MCP server on a unix socket: the tool
// registry (each tool declared once, with its category, schema and handler;
// Catalog derives the grants catalog from it), per-connection sessions,
// filtering by tier and grants, and list_changed notifications. It talks to the rest of the system only
// through the interfaces it defines (Backend), in the store's types (it
// never opens the store), and Authorize is the one place that combines a
// grant decision with chat ownership. What each tool returns is shaped here,
// next to the tool.
//
// One mcp-go MCPServer serves every group. The tools are registered once;
// each connection is its own session (newline-delimited JSON-RPC, one MCP
// session per connection) that knows its group, so listing and authorization
// read the caller's folder from the session. Per group there is only a
// listener, a socket file and an accept goroutine, which keeps a thousand
// groups cheap. Listing follows grants.Set.Listed; every call is authorized
// again with its params, so a hidden or out-of-scope call gets an isError
// result that says why. A socket's tools/call from a session that did the
// initialize handshake skips mcp-go's decoding of the message and goes to
// the same handler (directcall.go); answers are written by appendMessage
// (encode.go), as json.Marshal would write them.
//
// HTTPHandler serves the same server over MCP Streamable HTTP (mcp.listen):
// there a bearer token, resolved through the Tokens interface, names the
// group that a socket's path names here.
//
// The other end of the agent's channel lives here too: BridgeSocket and
// BridgeHTTP are the client side of `switchboard mcp-bridge`, joining an MCP
// client that speaks stdio to a group's socket or to the HTTP endpoint.
package ipc
