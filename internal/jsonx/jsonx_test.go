package jsonx

import "testing"

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	b, err := Marshal(map[string]string{"cmd": "a 2>/dev/null && <b>"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"cmd":"a 2>/dev/null && <b>"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
