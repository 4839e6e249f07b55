package grants

// contractTools is a catalog as the MCP layer's tool registry fills it: the
// tools of CONTRACT §9 and the spend tools, in catalog order. It is this
// package's test data; the registry's own tests (package ipc) check
// the real catalog.
var contractTools = func() []Tool {
	var tools []Tool
	for _, c := range []struct {
		cat   Category
		names []string
	}{
		{Messaging, []string{"send", "reply", "send_file", "edit", "delete", "like", "pin_message", "unpin_message"}},
		{History, []string{"inspect_messages", "get_thread", "fetch_history", "find_messages"}},
		{Routing, []string{"list_routes", "add_route", "delete_route", "set_routes", "explain_route"}},
		{Groups, []string{"refresh_groups", "register_group", "delegate_group", "escalate_group", "set_mid_turn"}},
		{Tasks, []string{"schedule_task", "list_tasks", "pause_task", "resume_task", "cancel_task", "inspect_tasks", "preview_schedule"}},
		{Session, []string{"inject_message", "reset_session", "engage", "disengage", "get_work", "set_work", "inspect_session", "list_grants"}},
		{Spend, []string{"report_usage", "list_budgets", "set_budget"}},
	} {
		for _, name := range c.names {
			tools = append(tools, Tool{Name: name, Category: c.cat})
		}
	}
	return tools
}()

// ContractTools returns the test catalog's entries; the slice is new on
// every call.
func ContractTools() []Tool { return append([]Tool(nil), contractTools...) }

// ContractCatalog is the test catalog.
var ContractCatalog = func() *Catalog {
	c, err := NewCatalog(contractTools)
	if err != nil {
		panic(err) // test data
	}
	return c
}()
