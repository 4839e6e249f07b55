package ipc

// Writing JSON-RPC messages to a socket. A tools/call answer is a JSON
// text (the tool's result) inside a JSON string inside the response, and
// json.Marshal of mcp-go's response spends most of its time on the layers
// around that text: CallToolResult.MarshalJSON builds a map and marshals
// it, and json.Marshal then validates and compacts what that returned.
// appendMessage writes the common shape of that answer directly.

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// appendMessage appends msg as json.Marshal encodes it, byte for byte: a
// response carrying a plain tool result (text content only, no metadata)
// is written here; anything else goes through json.Marshal.
func appendMessage(buf []byte, msg any) ([]byte, error) {
	if resp, ok := msg.(mcp.JSONRPCResponse); ok {
		if r := plainToolResult(resp.Result); r != nil {
			if out, ok := appendResponseHead(buf, resp); ok {
				return appendToolResult(out, r), nil
			}
		}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return buf, err
	}
	return append(buf, b...), nil
}

// plainToolResult returns v as a tool result whose JSON appendToolResult
// writes exactly as mcp-go's MarshalJSON does, or nil.
func plainToolResult(v any) *mcp.CallToolResult {
	var r *mcp.CallToolResult
	switch x := v.(type) {
	case *mcp.CallToolResult:
		r = x
	case mcp.CallToolResult:
		r = &x
	}
	if r == nil || r.Meta != nil || r.StructuredContent != nil || len(r.RawStructuredContent) > 0 ||
		len(r.InputRequests) > 0 || r.RequestState != "" {
		return nil
	}
	for _, c := range r.Content {
		t, ok := c.(mcp.TextContent)
		if !ok || t.Annotations != nil || t.Meta != nil {
			return nil
		}
	}
	return r
}

// appendResponseHead appends `{"jsonrpc":...,"id":...,"result":` for
// resp; false for an id it leaves to json.Marshal.
func appendResponseHead(buf []byte, resp mcp.JSONRPCResponse) ([]byte, bool) {
	out := append(buf, `{"jsonrpc":`...)
	out = appendJSONString(out, resp.JSONRPC)
	out = append(out, `,"id":`...)
	switch id := resp.ID.Value().(type) {
	case nil:
		out = append(out, "null"...)
	case string:
		out = appendJSONString(out, id)
	case int64:
		out = strconv.AppendInt(out, id, 10)
	case float64:
		// encoding/json writes integral floats below 1e21 in this form.
		if id != float64(int64(id)) || id >= 1e21 || id <= -1e21 {
			return buf, false
		}
		out = strconv.AppendFloat(out, id, 'f', -1, 64)
	default:
		return buf, false
	}
	return append(out, `,"result":`...), true
}

// appendToolResult appends r and closes the response. The keys come in
// the order CallToolResult.MarshalJSON's map gives them (sorted), and of
// each content in TextContent's field order.
func appendToolResult(out []byte, r *mcp.CallToolResult) []byte {
	out = append(out, `{"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			out = append(out, ',')
		}
		t := c.(mcp.TextContent)
		out = append(out, `{"type":`...)
		out = appendJSONString(out, t.Type)
		out = append(out, `,"text":`...)
		out = appendJSONString(out, t.Text)
		out = append(out, '}')
	}
	out = append(out, ']')
	if r.IsError {
		out = append(out, `,"isError":true`...)
	}
	if r.ResultType != "" {
		out = append(out, `,"resultType":`...)
		out = appendJSONString(out, string(r.ResultType))
	}
	return append(out, "}}"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as encoding/json
// does (HTML-safe: <, > and & escaped; invalid UTF-8 as U+FFFD; U+2028
// and U+2029 escaped).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
