// Package grants owns tool permissions: it parses grant rules, evaluates them
// for a tool call, decides which tools a group sees listed, and holds the tier
// defaults (CONTRACT §7), written over the tool catalog: a Catalog of tool
// names by category, which the MCP layer's tool registry fills. It is the one
// permission evaluator of Switchboard; it is pure (no I/O) and imports no
// other project package.
//
// A rule is
//
//	[!]action[(param=glob, ...)]
//
// The action is a glob over tool names whose '*' matches word characters only
// ([A-Za-z0-9_]*): "*" matches every tool, "send*" matches send and send_file,
// "*_task" matches cancel_task. A param glob's '*' matches any run of bytes
// except ',' and ')'. A rule with params matches a call only when every named
// param is present in the call and matches its glob.
//
// For a call, the last rule that matches decides; '!' denies; no matching rule
// denies. A rule that does not parse matches nothing: it neither allows nor
// denies (fail closed). Validate reports such rules so that the operator's CLI
// can refuse them before they are stored.
//
// A tool is listed when some allow rule whose action matches its name comes
// after the last unconditional deny of it (a '!' rule without params). So
// "!like" hides like, while "!send(jid=slack:*)" only narrows send, which stays
// listed; listed tools are checked again, with their params, on every call.
// Listing ignores params, so it can over-approximate: in "send(jid=web:*)",
// "!send(jid=*)" send is listed although every call with a jid is denied.
//
// The grammar is strict where the contract is silent: an action is word
// characters and '*' only; there is no whitespace between '!', the action and
// '('; "()" is an error; a param value may not contain '(' (nor ',' or ')',
// which end it); an empty value ("topic=") matches a present, empty param.
package grants
