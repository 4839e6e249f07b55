package ipc

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// tricky strings: everything encoding/json escapes, and what it leaves alone.
var trickyStrings = []string{
	"", "plain", `{"ok":true}`, `quote " and backslash \ `, "<script>&amp;</script>",
	"\b\f\n\r\t\x00\x01\x1f\x7f", "é ü 日本 🎉", "line\u2028para\u2029", "bad \xff utf8 \xe2\x82",
	"\xed\xa0\x80 surrogate", `{"text":"a \"quoted\" word\n"}`,
}

// TestAppendMessageIsJSONMarshal: a client gets byte for byte what
// json.Marshal of mcp-go's message would have given it, whether or not the
// message takes the direct path.
func TestAppendMessageIsJSONMarshal(t *testing.T) {
	text := func(s string) mcp.Content { return mcp.TextContent{Type: mcp.ContentTypeText, Text: s} }
	results := map[string]any{
		"text":          mcp.NewToolResultText(`{"ok":true}`),
		"error":         mcp.NewToolResultError("refused: group acme (tier 1) may not call x: <no> & \"why\"\n"),
		"value":         *mcp.NewToolResultText("by value"),
		"no content":    &mcp.CallToolResult{},
		"empty":         &mcp.CallToolResult{Content: []mcp.Content{}},
		"two texts":     &mcp.CallToolResult{Content: []mcp.Content{text("a"), text("b")}, IsError: true},
		"result type":   &mcp.CallToolResult{Result: mcp.Result{ResultType: "complete"}, Content: []mcp.Content{text("x")}},
		"meta":          &mcp.CallToolResult{Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"k": 1}}}, Content: []mcp.Content{text("x")}},
		"structured":    &mcp.CallToolResult{Content: []mcp.Content{text("x")}, StructuredContent: map[string]any{"a": 1}},
		"image":         &mcp.CallToolResult{Content: []mcp.Content{mcp.ImageContent{Type: "image", Data: "AA==", MIMEType: "image/png"}}},
		"annotated":     &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent{Annotated: mcp.Annotated{Annotations: &mcp.Annotations{Priority: ptr(1.0)}}, Type: "text", Text: "x"}}},
		"request state": &mcp.CallToolResult{Content: []mcp.Content{text("x")}, MultiRoundTripResult: mcp.MultiRoundTripResult{RequestState: "s"}},
		"other result":  map[string]any{"tools": []string{"a"}},
	}
	for _, s := range trickyStrings {
		results["tricky "+s] = mcp.NewToolResultText(s)
	}
	ids := []any{nil, int64(7), int64(-3), float64(7), float64(-7), float64(7.5), float64(1e21), float64(1e20), "req-1", "a\"<b>\n", 0.0}
	var msgs []any
	for _, r := range results {
		for _, id := range ids {
			msgs = append(msgs, mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), r))
		}
	}
	msgs = append(msgs, rpcError(int64(1), mcp.INVALID_REQUEST, "bad <request>"), toolsListChanged(nil), toolsListChanged("sub"))
	for i, m := range msgs {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		got, err := appendMessage([]byte("prefix"), m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(got) != "prefix"+string(want) {
			t.Errorf("message %d (%#v):\n got %s\nwant prefix%s", i, m, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestAppendJSONStringIsEncodingJSON: tool texts are escaped as
// encoding/json escapes them, for any bytes.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	strs := append([]string{}, trickyStrings...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		strs = append(strs, string(b))
	}
	for _, s := range strs {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}

// TestIDKeyIsRequestID: a notifications/cancelled finds its request
// whatever form of the id either used: the key is RequestId's.
func TestIDKeyIsRequestID(t *testing.T) {
	for _, raw := range []string{"7", "-7", "0", "-0", "07", "1e3", "7.0", "7.5", "123456789012345",
		"1234567890123456", "12345678901234567890", `"7"`, `"a"`, `"\u0041"`, "true", "-", ""} {
		var id mcp.RequestId
		want := "invalid:" + raw
		if err := json.Unmarshal([]byte(raw), &id); err == nil {
			want = id.String()
		}
		if got := idKey(json.RawMessage(raw)); got != want {
			t.Errorf("idKey(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestAppendMessageKnowsMCPGoTypes: appendMessage writes mcp-go's response,
// tool result and text content by hand, field by field, and sends to
// json.Marshal only the results using a field it knows it does not write.
// A field mcp-go adds in an upgrade would be dropped from every answer on
// the direct path without a word: this lists the fields it was written
// against, so that an upgrade that adds one fails here, not at a client.
func TestAppendMessageKnowsMCPGoTypes(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want []string
	}{
		{reflect.TypeFor[mcp.JSONRPCResponse](), []string{"JSONRPC", "ID", "Result"}},
		{reflect.TypeFor[mcp.CallToolResult](), []string{"Meta", "ResultType", "InputRequests", "RequestState",
			"Content", "StructuredContent", "RawStructuredContent", "IsError"}},
		{reflect.TypeFor[mcp.TextContent](), []string{"Annotations", "Meta", "Type", "Text"}},
	} {
		var got []string
		for _, f := range reflect.VisibleFields(c.typ) {
			if !f.Anonymous && f.IsExported() {
				got = append(got, f.Name)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("mcp.%s has fields %v; appendMessage (encode.go) was written for %v: teach plainToolResult "+
				"and appendToolResult the new ones (or send results using them to json.Marshal), then update this list",
				c.typ.Name(), got, c.want)
		}
	}
}
