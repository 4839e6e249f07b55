package adapters

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrBadJID: a string is not a valid JID.
	ErrBadJID = errors.New("invalid chat JID")
	// ErrUnsupported: the platform has no such verb. Wrap it with the platform name.
	ErrUnsupported = errors.New("not supported by this platform")
	// ErrPermanent marks a delivery that will never succeed (bot kicked,
	// channel archived, chat not found); the outbox stops retrying it.
	ErrPermanent = errors.New("permanent delivery failure")
)

// RetryAfterError is a rate limit: try again after Wait.
type RetryAfterError struct{ Wait time.Duration }

func (e *RetryAfterError) Error() string { return fmt.Sprintf("rate limited: retry after %s", e.Wait) }

// Unsupported returns an error naming the platform that lacks verb.
func Unsupported(platform, verb string) error {
	return fmt.Errorf("%s: %s: %w", platform, verb, ErrUnsupported)
}
