package grants_test

import (
	"reflect"
	"sync"
	"testing"

	"switchboard/grants"
)

// p builds a params map from name, value pairs.
func p(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		rules    []string
		tool     string
		params   map[string]string
		allow    bool
		index    int
		reason   string // checked when not ""
		ruleText string // checked when not ""
	}{
		{"no rules deny", nil, "pin_message", nil, false, -1, `denied: no rule matches "pin_message"`, ""},
		{"no matching rule denies", []string{"reply", "like"}, "send", nil, false, -1, `denied: no rule matches "send"`, ""},
		{"allow", []string{"reply", "send*"}, "send_file", nil, true, 1, `allowed by rule 1 "send*"`, "send*"},
		{"last match wins: allow after deny", []string{"!send", "send"}, "send", nil, true, 1, "", ""},
		{"last match wins: deny after allow", []string{"send", "!send"}, "send", nil, false, 1, `denied by rule 1 "!send"`, "!send"},
		{"later deny of another tool does not decide", []string{"*", "!like"}, "reply", nil, true, 0, "", "*"},
		{"deny inside a broad allow", []string{"*", "!like"}, "like", nil, false, 1, "", ""},
		{"re-allow after broad deny", []string{"*", "!*", "reply"}, "reply", nil, true, 2, "", ""},
		{"broad deny after re-allow wins", []string{"reply", "!*"}, "reply", nil, false, 1, "", ""},
		{"deciding rule text is trimmed", []string{"  send  "}, "send", nil, true, 0, `allowed by rule 0 "send"`, "send"},

		// params
		{"param glob matches slack channel", []string{"send(jid=slack:*)"}, "send", p("jid", "slack:T1/channel/C1"), true, 0, "", ""},
		{"param glob mismatch", []string{"send(jid=slack:*)"}, "send", p("jid", "web:lobby"), false, -1, "", ""},
		{"absent param does not match", []string{"send(jid=slack:*)"}, "send", nil, false, -1, "", ""},
		{"absent param with other params", []string{"send(jid=slack:*)"}, "send", p("text", "slack:x"), false, -1, "", ""},
		{"every named param must match", []string{"send(jid=web:*, topic=t*)"}, "send", p("jid", "web:a"), false, -1, "", ""},
		{"all params match", []string{"send(jid=web:*, topic=t*)"}, "send", p("jid", "web:a", "topic", "t1"), true, 0, "", ""},
		{"extra call params are ignored", []string{"send(jid=web:*)"}, "send", p("jid", "web:a", "text", "hi"), true, 0, "", ""},
		{"param star stops at comma", []string{"send(text=a*)"}, "send", p("text", "a,b"), false, -1, "", ""},
		{"param star stops at close paren", []string{"send(text=a*)"}, "send", p("text", "a)b"), false, -1, "", ""},
		{"param star crosses spaces and slashes", []string{"send(text=a*)"}, "send", p("text", "a b/c:d"), true, 0, "", ""},
		{"param star in the middle", []string{"send(jid=slack:*/channel/C1)"}, "send", p("jid", "slack:T1/channel/C1"), true, 0, "", ""},
		{"param literal is exact", []string{"send(jid=web:lobby)"}, "send", p("jid", "web:lobby2"), false, -1, "", ""},
		{"literal star in value matched by star", []string{"send(text=*)"}, "send", p("text", "*"), true, 0, "", ""},
		{"empty glob matches empty value", []string{"send(topic=)"}, "send", p("topic", ""), true, 0, "", ""},
		{"empty glob rejects non-empty value", []string{"send(topic=)"}, "send", p("topic", "x"), false, -1, "", ""},
		{"deny with params narrows", []string{"send", "!send(jid=slack:*)"}, "send", p("jid", "slack:T1/channel/C1"), false, 1, `denied by rule 1 "!send(jid=slack:*)"`, ""},
		{"deny with params leaves other chats", []string{"send", "!send(jid=slack:*)"}, "send", p("jid", "web:lobby"), true, 0, "", ""},
		{"deny with params does not match paramless call", []string{"send", "!send(jid=slack:*)"}, "send", nil, true, 0, "", ""},

		// action globs
		{"star matches every tool", []string{"*"}, "inspect_messages", nil, true, 0, "", ""},
		{"star does not match dash", []string{"*"}, "a-b", nil, false, -1, "", ""},
		{"star does not match dot", []string{"*"}, "a.b", nil, false, -1, "", ""},
		{"star does not match unicode", []string{"*"}, "sénd", nil, false, -1, "", ""},
		{"prefix glob matches exact", []string{"send*"}, "send", nil, true, 0, "", ""},
		{"prefix glob is anchored", []string{"send*"}, "resend", nil, false, -1, "", ""},
		{"suffix glob", []string{"*_task"}, "cancel_task", nil, true, 0, "", ""},
		{"suffix glob is anchored", []string{"*_task"}, "list_tasks", nil, false, -1, "", ""},
		{"action star stops at non-word", []string{"send*"}, "send-file", nil, false, -1, "", ""},
		{"action is case sensitive", []string{"Send"}, "send", nil, false, -1, "", ""},

		// fail closed
		{"unparsable allow never allows", []string{"send("}, "send", nil, false, -1, "", ""},
		{"unparsable allow with params never allows", []string{"send(jid=web:*"}, "send", p("jid", "web:a"), false, -1, "", ""},
		{"unparsable deny does not deny either", []string{"*", "!like("}, "like", nil, true, 0, "", ""},
		{"indexes count unparsable rules", []string{"send(", "send"}, "send", nil, true, 1, `allowed by rule 1 "send"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := grants.Compile(tt.rules).Check(tt.tool, tt.params)
			if d.Allow != tt.allow || d.Ask || d.Index != tt.index {
				t.Fatalf("Check(%q, %v) under %q = %+v, want allow=%v index=%d", tt.tool, tt.params, tt.rules, d, tt.allow, tt.index)
			}
			if tt.reason != "" && d.Reason != tt.reason {
				t.Errorf("Reason = %q, want %q", d.Reason, tt.reason)
			}
			if tt.ruleText != "" && d.Rule != tt.ruleText {
				t.Errorf("Rule = %q, want %q", d.Rule, tt.ruleText)
			}
			if d.Index == -1 && d.Rule != "" {
				t.Errorf("Rule = %q with no deciding rule, want empty", d.Rule)
			}
		})
	}
}

// TestCheckAsk: a '?' rule that decides a call asks (neither allows nor
// denies outright); the last matching rule still decides.
func TestCheckAsk(t *testing.T) {
	tests := []struct {
		name    string
		rules   []string
		tool    string
		params  map[string]string
		verdict string
		index   int
		reason  string // checked when not ""
	}{
		{"ask decides", []string{"*", "?send"}, "send", nil, "ask", 1, `asked by rule 1 "?send"`},
		{"ask with params narrows", []string{"send", "?send(jid=telegram:*)"}, "send", p("jid", "telegram:1"), "ask", 1, ""},
		{"ask with params leaves other chats", []string{"send", "?send(jid=telegram:*)"}, "send", p("jid", "web:lobby"), "allow", 0, ""},
		{"deny after ask wins", []string{"?send", "!send"}, "send", nil, "deny", 1, ""},
		{"allow after ask wins", []string{"?*", "send"}, "send", nil, "allow", 1, ""},
		{"ask glob asks for every tool", []string{"?*"}, "like", nil, "ask", 0, ""},
		{"unparsable ask asks nothing", []string{"send", "?send("}, "send", nil, "allow", 0, ""},
		{"no rule still denies", []string{"?send"}, "like", nil, "deny", -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := grants.Compile(tt.rules).Check(tt.tool, tt.params)
			if d.Verdict() != tt.verdict || d.Index != tt.index || (d.Allow && d.Ask) {
				t.Fatalf("Check(%q, %v) under %q = %+v (%s), want %s index=%d", tt.tool, tt.params, tt.rules, d, d.Verdict(), tt.verdict, tt.index)
			}
			if tt.reason != "" && d.Reason != tt.reason {
				t.Errorf("Reason = %q, want %q", d.Reason, tt.reason)
			}
		})
	}
}

func TestListed(t *testing.T) {
	tests := []struct {
		name  string
		rules []string
		tool  string
		want  bool
	}{
		{"no rules", nil, "send", false},
		{"allowed", []string{"send"}, "send", true},
		{"not mentioned", []string{"send"}, "like", false},
		{"unconditional deny hides", []string{"*", "!like"}, "like", false},
		{"unconditional deny leaves others", []string{"*", "!like"}, "reply", true},
		{"deny with params only narrows", []string{"*", "!send(jid=slack:*)"}, "send", true},
		{"deny glob hides", []string{"*", "!*_task"}, "cancel_task", false},
		{"deny glob leaves non-matching", []string{"*", "!*_task"}, "list_tasks", true},
		{"allow after unconditional deny lists", []string{"!*", "reply"}, "reply", true},
		{"allow before unconditional deny does not", []string{"reply", "!*"}, "reply", false},
		{"allow with params counts", []string{"send(jid=web:*)"}, "send", true},
		{"allow with params after unconditional deny", []string{"!send", "send(jid=web:*)"}, "send", true},
		{"allow with params before unconditional deny", []string{"send(jid=web:*)", "!send"}, "send", false},
		{"unparsable allow ignored", []string{"like("}, "like", false},
		{"unparsable deny ignored", []string{"*", "!like("}, "like", true},
		{"unparsable allow after deny ignored", []string{"!*", "reply("}, "reply", false},
		{"tool with non-word characters", []string{"*"}, "a-b", false},
		{"ask lists", []string{"?send"}, "send", true},
		{"ask with params lists", []string{"?send(jid=telegram:*)"}, "send", true},
		{"ask after unconditional deny lists", []string{"!*", "?reply"}, "reply", true},
		{"unconditional deny after ask hides", []string{"?reply", "!reply"}, "reply", false},
		{"ask does not hide an allowed tool", []string{"*", "?like"}, "like", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := grants.Compile(tt.rules).Listed(tt.tool); got != tt.want {
				t.Errorf("Listed(%q) under %q = %v, want %v", tt.tool, tt.rules, got, tt.want)
			}
		})
	}
}

func TestListedTools(t *testing.T) {
	tests := []struct {
		name  string
		rules []string
		want  []string
	}{
		{"deny all then reply", []string{"!*", "reply"}, []string{"reply"}},
		{"globs keep catalog order", []string{"*_task", "send*", "like"}, []string{"send", "send_file", "like", "schedule_task", "pause_task", "resume_task", "cancel_task"}},
		{"nothing", []string{"!*"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := grants.Compile(tt.rules).ListedTools(grants.ContractCatalog.Tools())
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListedTools under %q = %q, want %q", tt.rules, got, tt.want)
			}
		})
	}
}

func TestNilSetDeniesEverything(t *testing.T) {
	var s *grants.Set
	if d := s.Check("send", nil); d.Allow || d.Index != -1 {
		t.Errorf("nil Set Check = %+v, want deny", d)
	}
	if s.Listed("send") || len(s.ListedTools(grants.ContractCatalog.Tools())) != 0 || s.Rules() != nil {
		t.Error("nil Set lists tools or has rules")
	}
}

func TestRulesIsACopy(t *testing.T) {
	in := []string{"send", "!like"}
	s := grants.Compile(in)
	in[0] = "!send"
	got := s.Rules()
	if !reflect.DeepEqual(got, []string{"send", "!like"}) {
		t.Fatalf("Rules() = %q after the caller changed its slice", got)
	}
	got[1] = "like"
	if !s.Check("send", nil).Allow || s.Check("like", nil).Allow || s.Rules()[1] != "!like" {
		t.Error("changing a slice returned by Rules() changed the Set")
	}
}

// TestSetConcurrentUse fails under -race if a Set ever caches lazily.
func TestSetConcurrentUse(t *testing.T) {
	s := grants.ContractCatalog.ForGroup(2, []string{"!send(jid=slack:*)"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, tool := range grants.ContractCatalog.Tools() {
				s.Check(tool, p("jid", "slack:T1/channel/C1"))
				s.Listed(tool)
			}
		})
	}
	wg.Wait()
}
