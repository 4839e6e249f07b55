package main

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/internal/scalegen"
	"switchboard/internal/testwait"
)

// scaleSearch calls find_messages n times for each of scalegen.Queries through
// mcp-go's client on the running gateway's MCP sockets: the root group's
// (tier 0: every chat) and a tier-1 group's (the chats it owns, found by
// the gateway on each call), one call at a time, and reports each query's
// p50 and p99 as find-<scope>-<query>-p50-ms and -p99-ms. The first call
// of each is counted: it reads from a cold SQLite cache.
func scaleSearch(b *testing.B, ds scalegen.Dataset, n int) {
	b.Helper()
	for _, scope := range []struct{ name, folder string }{
		{"root", "root"},
		{"group", string(scalegen.Folder(6))},
	} {
		c := dialScaleMCP(b, filepath.Join(ds.DataDir, "ipc", scope.folder, "mcp.sock"))
		for _, q := range scalegen.Queries() {
			var lat []time.Duration
			hits := 0
			for range n {
				start := time.Now()
				hits = findMessages(b, c, q.Query)
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			// Across all chats every query finds something; within the
			// group's chats (1,000 messages at the default sizes) the
			// commonest word, in about one message in two, does: none means
			// the group's chats were not searched (an empty owned-chats list
			// answers at once and would meet every goal).
			if hits == 0 && (scope.name == "root" || q.Name == "commonest") {
				b.Errorf("find_messages %q in %s's chats found nothing: the benchmark measures no search", q.Query, scope.folder)
			}
			b.ReportMetric(p(lat, 0.5), "find-"+scope.name+"-"+q.Name+"-p50-ms")
			b.ReportMetric(p(lat, 0.99), "find-"+scope.name+"-"+q.Name+"-p99-ms")
		}
		c.Close()
	}
}

// dialScaleMCP connects mcp-go's client to a group's socket and runs the
// handshake.
func dialScaleMCP(b *testing.B, socket string) *client.Client {
	b.Helper()
	var conn net.Conn
	testwait.For(b, 10*time.Second, "MCP socket "+socket, func() bool {
		var err error
		conn, err = net.Dial("unix", socket)
		return err == nil
	})
	uc := conn.(*net.UnixConn)
	// Close ends the sending side only: the gateway closes the connection
	// and the client's reader sees a clean end.
	c := client.NewClient(transport.NewIO(uc, halfCloser{uc}, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		conn.Close()
		b.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "switchboard-bench", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		b.Fatalf("initialize %s: %v", socket, err)
	}
	return c
}

// findMessages calls find_messages (default limit) and returns the hits.
func findMessages(b *testing.B, c *client.Client, query string) int {
	b.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "find_messages", map[string]any{"query": query}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		b.Fatalf("find_messages %q: %v", query, err)
	}
	var text string
	for _, ct := range res.Content {
		if t, ok := ct.(mcp.TextContent); ok {
			text += t.Text
		}
	}
	if res.IsError {
		b.Fatalf("find_messages %q: %s", query, text)
	}
	var out struct {
		Hits []json.RawMessage `json:"hits"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		b.Fatalf("find_messages %q: %v: %.200s", query, err, text)
	}
	return len(out.Hits)
}

// halfCloser closes only the sending side of a connection.
type halfCloser struct{ *net.UnixConn }

func (h halfCloser) Close() error { return h.CloseWrite() }
