package markdown

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPartial(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"complete text unchanged", "**a** and `b`, [c](https://c.io)\n", "**a** and `b`, [c](https://c.io)\n"},
		{"open fence closed", "```go\nfunc main() {", "```go\nfunc main() {\n```"},
		{"closing fence arriving", "```\ncode\n``", "```\ncode\n```"},
		{"fence opener arriving", "text\n\n`", "text\n\n"},
		{"bold closed", "so **bold", "so **bold**"},
		{"code span closed", "run `make te", "run `make te`"},
		{"nested: code inside bold", "a **b `c", "a **b `c`**"},
		{"italic inside bold", "**a *b", "**a *b***"},
		{"strike closed", "~~gone", "~~gone~~"},
		{"half a closer dropped", "**the plan*", "**the plan**"},
		{"dangling opener dropped", "done **", "done "},
		{"trailing space before closer", "**bold ", "**bold**"},
		{"earlier paragraph left alone", "**a**\n\nb **c", "**a**\n\nb **c**"},
		{"after a closed fence", "```\n**x\n```\n**y", "```\n**x\n```\n**y**"},
		{"link URL arriving", "see [the docs](https://exa", "see the docs"},
		{"identifiers keep underscores", "snake_case_name and __init__", "snake_case_name and __init__"},
		{"list bullets are not emphasis", "* one\n* two", "* one\n* two"},
		{"escaped star", `a \*b`, `a \*b`},
		{"cut rune dropped", "caf\xc3", "caf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Partial(tc.in); got != tc.want {
				t.Errorf("Partial(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

// Every prefix of a reply, as a live reply shows it on Telegram, shows no
// raw markup and is valid UTF-8, whatever the cut.
func TestPartialPrefixesShowNoMarkup(t *testing.T) {
	const reply = "Here is **the plan** for `make test`:\n\n```go\nfunc main() {\n\tfmt.Println(\"héllo\")\n}\n```\n\n" +
		"See [the docs](https://example.com/docs) and ~~old~~ *new* notes; snake_case_names stay. ✅\n"
	for i := 1; i <= len(reply); i++ {
		prefix := reply[:i]
		rendered := TelegramHTML(Partial(prefix))
		shown := HTMLText(rendered)
		for _, raw := range []string{"**", "`", "~~", "](", "*n"} {
			if strings.Contains(shown, raw) {
				t.Errorf("prefix %q shows %q: %q", prefix, raw, shown)
			}
		}
		if !utf8.ValidString(rendered) {
			t.Errorf("prefix %q renders invalid UTF-8: %q", prefix, rendered)
		}
	}
}
