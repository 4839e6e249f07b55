// Package ops holds the operations that the CLI and the running
// gateway share, over the store: inject a message, queue a send, add a task
// or change its status, read what a gateway persisted about itself. Each
// works whether or not a gateway runs; a running one picks the change up
// within its poll interval, and its own callers (the MCP tools) wake it at
// once.
package ops
