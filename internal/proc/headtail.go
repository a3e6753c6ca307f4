package proc

import (
	"strconv"
	"sync"
	"unicode/utf8"
)

// DefaultMaxOutput is the number of bytes kept per stream when Spec.MaxStdout,
// Spec.MaxStderr or NewHeadTail's max is 0.
const DefaultMaxOutput = 128 << 10

// TruncationMarker returns the text that replaces n dropped bytes in a
// truncated HeadTail: "\n[... truncated n bytes ...]\n".
func TruncationMarker(n int64) string {
	return "\n[... truncated " + strconv.FormatInt(n, 10) + " bytes ...]\n"
}

// HeadTail is an io.Writer that keeps the first max/2 and the last max-max/2
// bytes written to it and counts everything. Its memory use is bounded by max
// whatever is written. It is safe for concurrent use, so a live job's output
// can be read while the job is writing.
type HeadTail struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte // grows up to headCap
	tail    []byte // ring of tailCap bytes, allocated on first use
	tailPos int    // next write index into tail
	tailLen int    // valid bytes in tail
	total   int64
}

// NewHeadTail returns a HeadTail that keeps at most max bytes; max <= 0 means
// DefaultMaxOutput.
func NewHeadTail(max int) *HeadTail {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	return &HeadTail{headCap: max / 2, tailCap: max - max/2}
}

// Write records p. It never fails.
func (h *HeadTail) Write(p []byte) (int, error) {
	n := len(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total += int64(n)
	if room := h.headCap - len(h.head); room > 0 {
		if room > len(p) {
			room = len(p)
		}
		h.head = append(h.head, p[:room]...)
		p = p[room:]
	}
	if len(p) == 0 || h.tailCap == 0 {
		return n, nil
	}
	if h.tail == nil {
		h.tail = make([]byte, h.tailCap)
	}
	if len(p) >= h.tailCap {
		copy(h.tail, p[len(p)-h.tailCap:])
		h.tailPos, h.tailLen = 0, h.tailCap
		return n, nil
	}
	c := copy(h.tail[h.tailPos:], p)
	if c < len(p) {
		copy(h.tail, p[c:])
	}
	h.tailPos = (h.tailPos + len(p)) % h.tailCap
	h.tailLen = min(h.tailLen+len(p), h.tailCap)
	return n, nil
}

// Total returns the number of bytes written so far.
func (h *HeadTail) Total() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Truncated reports whether bytes were dropped.
func (h *HeadTail) Truncated() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.truncated()
}

func (h *HeadTail) truncated() bool {
	return h.total > int64(len(h.head)+h.tailLen)
}

// String returns everything written when nothing was dropped, else the head,
// a TruncationMarker counting the dropped bytes, and the tail. The cut points
// are moved off the middle of UTF-8 sequences (those bytes count as dropped),
// so a valid UTF-8 stream stays valid.
func (h *HeadTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stringLocked()
}

func (h *HeadTail) stringLocked() string {
	tail := h.orderedTail()
	if !h.truncated() {
		return string(h.head) + string(tail)
	}
	head := h.head[:utf8Cut(h.head)]
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	dropped := h.total - int64(len(head)+len(tail))
	marker := TruncationMarker(dropped)
	b := make([]byte, 0, len(head)+len(marker)+len(tail))
	b = append(b, head...)
	b = append(b, marker...)
	b = append(b, tail...)
	return string(b)
}

// Output returns a consistent snapshot of the captured output.
func (h *HeadTail) Output() Output {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Output{Text: h.stringLocked(), TotalBytes: h.total, Truncated: h.truncated()}
}

// orderedTail returns the tail ring's bytes in write order; the result may
// alias the ring. Callers hold h.mu.
func (h *HeadTail) orderedTail() []byte {
	if h.tailLen < h.tailCap {
		return h.tail[:h.tailLen]
	}
	if h.tailPos == 0 {
		return h.tail
	}
	b := make([]byte, 0, h.tailCap)
	b = append(b, h.tail[h.tailPos:]...)
	return append(b, h.tail[:h.tailPos]...)
}

// utf8Cut returns the length of the longest prefix of b that does not end in
// an incomplete UTF-8 sequence, looking back at most utf8.UTFMax-1 bytes.
func utf8Cut(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		// c starts a sequence of i bytes present; keep it only if complete.
		if c < utf8.RuneSelf {
			return len(b) // ASCII: nothing after it is part of a sequence
		}
		if utf8.FullRune(b[len(b)-i:]) {
			return len(b)
		}
		return len(b) - i
	}
	return len(b)
}
