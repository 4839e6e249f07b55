package adapters

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrBadJID: a string is not a valid JID.
	ErrBadJID = errors.New("invalid JID")
	// ErrBadMessage: an inbound event failed validation and will never be
	// stored (empty id, unparsable JID, oversized or invalid text).
	ErrBadMessage = errors.New("invalid inbound message")
	// ErrUnsupported: the platform has no such verb. Wrap it with the platform name.
	ErrUnsupported = errors.New("not supported by this platform")
	// ErrNoAdapter: no enabled adapter serves the chat's platform. Wrap it
	// with the platform name.
	ErrNoAdapter = errors.New("no adapter for this platform is enabled")
	// ErrPermanent marks a delivery that will never succeed (bot kicked,
	// channel archived, chat not found); the outbox stops retrying it.
	ErrPermanent = errors.New("permanent delivery failure")
	// ErrBadToken: the platform refused the adapter's credentials at start.
	// Wrap it with the config key to fix (adapters.telegram.token).
	ErrBadToken = errors.New("the platform refused the token")
	// ErrConfig: the adapter cannot start with its configuration (a listen
	// address in use, a missing setting). Like ErrBadToken at start, it stops
	// the gateway with the message; wrap it with the config key to fix.
	ErrConfig = errors.New("unusable adapter configuration")
	// ErrFormat: the platform refused the message's formatting. Adapters
	// resend as plain text themselves; this never reaches the gateway
	// unless the plain text was refused too.
	ErrFormat = errors.New("the platform refused the formatting")
	// ErrTooLarge: an attachment is larger than its download cap
	// (HTTPFile.MaxBytes); it comes wrapped with ErrPermanent.
	ErrTooLarge = errors.New("the file is larger than the download cap")
	// ErrUnknownRequest: a button press names a request that does not exist
	// (an approval request id nobody issued). Host.Press returns it with
	// the answer to show the presser; nothing changed. The web API answers
	// 404.
	ErrUnknownRequest = errors.New("no such request")
	// ErrLiveEnded: Update of a live reply that was already finished or
	// aborted, or Finish of an aborted one; nothing was shown.
	ErrLiveEnded = errors.New("the live reply has ended")
)

// RetryAfterError is a rate limit: try again after Wait.
type RetryAfterError struct{ Wait time.Duration }

func (e *RetryAfterError) Error() string { return fmt.Sprintf("rate limited: retry after %s", e.Wait) }

// Unsupported returns an error naming the platform that lacks verb.
func Unsupported(platform, verb string) error {
	return fmt.Errorf("%s: %s: %w", platform, verb, ErrUnsupported)
}
