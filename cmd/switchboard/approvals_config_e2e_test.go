package main

import (
	"strings"
	"testing"
)

// TestE2EApprovalsFromConfig: groups[].approvals in the config reach the
// running gateway: the request is posted in approvals.chat, and the
// approver the config names decides it (run dropped the config's group
// list after seeding, before handing the approvals on: every ask was
// denied at once, "group main has no approvers").
func TestE2EApprovalsFromConfig(t *testing.T) {
	dir := shortDir(t)
	script := approvalAgent(t, dir)
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "grants", "set", "main", "?send")
	base, _, _ := approvalGatewayGroups(t, dir, script,
		`[{folder: root}, {folder: main, approvals: {approvers: [web:user/ann], chat: "web:approvals"}}]`, "approvals: {timeout: 60s}")

	postAs(t, base, "lobby", "ann", "go 1")
	id := waitRequest(t, dir, 1)
	waitRoomText(t, base, "approvals", "(request `"+id+"`)")
	postAs(t, base, "approvals", "ann", "/approve "+id)
	if out := waitOut(t, dir, "1"); strings.Contains(out, `"isError":true`) {
		t.Errorf("the call the config's approver allowed failed:\n%s", out)
	}
	waitRoomText(t, base, "lobby", "sent 1")
}
