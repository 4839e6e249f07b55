package gateway

import (
	"switchboard/adapters"
)

// ErrBadMessage: an inbound message failed validation and was not stored
// (the adapters' sentinel, so adapters can recognise it).
var ErrBadMessage = adapters.ErrBadMessage
