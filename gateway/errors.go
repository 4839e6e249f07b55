package gateway

import (
	"errors"

	"switchboard/adapters"
)

var (
	// ErrBadMessage: an inbound message failed validation and was not stored
	// (the adapters' sentinel, so adapters can recognise it).
	ErrBadMessage = adapters.ErrBadMessage
	// ErrNoOwner: no route owns the chat, so there is no folder to address.
	ErrNoOwner = errors.New("no route owns this chat")
	// ErrNoAdapter: no enabled adapter serves the chat's platform.
	ErrNoAdapter = errors.New("no adapter for this platform is enabled")
)
