// Package demoagent is the built-in example agent behind `switchboard
// demo-agent`: no LLM, it reads a turn's prompt and answers with who said
// what. It is an MCP client of its group's server (mcp-go's client, over the
// group's socket or the gateway's Streamable HTTP endpoint) that answers
// with the reply tool and serves a few chat commands (/tools, /search,
// /routes, /every, /tasks); without MCP it prints its answer on stdout.
package demoagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/routing"
)

// Options is what a turn of the demo agent reads and writes besides its
// prompt.
type Options struct {
	// Getenv reads the turn's SWITCHBOARD_* environment.
	Getenv func(string) string
	// Stdout gets the answer when MCP is missing or fails; Stderr says why.
	Stdout, Stderr io.Writer
	// Version is the client version the agent gives in the MCP handshake.
	Version string
	// HTTPClient builds the HTTP client for $SWITCHBOARD_MCP_URL; caFile
	// ($SWITCHBOARD_MCP_CA) is a PEM file trusted besides the system's
	// roots. Nil: http.DefaultClient, and a CA file is an error.
	HTTPClient func(caFile string) (*http.Client, error)
}

// Run answers one turn: over MCP when it can, else on stdout.
func Run(ctx context.Context, prompt string, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sock, chat := o.Getenv("SWITCHBOARD_MCP_SOCKET"), o.Getenv("SWITCHBOARD_CHAT_JID")
	url, token := o.Getenv("SWITCHBOARD_MCP_URL"), o.Getenv("SWITCHBOARD_MCP_TOKEN")
	var mc *client.Client
	if url != "" && token != "" && chat != "" {
		// The gateway's MCP HTTP endpoint (mcp.listen): what an agent on
		// another machine has instead of the socket.
		var err error
		if mc, err = o.dialHTTP(ctx, url, token, o.Getenv("SWITCHBOARD_MCP_CA")); err != nil {
			fmt.Fprintf(o.Stderr, "demo-agent: no MCP over HTTP (%v); answering on stdout\n", err)
		} else {
			defer mc.Close()
		}
	} else if sock != "" && chat != "" {
		var err error
		if mc, err = o.dialSocket(ctx, sock); err != nil {
			fmt.Fprintf(o.Stderr, "demo-agent: no MCP (%v); answering on stdout\n", err)
		} else {
			defer mc.Close()
		}
	}
	reply := demoReply(prompt, o.Getenv)
	isTask := o.Getenv("SWITCHBOARD_TRIGGER") == "task" || promptTask.MatchString(prompt)
	if command, arg, ok := chatCommand(lastMessageText(prompt)); ok && !isTask {
		reply = runChatCommand(ctx, mc, chat, command, arg)
	}
	if mc != nil {
		// A task turn answers no message, so there is nothing to reply to:
		// it posts in the task's chat instead.
		tool := "reply"
		if isTask {
			tool = "send"
		}
		_, err := callTool(ctx, mc, tool, map[string]any{"chat_jid": chat, "text": reply})
		if err == nil {
			return nil // answered; stdout stays empty
		}
		if _, ok := errors.AsType[refusedError](err); ok {
			// The group may not post this (its grants, or an approver
			// who said no): the answer on stdout would post it anyway.
			fmt.Fprintf(o.Stderr, "demo-agent: %s was refused (%v); not answering\n", tool, err)
			_, err := fmt.Fprintf(o.Stdout, "(I did not answer: %s)\n", refusalReason(err.Error()))
			return err
		}
		fmt.Fprintf(o.Stderr, "demo-agent: %s over MCP failed (%v); answering on stdout\n", tool, err)
	}
	_, err := io.WriteString(o.Stdout, reply+"\n")
	return err
}

// halfCloser closes only the sending side, so the gateway can finish and
// close the connection itself (a clean EOF on the reading side).
type halfCloser struct{ *net.UnixConn }

func (h halfCloser) Close() error { return h.CloseWrite() }

