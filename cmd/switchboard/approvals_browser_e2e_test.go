package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/testcdp"
	"switchboard/internal/testwait"
)

// TestE2EApprovalBrowser: headless Chromium on the real gateway's web
// chat: the approval request shows with its buttons; clicking Allow once
// runs the tool, the buttons vanish and the message says who allowed it.
func TestE2EApprovalBrowser(t *testing.T) {
	bin := switchboardBinary(t)
	chromium := findChromium(t)
	dir := newE2E(t, e2eConfig{agent: askAgent(bin), sandbox: "none", timeout: "60s"})
	for _, args := range [][]string{{"group", "add", "main"}, {"grants", "set", "main", "?send"},
		{"approvals", "approvers", "main", "web:user/Ann"}} {
		if out, err := runCLI(bin, dir, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	g := startGW(t, dir)
	b := testcdp.Open(t, chromium, "about:blank")
	b.Navigate("http://" + g.addr + "/?room=lobby")
	g.mustPost("lobby", "Ann", "go")

	var id string
	testwait.For(t, 30*time.Second, "the request with buttons", func() bool {
		for _, m := range g.botMessages("lobby") {
			if strings.Contains(m.Text, "wants to call") {
				id = m.ID
				return true
			}
		}
		return false
	})
	msg := `document.querySelector('.msg[data-id="` + id + `"]')`
	b.WaitFor("the request's three buttons", msg+` && `+msg+`.querySelectorAll('.buttons button').length === 3`)
	if label := b.Eval(msg + `.querySelector('.buttons button').textContent`); label != `"Allow once"` {
		t.Fatalf("first button %s", label)
	}
	b.Eval(`document.getElementById("name").value = "Ann"`)
	b.Eval(msg + `.querySelector('.buttons button').click()`)
	b.WaitFor("the buttons gone and who allowed", msg+`.querySelectorAll('.buttons button').length === 0 && `+
		msg+`.querySelector('.text').textContent.includes("Allowed once by web:user/Ann")`)
	b.WaitFor("the allowed call's message", `[...document.querySelectorAll('.msg .text')].some(e => e.textContent === "ran 1")`)
}
