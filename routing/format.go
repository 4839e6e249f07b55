package routing

import (
	"slices"
	"sort"
	"strings"
)

// FormatMatch is a route's match as `switchboard route list` shows it:
// key=glob in MatchKeys order, or "(everything)" for an empty match.
func FormatMatch(m map[string]string) string {
	if len(m) == 0 {
		return "(everything)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return slices.Index(MatchKeys, keys[i]) < slices.Index(MatchKeys, keys[j])
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}
