// Package routing owns the route table of CONTRACT §5: matching inbound
// messages to a group folder by ordered glob routes, the owner of a chat (kept
// apart from "does this message trigger a turn"), explanations of why a route
// won, and the authority check for route edits made by non-operator groups.
//
// It is pure: no I/O. A Table is built once from a route list (New or Load)
// and is immutable afterwards, so any number of goroutines may read it; a
// route change builds a new Table.
//
// Globs: "*" matches any run of characters except "/", "**" (a documented
// extension) matches any run including "/", so "telegram:**" matches every
// Telegram chat. Every other character, "?" included, matches itself.
package routing
