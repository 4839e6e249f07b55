// Package testmcp is the MCP client tests use to talk to a group's MCP
// server as an agent does: newline-delimited JSON-RPC on the group's unix
// socket, with every frame visible (Conn), and the handshake's messages as
// text for tests that must write frames themselves (a Streamable HTTP body,
// a shell agent's printf). It is for tests only.
//
// It speaks the initialize handshake of Legacy unless Options.Version says
// otherwise; tests of the stateless 2026-07-28 protocol use mcp-go's client.
package testmcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Legacy is the protocol version the tests' initialize handshake asks for.
const Legacy = "2025-06-18"

// Initialized is the notification a client sends after initialize's answer.
const Initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// Options shape the handshake and the reads of a Conn.
type Options struct {
	Version string        // protocolVersion asked for; Legacy when empty
	Client  string        // clientInfo.name; "test" when empty
	Timeout time.Duration // how long one read may wait; 20 s when zero
}

func (o Options) withDefaults() Options {
	if o.Version == "" {
		o.Version = Legacy
	}
	if o.Client == "" {
		o.Client = "test"
	}
	if o.Timeout == 0 {
		o.Timeout = 20 * time.Second
	}
	return o
}

// InitializeRequest is the initialize request with id, as one JSON line
// (without its newline).
func InitializeRequest(id int, o Options) string {
	o = o.withDefaults()
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`,
		id, o.Version, o.Client)
}

// ShellHandshake is a shell command that prints the handshake (initialize
// with id 1, then Initialized), one message a line, for an agent script
// that pipes its requests into mcp-bridge. It is a printf '%s\n' command:
// more frames, each a quoted argument, may follow it on its line.
func ShellHandshake(o Options) string {
	return "printf '%s\\n' " + shellQuote(InitializeRequest(1, o)) + " " + shellQuote(Initialized)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Message is any JSON-RPC message from the server, with its raw frame.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
	Raw    []byte          `json:"-"`
}

// RPCError is a JSON-RPC error answer; Request returns it as its error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// ToolResult is a tools/call result.
type ToolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
}

// Text joins the result's text contents.
func (r ToolResult) Text() string {
	var sb strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			sb.WriteString(c.Text)
		}
	}
	return sb.String()
}
