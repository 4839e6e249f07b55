package ipc

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/routing"
)

// directBackend owns web:acme for acme and web:other for root; disengage
// ends an engagement of acme/eng in web:acme.
type directBackend struct {
	*stubBackend
	table *routing.Table
}

func (b directBackend) Table() *routing.Table { return b.table }

func (b directBackend) Disengage(chat adapters.JID, _ string, allowed func(groups.Folder) bool) (groups.Folder, bool) {
	if chat != "web:acme" {
		return "", false
	}
	return "acme/eng", allowed("acme/eng")
}

// TestDirectCallAnswersAsMCPGo: a tools/call that takes the direct path is
// answered byte for byte as mcp-go answers the same call (sent with an
// empty _meta, which sends it through mcp-go): allowed, refused by the
// grants or by chat ownership, invalid arguments, unknown tools, odd ids.
func TestDirectCallAnswersAsMCPGo(t *testing.T) {
	s, stub := newStubServer(t)
	table, err := routing.New([]routing.Route{
		{ID: 1, Match: map[string]string{"chat_jid": "web:acme"}, Target: "acme"},
		{ID: 2, Match: map[string]string{"chat_jid": "web:other"}, Target: "root"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.opt.Backend = directBackend{stubBackend: stub, table: table}
	setOverrides(t, s, "!engage(jid=web:acme)", "!get_work")
	rc := dialGroup(t, s, "acme")
	rc.initialize()
	line := func() []byte {
		t.Helper()
		_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := rc.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	calls := []struct{ id, params string }{
		{`1`, `"name":"list_grants","arguments":{}`},
		{`2`, `"name":"list_grants"`},
		{`3`, `"name":"list_grants","arguments":null`},
		{`"a-\u0041<b>"`, `"name":"disengage","arguments":{"chat_jid":"web:acme"}`},
		{`-5`, `"name":"disengage","arguments":{"chat_jid":"web:other"}`},
		{`6`, `"name":"disengage","arguments":{"chat_jid":"web:nobody"}`},
		{`7`, `"name":"disengage","arguments":{"chat_jid":"web:acme","topic":7}`},
		{`8`, `"name":"disengage","arguments":{"chat":"web:acme"}`},
		{`9`, `"name":"disengage","arguments":[1]`},
		{`10`, `"name":"disengage","arguments":{}`},
		{`11`, `"name":"engage","arguments":{"chat_jid":"web:acme"}`},
		{`12`, `"name":"get_work","arguments":{}`},
		{`13`, `"name":"no_such_tool","arguments":{}`},
		{`14`, `"arguments":{}`},
		{`7.5`, `"name":"list_grants"`},
		{`12345678901234567890`, `"name":"list_grants"`},
		{`0`, `"name":"list_grants","task":{"ttl":1000}`},
		{`15`, `"name":"list_grants","requestState":"s"`},
		{`16`, `"name":"list_grants","inputResponses":{}`},
	}
	direct := s.directCalls.Load()
	var all strings.Builder
	for _, c := range calls {
		rc.send(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{%s}}`, c.id, c.params)
		got := line()
		rc.send(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"_meta":{},%s}}`, c.id, c.params)
		want := line()
		if !bytes.Equal(got, want) {
			t.Errorf("tools/call %s {%s}:\n direct %s mcp-go %s", c.id, c.params, got, want)
		}
		all.Write(got)
	}
	// The calls with a known tool, an integer or string id and no task or
	// multi-round-trip retry took the direct path.
	if n := s.directCalls.Load() - direct; n != 12 {
		t.Errorf("%d calls took the direct path, want 12", n)
	}
	// And the checks ran: the answers say what stopped each call.
	for _, want := range []string{`belongs to group root`, `has no owner`, `may not call engage`, `unknown param`,
		`want a string, got an integer`, `{\"ok\":true}`, `may not call get_work`, `not found`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no answer says %q:\n%s", want, all.String())
		}
	}
}

// TestCancelledDirectCall: notifications/cancelled ends a call on the
// direct path as it ends one mcp-go serves: the tool's context is
// cancelled (refresh_groups returns only then), and the call gets no answer.
func TestCancelledDirectCall(t *testing.T) {
	s, b := newStubServer(t)
	rc := dialStub(t, s)
	rc.initialize()
	direct := s.directCalls.Load()
	rc.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"refresh_groups","arguments":{}}}`)
	select {
	case <-b.reloading:
	case <-time.After(10 * time.Second):
		t.Fatal("refresh_groups never reached the backend")
	}
	if s.directCalls.Load() != direct+1 {
		t.Fatal("the call did not take the direct path")
	}
	sess := onlySession(t, s)
	rc.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	testwait.For(t, 10*time.Second, "the cancelled call's worker done", func() bool {
		_, inflight := sess.state()
		return len(inflight) == 0
	})
	rc.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_grants","arguments":{}}}`)
	if rest := rc.rest(); len(rest) != 1 || fmt.Sprint(rest[0].ID) != "7" || rest[0].Result == nil {
		t.Fatalf("want only the answer to call 7, got %v", rest)
	}
}

// TestDirectParamsKnowMCPGo: the direct path reads every key of a
// tools/call's params that mcp-go reads, so that a call using one it does
// not serve itself (a new one in an mcp-go upgrade included) goes to
// mcp-go rather than straight to the handler with that key ignored.
func TestDirectParamsKnowMCPGo(t *testing.T) {
	keys := func(typ reflect.Type) []string {
		var out []string
		for _, f := range reflect.VisibleFields(typ) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.Anonymous && f.IsExported() && name != "-" {
				out = append(out, cmp.Or(name, f.Name))
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := keys(reflect.TypeFor[directParams]()), keys(reflect.TypeFor[mcp.CallToolParams]()); !slices.Equal(got, want) {
		t.Errorf("directParams reads %v of a tools/call's params, mcp-go's CallToolParams %v: add the missing ones "+
			"to directParams and send a call that has them to mcp-go (callDirect)", got, want)
	}
}
