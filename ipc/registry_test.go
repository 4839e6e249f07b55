package ipc

import (
	"slices"
	"testing"

	"switchboard/grants"
)

// TestRegistryCategories: every registered tool has a catalog category, and
// the grants catalog derived from the registry builds, which it does only
// when every tier default names a registered tool. The catalog lists the
// tools in registry order.
func TestRegistryCategories(t *testing.T) {
	defs := registry()
	var names []string
	for _, def := range defs {
		if !slices.Contains(grants.Categories(), def.category) {
			t.Errorf("tool %s has no catalog category (%q)", def.tool.Name, def.category)
		}
		names = append(names, def.tool.Name)
	}
	c, err := catalogOf(defs)
	if err != nil {
		t.Fatalf("the registry's catalog: %v", err)
	}
	if got := c.Tools(); !slices.Equal(got, names) {
		t.Errorf("catalog order\n%q\nwant the registry's\n%q", got, names)
	}
	for _, cat := range grants.Categories() {
		if len(c.In(cat)) == 0 {
			t.Errorf("category %s has no tools", cat)
		}
	}
	// A tool registered without a category, or a tier default that names a
	// tool the registry lacks, is refused.
	if _, err := catalogOf(append(registry(), &toolDef{tool: newTool("future_tool", "Future", "Not yet.", readOnly)})); err == nil {
		t.Error("a tool without a category was accepted")
	}
	without := slices.DeleteFunc(registry(), func(def *toolDef) bool { return def.tool.Name == "list_grants" })
	if _, err := catalogOf(without); err == nil {
		t.Error("a registry without list_grants, a tier-2 default, was accepted")
	}
}
