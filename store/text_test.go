package store

import (
	"strings"
	"testing"
)

func TestCapText(t *testing.T) {
	long := strings.Repeat("é", maxText) // 2 bytes each
	got := CapText(long)
	if len(got) > maxText+64 || !strings.HasSuffix(got, "[truncated by switchboard]") || !strings.HasPrefix(got, "éé") {
		t.Fatalf("CapText: %d bytes, suffix %q", len(got), got[len(got)-30:])
	}
	if strings.ContainsRune(got, '\uFFFD') {
		t.Fatal("cut inside a rune")
	}
	if CapText("short") != "short" {
		t.Fatal("short text changed")
	}
}
