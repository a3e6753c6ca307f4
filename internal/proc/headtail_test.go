package proc

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string
		total     int64
		truncated bool
	}{
		{name: "empty", max: 10, writes: nil, want: "", total: 0},
		{name: "fits", max: 10, writes: []string{"hello"}, want: "hello", total: 5},
		{name: "exactly max", max: 10, writes: []string{"0123456789"}, want: "0123456789", total: 10},
		{name: "exactly max in pieces", max: 10, writes: []string{"012", "3456", "789"}, want: "0123456789", total: 10},
		{name: "one over", max: 10, writes: []string{"0123456789a"}, want: "01234" + TruncationMarker(1) + "6789a", total: 11, truncated: true},
		{name: "big single write", max: 4, writes: []string{"abcdefghij"}, want: "ab" + TruncationMarker(6) + "ij", total: 10, truncated: true},
		{name: "ring wraps", max: 6, writes: []string{"abc", "de", "fg", "hi", "j"}, want: "abc" + TruncationMarker(4) + "hij", total: 10, truncated: true},
		{name: "odd max", max: 5, writes: []string{"abcdefgh"}, want: "ab" + TruncationMarker(3) + "fgh", total: 8, truncated: true},
		{name: "max 1", max: 1, writes: []string{"abc"}, want: TruncationMarker(2) + "c", total: 3, truncated: true},
		{name: "empty writes", max: 4, writes: []string{"", "ab", "", "cd", ""}, want: "abcd", total: 4},
		{name: "head cut off a rune", max: 6, writes: []string{"ab\u00e9" + "xxxxxx" + "yz"}, want: "ab" + TruncationMarker(7) + "xyz", total: 12, truncated: true},
		{name: "tail cut inside a rune", max: 6, writes: []string{"abc" + "zzzzzz" + "\u20acd"}, want: "abc" + TruncationMarker(9) + "d", total: 13, truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHeadTail(tt.max)
			for _, w := range tt.writes {
				n, err := h.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := h.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := h.Total(); got != tt.total {
				t.Errorf("Total() = %d, want %d", got, tt.total)
			}
			if got := h.Truncated(); got != tt.truncated {
				t.Errorf("Truncated() = %v, want %v", got, tt.truncated)
			}
			out := h.Output()
			if out.Text != tt.want || out.TotalBytes != tt.total || out.Truncated != tt.truncated {
				t.Errorf("Output() = %+v, want {%q %d %v}", out, tt.want, tt.total, tt.truncated)
			}
		})
	}
}

func TestNewHeadTailDefault(t *testing.T) {
	for _, max := range []int{0, -5} {
		h := NewHeadTail(max)
		data := bytes.Repeat([]byte("x"), DefaultMaxOutput)
		h.Write(data)
		if h.Truncated() {
			t.Errorf("NewHeadTail(%d) truncated %d bytes, want DefaultMaxOutput kept", max, len(data))
		}
		h.Write([]byte("y"))
		if !h.Truncated() {
			t.Errorf("NewHeadTail(%d) kept %d bytes, want at most %d", max, len(data)+1, DefaultMaxOutput)
		}
	}
}

func TestUTF8Cut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"ascii", "abc", 3},
		{"complete 2-byte", "a\u00e9", 3},
		{"complete 3-byte", "a\u20ac", 4},
		{"complete 4-byte", "a\U0001F600", 5},
		{"half 2-byte", "a\xc3", 1},
		{"2 of 3", "a\xe2\x82", 1},
		{"3 of 4", "a\xf0\x9f\x98", 1},
		{"stray continuation", "a\x82", 2},
		{"invalid start", "a\xff", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := utf8Cut([]byte(tt.in)); got != tt.want {
				t.Errorf("utf8Cut(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzHeadTail(f *testing.F) {
	f.Add([]byte("hello world"), 4, 3)
	f.Add([]byte(""), 0, 1)
	f.Add([]byte("h\u00e9llo w\u20acrld \U0001F600!"), 7, 2)
	f.Add(bytes.Repeat([]byte("ab\n"), 1000), 64, 100)
	f.Fuzz(func(t *testing.T, data []byte, max, chunk int) {
		if max < 1 || max > 1<<16 {
			max = 1 + (max&0x7fffffff)%4096
		}
		if chunk < 1 {
			chunk = 1 + (chunk&0x7fffffff)%512
		}
		h := NewHeadTail(max)
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			h.Write(rest[:n])
			rest = rest[n:]
		}
		got := h.String()
		if h.Total() != int64(len(data)) {
			t.Fatalf("Total() = %d, want %d", h.Total(), len(data))
		}
		if len(data) <= max {
			if h.Truncated() || got != string(data) {
				t.Fatalf("String() = %q (truncated %v), want %q untruncated", got, h.Truncated(), data)
			}
			return
		}
		if !h.Truncated() {
			t.Fatalf("Truncated() = false for %d bytes with max %d", len(data), max)
		}
		if limit := max + len(TruncationMarker(int64(len(data)))); len(got) > limit {
			t.Fatalf("len(String()) = %d, want <= %d", len(got), limit)
		}
		i := strings.Index(got, "\n[... truncated ")
		if i < 0 {
			t.Fatalf("String() = %q has no marker", got)
		}
		head := got[:i]
		j := strings.Index(got[i:], " bytes ...]\n")
		tail := got[i+j+len(" bytes ...]\n"):]
		if !bytes.HasPrefix(data, []byte(head)) {
			t.Fatalf("head %q is not a prefix of the input", head)
		}
		if !bytes.HasSuffix(data, []byte(tail)) {
			t.Fatalf("tail %q is not a suffix of the input", tail)
		}
		if want := TruncationMarker(int64(len(data) - len(head) - len(tail))); got[i:i+j+len(" bytes ...]\n")] != want {
			t.Fatalf("marker = %q, want %q", got[i:i+j+len(" bytes ...]\n")], want)
		}
		if utf8.Valid(data) && !utf8.ValidString(got) {
			t.Fatalf("String() = %q is not valid UTF-8 though the input was", got)
		}
	})
}

func BenchmarkHeadTailWrite(b *testing.B) {
	buf := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	h := NewHeadTail(DefaultMaxOutput)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		h.Write(buf)
	}
}
