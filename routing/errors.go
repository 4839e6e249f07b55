package routing

import "errors"

var (
	// ErrInvalidRoute: a route or match fails validation. Errors wrapping it
	// start with the field at fault ("route target ...", "route mode ...").
	ErrInvalidRoute = errors.New("invalid route")
	// ErrForbidden: a non-operator group may not add or delete this route.
	ErrForbidden = errors.New("route edit forbidden")
)

// invalidError marks err as ErrInvalidRoute without repeating that text, so
// the message reads "route mode \"x\": want trigger or observe".
type invalidError struct{ err error }

func (e *invalidError) Error() string   { return e.err.Error() }
func (e *invalidError) Unwrap() []error { return []error{ErrInvalidRoute, e.err} }

func invalid(err error) error { return &invalidError{err: err} }
