package demoagent

import "errors"

// errNoCA: $SWITCHBOARD_MCP_CA is set and Options has no HTTPClient to
// trust it with.
var errNoCA = errors.New("a CA file needs Options.HTTPClient")
