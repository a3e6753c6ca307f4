package actors

import (
	"fmt"
	"testing"
	"time"
)

func TestLingerOverflow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name  string
		ended map[string]time.Time
		max   int
		want  []string
	}{
		{"none", nil, 2, nil},
		{"at the bound", map[string]time.Time{"a": at(1), "b": at(2)}, 2, nil},
		{"oldest first", map[string]time.Time{"a": at(3), "b": at(1), "c": at(2)}, 1, []string{"b", "c"}},
		{"ties by id", map[string]time.Time{"b": at(1), "a": at(1), "c": at(2)}, 1, []string{"a", "b"}},
		{"bound zero", map[string]time.Time{"a": at(1)}, 0, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lingerOverflow(tc.ended, tc.max)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("lingerOverflow = %v, want %v", got, tc.want)
			}
		})
	}
}
