package testmcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"
)

// Conn is one MCP session on a unix socket. It is not safe for concurrent
// use. Messages from the server that are not the answer a call waits for
// (notifications, requests) are kept for Notification.
type Conn struct {
	c       net.Conn
	r       *bufio.Reader
	o       Options
	id      int
	pending []Message
}

// Dial connects to the socket without a handshake: Initialize, or Send the
// frames by hand.
func Dial(socket string, o Options) (*Conn, error) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", socket, err)
	}
	return &Conn{c: c, r: bufio.NewReaderSize(c, 1<<20), o: o.withDefaults()}, nil
}

// Connect is Dial then Initialize.
func Connect(socket string, o Options) (*Conn, error) {
	c, err := Dial(socket, o)
	if err != nil {
		return nil, err
	}
	if _, err := c.Initialize(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Initialize runs the handshake with the Conn's options and returns the
// server's initialize result.
func (c *Conn) Initialize() (json.RawMessage, error) {
	c.id++
	if err := c.Send(InitializeRequest(c.id, c.o)); err != nil {
		return nil, err
	}
	res, err := c.await(c.id, "initialize")
	if err != nil {
		return nil, err
	}
	return res, c.Send(Initialized)
}

// Send writes one frame as given, adding the newline.
func (c *Conn) Send(line string) error {
	if _, err := c.c.Write([]byte(line + "\n")); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// Next reads the next message from the server, whatever it is.
func (c *Conn) Next() (Message, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(c.o.Timeout))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return Message{}, fmt.Errorf("read: %w", err)
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("server sent %q: %w", line, err)
	}
	m.Raw = line
	return m, nil
}

// Request sends a request and returns its result; params is JSON text
// (a string or json.RawMessage) or a value to marshal, nil for none. An
// error answer is returned as an *RPCError.
func (c *Conn) Request(method string, params any) (json.RawMessage, error) {
	c.id++
	req := map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method}
	switch p := params.(type) {
	case nil:
	case string:
		req["params"] = json.RawMessage(p)
	default:
		req["params"] = p
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if err := c.Send(string(b)); err != nil {
		return nil, err
	}
	return c.await(c.id, method)
}

// await reads until the answer to id, keeping other messages.
func (c *Conn) await(id int, method string) (json.RawMessage, error) {
	want := strconv.Itoa(id)
	for {
		m, err := c.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if m.Method != "" || string(m.ID) != want {
			c.pending = append(c.pending, m)
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, nil
	}
}

// CallTool calls tool with args (JSON text or a value to marshal).
func (c *Conn) CallTool(tool string, args any) (ToolResult, error) {
	if s, ok := args.(string); ok {
		args = json.RawMessage(s)
	}
	raw, err := c.Request("tools/call", struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{tool, args})
	if err != nil {
		return ToolResult{}, err
	}
	var res ToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return ToolResult{}, fmt.Errorf("tools/call %s: %w", tool, err)
	}
	return res, nil
}

// ListTools returns the names tools/list gives, in its order.
func (c *Conn) ListTools() ([]string, error) {
	raw, err := c.Request("tools/list", nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	names := make([]string, len(res.Tools))
	for i, t := range res.Tools {
		names[i] = t.Name
	}
	return names, nil
}

// Notification returns the first message with method the server sent,
// kept or yet to come, waiting at most the Conn's timeout.
func (c *Conn) Notification(method string) (Message, error) {
	if i := slices.IndexFunc(c.pending, func(m Message) bool { return m.Method == method }); i >= 0 {
		m := c.pending[i]
		c.pending = slices.Delete(c.pending, i, i+1)
		return m, nil
	}
	for {
		m, err := c.Next()
		if err != nil {
			return Message{}, fmt.Errorf("await %s: %w", method, err)
		}
		if m.Method == method {
			return m, nil
		}
		c.pending = append(c.pending, m)
	}
}