// dialSocket connects an MCP client to the group's socket.
func (o Options) dialSocket(ctx context.Context, path string) (*client.Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	conn := c.(*net.UnixConn)
	mc := client.NewClient(transport.NewIO(conn, halfCloser{conn}, nil))
	if err := mc.Start(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return o.initialized(ctx, mc)
}

// dialHTTP connects an MCP client to the gateway's HTTP endpoint with the
// turn's token; caFile trusts a self-signed gateway certificate.
func (o Options) dialHTTP(ctx context.Context, url, token, caFile string) (*client.Client, error) {
	hc, err := o.httpClient(caFile)
	if err != nil {
		return nil, err
	}
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	mc := client.NewClient(tr)
	if err := mc.Start(ctx); err != nil {
		return nil, err
	}
	return o.initialized(ctx, mc)
}

func (o Options) httpClient(caFile string) (*http.Client, error) {
	switch {
	case o.HTTPClient != nil:
		return o.HTTPClient(caFile)
	case caFile != "":
		return nil, errNoCA
	}
	return http.DefaultClient, nil
}

// initialized runs the MCP handshake of a started client, as the demo agent.
func (o Options) initialized(ctx context.Context, mc *client.Client) (*client.Client, error) {
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "switchboard-demo-agent", Version: o.Version}
	if _, err := mc.Initialize(ctx, req); err != nil {
		mc.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return mc, nil
}

// callTool calls a tool and returns its text; an isError result is an error.
func callTool(ctx context.Context, mc *client.Client, name string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := mc.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	if res.IsError {
		if strings.HasPrefix(sb.String(), refusedPrefix) {
			return "", refusedError(sb.String())
		}
		return "", errors.New(sb.String())
	}
	return sb.String(), nil
}

// refusedPrefix starts the text of a call the gateway refused (grants,
// chat ownership, an approver's no or no decision): ipc.RefusedPrefix.
const refusedPrefix = "refused: "

// refusedError is a call the gateway refused: its text.
type refusedError string

func (e refusedError) Error() string { return string(e) }

// refusalReason is the part of a refusal worth showing in the chat: after
// "not approved: " when an approver decided ("denied by web:user/ann"),
// else the whole text.
func refusalReason(text string) string {
	if _, why, ok := strings.Cut(text, "not approved: "); ok {
		return "not approved: " + why
	}
	return text
}

// chatCommand recognizes /tools, /search QUERY, /routes, /every DURATION
// TEXT and /tasks.
func chatCommand(text string) (command, arg string, ok bool) {
	command, arg, _ = strings.Cut(strings.TrimSpace(text), " ")
	switch command {
	case "/tools", "/routes", "/tasks":
		return command, "", true
	case "/search", "/every":
		return command, strings.TrimSpace(arg), true
	}
	return "", "", false
}

func runChatCommand(ctx context.Context, mc *client.Client, chat, command, arg string) string {
	if mc == nil {
		return command + ": I have no MCP connection to the gateway, so I cannot use tools."
	}
	switch command {
	case "/tools":
		res, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return "/tools failed: " + err.Error()
		}
		names := make([]string, len(res.Tools))
		for i, t := range res.Tools {
			names[i] = t.Name
		}
		return fmt.Sprintf("I may call %d tools: %s", len(names), strings.Join(names, ", "))
	case "/search":
		if arg == "" {
			return "Usage: /search QUERY (words, \"a phrase\", prefix*, OR, NOT)"
		}
		return searchReply(ctx, mc, arg)
	case "/every":
		return everyReply(ctx, mc, chat, arg)
	case "/tasks":
		return tasksReply(ctx, mc)
	default:
		return routesReply(ctx, mc)
	}
}

// demoTask is a task as schedule_task and list_tasks return it.
type demoTask struct {
	ID       int64   `json:"id"`
	Folder   string  `json:"folder"`
	ChatJID  string  `json:"chat_jid"`
	Prompt   string  `json:"prompt"`
	Schedule string  `json:"schedule"`
	Status   string  `json:"status"`
	NextRun  *string `json:"next_run"`
}

func (t demoTask) next() string {
	if t.NextRun == nil {
		return "none"
	}
	return *t.NextRun
}

// everyReply schedules "/every DURATION TEXT" as a task of this group in
// this chat; the scheduler checks the duration.
func everyReply(ctx context.Context, mc *client.Client, chat, arg string) string {
	every, text, _ := strings.Cut(arg, " ")
	if text = strings.TrimSpace(text); every == "" || text == "" {
		return "Usage: /every DURATION TEXT, e.g. /every 30s stretch your legs (at least 10s)"
	}
	out, err := callTool(ctx, mc, "schedule_task", map[string]any{"chat_jid": chat, "prompt": text,
		"schedule": "every " + every, "context_mode": "group"})
	if err != nil {
		return "Could not schedule that: " + err.Error()
	}
	var t demoTask
	if err := json.Unmarshal([]byte(out), &t); err != nil {
		return "Could not schedule that: " + err.Error()
	}
	return fmt.Sprintf("Scheduled task %d: %q every %s, next run %s. Stop it with switchboard task cancel %d.", t.ID, t.Prompt, every, t.next(), t.ID)
}

