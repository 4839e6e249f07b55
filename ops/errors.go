package ops

import "errors"

// ErrNoOwner: no route owns the chat, so there is no folder to address.
var ErrNoOwner = errors.New("no route owns this chat")
