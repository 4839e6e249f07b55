package web

import (
	"encoding/json"
	"testing"

	"switchboard/adapters"
	"switchboard/internal/testcdp"
	"switchboard/internal/testenv"
)

// TestBrowserRendersBotMarkdown: the page shows the bot's Markdown
// rendered, a reply and a message with buttons (an approval request) alike,
// and its edit too: bold, inline code and code blocks become elements; a
// tool argument that holds HTML shows as its text, and nothing in it runs.
// Without Chromium it skips, or fails when CI is set.
func TestBrowserRendersBotMarkdown(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, nil)
	chat := adapters.JID("web:lobby")
	s.post(t, "lobby", `{"sender": "ann", "text": "**not bold**: people's text stays as typed"}`)
	s.g.reply(t, s.a, "web:lobby", "Done: **3 tickets** closed, see `tickets.md`.")
	const hostile = `<img src=x onerror="window.pwned=1">`
	request := "**Approval needed** (request `ab12`)\nGroup `main` wants to call `Bash`:\n```\ncommand: echo " + hostile +
		" **not bold** `not code`\ndescription: " + hostile + "\n```"
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: request}, []adapters.Button{
		{Label: "Allow once", Data: "appr:ab12:allow", Style: adapters.StylePrimary}, {Label: "Deny", Data: "appr:ab12:deny", Style: adapters.StyleDanger}})
	if err != nil {
		t.Fatal(err)
	}
	b := testcdp.Open(t, chromium, "about:blank")
	b.Navigate(s.base + "/?room=lobby")
	msg := `document.querySelector('.msg[data-id="` + id.String() + `"] .text')`
	b.WaitFor("the approval request", msg+" !== null")

	for _, c := range []struct{ what, expr, want string }{
		{"no image anywhere in the messages", `document.querySelectorAll("#messages img").length`, "0"},
		{"nothing ran", `window.pwned`, "undefined"},
		{"the request's title, bold", msg + `.querySelector("strong")?.textContent`, "Approval needed"},
		{"its inline code", `Array.from(` + msg + `.querySelectorAll(":scope > code"), c => c.textContent).join(" ")`, "ab12 main Bash"},
		{"its arguments, one code block, as text", msg + `.querySelector("pre code")?.textContent`,
			"command: echo " + hostile + " **not bold** `not code`\ndescription: " + hostile},
		{"no markup in the code block", msg + `.querySelectorAll("pre strong, pre code code, pre img").length`, "0"},
		{"the whole request as its text", msg + `.textContent.replace(/\n/g, " ")`,
			"Approval needed (request ab12) Group main wants to call Bash:command: echo " + hostile + " **not bold** `not code` description: " + hostile},
		{"a reply, rendered the same way", `Array.from(document.querySelectorAll(".msg.bot .text")).map(t => t.querySelector("strong") && t.querySelector("strong").textContent + "|" + t.querySelector("code").textContent)[0]`,
			"3 tickets|tickets.md"},
		{"a person's message as typed", `document.querySelector(".msg:not(.bot) .text").textContent`, "**not bold**: people's text stays as typed"},
	} {
		if got := evalString(t, b, c.expr); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}

	// The edit after a decision renders too.
	if err := s.a.EditButtons(t.Context(), adapters.MessageRef{Chat: chat, ID: id}, "**Allowed once** by `web:user/ann`", nil); err != nil {
		t.Fatal(err)
	}
	b.WaitFor("the edit, rendered", msg+`.querySelector("strong") !== null && `+msg+`.querySelector("strong").textContent === "Allowed once" && `+
		msg+`.querySelector("code").textContent === "web:user/ann"`)
	if got := evalString(t, b, `window.pwned`); got != "undefined" {
		t.Errorf("after the edit, window.pwned = %s", got)
	}
}

// evalString is expr's value in the page, as a string.
func evalString(t *testing.T, b *testcdp.Page, expr string) string {
	t.Helper()
	var v string
	if raw := b.Eval("String(" + expr + ")"); json.Unmarshal([]byte(raw), &v) != nil {
		t.Fatalf("%s: %s is no string", expr, raw)
	}
	return v
}
