package routing

import (
	"math/rand/v2"
	"slices"
	"testing"

	"switchboard/adapters"
	"switchboard/groups"
)

// TestOwnedChatsMatchesNaive: where OwnedChats can tell from the routes,
// it lists exactly the chats whose owner (the contract read literally,
// topic "") is in the folder's subtree, of every chat there could be.
func TestOwnedChatsMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	folders := []groups.Folder{"a", "a/b", "a/b/c", "d", "d/e"}
	var universe []adapters.JID
	for _, p := range eqPlatforms {
		for _, r := range eqRooms {
			universe = append(universe, adapters.JID(p+":"+r))
		}
	}
	universe = append(universe, "matrix:room/1", "nocolon")
	told, listed := 0, 0
	for set := range 2000 {
		routes := make([]Route, rng.IntN(8))
		for i := range routes {
			routes[i] = randomRoute(rng, i)
			routes[i].Target = folders[rng.IntN(len(folders))]
		}
		tab := mustNew(t, routes...)
		sorted := naiveSort(routes)
		for _, within := range append(folders, "x") {
			got, ok := tab.OwnedChats(within)
			if !ok {
				continue
			}
			told++
			listed += len(got)
			for _, chat := range universe {
				owner, _, owned := naiveResolve(sorted, Message{ChatJID: chat}, true)
				want := owned && within.Contains(owner.Target)
				if slices.Contains(got, chat) != want {
					t.Fatalf("set %d, OwnedChats(%s) = %v: has %s %v, want %v (owner %q)\nroutes: %+v",
						set, within, got, chat, !want, want, owner.Target, routes)
				}
			}
		}
	}
	if told < 1000 || listed < 500 {
		t.Fatalf("OwnedChats could tell %d times and listed %d chats: the test does not exercise it", told, listed)
	}
}

// TestOwnedChats: a group whose routes each pin a chat owns those chats,
// its descendants' and none that an earlier route gives to another group;
// a glob route to it (or to a descendant) means any chat may be its.
func TestOwnedChats(t *testing.T) {
	tab := mustNew(t,
		Route{ID: 1, Seq: 0, Match: map[string]string{"chat_jid": "web:taken"}, Target: "other"},
		Route{ID: 2, Seq: 1, Match: map[string]string{"chat_jid": "web:taken"}, Target: "eng"},
		Route{ID: 3, Seq: 1, Match: map[string]string{"chat_jid": "web:one"}, Target: "eng"},
		Route{ID: 4, Seq: 1, Match: map[string]string{"platform": "telegram", "room": "group/5"}, Target: "eng/oncall"},
		Route{ID: 5, Seq: 1, Match: map[string]string{"platform": "slack"}, Target: "sales/emea"},
	)
	if got, ok := tab.OwnedChats("eng"); !ok || !slices.Equal(got, []adapters.JID{"telegram:group/5", "web:one"}) {
		t.Errorf("OwnedChats(eng) = %v %v, want its pinned chats and its child's, not web:taken", got, ok)
	}
	if got, ok := tab.OwnedChats("nobody"); !ok || got == nil || len(got) != 0 {
		t.Errorf("OwnedChats(nobody) = %#v %v, want an empty list (search nothing)", got, ok)
	}
	if _, ok := tab.OwnedChats("sales"); ok {
		t.Error("OwnedChats(sales) could tell, but a descendant's route matches every Slack chat")
	}
}
