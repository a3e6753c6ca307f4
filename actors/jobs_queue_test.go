package actors

import (
	"slices"
	"strconv"
	"testing"
)

type qop struct {
	push   [2]string // repo, job; empty = pop
	remove string
}

func TestJobQueueFairness(t *testing.T) {
	push := func(r, j string) qop { return qop{push: [2]string{r, j}} }
	tests := []struct {
		name string
		ops  []qop
		skip map[string]bool // jobs Pop must skip
		want []string        // pop order after the ops
	}{
		{"empty", nil, nil, nil},
		{"fifo in one repo", []qop{push("a", "1"), push("a", "2"), push("a", "3")}, nil, []string{"1", "2", "3"}},
		{"round robin", []qop{push("a", "a1"), push("a", "a2"), push("a", "a3"), push("b", "b1"), push("b", "b2"), push("c", "c1")}, nil,
			[]string{"a1", "b1", "c1", "a2", "b2", "a3"}},
		{"flood does not starve", []qop{push("a", "a1"), push("a", "a2"), push("a", "a3"), push("a", "a4"), push("b", "b1")}, nil,
			[]string{"a1", "b1", "a2", "a3", "a4"}},
		{"remove keeps turn", []qop{push("a", "a1"), push("a", "a2"), push("b", "b1"), {remove: "a1"}}, nil, []string{"a2", "b1"}},
		{"remove last of repo", []qop{push("a", "a1"), push("b", "b1"), {remove: "a1"}, push("a", "a2")}, nil, []string{"b1", "a2"}},
		{"remove unknown", []qop{push("a", "a1"), {remove: "zz"}}, nil, []string{"a1"}},
		{"skip stays queued", []qop{push("a", "a1"), push("a", "a2"), push("b", "b1")}, map[string]bool{"a1": true}, []string{"a2", "b1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewJobQueue()
			for _, op := range tt.ops {
				if op.remove != "" {
					q.Remove(op.remove)
					continue
				}
				q.Push(op.push[0], op.push[1])
			}
			var got []string
			for {
				_, id, ok := q.Pop(func(_, id string) bool { return !tt.skip[id] })
				if !ok {
					break
				}
				got = append(got, id)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if q.Len() != len(tt.skip) {
				t.Fatalf("got %d left, want %d", q.Len(), len(tt.skip))
			}
		})
	}
}

func BenchmarkJobQueue(b *testing.B) {
	q := NewJobQueue()
	repos := []string{"a", "b", "c", "d"}
	for i := 0; b.Loop(); i++ {
		q.Push(repos[i%len(repos)], strconv.Itoa(i))
		if q.Len() > 64 {
			q.Pop(nil)
		}
	}
}
