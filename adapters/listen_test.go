package adapters_test

import (
	"testing"

	"switchboard/adapters"
)

// Names of this machine pass; any other name, also one that resolves to
// 127.0.0.1 (DNS rebinding), does not.
func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost:8421": true, "LOCALHOST": true, "127.0.0.1:1": true, "127.0.0.2": true, "[::1]:1": true, "::1": true,
		"evil.example:8421": false, "localhost.evil.example": false, "127.0.0.1.nip.io:8421": false, "10.0.0.1:8421": false, "": false,
	} {
		if got := adapters.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v; want %v", host, got, want)
		}
	}
}
