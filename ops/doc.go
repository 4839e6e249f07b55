// Package ops is the operations layer: every change that both the CLI and
// the MCP tools make goes through one function here, over the store, with
// its checks (a bad folder, a missing group, a route that would capture
// another group's chat): AddGroup (with a pinned route), AddRoute,
// PinRoute, DeleteRoute, SetBudget, AddTask, SetTaskStatus, Inject,
// QueueSend, MintToken. It also reads what a gateway persisted about itself
// and holds the one budget evaluator. Each works whether or not a gateway
// runs; a running one picks the change up within its poll interval, and its
// own callers (the MCP tools) reload or wake it at once.
package ops
