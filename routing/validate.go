package routing

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// MaxGlobLen is the longest glob a match value may be, in bytes.
const MaxGlobLen = 512

// ValidateMatch checks a route's match: every key is one of MatchKeys and
// every glob is non-empty, at most MaxGlobLen bytes and free of control
// characters. A nil or empty match is valid (a catch-all). Errors wrap
// ErrInvalidRoute.
func ValidateMatch(m map[string]string) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(MatchKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return invalid(fmt.Errorf("unknown match key %q; valid keys are %s", unknown[0], strings.Join(MatchKeys, ", ")))
	}
	for _, k := range MatchKeys {
		g, ok := m[k]
		if !ok {
			continue
		}
		if err := validateGlob(g); err != nil {
			return invalid(fmt.Errorf("match key %s: %w", k, err))
		}
	}
	return nil
}

func validateGlob(g string) error {
	if g == "" {
		return fmt.Errorf("empty glob; leave the key out to match anything")
	}
	if len(g) > MaxGlobLen {
		return fmt.Errorf("glob is %d bytes, at most %d allowed", len(g), MaxGlobLen)
	}
	for _, r := range g {
		if unicode.IsControl(r) {
			return fmt.Errorf("glob %q has control character %U", g, r)
		}
	}
	return nil
}

// Validate checks the route's match, its target folder and its mode ("" is
// taken as trigger). Errors wrap ErrInvalidRoute and name the field:
// `route target "Main": ...`, `route mode "x": want trigger or observe`.
// Validate does not look at ID or Seq: they are the store's business.
func (r Route) Validate() error {
	if err := ValidateMatch(r.Match); err != nil {
		return fmt.Errorf("route match: %w", err)
	}
	if err := r.Target.Validate(); err != nil {
		return invalid(fmt.Errorf("route target %q: %w", r.Target, err))
	}
	switch r.Mode {
	case "", Trigger, Observe:
	default:
		return invalid(fmt.Errorf("route mode %q: want %s or %s", r.Mode, Trigger, Observe))
	}
	return nil
}

// Normalize returns r with an empty Mode set to Trigger and a nil Match
// replaced by an empty map. It does not copy a non-nil Match.
func (r Route) Normalize() Route {
	if r.Mode == "" {
		r.Mode = Trigger
	}
	if r.Match == nil {
		r.Match = map[string]string{}
	}
	return r
}