// tasksReply lists the tasks this group can see.
func tasksReply(ctx context.Context, mc *client.Client) string {
	out, err := callTool(ctx, mc, "list_tasks", nil)
	if err != nil {
		return "/tasks failed: " + err.Error()
	}
	var res struct {
		Tasks []demoTask `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return "/tasks failed: " + err.Error()
	}
	if len(res.Tasks) == 0 {
		return "No scheduled tasks. Try /every 30s stretch your legs"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Tasks (%d):", len(res.Tasks))
	for _, t := range res.Tasks {
		fmt.Fprintf(&sb, "\n- #%d [%s] %s in %s (%s), next run %s: %q", t.ID, t.Status, t.Schedule, t.ChatJID, t.Folder, t.next(), firstLine(t.Prompt))
	}
	return sb.String()
}

func searchReply(ctx context.Context, mc *client.Client, query string) string {
	out, err := callTool(ctx, mc, "find_messages", map[string]any{"query": query, "limit": 5})
	if err != nil {
		return "Search failed: " + err.Error()
	}
	var res struct {
		Hits []struct {
			ChatJID string `json:"chat_jid"`
			Name    string `json:"name"`
			Sender  string `json:"sender"`
			Snippet string `json:"snippet"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return "Search failed: " + err.Error()
	}
	if len(res.Hits) == 0 {
		return fmt.Sprintf("No messages match %q.", query)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d best matches for %q:", len(res.Hits), query)
	for _, h := range res.Hits {
		fmt.Fprintf(&sb, "\n- %s in %s: %s", cmp.Or(h.Name, h.Sender), h.ChatJID, h.Snippet)
	}
	return sb.String()
}

func routesReply(ctx context.Context, mc *client.Client) string {
	out, err := callTool(ctx, mc, "list_routes", nil)
	if err != nil {
		return "/routes failed: " + err.Error()
	}
	var res struct {
		Routes []routing.Route `json:"routes"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return "/routes failed: " + err.Error()
	}
	if len(res.Routes) == 0 {
		return "I see no routes."
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Routes I can see (%d), tried in this order:", len(res.Routes))
	for _, r := range res.Routes {
		fmt.Fprintf(&sb, "\n- #%d (seq %d) %s -> %s [%s]", r.ID, r.Seq, routing.FormatMatch(r.Match), r.Target, r.Mode)
	}
	return sb.String()
}

// lastMessageText is the text of the last message the turn answers.
func lastMessageText(prompt string) string {
	msgs := promptMessage.FindAllStringSubmatch(messagesSection(prompt), -1)
	if len(msgs) == 0 {
		return ""
	}
	return html.UnescapeString(stripTags(msgs[len(msgs)-1][2]))
}

var (
	promptTurn    = regexp.MustCompile(`<turn [^>]*trigger="([^"]*)"`)
	promptMessage = regexp.MustCompile(`(?s)<message [^>]*name="([^"]*)"[^>]*>(.*?)</message>`)
	promptTask    = regexp.MustCompile(`(?s)<task [^>]*>(.*?)</task>`)
)

// demoReply answers a prompt the way a very polite parrot would.
func demoReply(prompt string, getenv func(string) string) string {
	msgs := promptMessage.FindAllStringSubmatch(messagesSection(prompt), -1)
	trigger := "message"
	if m := promptTurn.FindStringSubmatch(prompt); m != nil {
		trigger = m[1]
	}
	if t := promptTask.FindStringSubmatch(prompt); t != nil {
		return "Scheduled task ran: " + html.UnescapeString(t[1])
	}
	if len(msgs) == 0 {
		return fmt.Sprintf("Demo agent here (trigger %s), but I found no messages in the prompt.", trigger)
	}
	var sb strings.Builder
	last := msgs[len(msgs)-1]
	name := html.UnescapeString(last[1])
	fmt.Fprintf(&sb, "Hi %s! I am the Switchboard demo agent in folder %s. ", name, cmp.Or(getenv("SWITCHBOARD_FOLDER"), "?"))
	if len(msgs) == 1 {
		fmt.Fprintf(&sb, "You said: %q", firstLine(html.UnescapeString(stripTags(last[2]))))
	} else {
		fmt.Fprintf(&sb, "I saw %d messages:", len(msgs))
		for _, m := range msgs {
			fmt.Fprintf(&sb, "\n- %s: %q", html.UnescapeString(m[1]), firstLine(html.UnescapeString(stripTags(m[2]))))
		}
	}
	return sb.String()
}

// messagesSection is the <messages> block (observed context is not answered).
func messagesSection(prompt string) string {
	i := strings.Index(prompt, "<messages>")
	if i < 0 {
		return ""
	}
	return prompt[i:]
}

var tags = regexp.MustCompile(`<[^>]*>`)

func stripTags(s string) string { return tags.ReplaceAllString(s, "") }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
