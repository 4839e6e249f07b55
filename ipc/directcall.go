package ipc

// The direct path of a tools/call on a socket. mcp-go's HandleMessage
// decodes a request four times (its envelope, its protocol era, its trace
// _meta, then the request itself) before it calls the tool's handler: on a
// socket, that was the largest part of what a small call cost the gateway.
// A tools/call of a session that did the initialize handshake, whose
// params hold a name and arguments and nothing else, is decoded here once
// and handed to the very handler mcp-go would call (argument validation,
// Authorize, the tool), and answered as mcp-go answers it
// (TestDirectCallAnswersAsMCPGo). Everything else goes through mcp-go: a
// 2026-07-28 request (it has _meta), a task, a multi-round-trip retry, a
// tool that does not exist, an id that is neither an integer nor a string.
//
// What mcp-go does around the handler that the direct path leaves out is
// what this server does not use: hooks around a call, tool middleware,
// input and output schema validation, task tools, tracing. New sets them
// up; whoever adds one there must make the direct path follow it.

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// directParams are the params of a tools/call as the direct path reads
// them. The fields other than Name and Arguments send it to mcp-go.
type directParams struct {
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           json.RawMessage `json:"_meta"`
	Task           json.RawMessage `json:"task"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
}

// callDirect serves a tools/call (its raw id and params, as the read loop
// found them); nil when it is one for mcp-go. ctx is the request's,
// cancelled by notifications/cancelled.
func (s *Server) callDirect(ctx context.Context, sess *session, rawID, params json.RawMessage) mcp.JSONRPCMessage {
	var p directParams
	if json.Unmarshal(params, &p) != nil {
		return nil // mcp-go words the error
	}
	if p.Meta != nil || p.Task != nil || p.InputResponses != nil || p.RequestState != nil {
		return nil
	}
	handler, found := s.handlers[p.Name]
	if !found {
		return nil
	}
	// The id as mcp-go echoes it: decoded into an any.
	var id any
	switch {
	case isPlainInt(rawID):
	case len(rawID) > 0 && rawID[0] == '"':
	default:
		return nil
	}
	if json.Unmarshal(rawID, &id) != nil {
		return nil
	}
	var call mcp.CallToolRequest
	call.Method = string(mcp.MethodToolsCall)
	call.Params.Name = p.Name
	if len(p.Arguments) > 0 { // as CallToolParams.UnmarshalJSON reads them
		call.Params.RawArguments = p.Arguments
		if err := json.Unmarshal(p.Arguments, &call.Params.Arguments); err != nil {
			return nil
		}
	}
	s.directCalls.Add(1)
	res, err := s.runHandler(ctx, sess, handler, call)
	if err != nil {
		// The handlers answer every failure with an isError result; this is
		// what mcp-go would make of an error nonetheless.
		return rpcError(id, mcp.INTERNAL_ERROR, err.Error())
	}
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
}

// runHandler runs a tool's handler, turning a panic outside the tool (the
// handler recovers the tool's own) into an internal error.
func (s *Server) runHandler(ctx context.Context, sess *session, h func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error),
	call mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("mcp handler panic", "folder", sess.g.folder, "panic", r)
			res = mcp.NewToolResultError(call.Params.Name + ": internal error")
		}
	}()
	return h(ctx, call)
}
