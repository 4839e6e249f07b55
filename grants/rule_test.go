package grants_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"switchboard/grants"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want grants.Rule
	}{
		{"plain tool", "send", grants.Rule{Text: "send", Action: "send"}},
		{"action glob", "send*", grants.Rule{Text: "send*", Action: "send*"}},
		{"star", "*", grants.Rule{Text: "*", Action: "*"}},
		{"double star kept as written", "**", grants.Rule{Text: "**", Action: "**"}},
		{"deny", "!like", grants.Rule{Text: "!like", Deny: true, Action: "like"}},
		{"deny glob", "!*_task", grants.Rule{Text: "!*_task", Deny: true, Action: "*_task"}},
		{"deny with param", "!send(jid=slack:*)", grants.Rule{
			Text: "!send(jid=slack:*)", Deny: true, Action: "send",
			Params: []grants.Param{{Name: "jid", Glob: "slack:*"}},
		}},
		{"ask", "?send(jid=telegram:*)", grants.Rule{
			Text: "?send(jid=telegram:*)", Ask: true, Action: "send",
			Params: []grants.Param{{Name: "jid", Glob: "telegram:*"}},
		}},
		{"ask glob", "?*", grants.Rule{Text: "?*", Ask: true, Action: "*"}},
		{"two params in order", "send(jid=web:*,topic=t*)", grants.Rule{
			Text: "send(jid=web:*,topic=t*)", Action: "send",
			Params: []grants.Param{{Name: "jid", Glob: "web:*"}, {Name: "topic", Glob: "t*"}},
		}},
		{"whitespace trimmed around rule, names, values and commas", "  \tsend( jid = web:* ,  topic=  a b  )\n", grants.Rule{
			Text: "send( jid = web:* ,  topic=  a b  )", Action: "send",
			Params: []grants.Param{{Name: "jid", Glob: "web:*"}, {Name: "topic", Glob: "a b"}},
		}},
		{"empty glob means present and empty", "send(topic=)", grants.Rule{
			Text: "send(topic=)", Action: "send", Params: []grants.Param{{Name: "topic", Glob: ""}},
		}},
		{"value may contain =", "send(text=a=b)", grants.Rule{
			Text: "send(text=a=b)", Action: "send", Params: []grants.Param{{Name: "text", Glob: "a=b"}},
		}},
		{"value may contain ! and unicode", "send(text=!héllo*)", grants.Rule{
			Text: "send(text=!héllo*)", Action: "send", Params: []grants.Param{{Name: "text", Glob: "!héllo*"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := grants.Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the useful part of the message
	}{
		{"empty", "", "empty rule"},
		{"blank", "  \t ", "empty rule"},
		{"bang alone", "!", `missing action after "!"`},
		{"double bang", "!!send", `unexpected '!' at column 2`},
		{"ask alone", "?", `missing action after "?"`},
		{"deny and ask", "!?send", `unexpected '?' at column 2`},
		{"ask and deny", "?!send", `unexpected '!' at column 2`},
		{"double ask", "??send", `unexpected '?' at column 2`},
		{"space after bang", "! send", `unexpected ' ' at column 2`},
		{"unterminated", "send(jid=", `missing ")"`},
		{"unterminated with value", "send(jid=a", `missing ")"`},
		{"empty parens", "send()", `empty parameter list "()"`},
		{"blank parens", "send(   )", `empty parameter list "()"`},
		{"duplicate param", "send(jid=a, jid=b)", `duplicate parameter "jid"`},
		{"= without name", "send(=x)", `missing parameter name before "="`},
		{"blank name", "send( =x)", `missing parameter name before "="`},
		{"trailing comma", "send(jid=a,)", `trailing ","`},
		{"leading comma", "send(,jid=a)", "empty parameter 1"},
		{"double comma", "send(jid=a,,topic=b)", "empty parameter 2"},
		{"param without =", "send(jid)", `parameter "jid" has no "="`},
		{"nested parens", "send(jid=(a))", `nested "("`},
		{"call in value", "send(jid=f(x))", `nested "("`},
		{"text after close", "send(jid=a) extra", `unexpected ' ' at column 12 after ")"`},
		{"double close", "send(jid=a))", `unexpected ')' at column 12 after ")"`},
		{"second param list", "send(jid=a)(topic=b)", `unexpected '(' at column 12 after ")"`},
		{"no action before paren", "(jid=a)", `missing action before "("`},
		{"deny without action", "!(jid=a)", `missing action before "("`},
		{"unicode in action", "sénd", `unexpected 'é' at column 2`},
		{"space in action", "send file", `unexpected ' ' at column 5`},
		{"space before paren", "send (jid=a)", `unexpected ' ' at column 5`},
		{"dash in action", "send-file", `unexpected '-' at column 5`},
		{"dot in action", "send.file", `unexpected '.' at column 5`},
		{"stray close", "send)", `unexpected ')' at column 5`},
		{"invalid utf-8", "send\xff", "unexpected byte 0xff at column 5"},
		{"bad param name", "send(j-d=a)", `invalid parameter name "j-d"`},
		{"unicode param name", "send(jïd=a)", `invalid parameter name "jïd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := grants.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want error containing %q", tt.in, tt.want)
			}
			if !errors.Is(err, grants.ErrBadRule) {
				t.Errorf("Parse(%q) error %v does not wrap ErrBadRule", tt.in, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("Parse(%q) error %q, want it to contain %q", tt.in, msg, tt.want)
			}
			if prefix := "rule " + strconv.Quote(strings.TrimSpace(tt.in)) + ": "; !strings.HasPrefix(msg, prefix) {
				t.Errorf("Parse(%q) error %q, want it to start with %q", tt.in, msg, prefix)
			}
		})
	}
}

func TestParseErrorNamesTheRule(t *testing.T) {
	_, err := grants.Parse("  send(jid=  ")
	if err == nil {
		t.Fatal("Parse succeeded on an unterminated rule")
	}
	if want := `rule "send(jid=": missing ")"`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		rules []string
		want  string // "" for no error
	}{
		{"none", nil, ""},
		{"all good", []string{"*", "!like", "send(jid=web:*)"}, ""},
		{"first bad reported", []string{"send", "like(", "x y"}, `rule "like(": missing ")"`},
		{"tier defaults are valid", grants.ContractCatalog.Defaults(2), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := grants.Validate(tt.rules)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate(%q) = %v, want nil", tt.rules, err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate(%q) = nil, want error containing %q", tt.rules, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate(%q) = %v, want error containing %q", tt.rules, err, tt.want)
			case err != nil && !errors.Is(err, grants.ErrBadRule):
				t.Fatalf("Validate error %v does not wrap ErrBadRule", err)
			}
		})
	}
}
