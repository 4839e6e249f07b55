package markdown

import (
	"strings"
	"testing"
)

func TestTelegramHTML(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text escaped", "a < b & c > d. (x) - y!", "a &lt; b &amp; c &gt; d. (x) - y!"},
		{"bold italic strike", "**bold** *it* ~~gone~~", "<b>bold</b> <i>it</i> <s>gone</s>"},
		{"code span escaped", "run `a<b>&c`", "run <code>a&lt;b&gt;&amp;c</code>"},
		{"fenced code", "```go\nif a < b {\n}\n```", "<pre><code class=\"language-go\">if a &lt; b {\n}</code></pre>"},
		{"link", "[docs](https://x.io/a?b=1&c=2)", `<a href="https://x.io/a?b=1&amp;c=2">docs</a>`},
		{"unsafe link keeps label", "[click](javascript:alert(1))", "click"},
		{"heading", "# Title\n\nbody", "<b>Title</b>\n\nbody"},
		{"list", "- one\n- two", "• one\n• two"},
		{"ordered", "3. c\n4. d", "3. c\n4. d"},
		{"quote", "> said\n> so", "<blockquote>said\nso</blockquote>"},
		{"raw html is text", "<b>not bold</b>", "&lt;b&gt;not bold&lt;/b&gt;"},
		{"autolink", "see https://x.io now", `see <a href="https://x.io">https://x.io</a> now`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TelegramHTML(tc.in); got != tc.want {
				t.Errorf("TelegramHTML(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSlackMrkdwn(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bold italic strike", "**bold** _it_ ~~gone~~", "*bold* _it_ ~gone~"},
		{"no forged mention", "hi <@U123> & <!channel>", "hi &lt;@U123&gt; &amp; &lt;!channel&gt;"},
		{"link", "[docs](https://x.io/a|b)", "<https://x.io/a%7Cb|docs>"},
		{"code block", "```\nx := <-c\n```", "```\nx := &lt;-c\n```"},
		{"heading", "## Next", "*Next*"},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", "*a* | *b*\n1 | 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SlackMrkdwn(tc.in); got != tc.want {
				t.Errorf("SlackMrkdwn(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPlainKeepsEveryWord(t *testing.T) {
	in := "# Report\n\n**Done**: 3 of *4* tasks, see [the log](https://x.io/log).\n\n- `make test`\n- ~~flaky~~ fixed\n\n```sh\necho hi\n```"
	got := Plain(in)
	want := "Report\n\nDone: 3 of 4 tasks, see the log (https://x.io/log).\n\n• make test\n• flaky fixed\n\necho hi"
	if got != want {
		t.Errorf("Plain =\n%q\nwant\n%q", got, want)
	}
	for _, w := range []string{"**", "`", "~~", "](", "#"} {
		if strings.Contains(got, w) {
			t.Errorf("Plain left markup %q in %q", w, got)
		}
	}
}

// TestSlackPlainEscapesCode: SlackPlain (the text of a message Slack
// refused as mrkdwn, and the notification fallback of Block Kit messages)
// escapes &, < and > in code spans and code blocks as in the rest: Slack
// reads <!channel> and <@U…> in any text.
func TestSlackPlainEscapesCode(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"code block", "run:\n```\necho <!channel> <@U1> a&b\n```", "run:\n\necho &lt;!channel&gt; &lt;@U1&gt; a&amp;b"},
		{"indented code", "run:\n\n    <!here>", "run:\n\n&lt;!here&gt;"},
		{"code span", "`<!channel>`", "&lt;!channel&gt;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SlackPlain(tc.in); got != tc.want {
				t.Errorf("SlackPlain(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
		})
	}
}

// What an agent escapes shows as the character it escaped, and an entity
// or numeric reference as the character it names, as in any CommonMark
// renderer: "2 \* 3" is "2 * 3" in the chat, not "2 \* 3". Code keeps its
// backslashes; Slack's mrkdwn, which has no escapes, keeps those of its
// formatting characters (a bare * would start bold).
func TestEscapesAndReferencesResolved(t *testing.T) {
	in := `2 \* 3 \_x\_ a\|b \# not a heading, AT&amp;T &#65;&#x42; &copy; \&amp; &bogus; C:\Users ` + "`a \\* b`"
	for _, tc := range []struct {
		name   string
		render func(string) string
		want   string
	}{
		{"telegram", TelegramHTML, `2 * 3 _x_ a|b # not a heading, AT&amp;T AB © &amp;amp; &amp;bogus; C:\Users <code>a \* b</code>`},
		{"plain", Plain, `2 * 3 _x_ a|b # not a heading, AT&T AB © &amp; &bogus; C:\Users a \* b`},
		{"slack", SlackMrkdwn, `2 \* 3 \_x\_ a|b # not a heading, AT&amp;T AB © &amp;amp; &amp;bogus; C:\Users ` + "`a \\* b`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.render(in); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	// In a link's destination too (an agent escapes the & of a query):
	// Telegram's href held "&amp;amp;", a link to another address. An
	// autolink has no backslash escapes.
	for _, c := range []struct{ in, want string }{
		{"[a](http://x/?a=1&amp;b=2)", `<a href="http://x/?a=1&amp;b=2">a</a>`},
		{`[a](http://x/?a=1\&b=2)`, `<a href="http://x/?a=1&amp;b=2">a</a>`},
		{"<http://x/?a=1&amp;b=2>", `<a href="http://x/?a=1&amp;b=2">http://x/?a=1&amp;b=2</a>`},
		{`<http://x/?q=\*>`, `<a href="http://x/?q=\*">http://x/?q=\*</a>`},
	} {
		if got := TelegramHTML(c.in); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
	if got, want := Plain("[a](http://x/?a=1&amp;b=2)"), "a (http://x/?a=1&b=2)"; got != want {
		t.Errorf("plain link: got %s, want %s", got, want)
	}
	// A table cell with an escaped pipe, as agents write them.
	if got, want := TelegramHTML("| cmd | means |\n|---|---|\n| `a \\| b` | a or b \\| c |"), "<b>cmd</b> | <b>means</b>\n<code>a | b</code> | a or b | c"; got != want {
		t.Errorf("table: got\n%s\nwant\n%s", got, want)
	}
}
