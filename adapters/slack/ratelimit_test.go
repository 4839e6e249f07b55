package slack

import "testing"

func TestTiersBurstThenPace(t *testing.T) {
	var tr tiers
	for i := range postBurst {
		if d := tr.take("chat.postMessage/C1", postBurst, postEvery); d != 0 {
			t.Fatalf("post %d of a burst waited %s", i+1, d)
		}
	}
	if d := tr.take("chat.postMessage/C1", postBurst, postEvery); d <= 0 || d > postEvery {
		t.Fatalf("post beyond the burst: wait %s, want (0, %s]", d, postEvery)
	}
	if d := tr.take("chat.postMessage/C2", postBurst, postEvery); d != 0 {
		t.Fatalf("another channel waited %s", d)
	}
}
