package console

import "testing"

func TestResourceTexts(t *testing.T) {
	cpu := []struct {
		ms   int64
		want string
	}{{0, "0.00 s"}, {7, "0.01 s"}, {1520, "1.52 s"}, {90_000, "90.00 s"}}
	for _, tt := range cpu {
		if got := cpuText(tt.ms); got != tt.want {
			t.Errorf("cpuText(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
	bytes := []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {64 << 20, "64.0 MiB"}, {3 << 30, "3.0 GiB"}, {1536 << 40, "1.5 PiB"}}
	for _, tt := range bytes {
		if got := bytesText(tt.n); got != tt.want {
			t.Errorf("bytesText(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
