package grants

import "errors"

// ErrBadRule is wrapped by every error Parse and Validate return. A rule that
// does not parse is kept in a Set (so indexes line up) but matches nothing.
var ErrBadRule = errors.New("invalid grant rule")

// ErrBadCatalog is wrapped by every error NewCatalog returns: the tool
// registry and the tier defaults disagree, which is a programming error.
var ErrBadCatalog = errors.New("invalid tool catalog")
